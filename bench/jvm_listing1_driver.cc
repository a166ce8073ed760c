// Hubble's Listing 1 in Java (bench/java/Listing1.java) under every JVM
// tracing mode, interleaved, medians; the native floor hook beside it.
//
//   jvm_listing1_driver [--rounds N] [--work 0,1,10,100,1000] [--scale F] [--java PATH] [--agent PATH]
// (--agent: another build's liblookback-jvm.so, with its liblookback.so beside it)
//
// Variants, one JVM each (start-up is not timed: the program times its own
// loop after a warm-up that lets C2 compile the chain):
//   uninstrumented   java Listing1
//   off              the agent (inline mode), LOOKBACK_ENABLED=0: probes compiled in, flag false
//   inline           the agent, inline mode, -XX:+CriticalJNINatives (what `lookback record` runs):
//                    timed records written from Java with the JFR clock when the JVM has it
//   inline, JNI      the same without -XX:+CriticalJNINatives (every JDK after 17)
//   inline, natives  inline with every record through the natives (writes=native): the probe of
//                    before the JFR clock (jfr_clock.cc), with -XX:+CriticalJNINatives where the JVM has it
//   listener         the agent, listener mode (JVMTI MethodEntry/MethodExit)
//   fast             inline, LOOKBACK_CLOCK=fast, -XX:+CriticalJNINatives: the probe writes the
//                    untimed records from Java (writes=java, the default), the natives take the readings
//   fast, JNI        the same without -XX:+CriticalJNINatives (every JDK after 17)
//   fast, natives    the fast clock with every record through the natives (writes=native)
//   native floor     bench/listing1_gcc_floor against listing1_gcc_plain (the C++ floor hook)
// ns per trace point = (variant - uninstrumented) / 20, per round, then the median.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using bench::Fmt;
using bench::Median;

enum Kind { kPlain, kOff, kInline, kInlineJni, kInlineNatives, kListener, kFast, kFastJni, kFastNatives, kNativePlain, kNativeFloor, kKinds };
const char* const kNames[kKinds] = {"uninstrumented", "off",       "inline",        "inline, JNI",  "inline, natives", "listener",
                                    "fast",           "fast, JNI", "fast, natives", "native plain", "native floor"};
constexpr int kTracePoints = 20;

struct Setup {
  std::string java, classes, agent, native_dir, tmp;
  bool critical = true;  // the JVM takes -XX:+CriticalJNINatives (JDK 18 removed it)
};

// About 0.3 s of timed calls per run. Listing 1 does `work` iterations of a
// multiply and a divide in each of its 10 frames: ~3.5 ns an iteration
// compiled, ~17 interpreted (listener mode runs everything interpreted).
long CallsFor(Kind k, int work, double scale) {
  const double ns_per_call = k == kListener ? 3000.0 + 170.0 * work : 300.0 + 35.0 * work;
  return std::max(2000L, static_cast<long>(3e8 / ns_per_call * scale));
}

// Enough calls for C2 to compile the chain (its thresholds are ~10^4
// invocations), without spending seconds at work 1000.
long WarmupFor(Kind k, long calls) {
  return k == kListener ? std::min(20000L, calls) : std::clamp(calls, 20000L, 200000L);
}

