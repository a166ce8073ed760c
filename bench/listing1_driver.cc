// Runs Hubble's Listing 1 (listing1.cc) in every variant, interleaved, and
// prints medians.
//
//   listing1_driver [--dir DIR] [--rounds N] [--work 0,1,10,100,1000]
//                   [--compilers gcc,clang] [--scale F] [--no-uftrace]
//                   [--no-xray] [--no-gprof] [--no-first-lap] [--extra]
//                   [--raw FILE.csv] [--quick]
//
// Each variant is a separate binary (built by bench/CMakeLists.txt next to
// this driver) that times its own loop with CLOCK_MONOTONIC after a warm-up
// lap that fills an 8 MiB ring once. One round runs every (work, variant)
// pair once, variants in an order rotated each round; ratios are computed
// within a round and their medians reported.
//
// Besides lookback and the floor hook, the other tracers: `uftrace record` and
// gprof (the same -pg binary, run directly: mcount + gmon.out), LLVM XRay with
// its sleds unpatched and in FDR mode (clang). Bytes written per run are
// measured: lookback's dump at exit, uftrace's data directory, XRay's log,
// gmon.out. All of them are written after the timed loop except uftrace's,
// which streams to disk while the loop runs.
//
// Then (unless --no-first-lap) the first lap: work 0, exactly one ring's worth
// of calls and no warm-up, so every 4 KiB page of the ring is faulted in
// while timed, for the uninstrumented, floor and lookback-on variants.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench_util.h"

