// The JVM front-end (src/frontends/jvm, docs/jvm.md) on real Java programs
// compiled by the build (tests/java): the call sequence lookback records for
// every thread equals what the program logged itself, in both modes, with
// Java thread names; inline and listener modes agree.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "../exporters/art_reader.h"

namespace lookback::testing {
namespace {

// Not under the sanitizers: HotSpot's own SIGSEGV handling (implicit null
// checks) and ASan's or TSan's runtime preloaded into the JVM do not mix. The
// plain build runs these tests; the sanitizers check the runtime elsewhere.
bool JvmAvailable() {
  if (LOOKBACK_TEST_SANITIZED) return false;
  return std::string(LOOKBACK_TEST_JAVA).size() > 0 && access((std::string(LOOKBACK_TEST_JAVA_CLASSES) + "/CallTree.class").c_str(), R_OK) == 0;
}

#define REQUIRE_JVM() \
  if (!JvmAvailable()) GTEST_SKIP() << "no JDK (java, javac), no JVM agent built, or a sanitized build"

struct NamedEvent {
  bool exit;
  std::string method;
  bool operator==(const NamedEvent&) const = default;
};
// (gtest prints a failed comparison of event lists with this, not as bytes)
void PrintTo(const NamedEvent& e, std::ostream* os) { *os << (e.exit ? "EXIT " : "ENTER ") << e.method; }

using Threads = std::map<std::string, std::vector<NamedEvent>>;  // by Java thread name

std::vector<std::string> Split(const std::string& line, char sep) {
  std::vector<std::string> f;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, sep);) f.push_back(cell);
  return f;
}

// "<thread>\tENTER|EXIT\t<method>" lines written by tests/java/GroundTruth.java.
Threads ReadGroundTruth(const std::string& path) {
  Threads out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto f = Split(line, '\t');
    if (f.size() == 3) out[f[0]].push_back({f[1] == "EXIT", f[2]});
  }
  return out;
}

// lookback's events for methods in `keep`, by thread name.
Threads RecordedEvents(const std::string& dump, const std::set<std::string>& keep) {
  const format::Dump d = MustOpen(dump);
  std::map<uint32_t, std::string> names;
  for (const auto& t : d.threads) names[t.tid] = t.name;
  RunResult ev = RunProgram({Cli(), "events", dump});
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  Threads out;
  std::istringstream in(ev.out);
  for (std::string line; std::getline(in, line);) {
    const auto f = Split(line, '\t');
    if (f.size() < 5 || (f[2] != "ENTER" && f[2] != "EXIT") || !keep.count(f[4])) continue;
    out[names[static_cast<uint32_t>(std::stoul(f[0]))]].push_back({f[2] == "EXIT", f[4]});
  }
  return out;
}

struct JvmRun {
  RunResult result;
  std::vector<std::string> dumps;
  std::string dump;  // the one dump, when there is exactly one
  Threads truth, recorded;
};

// --jvm-probe-inlined: these tests compare every call with the program's own
// log and listener mode's events, so the methods C2 always inlines (next(),
// which inline mode leaves unprobed by default) must be traced too.
// `flags` replace `--jvm-include CallTree.*` (only the program's own methods).
JvmRun RecordCallTree(const std::string& name, const std::string& mode, int threads, int calls,
                      const std::vector<std::string>& flags = {"--jvm-include", "CallTree.*"},
                      const std::vector<std::string>& java_options = {}) {
  JvmRun run;
  const std::string dir = FreshDir(name);
  const std::string gt = dir + "/ground-truth.txt";
  std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-mode", mode, "--jvm-probe-inlined"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.push_back(LOOKBACK_TEST_JAVA);
  argv.insert(argv.end(), java_options.begin(), java_options.end());
  for (const std::string& a : {std::string("-cp"), std::string(LOOKBACK_TEST_JAVA_CLASSES), std::string("CallTree"),
                               std::to_string(threads),
                               std::to_string(calls), std::string("42"), gt})
    argv.push_back(a);
  run.result = RunProgram(argv);
  const auto dumps = Dumps(dir + "/dumps");
  if (dumps.size() == 1) run.dump = dumps[0];
  run.truth = ReadGroundTruth(gt);
  std::set<std::string> methods;
  for (const auto& [thread, evs] : run.truth) {
    for (const auto& e : evs) methods.insert(e.method);
  }
  if (!run.dump.empty()) run.recorded = RecordedEvents(run.dump, methods);
  return run;
}

void ExpectSameCalls(const JvmRun& run, int threads) {
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_FALSE(run.dump.empty()) << run.result.err;
  ASSERT_EQ(run.truth.size(), static_cast<size_t>(threads));
  size_t compared = 0;
  for (const auto& [thread, want] : run.truth) {
    SCOPED_TRACE("thread " + thread);
    ASSERT_TRUE(run.recorded.count(thread)) << "no thread named " << thread << " in the dump";
    const auto& got = run.recorded.at(thread);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "event " << i << ": " << (got[i].exit ? "EXIT " : "ENTER ") << got[i].method;
    }
    compared += want.size();
  }
  EXPECT_GT(compared, 1000u);
}

class JvmModes : public ::testing::TestWithParam<const char*> {};

TEST_P(JvmModes, SingleThreadCallSequenceEqualsGroundTruth) {
  REQUIRE_JVM();
  const JvmRun run = RecordCallTree(std::string("jvm-st-") + GetParam(), GetParam(), 1, 300);
  ExpectSameCalls(run, 1);
}

TEST_P(JvmModes, EveryThreadsCallSequenceEqualsGroundTruthUnderItsJavaName) {
  REQUIRE_JVM();
  const JvmRun run = RecordCallTree(std::string("jvm-mt-") + GetParam(), GetParam(), 4, 200);
  ExpectSameCalls(run, 4);
  // Java names, whole: longer than the kernel's 15 bytes.
  EXPECT_TRUE(run.recorded.count("calltree-worker-3"));
}

// --jvm-startup async: the classes loaded before main get their probes on an
// agent thread while main runs; the program's own classes load later and are
// traced exactly from their first call, the whole JDK probed too.
TEST(JvmStartup, AsyncStartupTracesTheProgramsOwnCallsExactly) {
  REQUIRE_JVM();
  const JvmRun run = RecordCallTree("jvm-startup-async", "inline", 2, 200, {"--budget", "off", "--jvm-startup", "async"});
  ExpectSameCalls(run, 2);
  const format::Dump d = MustOpen(run.dump);
  ASSERT_TRUE(d.metadata.count("note.jvm-start")) << "no jvm-start note";
  // Before main: java.lang.Thread and what VMInit's own work loaded (a few),
  // not the ~260 classes the JVM loaded before main (as sync would).
  const std::string& note = d.metadata.at("note.jvm-start");
  const size_t at = note.find(" ms, ");
  ASSERT_NE(at, std::string::npos) << note;
  EXPECT_LT(std::stoul(note.substr(at + 5)), 60u) << note;
  // Where start-up goes: the part of it the agent's own rewriting took, and
  // the class hook's total over the run.
  EXPECT_NE(note.find(" ms of it in the class hook"), std::string::npos) << note;
  ASSERT_TRUE(d.metadata.count("note.jvm"));
  const std::string& jvm = d.metadata.at("note.jvm");
  const size_t hook = jvm.find("; class hook: ");
  ASSERT_NE(hook, std::string::npos) << jvm;
  // The agent thread may still be at work when a short program exits (a
  // loaded machine): the dump must say which, and when it says the start-up
  // classes got their probes, the class hook saw them.
  ASSERT_TRUE(d.metadata.count("note.jvm-startup")) << "no jvm-startup note";
  const std::string& startup = d.metadata.at("note.jvm-startup");
  const size_t got = startup.find(" classes loaded before main got their probes ");
  if (got != std::string::npos) {
    const size_t n = std::stoul(startup.substr(4));
    EXPECT_GT(n, 100u) << startup;  // java.base's start-up classes at least
    EXPECT_GT(std::stoul(jvm.substr(hook + 14)), 100u) << jvm;  // and the hook rewrote them (some it skips)
  } else {
    EXPECT_NE(startup.find("were still getting their probes on the agent thread lookback-startup when this dump was "
                           "written"),
              std::string::npos)
        << startup;
  }
  EXPECT_EQ(RunProgram({Cli(), "record", "--jvm-startup", "later", "--", "true"}).exit_code, 2);
}

// How many lines of `lookback report` name `what` (every function ranked).
size_t ReportMentions(const std::string& dump, const std::string& what) {
  const RunResult report = RunProgram({Cli(), "report", "--top", "1000000", dump});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  size_t n = 0;
  for (size_t p = report.out.find(what); p != std::string::npos; p = report.out.find(what, p + 1)) ++n;
  return n;
}

