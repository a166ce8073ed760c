// Flight-recorder fidelity on real programs (issue 14): a program whose trace
// points alternate between its own functions (0x55...) and libstdc++'s copies
// of header functions (0x7f...), traced with a 64 KiB ring that wraps many
// times and with one that does not, for gcc and clang, -O0 and -O2, one and
// four worker threads. Two checks:
//   - ground truth: the calls the program logged itself, in lookback's
//     window, are exactly the newest ones it made, and every record of every
//     window decodes (no undecodable or unknown record);
//   - an oracle that neither the program nor lookback wrote: `uftrace record`
//     traces the same deterministic program, and lookback's window of each
//     thread equals the newest events of one uftrace thread, by function name.
#include <cxxabi.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "model/decoder.h"

namespace lookback::testing {
namespace {

struct Case {
  const char* program;
  int threads;
  bool wrapped;  // 64 KiB ring (wraps many times) or the default 8 MiB (never wraps here)
  bool fast;     // --clock fast: the same windows, timestamps as bounds
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string n = std::string(info.param.program) + "_" + std::to_string(info.param.threads) + "t_" +
                  (info.param.wrapped ? "wrapped" : "whole") + (info.param.fast ? "_fastclock" : "");
  for (auto& c : n) c = (isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return n;
}

// Iterations per thread: about 60 events each, so a 64 KiB ring (8192
// records) wraps about 15 times; the whole run fits in the default ring.
constexpr int kIterations = 2000;

struct NamedEvent {
  bool exit;
  std::string name;
  bool operator==(const NamedEvent&) const = default;
};

std::string Show(const NamedEvent& e) { return std::string(e.exit ? "EXIT " : "ENTER ") + e.name; }

std::string Demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&free)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &free);
  return status == 0 && d ? std::string(d.get()) : name;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// tid -> events, from `lookback events` (tid, tsc, ENTER|EXIT, address, name).
std::map<uint32_t, std::vector<NamedEvent>> LookbackSequences(const std::string& dump) {
  RunResult r = RunProgram({Cli(), "events", dump});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<uint32_t, std::vector<NamedEvent>> out;
  for (const std::string& line : Lines(r.out)) {
    std::vector<std::string> f;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, '\t');) f.push_back(cell);
    if (f.size() < 5 || (f[2] != "ENTER" && f[2] != "EXIT")) continue;
    out[static_cast<uint32_t>(std::stoul(f[0]))].push_back({f[2] == "EXIT", f[4]});
  }
  return out;
}

// tid -> events, from `uftrace replay` with mangled names (demangled here).
// Lines: " [ 1234] |   name() {", " [ 1234] |   name();", " [ 1234] |   } /* name */".
std::map<uint32_t, std::vector<NamedEvent>> UftraceSequences(const std::string& data, std::string* error) {
  RunResult r = RunProgram({"uftrace", "replay", "-d", data, "--no-pager", "-f", "tid", "--no-libcall", "--no-event",
                            "--demangle=no"});
  std::map<uint32_t, std::vector<NamedEvent>> out;
  if (r.exit_code != 0) {
    *error = "uftrace replay failed: " + r.err;
    return out;
  }
  for (const std::string& line : Lines(r.out)) {
    const size_t open = line.find('['), close = line.find(']'), bar = line.find('|');
    if (open == std::string::npos || close == std::string::npos || bar == std::string::npos) continue;
    if (line.find("LOST") != std::string::npos) *error = "uftrace lost records: " + line;
    const uint32_t tid = static_cast<uint32_t>(std::stoul(line.substr(open + 1, close - open - 1)));
    std::string body = line.substr(bar + 1);
    body.erase(0, body.find_first_not_of(' '));
    auto& seq = out[tid];
    if (body.rfind("} /* ", 0) == 0) {
      seq.push_back({true, Demangle(body.substr(5, body.size() - 5 - 3))});
    } else if (body.size() > 4 && body.compare(body.size() - 4, 4, "() {") == 0) {
      seq.push_back({false, Demangle(body.substr(0, body.size() - 4))});
    } else if (body.size() > 3 && body.compare(body.size() - 3, 3, "();") == 0) {
      const std::string name = Demangle(body.substr(0, body.size() - 3));
      seq.push_back({false, name});
      seq.push_back({true, name});
    }
  }
  return out;
}