namespace {

using bench::Die;
using bench::Fmt;
using bench::FmtBytes;
using bench::Median;

constexpr int kFunctionsPerCall = 10;
constexpr int kTracePointsPerCall = 2 * kFunctionsPerCall;
// 2^20 slots / 20 records per call = 52429 calls fill the ring once.
constexpr long kWarmupCalls = 60000;

// XRay FDR: every call recorded (the default threshold drops calls under
// 5 us), no 100 ms sleep before the flush, and 128 buffers of 64 KiB: an
// 8 MiB in-memory ring like lookback's (FDR reuses its oldest buffer when
// all are used).
constexpr const char* kXrayFdrFlags = "func_duration_threshold_us=0 grace_period_ms=0 buffer_size=65536 buffer_max=128";

// Diagnostics (--extra), not goals: kLbStatic*, liblookback.a linked into the
// executable (no PLT jump, TLS offset an immediate); kLbNoPlt*, the program
// built with -fno-plt (the hooks called through the GOT; clang 14 ignores
// -fno-plt for its instrumentation calls).
// kPassOff/kPassOn: the clang pass front-end (inlined trace points), clang only;
// kPassFull*: the same with -lookback-inline=full (driver --extra).
enum Kind {
  kPlain, kGlibc, kLbOff, kLbOn, kFloor, kUftrace, kGprof, kXrayOff, kXrayFdr, kPassOff, kPassOn,
  kLbStaticOff, kLbStaticOn, kLbNoPltOff, kLbNoPltOn, kPassFullOff, kPassFullOn,
  // The same binaries as kLbOn / kPassOn / kPassFullOn with LOOKBACK_CLOCK=fast (issue 18).
  kLbFastOn, kPassFastOn, kPassFullFastOn, kKinds
};
const char* const kKindNames[kKinds] = {
    "uninstrumented",       "glibc no-op hooks",    "lookback, tracing off", "lookback, tracing on",
    "floor hook",           "uftrace record",       "gprof (-pg, gmon.out)", "XRay, sleds unpatched",
    "XRay FDR",             "lookback pass, off",   "lookback pass, on",
    "lookback static, off", "lookback static, on",  "lookback -fno-plt, off", "lookback -fno-plt, on",
    "lookback pass (full), off", "lookback pass (full), on",
    "lookback, fast clock",  "lookback pass, fast clock", "lookback pass (full), fast clock"};
const char* const kKindShort[kKinds] = {"plain",    "glibc",    "lb-off",   "lb-on",   "floor",   "uftrace",
                                        "gprof",    "xray-off", "xray-fdr", "pass-off", "pass-on", "lbs-off",
                                        "lbs-on",   "lbnoplt-off", "lbnoplt-on", "passfull-off", "passfull-on",
                                        "lb-fast",  "pass-fast", "passfull-fast"};
const char* const kSuffix[kKinds] = {"plain", "glibc", "lookback", "lookback", "floor",    "pg",       "pg",     "xray",
                                     "xray",  "pass",  "pass",     "lbstatic", "lbstatic", "lbnoplt", "lbnoplt",
                                     "passfull", "passfull", "lookback", "pass", "passfull"};
bool IsExtra(int k) { return (k >= kLbStaticOff && k <= kPassFullOn) || k == kPassFullFastOn; }
bool IsPass(int k) {
  return k == kPassOff || k == kPassOn || k == kPassFullOff || k == kPassFullOn || k == kPassFastOn || k == kPassFullFastOn;
}
bool IsFast(int k) { return k >= kLbFastOn; }
bool IsLookback(int k) { return k == kLbOff || k == kLbOn || IsPass(k) || k >= kLbStaticOff; }
bool IsLookbackOn(int k) {
  return k == kLbOn || k == kPassOn || k == kLbStaticOn || k == kLbNoPltOn || k == kPassFullOn || IsFast(k);
}
bool IsXray(int k) { return k == kXrayOff || k == kXrayFdr; }
// gprof's mcount runs at function entry only.
int TracePointsPerCall(int k) { return k == kGprof ? kFunctionsPerCall : kTracePointsPerCall; }
// Slower recorders run fewer calls per timed run.
long CallsDivisor(int k) { return k == kUftrace ? 10 : k == kXrayFdr ? 4 : 1; }

struct Variant {
  std::string compiler;  // "gcc" or "clang"
  Kind kind;
  std::string binary;
};

struct Options {
  std::string dir;
  int rounds = 7;
  std::vector<int> works = {0, 1, 10, 100, 1000};
  std::vector<std::string> compilers = {"gcc", "clang"};
  double scale = 1.0;
  bool uftrace = true;
  bool xray = true;
  bool gprof = true;
  long warmup = kWarmupCalls;
  bool first_lap = true;
  bool extra = false;
  std::string raw;
  bool regions = true;  // also <compiler>-2regions and -3regions (listing1.cc, "Regions")
};

// "gcc-2regions" -> 2 (and *base = "gcc"); 0 for a one-region build.
int RegionsOf(const std::string& compiler, std::string* base = nullptr) {
  const size_t dash = compiler.find('-');
  if (dash == std::string::npos || compiler.compare(dash + 2, std::string::npos, "regions") != 0) return 0;
  if (base != nullptr) *base = compiler.substr(0, dash);
  return compiler[dash + 1] - '0';
}
// The kinds a region build has (bench/CMakeLists.txt, listing1_regions).
bool InRegionBuild(int k) {
  return k == kPlain || k == kGlibc || k == kLbOff || k == kLbOn || k == kFloor || k == kLbFastOn;
}

// Top-level calls timed per run, by work. A traced run at work 0 takes
// ~0.2 s (20 trace points of ~10 ns per call); larger work, fewer calls.
long CallsFor(int work, double scale) {
  const double ns_per_call_guess = 200.0 + 1.0 * work;  // traced variants; the leaf loop is ~1 ns/iteration
  const double target_ns = 1.5e8;
  const long calls = static_cast<long>(std::llround(target_ns / ns_per_call_guess * scale));
  return std::max(calls, 1000L);
}

struct RunOutput {
  bool ok = false;
  std::string text;  // stdout and stderr of the child
  long long elapsed_ns = 0;
  long long floor_records = 0;
  unsigned long long sink = 0;
  long long bytes_written = -1;  // -1: the variant writes nothing
  long long counted = -1;        // trace points counted by the check runs (gmon.out arcs, XRay count handler)
};

// Runs argv with the parent's environment minus LOOKBACK_*, BENCH_XRAY_*,
// XRAY_OPTIONS, GMON_OUT_PREFIX and LB_FLOOR_*, plus `env`; parses listing1's result line.
RunOutput Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const bench::Child c = bench::Spawn(argv, env, {"LOOKBACK_", "BENCH_XRAY_", "XRAY_OPTIONS=", "GMON_OUT_PREFIX=", "LB_FLOOR_"});
  RunOutput out;
  out.text = c.text;
  if (!c.ok) return out;
  const size_t at = out.text.find("listing1 work=");
  if (at == std::string::npos) return out;
  int work = 0;
  long calls = 0, warmup = 0;
  if (sscanf(out.text.c_str() + at, "listing1 work=%d calls=%ld warmup=%ld elapsed_ns=%lld floor_records=%lld sink=%llu",
             &work, &calls, &warmup, &out.elapsed_ns, &out.floor_records, &out.sink) == 6) {
    out.ok = true;
  }
  return out;
}

struct Runner {
  std::string uftrace;  // empty: not available
  std::string tmp_root;

  std::vector<std::string> LookbackEnv(bool on, const std::string& dir, bool dump_at_exit, bool fast = false) const {
    std::vector<std::string> env = {"LOOKBACK_DIR=" + dir, std::string("LOOKBACK_DUMP_AT_EXIT=") + (dump_at_exit ? "1" : "0"),
                                    "LOOKBACK_QUIET=1",
                                    // The trace point itself is measured: the overhead budget
                                    // (on by default) would shed Listing 1's functions a tenth
                                    // of a second in and leave filtered calls (bench/budget_native.sh
                                    // measures the budget).
                                    "LOOKBACK_BUDGET=off"};
    if (!on) env.push_back("LOOKBACK_ENABLED=0");
    if (fast) env.push_back("LOOKBACK_CLOCK=fast");
    return env;
  }