// By default (--jvm-startup skip) the JDK classes loaded before tracing
// starts (String, HashMap, ...: about 260) keep their code: no probes, no
// retransform at start-up. The program's own classes load later and are
// traced exactly from their first call; the dump's note counts the classes
// left as they were. --jvm-startup sync gives them probes, so that their
// methods are recorded again, and so do --jvm-include and --slow-call for
// the classes whose methods they name.
TEST(JvmStartup, ByDefaultTheJdksStartUpClassesKeepTheirCodeAndTheProgramIsTracedExactly) {
  REQUIRE_JVM();
  const JvmRun run = RecordCallTree("jvm-startup-skip", "inline", 2, 200, {"--budget", "off"});
  ExpectSameCalls(run, 2);
  const format::Dump d = MustOpen(run.dump);
  ASSERT_TRUE(d.metadata.count("note.jvm-start")) << "no jvm-start note";
  const std::string& note = d.metadata.at("note.jvm-start");
  const size_t at = note.find("; the ");
  ASSERT_NE(at, std::string::npos) << note;
  EXPECT_GT(std::stoul(note.substr(at + 6)), 100u) << note;
  EXPECT_NE(note.find("classes loaded before tracing started keep their code and are not traced"), std::string::npos)
      << note;
  // java.lang.String is among them, and its methods run under the program
  // (the ground truth is written with strings): recorded with sync only.
  auto string_methods = [](const std::string& dump) { return ReportMentions(dump, " java.lang.String."); };
  EXPECT_EQ(string_methods(run.dump), 0u);
  const JvmRun sync = RecordCallTree("jvm-startup-sync", "inline", 2, 200, {"--budget", "off", "--jvm-startup", "sync"});
  ExpectSameCalls(sync, 2);
  EXPECT_GT(string_methods(sync.dump), 0u);
  EXPECT_EQ(MustOpen(sync.dump).metadata.at("note.jvm-start").find("keep their code"), std::string::npos);
  // A start-up class that --jvm-include names is traced by default too.
  const JvmRun named = RecordCallTree("jvm-startup-named", "inline", 2, 200,
                                      {"--budget", "off", "--jvm-include", "CallTree.*", "--jvm-include",
                                       "java.lang.String.*"});
  ExpectSameCalls(named, 2);
  EXPECT_GT(string_methods(named.dump), 0u);
  // So is one that a --slow-call glob watches.
  const JvmRun watched = RecordCallTree("jvm-startup-watched", "inline", 2, 200,
                                        {"--budget", "off", "--slow-call", "java.lang.String.*:10s"});
  ExpectSameCalls(watched, 2);
  EXPECT_GT(string_methods(watched.dump), 0u);
}

// The JDK classes that the launcher loads after tracing starts and before
// the main class (sun.launcher.LauncherHelper, the class path's loaders,
// permissions: about 30) keep their code too, and the `jvm` note counts
// them. The window closes at the main class whatever loads it: the
// application loader (-cp), or the boot loader (-Xbootclasspath/a, where
// only its name from sun.java.command tells it from the JDK's classes); a
// window left open would leave the program untraced.
TEST(JvmStartup, TheLaunchersClassesKeepTheirCodeAndTheMainClassIsTracedWhateverLoadsIt) {
  REQUIRE_JVM();
  auto launcher_note = [](const std::string& dump) -> uint64_t {
    const std::string& jvm = MustOpen(dump).metadata.at("note.jvm");
    const size_t at = jvm.find(" JDK classes the launcher loaded before the main class keep their code");
    if (at == std::string::npos) return 0;
    return std::stoull(jvm.substr(jvm.rfind("; ", at) + 2));
  };
  auto launcher_methods = [](const std::string& dump) { return ReportMentions(dump, "sun.launcher.LauncherHelper.") > 0; };
  const JvmRun app = RecordCallTree("jvm-launcher-app", "inline", 2, 200, {"--budget", "off"});
  ExpectSameCalls(app, 2);
  EXPECT_GT(launcher_note(app.dump), 10u) << MustOpen(app.dump).metadata.at("note.jvm");
  EXPECT_FALSE(launcher_methods(app.dump));
  const JvmRun boot = RecordCallTree("jvm-launcher-boot", "inline", 2, 200, {"--budget", "off"},
                                     {std::string("-Xbootclasspath/a:") + LOOKBACK_TEST_JAVA_CLASSES});
  ExpectSameCalls(boot, 2);
  EXPECT_GT(launcher_note(boot.dump), 0u) << MustOpen(boot.dump).metadata.at("note.jvm");
  // With --jvm-startup sync the launcher's classes get their probes as they
  // load. (Whether their calls are still in the dump depends on the ring:
  // java.base's probed String methods fill it.)
  const JvmRun sync = RecordCallTree("jvm-launcher-sync", "inline", 2, 200, {"--budget", "off", "--jvm-startup", "sync"});
  ExpectSameCalls(sync, 2);
  EXPECT_EQ(launcher_note(sync.dump), 0u);
}

// The JDK classes a program first loads in the JVM's first second, after the
// launcher's window, keep their code until it ends (--jvm-startup defer, the
// default: their CDS copies and no probes in the interpreter make start-up
// faster), then get their probes in one retransform. DeferredJdk calls
// java.util.BitSet (which no JVM loads before main) every 2 ms: its own
// method is recorded from the first call, BitSet's only once the window
// (LOOKBACK_JVM_STARTUP_WINDOW here) has closed, and each recorded
// cardinality() nests in a recorded step(). --jvm-startup skip records every
// call; a JVM that ends inside the window says no class got probes.
TEST(JvmStartup, JdkClassesFirstLoadedDuringStartUpGetTheirProbesWhenItEnds) {
  REQUIRE_JVM();
  struct Run {
    long calls = -1;           // what the program says it made
    size_t steps = 0, cardinalities = 0, misnested = 0;
    std::string deferred_note;  // note.jvm-deferred
  };
  const std::string dir = FreshDir("jvm-startup-defer");
  auto record = [&](const std::string& name, const std::string& window, const std::string& run_ms,
                    std::vector<std::string> flags) {
    std::vector<std::string> argv = {Cli(), "record", "-q", "--budget", "off", "--dir", dir + "/" + name};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "DeferredJdk", run_ms});
    const RunResult r = RunProgram(argv, {{"LOOKBACK_JVM_STARTUP_WINDOW", window}});
    Run out;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.out.rfind("calls ", 0) == 0) out.calls = std::stol(r.out.substr(6));
    const std::vector<std::string> dumps = Dumps(dir + "/" + name);
    EXPECT_EQ(dumps.size(), 1u) << r.err;
    if (dumps.size() != 1) return out;
    const format::Dump d = MustOpen(dumps[0]);
    if (d.metadata.count("note.jvm-deferred")) out.deferred_note = d.metadata.at("note.jvm-deferred");
    const RunResult ev = RunProgram({Cli(), "events", dumps[0]});
    EXPECT_EQ(ev.exit_code, 0) << ev.err;
    std::map<std::string, std::vector<std::string>> stacks;  // by thread
    std::istringstream in(ev.out);
    for (std::string line; std::getline(in, line);) {
      const std::vector<std::string> f = Split(line, '\t');
      if (f.size() < 5) continue;
      std::vector<std::string>& stack = stacks[f[0]];
      if (f[2] == "ENTER") {
        if (f[4] == "long DeferredJdk.step(java.util.BitSet, int)") ++out.steps;
        if (f[4] == "int java.util.BitSet.cardinality()") {
          ++out.cardinalities;
          if (stack.empty() || stack.back() != "long DeferredJdk.step(java.util.BitSet, int)") ++out.misnested;
        }
        stack.push_back(f[4]);
      } else if (f[2] == "EXIT" && !stack.empty()) {
        if (stack.back() != f[4]) ++out.misnested;
        stack.pop_back();
      }
    }
    return out;
  };
  // (A window of 1.5 s, so that main starts inside it even on a loaded
  // machine; 2 s more to run after it.)
  const Run deferred = record("defer", "1500ms", "3500", {});
  ASSERT_GT(deferred.calls, 0) << "DeferredJdk printed no count";
  EXPECT_EQ(deferred.steps, static_cast<size_t>(deferred.calls));
  EXPECT_GT(deferred.cardinalities, 0u) << deferred.deferred_note;
  EXPECT_LT(deferred.cardinalities, deferred.steps) << deferred.deferred_note;
  EXPECT_EQ(deferred.misnested, 0u);
  EXPECT_NE(deferred.deferred_note.find("kept their code until then (startup=defer); "), std::string::npos)
      << deferred.deferred_note;
  EXPECT_NE(deferred.deferred_note.find(" got their probes "), std::string::npos) << deferred.deferred_note;

  const Run skip = record("skip", "300ms", "600", {"--jvm-startup", "skip"});
  ASSERT_GT(skip.calls, 0);
  EXPECT_EQ(skip.steps, static_cast<size_t>(skip.calls));
  EXPECT_EQ(skip.cardinalities, skip.steps);
  EXPECT_EQ(skip.misnested, 0u);
  EXPECT_TRUE(skip.deferred_note.empty()) << skip.deferred_note;

  const Run short_run = record("short", "30s", "100", {});
  ASSERT_GT(short_run.calls, 0);
  EXPECT_EQ(short_run.steps, static_cast<size_t>(short_run.calls));
  EXPECT_EQ(short_run.cardinalities, 0u);
  EXPECT_NE(short_run.deferred_note.find("the JVM ended first, and none got probes"), std::string::npos)
      << short_run.deferred_note;
}

// -Xcheck:jni makes HotSpot warn when a thread holds more JNI local
// references than it declared, and the agent's GetLoadedClasses hands out one
// per loaded class (hundreds at start, thousands later): a traced JVM printed
// "WARNING: JNI local refs: 471, exceeds capacity: 32". Every path that
// lists the loaded classes (start-up in each --jvm-startup mode, the
// deferred retransform, the budget's retransform of shed classes) must leave
// the program's stderr as it is untraced.
TEST(JvmPrograms, UnderCheckJniATracedJvmPrintsWhatItPrintsUntraced) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-check-jni");
  struct Case {
    const char* name;
    std::vector<std::string> flags, program;
    std::map<std::string, std::string> env;
  };
  const std::vector<Case> cases = {
      // (a window of 1.5 s: main starts inside it even on a loaded machine, and
      // the deferred thread has 1.5 s more to finish before the program ends)
      {"defer", {}, {"DeferredJdk", "3000"}, {{"LOOKBACK_JVM_STARTUP_WINDOW", "1500ms"}}},
      {"skip", {"--jvm-startup", "skip"}, {"DeferredJdk", "100"}, {}},
      {"sync", {"--jvm-startup", "sync"}, {"DeferredJdk", "100"}, {}},
      {"async", {"--jvm-startup", "async"}, {"DeferredJdk", "300"}, {}},
      {"shed", {}, {"HotLoop", "1.5"}, {{"LOOKBACK_JVM_RETRANSFORM_AFTER", "0"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> java = {LOOKBACK_TEST_JAVA, "-Xcheck:jni", "-cp", LOOKBACK_TEST_JAVA_CLASSES};
    java.insert(java.end(), c.program.begin(), c.program.end());
    std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir + "/" + c.name};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), java.begin(), java.end());
    const RunResult traced = RunProgram(argv, c.env);
    const RunResult plain = RunProgram(java);
    ASSERT_EQ(traced.exit_code, 0) << traced.err;
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(traced.err, plain.err);
    // HotSpot prints the warning on stdout (its tty); the programs' own
    // lines there hold counts that vary from run to run.
    EXPECT_EQ(traced.out.find("WARNING"), std::string::npos) << traced.out;
    EXPECT_EQ(plain.out.find("WARNING"), std::string::npos) << plain.out;
    const std::vector<std::string> dumps = Dumps(dir + "/" + c.name);
    ASSERT_EQ(dumps.size(), 1u);
    // The deferred retransform did run (the path this case is for).
    if (std::string(c.name) == "defer") {
      const format::Dump d = MustOpen(dumps[0]);
      ASSERT_TRUE(d.metadata.count("note.jvm-deferred"));
      EXPECT_NE(d.metadata.at("note.jvm-deferred").find(" got their probes "), std::string::npos)
          << d.metadata.at("note.jvm-deferred");
    }
  }
}

