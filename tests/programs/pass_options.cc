// The clang pass's options, on one program built with
//   -lookback-exclude=excluded_by_name,skipped_ns::*
//   -lookback-exclude-file=*pass_options_excluded.h
//   -lookback-min-instructions=40
// Each function below says whether it must appear in the dump.
#include "pass_options_excluded.h"

volatile int g_sink;

#define NOINLINE __attribute__((noinline))

NOINLINE void excluded_by_name(int n) {  // excluded: name pattern
  for (int i = 0; i < n; ++i) g_sink = g_sink + i;
}

namespace skipped_ns {
NOINLINE void inner(int n) {  // excluded: namespace pattern
  for (int i = 0; i < n; ++i) g_sink = g_sink + 2 * i;
}
}  // namespace skipped_ns

NOINLINE void tiny() { g_sink = g_sink + 1; }  // skipped: no loop, few instructions

NOINLINE void small_loop(int n) {  // traced: few instructions, but a loop
  for (int i = 0; i < n; ++i) g_sink = g_sink + 3;
}

#define STEP g_sink = g_sink * 3 + 1;
NOINLINE void big_straight_line() {  // traced: no loop, but over the threshold
  STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP
  STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP
}

int main() {
  for (int i = 0; i < 3; ++i) {
    excluded_by_name(4);
    skipped_ns::inner(4);
    tiny();
    small_loop(4);
    big_straight_line();
    from_excluded_file(4);
  }
  return 0;
}