  // One run. Everything a variant writes goes to a fresh directory, measured
  // and removed afterwards. `count` asks gprof and XRay for their trace point
  // counts (gmon.out's arcs; XRay's counting handler instead of FDR).
  RunOutput Run(const Variant& v, int work, long calls, long warmup, bool count = false) const {
    std::vector<std::string> args = {v.binary, std::to_string(work), std::to_string(calls), std::to_string(warmup)};
    std::vector<std::string> env;
    const std::string dir = bench::MakeTempDir("run", tmp_root);
    if (IsLookback(v.kind)) {
      env = LookbackEnv(IsLookbackOn(v.kind), dir, IsLookbackOn(v.kind), IsFast(v.kind));
    } else if (v.kind == kUftrace) {
      // A path that does not exist yet: uftrace renames an existing directory to <dir>.old.
      args.insert(args.begin(), {uftrace, "record", "--no-libcall", "-d", dir + "/uftrace.data"});
    } else if (v.kind == kGprof) {
      env = {"GMON_OUT_PREFIX=" + dir + "/gmon"};
    } else if (v.kind == kXrayFdr) {
      env = {"XRAY_OPTIONS=xray_logfile_base=" + dir + "/xray-log. verbosity=0",
             count ? std::string("BENCH_XRAY_COUNT=1") : std::string("BENCH_XRAY_FDR=") + kXrayFdrFlags};
    }
    RunOutput out = Spawn(args, env);
    if (v.kind != kPlain && v.kind != kGlibc && v.kind != kFloor && v.kind != kXrayOff &&
        !(IsLookback(v.kind) && !IsLookbackOn(v.kind))) {
      out.bytes_written = bench::TreeBytes(dir);
    }
    if (count && v.kind == kGprof) {
      // GMON_OUT_PREFIX=<dir>/gmon writes <dir>/gmon.<pid>.
      if (bench::CountEntries(dir) == 1) {
        if (DIR* d = opendir(dir.c_str())) {
          while (dirent* e = readdir(d)) {
            if (strncmp(e->d_name, "gmon.", 5) == 0) out.counted = bench::GmonCalls(dir + "/" + e->d_name);
          }
          closedir(d);
        }
      }
    }
    if (count && v.kind == kXrayFdr) {
      const size_t at = out.text.find("xray_trace_points=");
      if (at != std::string::npos) out.counted = atoll(out.text.c_str() + at + strlen("xray_trace_points="));
    }
    bench::RemoveTree(dir);
    return out;
  }
};