// The cache of rewritten classes (docs/jvm.md, "The class cache"): a second
// JVM with the same classes and options takes their rewrites from the pack
// the first one wrote, parses none of them, and records the same calls; a
// damaged pack is a miss, not a crash or a wrong trace.
std::pair<uint64_t, uint64_t> ParsedAndCached(const std::string& dump) {
  const format::Dump d = MustOpen(dump);
  const std::string& jvm = d.metadata.at("note.jvm");
  const size_t at = jvm.find(" ms, ");
  const size_t and_at = jvm.find(" parsed and ", at);
  EXPECT_TRUE(at != std::string::npos && and_at != std::string::npos) << jvm;
  if (at == std::string::npos || and_at == std::string::npos) return {0, 0};
  return {std::stoull(jvm.substr(at + 5)), std::stoull(jvm.substr(and_at + 12))};
}

TEST(JvmClassCache, ASecondJvmParsesNoClassAndRecordsTheSameCalls) {
  REQUIRE_JVM();
  const std::string cache = FreshDir("jvm-class-cache") + "/cache";
  // --jvm-startup sync: java.base's start-up classes pass through the hook
  // too, so that the cache holds a few hundred classes and damage at every
  // 997th byte of its pack hits many of them.
  // --jvm-writes native: a run that passes the start-up window (1 s, on a
  // loaded machine) sets up the JFR clock, which loads some 40 JDK classes
  // more (jdk.jfr.internal.JVM and the lambda machinery it starts), so the
  // runs' class sets would differ by whether they took a second.
  const std::vector<std::string> flags = {"--jvm-include", "CallTree.*", "--jvm-cache", cache, "--jvm-startup", "sync",
                                          "--jvm-writes", "native"};
  const JvmRun first = RecordCallTree("jvm-class-cache-1", "inline", 2, 200, flags);
  ExpectSameCalls(first, 2);
  const auto [parsed1, cached1] = ParsedAndCached(first.dump);
  EXPECT_EQ(cached1, 0u);
  EXPECT_GT(parsed1, 300u);
  // Published: a temporary (.tmp.*.pack) is a pack its JVM did not finish,
  // as when a writer starved by busy CPUs held the store lock at exit.
  size_t packs = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache)) {
    packs += e.path().extension() == ".pack" && e.path().filename().string().rfind(".tmp.", 0) != 0;
  }
  ASSERT_EQ(packs, 1u) << "the first JVM's pack";

  const JvmRun second = RecordCallTree("jvm-class-cache-2", "inline", 2, 200, flags);
  ExpectSameCalls(second, 2);
  const auto [parsed2, cached2] = ParsedAndCached(second.dump);
  EXPECT_GE(cached2, parsed1 * 9 / 10) << "the classes of the first run come from the cache";
  EXPECT_LE(parsed2, parsed1 / 10);

  // Damage the middle of every pack: entries there fail their checksum.
  for (const auto& e : std::filesystem::directory_iterator(cache)) {
    if (e.path().extension() != ".pack") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(std::filesystem::file_size(e.path()));
    for (std::streamoff off = 64; off < size - 4096; off += 997) {
      f.seekp(off);
      f.put('\x5a');
    }
  }
  const JvmRun third = RecordCallTree("jvm-class-cache-3", "inline", 2, 200, flags);
  ExpectSameCalls(third, 2);
  const auto [parsed3, cached3] = ParsedAndCached(third.dump);
  EXPECT_GT(parsed3, parsed1 / 2) << "damaged entries are parsed again";
  (void)cached3;
  EXPECT_EQ(RunProgram({Cli(), "record", "--jvm-cache", "a,b", "--", "true"}).exit_code, 2);
}

// HotSpot's own threads start before the agent's first ThreadStart event:
// they are named at VMInit, whole, not with the kernel's 15 bytes
// ("Reference Handl"). EarlyThreads makes the Reference Handler run Java code.
TEST(JvmThreads, ThreadsStartedBeforeTheAgentsFirstEventHaveWholeJavaNames) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-early-threads");
  // --jvm-startup sync: the Reference Handler runs only java.lang.ref's code,
  // loaded before tracing starts; by default it has no probes, and the thread
  // records nothing.
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-startup", "sync", "--",
                                  LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "EarlyThreads"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find("enqueued"), std::string::npos) << r.out;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  std::set<std::string> names;
  for (const auto& t : MustOpen(dumps[0]).threads) names.insert(t.name);
  EXPECT_EQ(names.count("Reference Handler"), 1u) << ::testing::PrintToString(names);
  // The kernel's 15-byte cut of HotSpot's own threads' names (a whole Java
  // name of 15 bytes, such as "Attach Listener", is fine).
  for (const char* whole : {"Reference Handler", "Signal Dispatcher", "Notification Thread", "Common-Cleaner"}) {
    const std::string cut = std::string(whole).substr(0, 15);
    if (cut != whole) {
      EXPECT_EQ(names.count(cut), 0u) << "a kernel-truncated name: " << cut;
    }
  }
}