// ns per top-level call, or NAN.
double RunOnce(const Setup& s, Kind k, int work, double scale) {
  const long calls = CallsFor(k, work, scale), warmup = WarmupFor(k, calls);
  std::vector<std::string> argv, env;
  // budget=off: the probe is measured, not the overhead budget (which would
  // shed Listing 1's methods a tenth of a second in).
  const std::string opts = "=dir=" + s.tmp + ",dump_at_exit=0,budget=off,include=Listing1.*";
  if ((k == kInline || k == kFast || k == kFastNatives) && !s.critical) return NAN;  // no such JVM flag here
  switch (k) {
    case kPlain: argv = {s.java, "-cp", s.classes, "Listing1"}; break;
    case kOff:
      argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline", "-cp", s.classes, "Listing1"};
      env = {"LOOKBACK_ENABLED=0"};
      break;
    case kInline:
      argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline", "-XX:+CriticalJNINatives", "-cp", s.classes,
              "Listing1"};
      break;
    case kInlineJni: argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline", "-cp", s.classes, "Listing1"}; break;
    case kInlineNatives:
      argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline,writes=native", "-cp", s.classes, "Listing1"};
      if (s.critical) argv.insert(argv.begin() + 2, "-XX:+CriticalJNINatives");
      break;
    case kListener: argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=listener", "-cp", s.classes, "Listing1"}; break;
    case kFast:
      argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline,clock=fast", "-XX:+CriticalJNINatives", "-cp",
              s.classes, "Listing1"};
      break;
    case kFastJni:
      argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline,clock=fast", "-cp", s.classes, "Listing1"};
      break;
    case kFastNatives:
      argv = {s.java, "-agentpath:" + s.agent + opts + ",mode=inline,clock=fast,writes=native", "-XX:+CriticalJNINatives",
              "-cp", s.classes, "Listing1"};
      break;
    case kNativePlain: argv = {s.native_dir + "/listing1_gcc_plain"}; break;
    case kNativeFloor: argv = {s.native_dir + "/listing1_gcc_floor"}; break;
    default: return NAN;
  }
  argv.insert(argv.end(), {std::to_string(work), std::to_string(calls), std::to_string(warmup)});
  // The JFR clock is set up once the start-up window has passed (1 s by
  // default): at once here, so that the timed loop sees what a long-running
  // program does.
  if (k != kPlain && k != kNativePlain && k != kNativeFloor) env.push_back("LOOKBACK_JVM_STARTUP_WINDOW=0");
  const bench::Child c = bench::Spawn(argv, env, {"LOOKBACK_", "JAVA_TOOL_OPTIONS", "LD_PRELOAD"});
  const size_t at = c.text.find("elapsed_ns=");
  if (!c.ok || at == std::string::npos) {
    fprintf(stderr, "jvm_listing1_driver: %s failed:\n%s\n", kNames[k], c.text.c_str());
    return NAN;
  }
  return std::strtod(c.text.c_str() + at + 11, nullptr) / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::string java, agent;
  double scale = 1.0;
  std::vector<int> works = {0, 1, 10, 100, 1000};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) bench::Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--rounds") {
      rounds = atoi(next().c_str());
    } else if (a == "--scale") {
      scale = atof(next().c_str());
    } else if (a == "--java") {
      java = next();
    } else if (a == "--agent") {
      agent = next();
    } else if (a == "--work") {
      works.clear();
      for (const auto& w : bench::Split(next(), ',')) works.push_back(atoi(w.c_str()));
    } else {
      bench::Die("usage: jvm_listing1_driver [--rounds N] [--work 0,1,10,100,1000] [--scale F] [--java PATH] [--agent PATH]");
    }
  }
  Setup s;
  const std::string self = bench::SelfDir();
  s.java = !java.empty() ? java : bench::FindInPath("java").value_or("");
  if (s.java.empty()) bench::Die("java not found in PATH");
  s.critical = bench::Spawn({s.java, "-XX:+CriticalJNINatives", "-version"}, {}, {"JAVA_TOOL_OPTIONS"}).ok;
  s.classes = self + "/java";
  s.agent = !agent.empty() ? agent : self + "/../liblookback-jvm.so";
  s.native_dir = self;
  s.tmp = bench::MakeTempDir("jvm-listing1");
  bench::g_scratch_dir = s.tmp;
  const std::string load_before = bench::LoadAverage();
  // ns[kind][work][round]
  std::vector<std::vector<std::vector<double>>> ns(kKinds, std::vector<std::vector<double>>(works.size(), std::vector<double>(rounds, NAN)));
  for (int r = 0; r < rounds; ++r) {
    for (size_t w = 0; w < works.size(); ++w) {
      for (int j = 0; j < kKinds; ++j) {
        const Kind k = static_cast<Kind>((j + r) % kKinds);  // rotate the order each round
        ns[k][w][r] = RunOnce(s, k, works[w], scale);
      }
    }
    fprintf(stderr, "jvm_listing1_driver: round %d/%d done\n", r + 1, rounds);
  }
  bench::RemoveTree(s.tmp);
  auto tp = [&](Kind k, Kind base, size_t w, int r) { return (ns[k][w][r] - ns[base][w][r]) / kTracePoints; };
  auto med = [&](auto f) {
    std::vector<double> v;
    for (int r = 0; r < rounds; ++r) v.push_back(f(r));
    return Median(v);
  };
  const bench::Child version = bench::Spawn({s.java, "-version"}, {}, {"JAVA_TOOL_OPTIONS"});
  const std::string first_line = version.text.substr(0, version.text.find('\n'));
  printf("Listing 1 in Java (depth 10, 20 trace points per call), %s, medians of %d interleaved rounds.\n",
         first_line.c_str(), rounds);
  printf("ns/tp = (variant - uninstrumented) / 20 per round, then the median. /proc/loadavg before: %s; after: %s\n\n",
         load_before.c_str(), bench::LoadAverage().c_str());
  printf("| work | uninstrumented, ns/call | off, ns/tp (goal <= 1) | inline, ns/tp (goal <= 12 at work 0) | inline, plain JNI, ns/tp | inline, every record through the natives, ns/tp | listener, ns/tp | listener / inline (goal >= 10 at 0, >= 25 at 100) | native floor hook, ns/tp | inline / native floor |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t w = 0; w < works.size(); ++w) {
    const double plain = med([&](int r) { return ns[kPlain][w][r]; });
    const double off = med([&](int r) { return tp(kOff, kPlain, w, r); });
    const double in = med([&](int r) { return tp(kInline, kPlain, w, r); });
    const double jni = med([&](int r) { return tp(kInlineJni, kPlain, w, r); });
    const double natives = med([&](int r) { return tp(kInlineNatives, kPlain, w, r); });
    const double lis = med([&](int r) { return tp(kListener, kPlain, w, r); });
    const double ratio = med([&](int r) { return tp(kListener, kPlain, w, r) / tp(kInline, kPlain, w, r); });
    const double floor = med([&](int r) { return tp(kNativeFloor, kNativePlain, w, r); });
    const double xf = med([&](int r) { return tp(kInline, kPlain, w, r) / tp(kNativeFloor, kNativePlain, w, r); });
    printf("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", works[w], Fmt(plain, 1).c_str(), Fmt(off, 2).c_str(),
           Fmt(in, 2).c_str(), Fmt(jni, 2).c_str(), Fmt(natives, 2).c_str(), Fmt(lis, 1).c_str(), Fmt(ratio, 1).c_str(), Fmt(floor, 2).c_str(),
           Fmt(xf, 2).c_str());
  }
  // The fast clock (issue 24's goal: <= 3 ns per trace point with and without CriticalJNINatives).
  printf("\nFast clock (one reading per group of records, and after every deschedule):\n\n");
  printf("| work | fast, ns/tp (goal <= 3) | fast without CriticalJNINatives, ns/tp (goal <= 3) | fast, every record through the natives, ns/tp | natives / fast |\n");
  printf("|---:|---:|---:|---:|---:|\n");
  for (size_t w = 0; w < works.size(); ++w) {
    const double fast = med([&](int r) { return tp(kFast, kPlain, w, r); });
    const double fast_jni = med([&](int r) { return tp(kFastJni, kPlain, w, r); });
    const double natives = med([&](int r) { return tp(kFastNatives, kPlain, w, r); });
    const double ratio = med([&](int r) { return tp(kFastNatives, kPlain, w, r) / tp(kFast, kPlain, w, r); });
    printf("| %d | %s | %s | %s | %s |\n", works[w], Fmt(fast, 2).c_str(), Fmt(fast_jni, 2).c_str(),
           Fmt(natives, 2).c_str(), Fmt(ratio, 1).c_str());
  }
  return 0;
}
