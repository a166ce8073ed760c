// Functions defined in this header are excluded by the pass's
// -lookback-exclude-file option in the pass-options test program.
#pragma once

extern volatile int g_sink;

__attribute__((noinline)) inline void from_excluded_file(int n) {
  for (int i = 0; i < n; ++i) g_sink = g_sink + i;
}