// Exporters name Java methods as Java tools do: ART's .trace splits class,
// name and descriptor; Nanoscope's text uses PrettyMethod signatures and the
// Java thread name in its file names.
TEST(JvmExport, ArtSplitsClassNameAndDescriptorAndNanoscopeUsesJavaNames) {
  REQUIRE_JVM();
  const JvmRun run = RecordCallTree("jvm-export", "listener", 2, 50);
  ASSERT_FALSE(run.dump.empty()) << run.result.err;
  const std::string dir = FreshDir("jvm-export-out");
  RunResult art = RunProgram({Cli(), "convert", "-q", "--to", "art", "-o", dir + "/t.trace", run.dump});
  ASSERT_EQ(art.exit_code, 0) << art.err;
  std::ifstream f(dir + "/t.trace", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\tCallTree\tf2\t(I[I)I\tCallTree.java\n"), std::string::npos);
  EXPECT_NE(bytes.find("\tCallTree\twork\t(II)V\tCallTree.java\n"), std::string::npos);
  // The independent reader of ART traces (tests/exporters/art_reader.h) reads
  // the whole file; every record names a listed method and thread, and every
  // thread's calls nest.
  const ArtTrace t = ParseArtTrace(bytes);
  ASSERT_EQ(t.error, "");
  EXPECT_EQ(t.version, 3);
  bool worker = false;
  for (const auto& [id, name] : t.threads) worker |= name == "calltree-worker-1";
  EXPECT_TRUE(worker);
  for (const auto& [id, m] : t.methods) {
    EXPECT_EQ(m.signature.front(), '(') << m.cls << "." << m.name;  // a JVM descriptor
    EXPECT_EQ(m.cls.find('/'), std::string::npos) << m.cls;         // dotted class names
  }
  ASSERT_FALSE(t.records.empty());
  for (const auto& r : t.records) {
    ASSERT_TRUE(t.methods.count(r.method)) << "record of an unlisted method " << r.method;
    ASSERT_TRUE(t.threads.count(r.thread)) << "record of an unlisted thread " << r.thread;
  }
  for (const auto& [id, name] : t.threads) {
    std::vector<ArtFrame> frames;
    EXPECT_EQ(RebuildCalls(t, id, &frames), "") << name;
  }
  RunResult nano = RunProgram({Cli(), "convert", "-q", "--to", "nanoscope", "-o", dir + "/nano", run.dump});
  ASSERT_EQ(nano.exit_code, 0) << nano.err;
  bool found = false;
  for (const std::string& name : ListFiles(dir + "/nano")) {
    if (name.find("-calltree-worker-1.txt") == std::string::npos) continue;
    std::ifstream t(dir + "/nano/" + name);
    const std::string text((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
    found = text.find(":int CallTree.f2(int, int[])\n") != std::string::npos && text.find(":POP\n") != std::string::npos;
  }
  EXPECT_TRUE(found) << "no <tid>-calltree-worker-1.txt with PrettyMethod lines";
}

JvmRun RecordTriggers(const std::string& name, const std::string& mode, const std::string& what,
                      const std::vector<std::string>& flags) {
  JvmRun run;
  const std::string dir = FreshDir(name);
  std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-mode", mode,
                                   "--jvm-include", "Triggers.*", "--no-exit-dump"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  // A crash's hs_err report goes to the test's directory, not the caller's.
  argv.insert(argv.end(), {"--", LOOKBACK_TEST_JAVA, "-XX:ErrorFile=" + dir + "/hs_err.log", "-cp",
                           LOOKBACK_TEST_JAVA_CLASSES, "Triggers", what});
  run.result = RunProgram(argv);
  run.dumps = Dumps(dir + "/dumps");
  if (run.dumps.size() == 1) run.dump = run.dumps[0];
  return run;
}

// The innermost open frames of a thread at the snapshot, outermost first,
// from `lookback events` (a frame is open if its exit is not in the window).
std::vector<std::string> OpenFrames(const std::string& dump, const std::string& thread) {
  const format::Dump d = MustOpen(dump);
  std::string tid;
  for (const auto& t : d.threads) {
    if (t.name == thread) tid = std::to_string(t.tid);
  }
  RunResult ev = RunProgram({Cli(), "events", "--thread", tid, dump});
  std::vector<std::string> stack;
  std::istringstream in(ev.out);
  for (std::string line; std::getline(in, line);) {
    const auto f = Split(line, '\t');
    if (f.size() < 5) continue;
    if (f[2] == "ENTER") stack.push_back(f[4]);
    if (f[2] == "EXIT" && !stack.empty() && stack.back() == f[4]) stack.pop_back();
  }
  return stack;
}

TEST_P(JvmModes, StallInsideAJavaMethodIsDumpedWhileItLasts) {
  REQUIRE_JVM();
  const JvmRun run = RecordTriggers(std::string("jvm-stall-") + GetParam(), GetParam(), "stall",
                                    {"--stall", "ui-thread:100ms"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_FALSE(run.dump.empty()) << run.result.err;
  const format::Dump d = MustOpen(run.dump);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "stall");
  EXPECT_EQ(d.trigger->subject, "ui-thread");
  EXPECT_GE(d.trigger->measured_ns, d.trigger->threshold_ns);
  const auto stack = OpenFrames(run.dump, "ui-thread");
  ASSERT_FALSE(stack.empty());
  EXPECT_EQ(stack.back(), "long Triggers.stuckInHere()");
}

// The same thread, waiting by design: with --stall-idle over the Java name of
// the method it waits in, it is idle, not stalled, and nothing is dumped
// (StallInsideAJavaMethodIsDumpedWhileItLasts is the control).
TEST_P(JvmModes, StallIdleGlobOverAJavaNameKeepsAWaitingThreadFromDumping) {
  REQUIRE_JVM();
  const std::string name = std::string("jvm-stall-idle-") + GetParam();
  const JvmRun run = RecordTriggers(name, GetParam(), "stall",
                                    {"--stall", "ui-thread:100ms", "--stall-idle", "Triggers.stuckIn*"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_TRUE(run.dumps.empty()) << run.dumps.size() << " dump(s), the first: " << run.dumps[0];
}

TEST_P(JvmModes, SlowJavaCallIsCaughtByAJavaGlob) {
  REQUIRE_JVM();
  const JvmRun run = RecordTriggers(std::string("jvm-slow-") + GetParam(), GetParam(), "slow-call",
                                    {"--slow-call", "Triggers.parse*:50ms"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_FALSE(run.dump.empty()) << run.result.err;
  const format::Dump d = MustOpen(run.dump);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "slow-call");
  EXPECT_NE(d.trigger->subject.find("int Triggers.parseRequest(int)"), std::string::npos) << d.trigger->subject;
  EXPECT_GE(d.trigger->measured_ns, 50'000'000u);
}

// HotSpot handles SIGSEGV itself and chains to lookback's handler for a
// fault it does not recognise: the crash dump names the Java thread and
// shows the method that crashed.
TEST_P(JvmModes, JvmCrashIsDumpedWithTheCrashingJavaMethod) {
  REQUIRE_JVM();
  const JvmRun run = RecordTriggers(std::string("jvm-crash-") + GetParam(), GetParam(), "crash", {});
  EXPECT_NE(run.result.exit_code, 0);
  ASSERT_FALSE(run.dump.empty()) << run.result.err;
  const format::Dump d = MustOpen(run.dump);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "crash");
  // The fault, not the SIGABRT with which HotSpot's handler ends the process.
  EXPECT_EQ(d.trigger->signal, static_cast<uint32_t>(SIGSEGV)) << d.trigger->subject;
  const format::ThreadInfo* crasher = FindThread(d, "crasher");
  ASSERT_NE(crasher, nullptr);
  EXPECT_EQ(d.trigger->tid, crasher->tid);
  const auto stack = OpenFrames(run.dump, "crasher");
  ASSERT_FALSE(stack.empty());
  EXPECT_EQ(stack.back(), "void Triggers.crashHere()");
}

// Thread.setName after start (the rename hook in java.lang.Thread): a thread
// renaming itself and one renamed by another thread carry their new names
// (longer than the kernel's 15 bytes); the old names are gone.
TEST_P(JvmModes, ThreadsRenamedAfterStartCarryTheirNewJavaNames) {
  REQUIRE_JVM();
  const std::string dir = FreshDir(std::string("jvm-renames-") + GetParam());
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--jvm-mode", GetParam(), "--jvm-include",
                                  "Renames.*", "--", LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "Renames"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 1u);
  const format::Dump d = MustOpen(dumps[0]);
  std::set<std::string> names;
  for (const auto& t : d.threads) names.insert(t.name);
  for (const char* n : {"main-renamed-by-itself", "self-renamed-worker-thread", "other-renamed-by-main"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  for (const char* n : {"main", "worker-original", "other-original"}) EXPECT_FALSE(names.count(n)) << n;
  const Threads ev = RecordedEvents(dumps[0], {"int Renames.beforeRename(int)", "int Renames.afterRename(int)",
                                               "int Renames.renamedByOther(int)"});
  ASSERT_TRUE(ev.count("self-renamed-worker-thread"));
  EXPECT_EQ(ev.at("self-renamed-worker-thread").size(), 2u * (4 + 5));  // beforeRename(3), afterRename(4)
  ASSERT_TRUE(ev.count("other-renamed-by-main"));
  EXPECT_EQ(ev.at("other-renamed-by-main").size(), 2u * (3 + 6));
}

// --threads is checked again when a Java thread renames itself: the worker is
// traced from its rename on, and no other thread is.
TEST_P(JvmModes, ThreadSelectedByItsNewNameIsTracedFromTheRenameOn) {
  REQUIRE_JVM();
  const std::string dir = FreshDir(std::string("jvm-renames-select-") + GetParam());
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--jvm-mode", GetParam(), "--threads",
                                  "self-renamed-*", "--", LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES,
                                  "Renames"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 1u);
  const format::Dump d = MustOpen(dumps[0]);
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_EQ(d.threads[0].name, "self-renamed-worker-thread");
  const Threads ev = RecordedEvents(dumps[0], {"int Renames.beforeRename(int)", "int Renames.afterRename(int)"});
  ASSERT_TRUE(ev.count("self-renamed-worker-thread"));
  const auto& got = ev.at("self-renamed-worker-thread");
  ASSERT_EQ(got.size(), 2u * 5);
  for (const auto& e : got) EXPECT_EQ(e.method, "int Renames.afterRename(int)");
}

// Java names past U+FFFF (a method, a thread named at start and renamed, a
// scope), which the JVM gives in modified UTF-8, are UTF-8 in the dump and in
// `events`, and a --threads glob in UTF-8 selects the thread by them.
TEST_P(JvmModes, NamesPastTheBmpAreUtf8InTheDumpAndMatchGlobs) {
  REQUIRE_JVM();
  const std::string rocket = "\xF0\x9F\x9A\x80", x = "\xF0\x9D\x91\xA5";  // U+1F680, U+1D465
  const std::string method = "int NamesBeyondTheBmp." + x + "(int)";
  const std::string cp = std::string(LOOKBACK_TEST_JAVA_CLASSES) + ":" + LOOKBACK_TEST_JAVA_API;
  const std::string dir = FreshDir(std::string("jvm-utf8-") + GetParam());
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--jvm-mode", GetParam(), "--threads",
                                  "*" + rocket + "*", "--", LOOKBACK_TEST_JAVA, "-cp", cp, "NamesBeyondTheBmp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("names done"), std::string::npos) << r.out;
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  const format::Dump d = MustOpen(dumps[0]);
  ASSERT_EQ(d.threads.size(), 1u) << "only the thread the glob names is traced";
  EXPECT_EQ(d.threads[0].name, "r" + rocket + "renamed");
  const Threads ev = RecordedEvents(dumps[0], {method, "scope-" + rocket});
  ASSERT_TRUE(ev.count("r" + rocket + "renamed"));
  const std::vector<NamedEvent> want = {{false, method}, {false, method}, {false, method}, {true, method},
                                        {true, method},  {true, method},  {false, "scope-" + rocket},
                                        {false, method}, {false, method}, {true, method},
                                        {true, method},  {true, "scope-" + rocket}};
  EXPECT_EQ(ev.at("r" + rocket + "renamed"), want);
  // No surrogate half (ED A0..BF) anywhere in what `events` writes.
  const RunResult events = RunProgram({Cli(), "events", dumps[0]});
  for (size_t i = 0; i + 1 < events.out.size(); ++i) {
    ASSERT_FALSE(static_cast<unsigned char>(events.out[i]) == 0xED &&
                 static_cast<unsigned char>(events.out[i + 1]) >= 0xA0)
        << "modified UTF-8 at byte " << i;
  }
}

// Nanoscope's text file: the methods pushed, and whether pushes and pops
// balance with non-decreasing timestamps.
struct NanoscopeFile {
  std::vector<std::string> pushed;
  bool balanced = true, ordered = true;
};

NanoscopeFile ReadNanoscope(const std::string& path) {
  NanoscopeFile f;
  std::ifstream in(path);
  long long depth = 0, last = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const long long ts = std::stoll(line.substr(0, colon));
    f.ordered &= ts >= last;
    last = ts;
    const std::string what = line.substr(colon + 1);
    if (what == "POP") {
      f.balanced &= --depth >= 0;
    } else {
      ++depth;
      f.pushed.push_back(what);
    }
  }
  f.balanced &= depth == 0;
  return f;
}

// Whether HotSpot's JFR fast time is on here: it needs an invariant TSC and a
// frequency in the CPU's brand string ("@ 2.50GHz": Intel's have one, AMD's
// not), and then the probe writes timed records itself (jfr_clock.cc).
// What a dump written before the agent thread set the JFR clock up says.
constexpr const char* kJfrClockNotYet = "timed records go through JNI: the JFR clock was not set up yet when this dump";

bool HotSpotFastTimeExpected() {
  std::ifstream in("/proc/cpuinfo");
  bool invariant = false, frequency = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) frequency = frequency || line.find("GHz") != std::string::npos;
    if (line.rfind("flags", 0) == 0) invariant = invariant || line.find(" nonstop_tsc") != std::string::npos;
  }
  return invariant && frequency;
}

// A thread --threads no longer selects stops being recorded at once, also
// while its probes write timed records from Java (the JFR clock): the probe
// caches the thread's ring, and the runtime's stop (next_sync 0) and the
// agent's rename hook must both send it back to the natives.
TEST(JvmExactClock, AThreadThatIsNoLongerSelectedIsNotRecordedFromJava) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-exact-deselect");
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--threads", "traced-*", "--jvm-include",
                                  "Deselects.*", "--jvm-probe-inlined", "--budget", "off", "--", LOOKBACK_TEST_JAVA,
                                  "-cp", LOOKBACK_TEST_JAVA_CLASSES, "Deselects", "400"},
                                 {{"LOOKBACK_JVM_STARTUP_WINDOW", "0"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("deselected true"), std::string::npos) << r.out;
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  const Threads ev = RecordedEvents(dumps[0], {"int Deselects.before(int)", "int Deselects.after(int)"});
  size_t before = 0, after = 0;
  for (const auto& [thread, events] : ev) {
    for (const auto& e : events) ++(e.method == "int Deselects.after(int)" ? after : before);
  }
  EXPECT_GT(before, 0u);
  EXPECT_EQ(after, 0u);
  const RunResult info = RunProgram({Cli(), "info", dumps[0]});
  // The agent thread that sets the JFR clock up may not be done in a short
  // run on a loaded machine; then the dump says so.
  if (HotSpotFastTimeExpected() && info.out.find(kJfrClockNotYet) == std::string::npos) {
    EXPECT_NE(info.out.find("timed records from Java read the TSC"), std::string::npos) << info.out;
  }
}

// Thread.setName("START_TRACING") / ("STOP_TRACING:<file>") as Nanoscope's
// wiki shows, on two threads: each file holds that thread's window only, the
// names do not change, and LOOKBACK_ENABLED=0 (nothing traced until asked)
// gives the same windows.
TEST_P(JvmModes, NanoscopeControlWritesEachThreadsWindowAndKeepsItsName) {
  REQUIRE_JVM();
  for (const bool off_until_asked : {false, true}) {
    SCOPED_TRACE(off_until_asked ? "LOOKBACK_ENABLED=0" : "tracing on");
    const std::string dir = FreshDir(std::string("jvm-nanoscope-") + GetParam() + (off_until_asked ? "-off" : ""));
    std::map<std::string, std::string> env;
    if (off_until_asked) env["LOOKBACK_ENABLED"] = "0";
    const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--jvm-mode", GetParam(), "--", LOOKBACK_TEST_JAVA,
                                    "-cp", LOOKBACK_TEST_JAVA_CLASSES, "NanoscopeControl", "main.txt", "traces/worker.txt"},
                                   env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("names main nanoscope-worker"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("files ready"), std::string::npos) << r.out;
    for (const auto& [file, n] : {std::pair<std::string, int>{"main.txt", 3}, {"traces/worker.txt", 5}}) {
      SCOPED_TRACE(file);
      const NanoscopeFile f = ReadNanoscope(dir + "/" + file);
      EXPECT_TRUE(f.balanced);
      EXPECT_TRUE(f.ordered);
      const auto count = [&](const std::string& m) { return std::count(f.pushed.begin(), f.pushed.end(), m); };
      EXPECT_EQ(count("void NanoscopeControl.tracedWork(int)"), 1);
      EXPECT_EQ(count("int NanoscopeControl.depth(int)"), n + 1);
      EXPECT_EQ(count("void NanoscopeControl.untracedBefore()"), 0);
      EXPECT_EQ(count("void NanoscopeControl.untracedAfter()"), 0);
    }
    // The flush's own dump is not left behind, and no thread took a control name.
    for (const auto& path : Dumps(dir)) {
      const format::Dump d = MustOpen(path);
      EXPECT_NE(d.process.reason, "nanoscope STOP_TRACING");
      for (const auto& t : d.threads) EXPECT_EQ(t.name.find("TRACING"), std::string::npos) << t.name;
    }
  }
}

// A STOP_TRACING path that leaves the dump directory is refused with one
// line, and nothing is written there; the program runs on.
TEST(JvmNanoscope, StopTracingOutsideTheDumpDirectoryIsRefused) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-nanoscope-escape");
  const std::string outside = FreshDir("jvm-nanoscope-outside");
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir + "/dumps", "--", LOOKBACK_TEST_JAVA, "-cp",
                                  LOOKBACK_TEST_JAVA_CLASSES, "NanoscopeControl", "../../jvm-nanoscope-outside/a.txt",
                                  outside + "/b.txt", "nowait"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("names main nanoscope-worker"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("STOP_TRACING:../../jvm-nanoscope-outside/a.txt refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("STOP_TRACING:" + outside + "/b.txt refused"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(outside + "/a.txt").good());
  EXPECT_FALSE(std::ifstream(outside + "/b.txt").good());
}

// Java and native code in one timeline: Java method > JNI entry > native
// functions (built with the hooks) > Java callback (an upcall) > Java method,
// nested in the order they ran, in one thread's track.
TEST_P(JvmModes, JavaAndNativeCallsNestInOneThreadsTrack) {
  REQUIRE_JVM();
  const std::string lib = Program("libjni_mixed.so");
  if (access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << "libjni_mixed.so not built (no JNI headers)";
  const std::string dir = FreshDir(std::string("jvm-mixed-") + GetParam());
  // --jvm-probe-inlined: the chain ends in javaLeaf, a method C2 always inlines.
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--jvm-mode", GetParam(), "--jvm-probe-inlined", "--",
                                  LOOKBACK_TEST_JAVA, "-Dmixed.lib=" + lib, "-cp", LOOKBACK_TEST_JAVA_CLASSES,
                                  "MixedJni", "mixed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mixed 18"), std::string::npos) << r.out;  // javaOuter(i) = 2i + 4, for i in 0..2
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 1u);
  const std::vector<std::string> chain = {"int MixedJni.javaOuter(int)", "Java_MixedJni_nativeWork", "native_middle",
                                          "native_inner", "int MixedJni.callback(int)", "int MixedJni.javaLeaf(int)"};
  const Threads ev = RecordedEvents(dumps[0], std::set<std::string>(chain.begin(), chain.end()));
  ASSERT_TRUE(ev.count("main"));
  std::vector<NamedEvent> want;
  for (int round = 0; round < 3; ++round) {
    for (const auto& m : chain) want.push_back({false, m});
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) want.push_back({true, *it});
  }
  const auto& got = ev.at("main");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "event " << i << ": " << (got[i].exit ? "EXIT " : "ENTER ") << got[i].method;
  }
  // The exporters nest it the same way (folded stacks: one line per stack).
  const std::string folded = dir + "/stacks.folded";
  const RunResult c = RunProgram({Cli(), "convert", "-q", dumps[0], "--to", "folded", "-o", folded});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::ifstream in(folded);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // (Listener mode also shows the native method itself, as JVMTI reports it.)
  for (size_t at; (at = text.find("int MixedJni.nativeWork(int);")) != std::string::npos;) text.erase(at, 29);
  std::string path;
  for (const auto& m : chain) path += (path.empty() ? "" : ";") + m;
  EXPECT_NE(text.find(path), std::string::npos) << text.substr(0, 2000);
}

