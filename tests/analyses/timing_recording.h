// Recordings of tests/programs/timing.cc for the analysis tests, with how
// much the machine stretched them (shared by report, chains and diff tests).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "../integration/harness.h"
#include "format/reader.h"
#include "model/clock_model.h"

namespace lookback::testing {

constexpr double kMs = 1e6;
// The closest timings the tests compare are 10 ms apart: below this slack
// their order cannot have been changed by the machine.
constexpr int64_t kQuietNs = 8000000;

// A recording of `timing ARGS`, and how far it ran over its nominal length.
struct Recording {
  std::string path;
  int64_t slack_ns = 0;  // the traced span beyond the nominal: what CPU starvation added
};

// Spins end on the clock and sleeps never end early, so a function's time can
// only grow past its nominal, and only by what the machine took away: the
// traced thread's span (first traced call .. dump, read from the dump's own
// thread table, not from the analysis under test) minus the program's
// nominal length. On a loaded machine (ctest -j on two shared cores) a run
// can be starved badly, so this records up to 5 times, until the slack is
// under kQuietNs, and keeps the quietest run; bounds then use that slack.
inline Recording RecordTiming(const std::string& name, const std::vector<std::string>& args, double nominal_ms) {
  Recording best;
  best.slack_ns = std::numeric_limits<int64_t>::max();
  for (int attempt = 0; attempt < 5 && best.slack_ns > kQuietNs; ++attempt) {
    const std::string dir = FreshDir(name + "_" + std::to_string(attempt));
    std::vector<std::string> argv = {Cli(), "record", "--dir", dir, "--", Program("timing")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = RunProgram(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto dumps = Dumps(dir);
    EXPECT_EQ(dumps.size(), 1u) << r.err;
    if (dumps.size() != 1) break;
    format::Dump d = MustOpen(dumps[0]);
    const format::ThreadInfo* t = FindThread(d, "timing");
    if (t == nullptr) break;
    const model::ClockModel clock(d.clock);
    const int64_t span = clock.MonotonicNs(t->exit_tsc ? t->exit_tsc : t->snapshot_tsc) - clock.MonotonicNs(t->start_tsc);
    const int64_t slack = std::max<int64_t>(0, span - static_cast<int64_t>(nominal_ms * kMs));
    if (slack < best.slack_ns) best = Recording{dumps[0], slack};
  }
  if (best.slack_ns == std::numeric_limits<int64_t>::max()) best.slack_ns = 0;
  return best;
}

// A duration that should be `nominal_ms`: not less than 95% of it (clock
// conversion), not more than 110% (hook overhead) plus the run's slack.
inline void ExpectDuration(int64_t actual_ns, double nominal_ms, int64_t slack_ns, const std::string& what) {
  EXPECT_GE(actual_ns, nominal_ms * kMs * 0.95) << what;
  EXPECT_LE(actual_ns, nominal_ms * kMs * 1.10 + static_cast<double>(slack_ns)) << what << " (slack of the run "
                                                                                  << slack_ns / 1e6 << " ms)";
}

// timing's nominal length: 3 x (30 + 5 x 2 + 10) + 2 x 20 ms.
constexpr double kTimingMs = 190;

}  // namespace lookback::testing