bool EndsWith(const std::vector<NamedEvent>& whole, const std::vector<NamedEvent>& tail) {
  if (tail.size() > whole.size()) return false;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (!(whole[whole.size() - tail.size() + i] == tail[i])) return false;
  }
  return true;
}

// Where `tail` stops being a suffix of `whole`, for the failure message.
std::string FirstDifference(const std::vector<NamedEvent>& whole, const std::vector<NamedEvent>& tail) {
  if (tail.size() > whole.size()) return "lookback has " + std::to_string(tail.size()) + " events, uftrace " +
                                         std::to_string(whole.size());
  for (size_t i = tail.size(); i-- > 0;) {
    const NamedEvent& w = whole[whole.size() - tail.size() + i];
    if (!(w == tail[i])) {
      return "event " + std::to_string(i) + " of the window (" + std::to_string(tail.size() - i) +
             " from the end): lookback " + Show(tail[i]) + ", uftrace " + Show(w);
    }
  }
  return "";
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

class Fidelity : public ::testing::TestWithParam<Case> {
 protected:
  // Runs the program under `lookback record`; returns the dump's path.
  std::string RecordWithLookback(const Case& c, const std::string& dir, const std::string& gt) {
    std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir + "/dumps"};
    if (c.wrapped) argv.insert(argv.end(), {"--buffer-size", "64K"});
    if (c.fast) argv.insert(argv.end(), {"--clock", "fast"});
    argv.insert(argv.end(), {"--", Program(c.program), std::to_string(c.threads), std::to_string(kIterations), gt});
    RunResult r = RunProgram(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto dumps = Dumps(dir + "/dumps");
    EXPECT_EQ(dumps.size(), 1u) << r.err;
    return dumps.empty() ? "" : dumps[0];
  }
};

TEST_P(Fidelity, WindowEqualsTheNewestCallsTheProgramLoggedAndEveryRecordDecodes) {
  const Case c = GetParam();
  if (!Exists(Program(c.program))) GTEST_SKIP() << c.program << " not built (compiler missing)";
  const std::string dir = FreshDir("fidelity-gt-" + CaseName({c, 0}));
  const std::string gt = dir + "/ground-truth.txt";
  const std::string dump = RecordWithLookback(c, dir, gt);
  ASSERT_FALSE(dump.empty());
  const format::Dump d = MustOpen(dump);
  const auto truth = GroundTruth(gt);
  ASSERT_EQ(truth.size(), static_cast<size_t>(c.threads));
  std::set<uint64_t> logged;
  for (const auto& [tid, evs] : truth) {
    for (const TEvent& e : evs) logged.insert(e.key);
  }
  size_t wrapped_threads = 0;
  for (const format::ThreadInfo& t : d.threads) {
    SCOPED_TRACE("thread " + std::to_string(t.tid) + " " + t.name);
    std::vector<TEvent> got;
    const model::DecodeStats st = model::DecodeThread(d, t, [&](const model::Event& e) {
      if (e.kind != model::EventKind::kResume && logged.count(e.key)) {
        got.push_back({e.kind == model::EventKind::kExit, e.key});
      }
    });
    // Every record decodes: events, plus the control records — the first
    // announcements (an EPOCH and a FN_BASE per region), the syncs (at most
    // 5 records per 2048 in a 64 KiB ring) and an EPOCH per 2^28 ticks.
    EXPECT_EQ(st.undecodable_prefix, 0u);
    EXPECT_EQ(st.unknown_records, 0u);
    EXPECT_EQ(st.backwards, 0u);
    // A fast-clock ring adds an OFFCPU record per deschedule (a few per
    // 10 ms time slice on a loaded machine).
    EXPECT_LE(st.records - st.events, 16 + st.records / 100 + st.off_cpu) << st.events << " events in " << st.records << " records";
    EXPECT_EQ((t.flags & format::kThreadFastClock) != 0, c.fast);
    if (c.fast && st.events > 1000) {
      EXPECT_GT(st.untimed, st.events / 2) << "most records carry no reading";
    }
    if (t.flags & format::kThreadWrapped) ++wrapped_threads;
    if (!truth.count(t.tid)) continue;  // main: logs nothing itself
    const auto& want = truth.at(t.tid);
    ASSERT_FALSE(got.empty());
    ASSERT_LE(got.size(), want.size());
    if (!c.wrapped) {
      EXPECT_EQ(got.size(), want.size()) << "a ring that never wrapped keeps everything";
    }
    const size_t first = want.size() - got.size();
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[first + i]) << "event " << i << " of the window, " << first + i << " of the run";
    }
  }
  if (c.wrapped) {
    EXPECT_GE(wrapped_threads, static_cast<size_t>(c.threads)) << "every worker's ring wrapped";
  } else {
    EXPECT_EQ(wrapped_threads, 0u);
  }
}