// A SIGSEGV inside a JNI library: HotSpot reports it (hs_err) and aborts;
// the crash dump is the SIGSEGV, with the Java frames that led to the native
// function that crashed.
TEST_P(JvmModes, NativeCrashUnderJavaFramesIsDumpedWithBoth) {
  REQUIRE_JVM();
  const std::string lib = Program("libjni_mixed.so");
  if (access(lib.c_str(), R_OK) != 0) GTEST_SKIP() << "libjni_mixed.so not built (no JNI headers)";
  const std::string dir = FreshDir(std::string("jvm-jni-crash-") + GetParam());
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-mode", GetParam(), "--",
                                  LOOKBACK_TEST_JAVA, "-XX:ErrorFile=" + dir + "/hs_err.log", "-Dmixed.lib=" + lib,
                                  "-cp", LOOKBACK_TEST_JAVA_CLASSES, "MixedJni", "crash"});
  EXPECT_NE(r.exit_code, 0);
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  const format::Dump d = MustOpen(dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "crash");
  EXPECT_EQ(d.trigger->signal, static_cast<uint32_t>(SIGSEGV)) << d.trigger->subject;
  auto stack = OpenFrames(dumps[0], "jni-crasher");
  // (Listener mode also shows the native method itself, as JVMTI reports it.)
  std::erase(stack, "void MixedJni.crashNative()");
  const std::vector<std::string> tail = {"void MixedJni.javaCrashOuter()", "Java_MixedJni_crashNative",
                                         "native_crash_here"};
  ASSERT_GE(stack.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(stack.end() - 3, stack.end()), tail);
}