void Usage() {
  fprintf(stderr,
          "usage: listing1_driver [--dir DIR] [--rounds N] [--work 0,1,10,100,1000] [--compilers gcc,clang]\n"
          "                       [--scale F] [--no-uftrace] [--no-xray] [--no-gprof] [--no-first-lap]\n"
          "                       [--extra] [--raw FILE.csv] [--quick]\n");
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  bench::g_prog = "listing1_driver";
  Options o;
  o.dir = bench::SelfDir();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--dir") {
      o.dir = next();
    } else if (a == "--rounds") {
      o.rounds = atoi(next().c_str());
    } else if (a == "--work") {
      o.works.clear();
      for (const auto& w : bench::Split(next(), ',')) o.works.push_back(atoi(w.c_str()));
    } else if (a == "--compilers") {
      o.compilers = bench::Split(next(), ',');
    } else if (a == "--no-regions") {
      o.regions = false;
    } else if (a == "--scale") {
      o.scale = atof(next().c_str());
    } else if (a == "--no-uftrace") {
      o.uftrace = false;
    } else if (a == "--no-xray") {
      o.xray = false;
    } else if (a == "--no-gprof") {
      o.gprof = false;
    } else if (a == "--extra") {
      o.extra = true;
    } else if (a == "--no-first-lap") {
      o.first_lap = false;
    } else if (a == "--raw") {
      o.raw = next();
    } else if (a == "--quick") {
      o.rounds = 1;
      o.scale = 0.05;
      o.warmup = 2000;
      o.first_lap = false;
    } else {
      Usage();
    }
  }
  if (o.rounds < 1 || o.works.empty() || !(o.scale > 0)) Usage();
  if (o.regions) {
    const std::vector<std::string> given = o.compilers;
    for (const auto& c : given) {
      if (RegionsOf(c) != 0) continue;
      for (const char* r : {"-2regions", "-3regions"}) {
        if (std::find(given.begin(), given.end(), c + r) == given.end()) o.compilers.push_back(c + r);
      }
    }
  }

  Runner runner;
  runner.tmp_root = bench::MakeTempDir("listing1-runs");
  bench::g_scratch_dir = runner.tmp_root;
  if (o.uftrace) {
    if (auto u = bench::FindInPath("uftrace")) {
      runner.uftrace = *u;
    } else {
      fprintf(stderr, "listing1_driver: uftrace not found in PATH: skipping the uftrace variant\n");
    }
  }

  // ---- the variants present ------------------------------------------------
  std::vector<Variant> variants;
  for (const auto& c : o.compilers) {
    for (int k = 0; k < kKinds; ++k) {
      const std::string bin = o.dir + "/listing1_" + c + "_" + kSuffix[k];
      if (k == kUftrace && runner.uftrace.empty()) continue;
      if (k == kGprof && !o.gprof) continue;
      if (IsXray(k) && (!o.xray || c != "clang")) continue;  // XRay is clang's
      if (IsPass(k) && c != "clang") continue;                // so is the pass
      if (IsExtra(k) && !o.extra) continue;
      if (RegionsOf(c) != 0 && !InRegionBuild(k)) continue;
      if (!bench::IsExecutable(bin)) {
        if (k == kPlain) {
          fprintf(stderr, "listing1_driver: %s not built: skipping %s\n", bin.c_str(), c.c_str());
          break;
        }
        fprintf(stderr, "listing1_driver: %s not built: skipping %s / %s\n", bin.c_str(), c.c_str(), kKindNames[k]);
        continue;
      }
      variants.push_back({c, static_cast<Kind>(k), bin});
    }
  }
  if (variants.empty()) Die("no variant binaries in " + o.dir + " (build target listing1_bench)");

  // ---- untimed checks --------------------------------------------------------
  // lookback's hooks are the ones called; gprof and XRay trace exactly the ten
  // functions; XRay FDR writes a log. For lookback on, records per event: the
  // dump of 3000 calls minus the dump of 1000 (both inside one ring), in
  // 8-byte records, over the 2000 x 20 events between them.
  std::map<std::string, double> records_per_event;  // binary -> ratio
  auto dump_bytes = [&](const Variant& v, long calls) {
    const std::string dir = bench::MakeTempDir("records", runner.tmp_root);
    RunOutput out = Spawn({v.binary, "0", std::to_string(calls), "0"}, runner.LookbackEnv(true, dir, true));
    const double b = static_cast<double>(bench::TreeBytes(dir));
    bench::RemoveTree(dir);
    if (!out.ok) Die(v.binary + " failed:\n" + out.text);
    return b;
  };
  for (const auto& v : variants) {
    if (v.kind == kLbOn) {
      records_per_event[v.binary] = (dump_bytes(v, 3000) - dump_bytes(v, 1000)) / 8.0 / (2000.0 * kTracePointsPerCall);
    }
  }
  for (const auto& v : variants) {
    constexpr long kCheckCalls = 1000;
    if (IsLookback(v.kind)) {
      const std::string dir = bench::MakeTempDir("check", runner.tmp_root);
      const std::vector<std::string> args = {v.binary, "0", std::to_string(kCheckCalls), "0"};
      RunOutput out = Spawn(args, runner.LookbackEnv(IsLookbackOn(v.kind), dir, true, IsFast(v.kind)));
      const int dumps = bench::CountEntries(dir);
      bench::RemoveTree(dir);
      if (!out.ok) Die(v.binary + " failed:\n" + out.text);
      if (IsLookbackOn(v.kind) && dumps < 1) Die(v.binary + ": tracing on, but no dump at exit: are lookback's hooks linked?");
      if (!IsLookbackOn(v.kind) && dumps != 0) Die(v.binary + ": LOOKBACK_ENABLED=0, yet a dump was written");
    } else if (v.kind == kGprof || v.kind == kXrayFdr) {
      RunOutput out = runner.Run(v, 0, kCheckCalls, 0, /*count=*/true);
      if (!out.ok) Die(v.binary + " (" + kKindNames[v.kind] + ") failed:\n" + out.text);
      const long long expected = TracePointsPerCall(v.kind) * kCheckCalls;
      if (out.counted != expected) {
        Die(v.binary + " (" + kKindNames[v.kind] + "): counted " + std::to_string(out.counted) +
            " trace points in " + std::to_string(kCheckCalls) + " calls, expected " + std::to_string(expected));
      }
      if (v.kind == kXrayFdr) {
        RunOutput fdr = runner.Run(v, 0, kCheckCalls, 0);
        if (!fdr.ok || fdr.bytes_written <= 0) Die(v.binary + ": XRay FDR wrote no log:\n" + fdr.text);
      }
    }
  }

  // ---- interleaved rounds ----------------------------------------------------
  // ns per top-level call, [variant][work index][round]; NAN when a run failed.
  std::vector<std::vector<std::vector<double>>> ns(
      variants.size(), std::vector<std::vector<double>>(o.works.size(), std::vector<double>(o.rounds, NAN)));
  std::vector<std::vector<std::vector<double>>> bytes = ns;   // bytes written per run
  std::vector<std::vector<long>> run_calls(variants.size(), std::vector<long>(o.works.size(), 0));
  FILE* raw = nullptr;
  if (!o.raw.empty()) {
    raw = fopen(o.raw.c_str(), "w");
    if (raw == nullptr) Die("cannot write " + o.raw);
    fprintf(raw, "round,compiler,variant,work,calls,warmup,elapsed_ns,ns_per_call,bytes_written\n");
  }
  // (compiler, work, calls) -> sink: variants running the same calls compute the same result
  std::map<std::tuple<std::string, int, long>, unsigned long long> plain_sink;
  fprintf(stderr, "listing1_driver: %zu variants x %zu work values x %d rounds\n", variants.size(), o.works.size(),
          o.rounds);
  const std::string load_before = bench::LoadAverage();
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t w = 0; w < o.works.size(); ++w) {
      const int work = o.works[w];
      for (size_t j = 0; j < variants.size(); ++j) {
        const size_t vi = (j + static_cast<size_t>(r)) % variants.size();  // rotate the order each round
        const Variant& v = variants[vi];
        const long calls = std::max(CallsFor(work, o.scale) / CallsDivisor(v.kind), 1000L);
        const long warmup = o.warmup;
        run_calls[vi][w] = calls;
        RunOutput out = runner.Run(v, work, calls, warmup);
        if (!out.ok) {
          fprintf(stderr, "listing1_driver: %s (%s) work=%d failed:\n%s\n", v.binary.c_str(), kKindNames[v.kind], work,
                  out.text.c_str());
          continue;
        }
        if (v.kind == kFloor && out.floor_records != static_cast<long long>(kTracePointsPerCall) * (calls + warmup)) {
          Die(v.binary + ": the floor hook recorded " + std::to_string(out.floor_records) + " trace points, expected " +
              std::to_string(kTracePointsPerCall * (calls + warmup)));
        }
        if (v.kind != kFloor && out.floor_records != -1) Die(v.binary + ": the floor hook is linked in");
        auto [it, fresh] = plain_sink.emplace(std::make_tuple(v.compiler, work, calls), out.sink);
        if (!fresh && it->second != out.sink) Die(v.binary + ": result differs from the other variants");
        const double per_call = static_cast<double>(out.elapsed_ns) / static_cast<double>(calls);
        ns[vi][w][r] = per_call;
        bytes[vi][w][r] = static_cast<double>(out.bytes_written);
        if (raw != nullptr) {
          fprintf(raw, "%d,%s,%s,%d,%ld,%ld,%lld,%.3f,%lld\n", r, v.compiler.c_str(), kKindShort[v.kind], work, calls,
                  warmup, out.elapsed_ns, per_call, out.bytes_written);
        }
      }
    }
    fprintf(stderr, "listing1_driver: round %d/%d done\n", r + 1, o.rounds);
  }
  // ---- first lap: no warm-up, one ring's worth of calls ------------------------
  // first[variant][round], ns per top-level call; only plain, floor and lb-on.
  constexpr long kRingSlots = long{1} << 20;  // 8 MiB of 8-byte slots, both rings
  constexpr long kLapCalls = (kRingSlots + kTracePointsPerCall - 1) / kTracePointsPerCall;
  std::vector<std::vector<double>> first(variants.size(), std::vector<double>(o.rounds, NAN));
  const bool do_first_lap = o.first_lap && std::find(o.works.begin(), o.works.end(), 0) != o.works.end();
  if (do_first_lap) {
    std::vector<size_t> lap_variants;
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].kind == kPlain || variants[i].kind == kFloor || variants[i].kind == kLbOn) lap_variants.push_back(i);
    }
    for (int r = 0; r < o.rounds; ++r) {
      for (size_t j = 0; j < lap_variants.size(); ++j) {
        const size_t vi = lap_variants[(j + static_cast<size_t>(r)) % lap_variants.size()];
        RunOutput out = runner.Run(variants[vi], 0, kLapCalls, 0);
        if (!out.ok) {
          fprintf(stderr, "listing1_driver: %s first lap failed:\n%s\n", variants[vi].binary.c_str(), out.text.c_str());
          continue;
        }
        first[vi][r] = static_cast<double>(out.elapsed_ns) / static_cast<double>(kLapCalls);
        if (raw != nullptr) {
          fprintf(raw, "%d,%s,%s-first-lap,0,%ld,0,%lld,%.3f,%lld\n", r, variants[vi].compiler.c_str(),
                  kKindShort[variants[vi].kind], kLapCalls, out.elapsed_ns, first[vi][r], out.bytes_written);
        }
      }
    }
    fprintf(stderr, "listing1_driver: first-lap runs done\n");
  }
  if (raw != nullptr) fclose(raw);
  bench::RemoveTree(runner.tmp_root);
  const std::string load_after = bench::LoadAverage();

  // ---- per-round ratios, medians -------------------------------------------
  auto find = [&](const std::string& c, Kind k) -> int {
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].compiler == c && variants[i].kind == k) return static_cast<int>(i);
    }
    return -1;
  };
  // Per round: ns per trace point of variant vi over the same round's uninstrumented run.
  auto tp_of = [&](int vi, int plain, size_t w, int r) {
    return (ns[vi][w][r] - ns[plain][w][r]) / TracePointsPerCall(variants[vi].kind);
  };
  // Median over rounds of f(r), skipping failed runs (NAN).
  auto median_of = [&](auto f) {
    std::vector<double> v;
    for (int r = 0; r < o.rounds; ++r) v.push_back(f(r));
    return Median(v);
  };

  printf("Listing 1, depth %d: %d trace points per top-level call (gprof: %d mcount calls). Medians of %d interleaved rounds;\n",
         kFunctionsPerCall, kTracePointsPerCall, kFunctionsPerCall, o.rounds);
  printf("ns/tp = (variant - uninstrumented) / trace points per call; ratios computed within each round, then the median taken.\n");
  printf("/proc/loadavg before: %s; after: %s\n\n", load_before.c_str(), load_after.c_str());
  printf("| compiler | work | variant | ns/call | ns/fn call | ns/trace point | tp min..max | x floor (per tp) | x uninstr. (per call) | bytes written per run |\n");
  printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& c : o.compilers) {
    const int plain = find(c, kPlain);
    if (plain < 0) continue;
    const int floor = find(c, kFloor);
    for (size_t w = 0; w < o.works.size(); ++w) {
      for (int k = 0; k < kKinds; ++k) {
        const int vi = find(c, static_cast<Kind>(k));
        if (vi < 0) continue;
        const double call = median_of([&](int r) { return ns[vi][w][r]; });
        std::string tp = "–", range = "–", x_floor = "–";
        if (k != kPlain) {
          std::vector<double> tps;
          for (int r = 0; r < o.rounds; ++r) {
            const double x = tp_of(vi, plain, w, r);
            if (!std::isnan(x)) tps.push_back(x);
          }
          if (!tps.empty()) {
            tp = Fmt(Median(tps), 2);
            range = Fmt(*std::min_element(tps.begin(), tps.end()), 2) + ".." +
                    Fmt(*std::max_element(tps.begin(), tps.end()), 2);
          }
          if (floor >= 0) {
            x_floor = Fmt(median_of([&](int r) { return tp_of(vi, plain, w, r) / tp_of(floor, plain, w, r); }), 3);
          }
        }
        const double x_plain = median_of([&](int r) { return ns[vi][w][r] / ns[plain][w][r]; });
        const double b = median_of([&](int r) { return bytes[vi][w][r]; });
        printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.c_str(), o.works[w], kKindNames[k],
               Fmt(call, 1).c_str(), Fmt(call / kFunctionsPerCall, 2).c_str(), tp.c_str(), range.c_str(),
               x_floor.c_str(), Fmt(x_plain, 3).c_str(), FmtBytes(b).c_str());
      }
    }
  }

  printf("\nHeadline (medians of per-round figures):\n\n");
  printf("| compiler | work | lookback on / floor, per trace point (goal <= 1.15) | lookback off - uninstrumented, ns per trace point (goal <= 0.8) |\n");
  printf("|---|---:|---:|---:|\n");
  auto verdict = [](double v, double goal) {
    if (std::isnan(v)) return std::string("–");
    return Fmt(v, 3) + (v <= goal ? " (met)" : " (MISSED)");
  };
  for (const auto& c : o.compilers) {
    const int plain = find(c, kPlain), floor = find(c, kFloor), on = find(c, kLbOn), off = find(c, kLbOff);
    if (plain < 0) continue;
    for (size_t w = 0; w < o.works.size(); ++w) {
      const double ratio = (on < 0 || floor < 0) ? NAN : median_of([&](int r) {
        return tp_of(on, plain, w, r) / tp_of(floor, plain, w, r);
      });
      const double off_tp = off < 0 ? NAN : median_of([&](int r) { return tp_of(off, plain, w, r); });
      printf("| %s | %d | %s | %s |\n", c.c_str(), o.works[w], verdict(ratio, 1.15).c_str(),
             verdict(off_tp, 0.8).c_str());
    }
  }

  // ---- fast clock (issue 18): goal <= 2.5 ns per trace point at work 0 --------
  printf("\nFast clock (LOOKBACK_CLOCK=fast) beside exact and the floor, ns per trace point (medians of per-round figures):\n\n");
  printf("| compiler | work | front-end | fast | exact | floor | fast / exact |\n|---|---:|---|---:|---:|---:|---:|\n");
  for (const auto& c : o.compilers) {
    const int plain = find(c, kPlain), floor = find(c, kFloor);
    if (plain < 0) continue;
    for (size_t w = 0; w < o.works.size(); ++w) {
      for (auto [fast_kind, exact_kind, name] : {std::tuple{kLbFastOn, kLbOn, "hooks"}, std::tuple{kPassFastOn, kPassOn, "pass"},
                                                 std::tuple{kPassFullFastOn, kPassFullOn, "pass (full)"}}) {
        const int fast = find(c, fast_kind), exact = find(c, exact_kind);
        if (fast < 0 || exact < 0) continue;
        auto tp = [&](int vi) { return vi < 0 ? NAN : median_of([&](int r) { return tp_of(vi, plain, w, r); }); };
        const double ratio = median_of([&](int r) { return tp_of(fast, plain, w, r) / tp_of(exact, plain, w, r); });
        printf("| %s | %d | %s | %s | %s | %s | %s |\n", c.c_str(), o.works[w], name, Fmt(tp(fast), 2).c_str(),
               Fmt(tp(exact), 2).c_str(), Fmt(tp(floor), 2).c_str(), Fmt(ratio, 3).c_str());
      }
    }
  }

  // ---- calls alternating between code regions ---------------------------------
  // The same chain spread over 2 and 3 regions (executable + shared libraries),
  // each against its own uninstrumented build, then against the one-region
  // build of the same round. Goal (issue 14): within 10 % of one region.
  bool any_regions = false;
  for (const auto& c : o.compilers) any_regions |= RegionsOf(c) != 0 && find(c, kLbOn) >= 0;
  if (any_regions) {
    printf("\nCalls alternating between code regions (Listing 1's chain spread over the executable and 1 or 2\n");
    printf("shared libraries: every trace point changes region), medians of per-round figures:\n\n");
    printf("| compiler | work | regions | lookback on, ns/tp | one region, ns/tp | x one region (goal <= 1.10) | floor hook, ns/tp | lookback / floor | records per event (one region) |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& c : o.compilers) {
      std::string base;
      const int regions = RegionsOf(c, &base);
      const int plain = find(c, kPlain), on = find(c, kLbOn), floor = find(c, kFloor);
      const int plain1 = find(base, kPlain), on1 = find(base, kLbOn);
      if (regions == 0 || plain < 0 || on < 0) continue;
      for (size_t w = 0; w < o.works.size(); ++w) {
        auto tp = [&](int vi, int pl) { return (vi < 0 || pl < 0) ? NAN : median_of([&](int r) { return tp_of(vi, pl, w, r); }); };
        const double x1 = (plain1 < 0 || on1 < 0) ? NAN : median_of([&](int r) {
          return tp_of(on, plain, w, r) / tp_of(on1, plain1, w, r);
        });
        const double xf = floor < 0 ? NAN : median_of([&](int r) { return tp_of(on, plain, w, r) / tp_of(floor, plain, w, r); });
        const double rpe = records_per_event[variants[on].binary];
        const double rpe1 = on1 < 0 ? NAN : records_per_event[variants[on1].binary];
        printf("| %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", base.c_str(), o.works[w], regions,
               Fmt(tp(on, plain), 2).c_str(), Fmt(tp(on1, plain1), 2).c_str(), verdict(x1, 1.10).c_str(),
               Fmt(tp(floor, plain), 2).c_str(), Fmt(xf, 3).c_str(), (Fmt(rpe, 4) + " (" + Fmt(rpe1, 4) + ")").c_str());
      }
    }
  }

  // ---- the clang pass against the hook front-end ------------------------------
  if (std::find(o.compilers.begin(), o.compilers.end(), "clang") != o.compilers.end() &&
      find("clang", kPassOn) >= 0) {
    printf("\nThe clang pass (inlined trace points) against the hook front-end (-finstrument-functions-after-inlining\n");
    printf("+ liblookback.so), clang, medians of per-round figures:\n\n");
    printf("| work | pass off - uninstrumented, ns/tp (goal <= 0.25) | hooks off - uninstrumented, ns/tp | pass on / hooks on, per tp (goal <= 1.1) | pass on / floor, per tp | full shape: off, ns/tp | full shape: on / hooks on |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    const int plain = find("clang", kPlain), poff = find("clang", kPassOff), pon = find("clang", kPassOn),
              off = find("clang", kLbOff), on = find("clang", kLbOn), floor = find("clang", kFloor),
              foff = find("clang", kPassFullOff), fon = find("clang", kPassFullOn);
    for (size_t w = 0; w < o.works.size(); ++w) {
      auto tp = [&](int vi) { return vi < 0 ? NAN : median_of([&](int r) { return tp_of(vi, plain, w, r); }); };
      auto ratio = [&](int a, int b) {
        return (a < 0 || b < 0) ? NAN : median_of([&](int r) { return tp_of(a, plain, w, r) / tp_of(b, plain, w, r); });
      };
      printf("| %d | %s | %s | %s | %s | %s | %s |\n", o.works[w], verdict(tp(poff), 0.25).c_str(), Fmt(tp(off), 3).c_str(),
             verdict(ratio(pon, on), 1.1).c_str(), Fmt(ratio(pon, floor), 3).c_str(), Fmt(tp(foff), 3).c_str(),
             Fmt(ratio(fon, on), 3).c_str());
    }
  }

  // ---- side by side: the other tracers against lookback, tracing on ----------
  printf("\nSide by side, ns per trace point (other tracer / lookback on, median of per-round ratios):\n\n");
  printf("| compiler | work | lookback on | floor hook | uftrace record | gprof (per mcount) | XRay FDR | XRay unpatched | lookback off |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& c : o.compilers) {
    const int plain = find(c, kPlain), on = find(c, kLbOn);
    if (plain < 0 || on < 0) continue;
    for (size_t w = 0; w < o.works.size(); ++w) {
      auto cell = [&](Kind k, bool ratio) {
        const int vi = find(c, k);
        if (vi < 0) return std::string("–");
        const double tp = median_of([&](int r) { return tp_of(vi, plain, w, r); });
        if (!ratio) return Fmt(tp, 2);
        const double x = median_of([&](int r) { return tp_of(vi, plain, w, r) / tp_of(on, plain, w, r); });
        return Fmt(tp, 2) + " (" + Fmt(x, 2) + "x)";
      };
      printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.c_str(), o.works[w], cell(kLbOn, false).c_str(),
             cell(kFloor, true).c_str(), cell(kUftrace, true).c_str(), cell(kGprof, true).c_str(),
             cell(kXrayFdr, true).c_str(), cell(kXrayOff, true).c_str(), cell(kLbOff, true).c_str());
    }
  }

  // ---- bytes written -----------------------------------------------------------
  printf("\nBytes written per run (medians; lookback: the dump at exit, LOOKBACK_DUMP_AT_EXIT=1; uftrace: its data\n");
  printf("directory, streamed while the program runs; XRay FDR: the log flushed at exit; gprof: gmon.out at exit):\n\n");
  printf("| compiler | work | variant | calls per run (timed + warm-up) | trace points per run | bytes written | bytes per trace point |\n");
  printf("|---|---:|---|---:|---:|---:|---:|\n");
  for (const auto& c : o.compilers) {
    for (size_t w = 0; w < o.works.size(); ++w) {
      for (Kind k : {kLbOn, kUftrace, kXrayFdr, kGprof, kLbStaticOn, kLbNoPltOn}) {
        const int vi = find(c, k);
        if (vi < 0) continue;
        const double b = median_of([&](int r) { return bytes[vi][w][r]; });
        const long total_calls = run_calls[vi][w] + o.warmup;
        const double tps = static_cast<double>(total_calls) * TracePointsPerCall(k);
        printf("| %s | %d | %s | %ld | %s | %s | %s |\n", c.c_str(), o.works[w], kKindNames[k], total_calls,
               bench::FmtCount(tps).c_str(), FmtBytes(b).c_str(), Fmt(b / tps, 2).c_str());
      }
    }
  }

  if (do_first_lap) {
    const size_t w0 = static_cast<size_t>(std::find(o.works.begin(), o.works.end(), 0) - o.works.begin());
    const double pages = static_cast<double>(kRingSlots) * 8 / 4096;
    printf("\nFirst lap (work 0, %ld calls = one 8 MiB ring, no warm-up) vs the warmed-up runs above:\n\n", kLapCalls);
    printf("| compiler | variant | first lap, ns/trace point | warmed up, ns/trace point | extra per 4 KiB ring page, us |\n");
    printf("|---|---|---:|---:|---:|\n");
    for (const auto& c : o.compilers) {
      const int plain = find(c, kPlain);
      if (plain < 0) continue;
      for (Kind k : {kFloor, kLbOn}) {
        const int vi = find(c, k);
        if (vi < 0) continue;
        const double lap = median_of([&](int r) { return (first[vi][r] - first[plain][r]) / kTracePointsPerCall; });
        const double warm = median_of([&](int r) { return tp_of(vi, plain, w0, r); });
        const double per_page_us = (lap - warm) * kTracePointsPerCall * static_cast<double>(kLapCalls) / pages / 1000;
        printf("| %s | %s | %s | %s | %s |\n", c.c_str(), kKindNames[k], Fmt(lap, 2).c_str(), Fmt(warm, 2).c_str(),
               Fmt(per_page_us, 1).c_str());
      }
    }
  }
  return 0;
}