TEST_P(Fidelity, WindowEqualsTheNewestEventsUftraceRecorded) {
  const Case c = GetParam();
  if (!Exists(Program(c.program))) GTEST_SKIP() << c.program << " not built (compiler missing)";
  // Under ASan the program's shadow memory and uftrace's preloaded libmcount
  // do not mix; the plain build's run is the oracle's.
  if (LOOKBACK_TEST_SANITIZED) GTEST_SKIP() << "sanitized build";
  if (RunProgram({"uftrace", "--version"}).exit_code != 0) {
    GTEST_SKIP() << "uftrace is not installed (scripts/install-deps.sh installs it)";
  }
  const std::string dir = FreshDir("fidelity-uftrace-" + CaseName({c, 0}));
  // uftrace's run: its own libmcount provides the compiler's hooks.
  RunResult u = RunProgram({"uftrace", "record", "--no-libcall", "--no-event", "-d", dir + "/uftrace.data",
                            Program(c.program), std::to_string(c.threads), std::to_string(kIterations),
                            dir + "/gt-uftrace.txt"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  std::string error;
  const auto oracle = UftraceSequences(dir + "/uftrace.data", &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(oracle.size(), static_cast<size_t>(c.threads) + 1) << "main and the workers";

  const std::string dump = RecordWithLookback(c, dir, dir + "/gt-lookback.txt");
  ASSERT_FALSE(dump.empty());
  const auto ours = LookbackSequences(dump);
  ASSERT_EQ(ours.size(), static_cast<size_t>(c.threads) + 1);
  // Threads are matched by content (tids differ between the two runs): each
  // of lookback's windows must be the end of exactly one uftrace thread.
  std::set<uint32_t> matched;
  for (const auto& [tid, window] : ours) {
    SCOPED_TRACE("lookback thread " + std::to_string(tid));
    ASSERT_GT(window.size(), 100u);
    std::vector<uint32_t> candidates;
    std::string closest;
    for (const auto& [utid, whole] : oracle) {
      if (EndsWith(whole, window)) {
        candidates.push_back(utid);
      } else if (whole.size() >= window.size() / 2 && (closest.empty() || whole.front() == window.front())) {
        closest = "uftrace thread " + std::to_string(utid) + ": " + FirstDifference(whole, window);
      }
    }
    ASSERT_EQ(candidates.size(), 1u) << "no single uftrace thread ends with lookback's window; " << closest;
    EXPECT_TRUE(matched.insert(candidates[0]).second) << "two lookback threads match one uftrace thread";
    if (!c.wrapped) {
      EXPECT_EQ(window.size(), oracle.at(candidates[0]).size()) << "the whole run";
    }
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (const char* p : {"fidelity-gcc-O0", "fidelity-gcc-O2", "fidelity-clang-O0", "fidelity-clang-O2"}) {
    for (int threads : {1, 4}) {
      for (bool wrapped : {true, false}) out.push_back({p, threads, wrapped, false});
      out.push_back({p, threads, true, true});  // fast clock: the wrapped ring, where windows start mid-group
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Programs, Fidelity, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace lookback::testing