// lookback.jar on the example program (examples/java/Frames.java): scopes
// feed --slow-scope, Lookback.dump returns the path of a dump it wrote; the
// same program without the agent runs and every call is a no-op.
TEST_P(JvmModes, JavaApiScopesTriggerSlowScopeAndDumpReturnsItsPath) {
  REQUIRE_JVM();
  const std::string kRender = "long Frames.render(int)";
  const std::string classes = Program("java-example");
  if (access((classes + "/Frames.class").c_str(), R_OK) != 0) GTEST_SKIP() << "examples/java not built";
  const std::string cp = classes + ":" + LOOKBACK_TEST_JAVA_API;
  const std::string dir = FreshDir(std::string("jvm-api-") + GetParam());
  const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir, "--no-exit-dump", "--jvm-mode", GetParam(),
                                  "--slow-scope", "frame:50ms", "--", LOOKBACK_TEST_JAVA, "-cp", cp, "Frames"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("lookback agent: tracing this thread"), std::string::npos) << r.out;
  const size_t at = r.out.find("dump: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string returned = r.out.substr(at + 6, r.out.find(' ', at + 6) - at - 6);
  bool slow_scope = false, explicit_dump = false;
  for (const auto& path : Dumps(dir)) {
    const format::Dump d = MustOpen(path);
    ASSERT_TRUE(d.trigger.has_value());
    if (d.trigger->detector == "slow-scope") {
      slow_scope = true;
      EXPECT_EQ(d.trigger->subject, "frame");
      EXPECT_GE(d.trigger->measured_ns, d.trigger->threshold_ns);  // seen while the 120 ms frame ran
    } else if (d.process.reason == "frames done") {
      explicit_dump = true;
      EXPECT_EQ(std::filesystem::canonical(path), std::filesystem::canonical(returned));
      // The scopes are in the trace as calls named "frame", each around its
      // frame's render(), and nested exactly: no frame of the API's own
      // methods (Lookback.scope(), Scope.close()) straddles a scope's records.
      const Threads ev = RecordedEvents(path, {"frame", kRender});
      ASSERT_TRUE(ev.count("main"));
      std::vector<NamedEvent> want;
      for (int frame = 0; frame < 20; frame++) {
        want.insert(want.end(), {{false, "frame"}, {false, kRender}, {true, kRender}, {true, "frame"}});
      }
      EXPECT_EQ(ev.at("main"), want);
      const RunResult events = RunProgram({Cli(), "events", path});
      EXPECT_EQ(events.out.find("lookback.Lookback"), std::string::npos) << "the API's methods are not traced";
      const RunResult report = RunProgram({Cli(), "report", path});
      EXPECT_EQ(report.out.find("missing exit"), std::string::npos) << report.out;
      EXPECT_EQ(report.out.find("matched no entry"), std::string::npos) << report.out;
    }
  }
  EXPECT_TRUE(slow_scope);
  EXPECT_TRUE(explicit_dump);

  const RunResult plain = RunProgram({LOOKBACK_TEST_JAVA, "-cp", cp, "Frames"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("lookback agent: not tracing"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("dump: null"), std::string::npos) << plain.out;
}

// `lookback dump PID` (the control socket) and the dump signal, which for a
// JVM is SIGPWR (HotSpot takes SIGUSR2 for itself), both dump a running JVM,
// which runs on and exits normally.
TEST(JvmDump, DumpCommandAndDumpSignalWorkOnARunningJvm) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-dump");
  const Background bg = StartReadingStdout({Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-mode", "listener",
                                            "--jvm-include", "Triggers.*", "--", LOOKBACK_TEST_JAVA, "-cp",
                                            LOOKBACK_TEST_JAVA_CLASSES, "Triggers", "wait", dir});
  ASSERT_GT(bg.pid, 0);
  const pid_t rec = bg.pid;
  FILE* f = bg.out;
  int pid = 0;
  ASSERT_EQ(fscanf(f, "ready %d", &pid), 1);
  RunResult r = RunProgram({Cli(), "dump", std::to_string(pid), "--reason", "asked by the test"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  RunResult s = RunProgram({Cli(), "dump", std::to_string(pid), "--signal", "PWR"});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  for (int i = 0; i < 1000 && Dumps(dir + "/dumps").size() < 2; ++i) usleep(10000);
  std::ofstream(dir + "/stop") << "stop";
  int status = 0;
  waitpid(rec, &status, 0);
  fclose(f);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the JVM ran on and exited normally";
  std::set<std::string> reasons;
  for (const auto& p : Dumps(dir + "/dumps")) {
    const format::Dump d = MustOpen(p);
    reasons.insert(d.process.reason);
    EXPECT_NE(FindThread(d, "main"), nullptr);
  }
  EXPECT_EQ(reasons, (std::set<std::string>{"asked by the test", "signal Power failure", "exit"}));
}

// `lookback attach PID` traces a JVM started without lookback, from the
// moment it attaches (the classes already loaded are rewritten), with its
// threads' Java names; `lookback detach PID` gives the classes back, and
// nothing is recorded after it; the JVM runs on and exits normally.
TEST(JvmAttach, AttachTracesARunningJvmAndDetachRestoresIt) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-attach");
  const std::string cp = std::string(LOOKBACK_TEST_JAVA_CLASSES) + ":" + LOOKBACK_TEST_JAVA_API;
  const Background bg = StartReadingStdout({LOOKBACK_TEST_JAVA, "-cp", cp, "AttachTarget", dir});
  ASSERT_GT(bg.pid, 0);
  const pid_t jvm = bg.pid;
  // Whatever fails below, the JVM is told to stop and is waited for.
  struct Reaper {
    std::string stop;
    pid_t pid;
    int status = -1;
    ~Reaper() {
      if (status != -1) return;
      std::ofstream(stop) << "1";
      for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);
      if (waitpid(pid, &status, WNOHANG) == 0) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    }
  } reaper{dir + "/stop", jvm};
  FILE* f = bg.out;
  int pid = 0, phase = 0;
  long before_attach = 0, while_attached = 0, ignored = 0;
  ASSERT_EQ(fscanf(f, "ready %d", &pid), 1);
  ASSERT_EQ(fscanf(f, " phase %d after %ld", &phase, &ignored), 2);
  ASSERT_EQ(phase, 1);
  const RunResult listener = RunProgram({Cli(), "attach", std::to_string(pid), "--jvm-mode", "listener"});
  EXPECT_EQ(listener.exit_code, 2);
  EXPECT_NE(listener.err.find("listener cannot attach"), std::string::npos) << listener.err;
  const RunResult a = RunProgram({Cli(), "attach", std::to_string(pid), "--dir", dir + "/dumps", "--jvm-include",
                                  "AttachTarget.*"});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  std::ofstream(dir + "/attached") << "1";
  ASSERT_EQ(fscanf(f, " phase %d after %ld", &phase, &before_attach), 2);
  ASSERT_EQ(phase, 2);
  const RunResult d1 = RunProgram({Cli(), "dump", std::to_string(pid), "--reason", "attached"});
  EXPECT_EQ(d1.exit_code, 0) << d1.err;
  const RunResult det = RunProgram({Cli(), "detach", std::to_string(pid)});
  EXPECT_EQ(det.exit_code, 0) << det.err;
  std::ofstream(dir + "/detached") << "1";
  ASSERT_EQ(fscanf(f, " phase %d after %ld", &phase, &while_attached), 2);
  ASSERT_EQ(phase, 3);
  const RunResult d2 = RunProgram({Cli(), "dump", std::to_string(pid), "--reason", "detached"});
  EXPECT_EQ(d2.exit_code, 0) << d2.err;
  std::ofstream(dir + "/stop") << "1";
  // Nothing else on its stdout: attaching printed nothing into the program's
  // output. lookback.jar's class, initialised before the attach (every call
  // a no-op then), answers once the agent is attached: a dump, its path.
  char rest[256] = {};
  const size_t n = fread(rest, 1, sizeof rest - 1, f);
  EXPECT_EQ(std::string(rest, n), "\napi before false/null while true/dump\ndone\n");
  waitpid(jvm, &reaper.status, 0);
  fclose(f);
  EXPECT_TRUE(WIFEXITED(reaper.status) && WEXITSTATUS(reaper.status) == 0) << "the JVM ran on and exited normally";

  std::map<std::string, Threads> by_reason;
  for (const auto& path : Dumps(dir + "/dumps")) {
    const format::Dump d = MustOpen(path);
    EXPECT_EQ(d.process.name, "java");
    by_reason[d.process.reason] = RecordedEvents(path, {"long AttachTarget.beforeAttach(int)",
                                                        "long AttachTarget.whileAttached(int)",
                                                        "long AttachTarget.afterDetach(int)"});
  }
  ASSERT_TRUE(by_reason.count("attached") && by_reason.count("detached"));
  EXPECT_TRUE(by_reason.count("api-while-attached")) << "Lookback.dump wrote the dump it returned";
  for (const char* reason : {"attached", "detached"}) {
    SCOPED_TRACE(reason);
    const Threads& t = by_reason[reason];
    ASSERT_TRUE(t.count("attach-worker-with-a-long-name")) << "the worker under its whole Java name";
    std::map<std::string, size_t> calls;
    for (const auto& e : t.at("attach-worker-with-a-long-name")) calls[e.method] += e.exit ? 0 : 1;
    // The calls made while attached (at least the 20 before the first dump;
    // tracing stops as the detach begins), none after the detach (the classes
    // are the originals again), and of the calls before the test said
    // "attached" only those after the attach: never the 20 before it.
    EXPECT_GE(calls["long AttachTarget.whileAttached(int)"], 20u);
    EXPECT_LE(calls["long AttachTarget.whileAttached(int)"], static_cast<size_t>(while_attached));
    EXPECT_EQ(calls["long AttachTarget.afterDetach(int)"], 0u);
    EXPECT_LE(calls["long AttachTarget.beforeAttach(int)"], static_cast<size_t>(before_attach - 20));
  }
}

// Listener mode (JVMTI events) and inline mode (compiled-in probes) record
// the same calls, every CallTree method included (those the program does not
// log itself too: the lambda, next(), Boom's constructor).
TEST(JvmModesAgree, ListenerAndInlineRecordTheSameCalls) {
  REQUIRE_JVM();
  const JvmRun inl = RecordCallTree("jvm-agree-inline", "inline", 2, 100);
  const JvmRun lis = RecordCallTree("jvm-agree-listener", "listener", 2, 100);
  ASSERT_FALSE(inl.dump.empty()) << inl.result.err;
  ASSERT_FALSE(lis.dump.empty()) << lis.result.err;
  auto all_calltree = [](const std::string& dump) {
    const format::Dump d = MustOpen(dump);
    std::set<std::string> methods;
    for (const auto& [key, name] : d.names) {
      if (name.find(" CallTree") != std::string::npos) methods.insert(name);
    }
    return RecordedEvents(dump, methods);
  };
  const Threads a = all_calltree(inl.dump), b = all_calltree(lis.dump);
  ASSERT_EQ(a.size(), b.size());
  size_t compared = 0;
  for (const auto& [thread, evs] : a) {
    ASSERT_TRUE(b.count(thread)) << thread;
    ASSERT_EQ(evs.size(), b.at(thread).size()) << thread;
    for (size_t i = 0; i < evs.size(); ++i) ASSERT_EQ(evs[i], b.at(thread)[i]) << thread << " event " << i;
    compared += evs.size();
  }
  EXPECT_GT(compared, 1000u);
}

// The always-inlined rule (docs/jvm.md, "Methods the JIT inlines"): by
// default the methods C2 always inlines (tests/java/Inlined.java: a getter
// and a small leaf, each called 10 000 times) get no probes, the `jvm` note
// that `lookback info` shows counts them and names the rule, and the methods
// just outside the rule (a loop, more than 35 bytes, a call) are traced;
// --jvm-probe-inlined brings every call back. Both under -Xverify:all.
struct InlinedRun {
  RunResult result, info;
  std::map<std::string, size_t> enters, exits;  // by method name
};

InlinedRun RecordInlined(const std::string& name, const std::vector<std::string>& flags) {
  InlinedRun run;
  const std::string dir = FreshDir(name);
  std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir, "--jvm-include", "Inlined.*"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", LOOKBACK_TEST_JAVA, "-Xverify:all", "-cp", LOOKBACK_TEST_JAVA_CLASSES, "Inlined", "10"});
  run.result = RunProgram(argv);
  const auto dumps = Dumps(dir);
  if (dumps.size() != 1) return run;
  run.info = RunProgram({Cli(), "info", dumps[0]});
  RunResult ev = RunProgram({Cli(), "events", dumps[0]});
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  std::istringstream in(ev.out);
  for (std::string line; std::getline(in, line);) {
    const auto f = Split(line, '\t');
    if (f.size() < 5) continue;
    if (f[2] == "ENTER") ++run.enters[f[4]];
    if (f[2] == "EXIT") ++run.exits[f[4]];
  }
  return run;
}

constexpr const char* kGetter = "int Inlined.getValue()";
constexpr const char* kLeaf = "int Inlined.leaf(int)";

TEST(JvmInlined, MethodsC2AlwaysInlinesGetNoProbesByDefaultAndTheNoteCountsThem) {
  REQUIRE_JVM();
  const InlinedRun run = RecordInlined("jvm-inlined-default", {});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("getValue 10000 leaf 10000"), std::string::npos) << run.result.out;
  ASSERT_EQ(run.info.exit_code, 0) << run.result.err << run.info.err;
  EXPECT_EQ(run.enters.count(kGetter), 0u);
  EXPECT_EQ(run.enters.count(kLeaf), 0u);
  EXPECT_EQ(run.exits.count(kGetter) + run.exits.count(kLeaf), 0u);
  // Just outside the rule: traced, every call.
  EXPECT_EQ(run.enters.count("long Inlined.work(Inlined, int)") ? run.enters.at("long Inlined.work(Inlined, int)") : 0, 10u);
  EXPECT_EQ(run.enters.count("int Inlined.looping(int)") ? run.enters.at("int Inlined.looping(int)") : 0, 10u);
  EXPECT_EQ(run.enters.count("int Inlined.bigLeaf(int)") ? run.enters.at("int Inlined.bigLeaf(int)") : 0, 10u);
  EXPECT_EQ(run.enters.count("int Inlined.withCall(int)") ? run.enters.at("int Inlined.withCall(int)") : 0, 10u);
  // The note: exactly the two methods of Inlined (the others are outside --jvm-include, not counted here).
  EXPECT_NE(run.info.out.find("2 methods left unprobed: C2 always inlines them (<= 35 bytecode bytes, no calls, no "
                              "loops); --jvm-probe-inlined"),
            std::string::npos)
      << run.info.out;
}

TEST(JvmInlined, ProbeInlinedTracesEveryCall) {
  REQUIRE_JVM();
  const InlinedRun run = RecordInlined("jvm-inlined-probe", {"--jvm-probe-inlined"});
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  ASSERT_EQ(run.info.exit_code, 0) << run.result.err << run.info.err;
  for (const char* m : {kGetter, kLeaf}) {
    SCOPED_TRACE(m);
    ASSERT_TRUE(run.enters.count(m));
    EXPECT_EQ(run.enters.at(m), 10000u);
    EXPECT_EQ(run.exits.count(m) ? run.exits.at(m) : 0, 10000u);
  }
  EXPECT_EQ(run.info.out.find("methods left unprobed"), std::string::npos) << run.info.out;
  EXPECT_NE(run.info.out.find("methods C2 always inlines are traced too"), std::string::npos) << run.info.out;
  // The exact clock (the default): no untimed records from Java; the probes
  // call the natives, or, in a run that passed the start-up window (1 s, on a
  // loaded machine), write timed records with the JFR clock.
  // (FastClock.JvmProgramsBehaveAsInExactMode runs this with LOOKBACK_CLOCK=fast.)
  const char* clock = getenv("LOOKBACK_CLOCK");
  const bool fast = clock != nullptr && std::string(clock).rfind("fast", 0) == 0;
  if (fast) {
    EXPECT_NE(run.info.out.find("probes write the untimed records"), std::string::npos) << run.info.out;
  } else {
    EXPECT_EQ(run.info.out.find("untimed records"), std::string::npos) << run.info.out;
    EXPECT_TRUE(run.info.out.find("probes record through JNI") != std::string::npos ||
                run.info.out.find("probes write timed records from Java") != std::string::npos)
        << run.info.out;
  }
}

// The agent's own option, outside `record`: inlined=probe on the -agentpath
// line does what --jvm-probe-inlined does; a wrong value stops the JVM.
TEST(JvmInlined, AgentOptionOnTheAgentpathLine) {
  REQUIRE_JVM();
  const std::string cli = Cli();
  const std::string agent = cli.substr(0, cli.rfind('/') + 1) + "liblookback-jvm.so";
  const std::string dir = FreshDir("jvm-inlined-agentpath");
  const RunResult r = RunProgram({LOOKBACK_TEST_JAVA,
                                  "-agentpath:" + agent + "=include=Inlined.*,inlined=probe,dir=" + dir + ",dump_at_exit=1",
                                  "-cp", LOOKBACK_TEST_JAVA_CLASSES, "Inlined", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  const Threads ev = RecordedEvents(dumps[0], {kGetter, kLeaf});
  ASSERT_TRUE(ev.count("main"));
  EXPECT_EQ(ev.at("main").size(), 2u * 2 * 2000);  // enter and exit of 2000 calls of each
  const RunResult bad = RunProgram({LOOKBACK_TEST_JAVA, "-agentpath:" + agent + "=inlined=sometimes,dir=" + dir,
                                    "-cp", LOOKBACK_TEST_JAVA_CLASSES, "Inlined", "1"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("inlined must be skip or probe"), std::string::npos) << bad.err;
  // A misspelt key is named (it changed nothing before, silently); the program runs.
  const RunResult typo = RunProgram({LOOKBACK_TEST_JAVA, "-agentpath:" + agent + "=modee=listener,dir=" + dir,
                                     "-cp", LOOKBACK_TEST_JAVA_CLASSES, "Inlined", "1"});
  EXPECT_EQ(typo.exit_code, 0) << typo.err;
  EXPECT_NE(typo.err.find("unknown option 'modee', ignored"), std::string::npos) << typo.err;
  EXPECT_EQ(r.err.find("unknown option"), std::string::npos) << r.err;
}

// The fast clock: LookbackProbe writes the untimed records between readings
// itself, with stores into the thread's ring (writes=java, the default), or
// every record goes through JNI into the C++ hot path (writes=native). Both
// must decode to the program's own log, call for call, on every thread: a
// Java writer that disagrees with hot_path.h about the ring's layout, the
// record encoding or the publication protocol fails here.
// CallTree's run (4 threads) against its own log: the one dump in
// `dumps`, each thread's calls equal to the program's.
void CompareCallTree(JvmRun* run, const std::string& dumps_dir, const std::string& gt) {
  const auto dumps = Dumps(dumps_dir);
  ASSERT_EQ(dumps.size(), 1u) << run->result.err;
  run->dump = dumps[0];
  run->truth = ReadGroundTruth(gt);
  std::set<std::string> methods;
  for (const auto& [thread, evs] : run->truth) {
    for (const auto& e : evs) methods.insert(e.method);
  }
  run->recorded = RecordedEvents(run->dump, methods);
  ExpectSameCalls(*run, 4);
}

class JvmFastClock : public ::testing::TestWithParam<const char*> {};

TEST_P(JvmFastClock, EveryThreadsCallsEqualGroundTruthWhicheverSideWritesTheRecords) {
  REQUIRE_JVM();
  const std::string writes = GetParam();
  const std::string cli = Cli();
  const std::string agent = cli.substr(0, cli.rfind('/') + 1) + "liblookback-jvm.so";
  const std::string dir = FreshDir("jvm-fast-" + writes);
  const std::string gt = dir + "/ground-truth.txt";
  JvmRun run;
  // writes=java through the agent's own option; native as a user picks it, through record.
  if (writes == "java") {
    run.result = RunProgram({LOOKBACK_TEST_JAVA,
                             "-agentpath:" + agent + "=include=CallTree.*,inlined=probe,writes=java,clock=fast,budget=off,dir=" +
                                 dir + "/dumps,dump_at_exit=1",
                             "-cp", LOOKBACK_TEST_JAVA_CLASSES, "CallTree", "4", "2000", "42", gt});
  } else {
    run.result = RunProgram({Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-include", "CallTree.*",
                             "--jvm-probe-inlined", "--jvm-writes", writes, "--clock", "fast", "--budget", "off", "--",
                             LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "CallTree", "4", "2000", "42", gt});
  }
  ASSERT_NO_FATAL_FAILURE(CompareCallTree(&run, dir + "/dumps", gt));
  const RunResult info = RunProgram({Cli(), "info", run.dump});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("fast clock on"), std::string::npos) << info.out;
  if (writes == "java") {
    // Every worker, and main, wrote its untimed records from Java.
    // ("... and timed records from Java (" once a run passed the start-up window: the JFR clock)
    const size_t at = info.out.find("probes write the untimed records of fast-clock rings");
    ASSERT_NE(at, std::string::npos) << info.out;
    EXPECT_GE(std::stoul(info.out.substr(info.out.find('(', at) + 1)), 4u) << info.out;
  } else {
    EXPECT_NE(info.out.find("probes record through JNI"), std::string::npos) << info.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Writes, JvmFastClock, ::testing::Values("java", "native"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// The exact clock's records written from Java, stamped with
// jdk.jfr.internal.JVM.counterTime plus HotSpot's epoch, and the natives'
// (syncs, new epochs, the first records), in one ring: the calls equal the
// program's own log, and `verify` finds every timestamp in order. A Java
// writer that disagreed with hot_path.h, or a clock a tick off the
// recorder's, fails here.
// (writes=native, every record through the natives, is JvmFastClock's
// second case and every other JVM test's run of under a second.)
TEST(JvmExactClock, EveryThreadsCallsEqualGroundTruthWithTimedRecordsWrittenFromJava) {
  REQUIRE_JVM();
  const std::string writes = "java";
  // The agent thread that sets the clock up runs at the lowest priority: on
  // a loaded machine it may not be done before this short program ends. The
  // dump then says so, and the run is tried again (at most three times).
  for (int attempt = 1;; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const std::string dir = FreshDir("jvm-exact-" + writes + "-" + std::to_string(attempt));
    const std::string gt = dir + "/ground-truth.txt";
    JvmRun run;
    // The start-up window is 0 so that the clock is set up at once, as it is
    // after a second in a program that runs longer.
    run.result = RunProgram({Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-include", "CallTree.*",
                             "--jvm-probe-inlined", "--jvm-writes", writes, "--budget", "off", "--",
                             LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "CallTree", "4", "20000", "42", gt},
                            {{"LOOKBACK_JVM_STARTUP_WINDOW", "0"}});
    ASSERT_NO_FATAL_FAILURE(CompareCallTree(&run, dir + "/dumps", gt));
    const RunResult verify = RunProgram({Cli(), "verify", run.dump});
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    const RunResult info = RunProgram({Cli(), "info", run.dump});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const bool timed = info.out.find("timed records from Java read the TSC with jdk.jfr.internal.JVM.counterTime") !=
                       std::string::npos;
    if (!timed) {
      // Said, with the reason: the timed records went through the natives.
      EXPECT_NE(info.out.find("timed records go through JNI: "), std::string::npos) << info.out;
      if (!HotSpotFastTimeExpected()) GTEST_SKIP() << "HotSpot's JFR fast time is off on this CPU";
      if (info.out.find(kJfrClockNotYet) != std::string::npos && attempt < 3) continue;
    }
    ASSERT_TRUE(timed) << info.out;
    const size_t at = info.out.find("timed records from Java (");  // (with LOOKBACK_CLOCK=fast: "untimed ... and timed")
    ASSERT_NE(at, std::string::npos) << info.out;
    EXPECT_GE(std::stoul(info.out.substr(info.out.find('(', at) + 1)), 4u) << info.out;
    return;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, JvmModes, ::testing::Values("inline", "listener"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// A JDK of at least `feature` (21 for virtual threads) under /usr/lib/jvm,
// by its `release` file: the directory of its bin/, or "" when none is.
std::string InstalledJdk(int feature) {
  std::error_code ec;
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/jvm", ec)) {
    std::ifstream in(e.path() / "release");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("JAVA_VERSION=\"", 0) != 0) continue;
      if (std::atoi(line.c_str() + 14) >= feature && std::filesystem::exists(e.path() / "bin/javac")) {
        found.push_back((e.path() / "bin").string());
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found.empty() ? "" : found.front();
}

// Virtual threads are recorded in their carriers' rings, so a frame across
// an unmount is not exact (docs/jvm.md, "Threads"): the `jvm` note says so
// once the program ran one, and only then (the same tasks on platform
// threads get no such word). The traced program prints what it prints
// untraced either way.
TEST(JvmVirtualThreads, TheNoteSaysVirtualThreadsRanAndAPlatformThreadProgramGetsNoSuchWord) {
  REQUIRE_JVM();
  const std::string jdk = InstalledJdk(21);
  if (jdk.empty()) GTEST_SKIP() << "no JDK 21 or later under /usr/lib/jvm";
  const std::string dir = FreshDir("jvm-virtual-threads");
  const RunResult built = RunProgram({jdk + "/javac", "-d", dir + "/classes",
                                      std::string(LOOKBACK_SOURCE_DIR) + "/tests/java21/VirtualTasks.java"});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const RunResult plain = RunProgram({jdk + "/java", "-cp", dir + "/classes", "VirtualTasks", "virtual"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_NE(plain.out.find("sum "), std::string::npos) << plain.out;
  for (const char* kind : {"virtual", "platform"}) {
    const std::string dumps = dir + "/dumps-" + kind;
    const RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dumps, "--", jdk + "/java", "-cp", dir + "/classes",
                                    "VirtualTasks", kind});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out) << kind;
    const auto files = Dumps(dumps);
    ASSERT_EQ(files.size(), 1u) << r.err;
    const RunResult info = RunProgram({Cli(), "info", files[0]});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const bool said = info.out.find("virtual threads ran: each one's calls are recorded in the rings of the carrier") !=
                      std::string::npos;
    EXPECT_EQ(said, std::string(kind) == "virtual") << kind << "\n" << info.out;
    // The tasks' own methods were traced either way.
    const RunResult ev = RunProgram({Cli(), "events", files[0]});
    ASSERT_EQ(ev.exit_code, 0) << ev.err;
    EXPECT_NE(ev.out.find("long VirtualTasks.task(int)"), std::string::npos) << kind;
  }
}

// At the JVM's last safepoint HotSpot waits, in steps of 10 ms, for every
// Java thread that is in native code (VM_Exit). The probes' JNI calls and
// the budget's agent thread are native code: a JVM that ran the agent used
// to exit 10 ms late in most runs (the Signal Dispatcher leaving through a
// probed Thread.exit, the agent thread waiting in a condition variable). The
// gap is read from HotSpot's own log: the final safepoint begins, then its
// final audit. Sixteen short runs: a gap of 9 ms or more now and then is the
// machine (a preempted VM thread), in more than half of them the bug (9 of
// 15). A compiler thread is in native code while it compiles, so HotSpot
// waits for a compilation under way at exit too, the agent or not: -Xbatch
// makes main wait for each of its compilations, which leaves none under way
// when it exits (a slower CI machine waited in 7 exits of 16 without it).
// Sixteen plain runs beside them are the control: the agent fails the test
// only when it waits where the plain JVM does not. Without
// -XX:+CriticalJNINatives (which record adds on JDK 17), as on every later
// JDK and on a user's own -agentpath line.
TEST(JvmExit, HotSpotDoesNotWaitForTheAgentAtTheLastSafepoint) {
  REQUIRE_JVM();
  const std::string cli = Cli();
  const std::string agent = cli.substr(0, cli.rfind('/') + 1) + "liblookback-jvm.so";
  const std::string dir = FreshDir("jvm-exit-wait");
  // The gap in ns between the last safepoint's start and its final audit; -1
  // when the log does not show them (another JDK's log).
  auto exit_gap = [&](int i, bool traced) -> double {
    const std::string run = dir + (traced ? "/traced-" : "/plain-") + std::to_string(i);
    const std::string log = run + ".log";
    std::vector<std::string> argv = {LOOKBACK_TEST_JAVA, "-Xbatch",
                                     "-Xlog:safepoint=debug,monitorinflation=debug:file=" + log + ":uptimenanos"};
    if (traced) argv.push_back("-agentpath:" + agent + "=dir=" + run + "-dumps,dump_at_exit=1");
    for (const char* a : {"-cp", LOOKBACK_TEST_JAVA_CLASSES, "HotLoop", "0"}) argv.push_back(a);
    const RunResult r = RunProgram(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (traced) {
      EXPECT_EQ(Dumps(run + "-dumps").size(), 1u) << r.err;  // traced, and dumped after the VM was gone
    }
    std::ifstream in(log);
    double begun = -1, audited = -1;
    for (std::string line; std::getline(in, line);) {
      if (line.size() < 2 || line[0] != '[') continue;
      const double ns = std::atof(line.c_str() + 1);
      if (line.find("Safepoint synchronization initiated") != std::string::npos) begun = ns;
      if (line.find("Starting the final audit") != std::string::npos && begun >= 0) audited = ns;
    }
    return begun < 0 || audited < 0 ? -1 : audited - begun;
  };
  int waited = 0, measured = 0, plain_waited = 0;
  std::string gaps;
  for (int i = 0; i < 16; ++i) {
    const double traced = exit_gap(i, true), plain = exit_gap(i, false);
    if (traced < 0) continue;
    ++measured;
    if (traced >= 9e6) ++waited;
    if (plain >= 9e6) ++plain_waited;
    gaps += " " + std::to_string(static_cast<int>(traced / 1e3)) + "/" + std::to_string(static_cast<int>(plain / 1e3));
  }
  if (measured == 0) GTEST_SKIP() << "this JDK's log does not show its last safepoint";
  EXPECT_FALSE(waited * 16 >= measured * 7 && waited >= plain_waited + 4)
      << waited << " of " << measured << " exits waited 10 ms for a thread in native code, against " << plain_waited
      << " without the agent; gaps in us, traced/plain:" << gaps;
}

}  // namespace
}  // namespace lookback::testing
