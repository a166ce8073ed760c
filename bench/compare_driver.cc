// Runs real programs built with every tracer (bench/compare.sh builds them
// and writes the manifest), interleaved, and prints medians of wall times,
// trace points, ns per trace point and bytes written.
//
//   compare_driver --manifest FILE [--rounds N] [--raw FILE.csv] [--no-uftrace]
//
// Manifest, one line per variant, fields separated by tabs:
//
//   run <program> <compiler> <kind> <binary> [args...]
//   check <program> <line prefix>
//
// kind is one of plain, glibc, lb-off, lb-on, floor, gprof, uftrace,
// xray-off, xray-fdr (see kKinds). The output line of each program that starts
// with <line prefix> must be the same for all its variants (the program
// computed the same thing).
//
// Before the timed rounds, one untimed run per variant counts its trace points
// and what it writes:
//   glibc, lb-off, lb-on, floor  the floor hook's record count
//                                (LB_FLOOR_REPORT=1); they share one object;
//   lb-on                        LOOKBACK_DUMP_AT_EXIT=1, the dump's size;
//   gprof                        the mcount calls in gmon.out (entries only);
//   uftrace                      records in its data directory (16 B each);
//   xray-off, xray-fdr           a counting handler (BENCH_XRAY_COUNT=1).
// Timed runs: lookback does not dump at exit (the floor hook writes nothing
// either), uftrace streams to its data directory, XRay FDR flushes its
// in-memory ring to a log at exit, gprof writes gmon.out at exit; all of that
// is inside the wall time. Every run gets a fresh working directory.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using bench::Die;
using bench::Fmt;
using bench::FmtBytes;
using bench::FmtCount;
using bench::Median;

// Same FDR configuration as listing1_driver: every call, no 100 ms grace
// sleep before the flush, an 8 MiB ring of 128 x 64 KiB buffers.
constexpr const char* kXrayFdrFlags = "func_duration_threshold_us=0 grace_period_ms=0 buffer_size=65536 buffer_max=128";

// kPassOff/kPassOn: built with the clang pass (inlined trace points);
// kPassFull*: the same with -lookback-inline=full.
enum Kind {
  kPlain, kGlibc, kLbOff, kLbOn, kFloor, kGprof, kUftrace, kXrayOff, kXrayFdr, kPassOff, kPassOn, kPassFullOff,
  kPassFullOn,
  // lb-on / pass-on / passfull-on binaries run with LOOKBACK_CLOCK=fast (issue 18).
  kLbFast, kPassFast, kPassFullFast, kKinds
};
const char* const kKindKeys[kKinds] = {"plain",   "glibc",    "lb-off",   "lb-on",    "floor",  "gprof",
                                       "uftrace", "xray-off", "xray-fdr", "pass-off", "pass-on", "passfull-off",
                                       "passfull-on", "lb-fast", "pass-fast", "passfull-fast"};
const char* const kKindNames[kKinds] = {"uninstrumented",        "glibc no-op hooks",     "lookback, tracing off",
                                        "lookback, tracing on",  "floor hook",            "gprof (-pg, gmon.out)",
                                        "uftrace record",        "XRay, sleds unpatched", "XRay FDR",
                                        "lookback pass, off",    "lookback pass, on",
                                        "lookback pass (full), off", "lookback pass (full), on",
                                        "lookback, fast clock", "lookback pass, fast clock",
                                        "lookback pass (full), fast clock"};
bool IsPassOn(int k) { return k == kPassOn || k == kPassFullOn || k == kPassFast || k == kPassFullFast; }
bool IsFast(int k) { return k == kLbFast || k == kPassFast || k == kPassFullFast; }
// Tracing on: a dump at exit in the check run.
bool IsOn(int k) { return k == kLbOn || k == kLbFast || IsPassOn(k); }
bool IsPassOff(int k) { return k == kPassOff || k == kPassFullOff; }
// Kinds whose trace points are the hook calls of the -finstrument-functions object.
bool UsesCygObject(Kind k) { return k == kGlibc || k == kLbOff || k == kLbOn || k == kLbFast || k == kFloor; }

struct Variant {
  std::string program, compiler;
  Kind kind;
  std::vector<std::string> argv;
  // From the check run.
  std::string check_line;
  long long trace_points = -1;
  long long check_bytes = -1;
};

struct Options {
  std::string manifest;
  int rounds = 7;
  std::string raw;
  bool uftrace = true;
};

Kind ParseKind(const std::string& s) {
  for (int k = 0; k < kKinds; ++k) {
    if (s == kKindKeys[k]) return static_cast<Kind>(k);
  }
  Die("unknown variant kind '" + s + "'");
}

struct Run {
  bench::Child child;
  long long bytes = 0;
  long long counted = -1;  // gmon.out calls, uftrace records, floor or XRay count
};

struct Runner {
  std::string uftrace;
  std::string tmp_root;

  // check: the untimed counting run (see the top of the file).
  Run Go(const Variant& v, bool check) const {
    const std::string dir = bench::MakeTempDir("run", tmp_root);
    std::vector<std::string> argv = v.argv;
    std::vector<std::string> env;
    switch (v.kind) {
      case kPlain:
      case kGlibc:
      case kXrayOff:
        break;
      case kLbOff:
      case kPassOff:
      case kPassFullOff:
        env = {"LOOKBACK_DIR=" + dir + "/dumps", "LOOKBACK_ENABLED=0", "LOOKBACK_DUMP_AT_EXIT=0", "LOOKBACK_QUIET=1"};
        break;
      case kLbOn:
      case kPassOn:
      case kPassFullOn:
      case kLbFast:
      case kPassFast:
      case kPassFullFast:
        // Every call recorded, as by the tracers beside it: the overhead budget
        // (on by default) would shed the hottest functions (bench/budget_native.sh
        // measures lookback with it).
        env = {"LOOKBACK_DIR=" + dir + "/dumps", std::string("LOOKBACK_DUMP_AT_EXIT=") + (check ? "1" : "0"),
               "LOOKBACK_QUIET=1", "LOOKBACK_BUDGET=off"};
        if (IsFast(v.kind)) env.push_back("LOOKBACK_CLOCK=fast");
        break;
      case kFloor:
        env = {"LB_FLOOR_REPORT=1", "LB_FLOOR_HUGEPAGE=1"};  // ring mapped like lookback's (floor_hooks.cc)
        break;
      case kGprof:
        env = {"GMON_OUT_PREFIX=" + dir + "/gmon"};
        break;
      case kUftrace:
        argv.insert(argv.begin(), {uftrace, "record", "--no-libcall", "-d", dir + "/uftrace.data"});
        break;
      case kXrayFdr:
        env = {"XRAY_OPTIONS=xray_logfile_base=" + dir + "/xray-log. verbosity=0",
               check ? std::string("BENCH_XRAY_COUNT=1") : std::string("BENCH_XRAY_FDR=") + kXrayFdrFlags};
        break;
      case kKinds:
        break;
    }
    if (check && v.kind == kXrayOff) env = {"BENCH_XRAY_COUNT=1"};
    Run run;
    run.child = bench::Spawn(argv, env, {"LOOKBACK_", "BENCH_XRAY_", "XRAY_OPTIONS=", "GMON_OUT_PREFIX=", "LB_FLOOR_"},
                             dir);
    run.bytes = bench::TreeBytes(dir);
    auto after = [&](const char* key) -> long long {
      const size_t at = run.child.text.rfind(key);
      return at == std::string::npos ? -1 : atoll(run.child.text.c_str() + at + strlen(key));
    };
    if (v.kind == kFloor) run.counted = after("lb_floor_records=");
    if (check && (v.kind == kXrayOff || v.kind == kXrayFdr)) run.counted = after("xray_trace_points=");
    if (v.kind == kUftrace) run.counted = bench::UftraceRecords(dir + "/uftrace.data");
    if (v.kind == kGprof) {
      if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
          if (strncmp(e->d_name, "gmon.", 5) == 0) run.counted = bench::GmonCalls(dir + "/" + e->d_name);
        }
        closedir(d);
      }
    }
    if (IsOn(v.kind) && check) run.counted = bench::CountEntries(dir + "/dumps");  // dumps
    if (v.kind == kLbOff || IsPassOff(v.kind)) run.counted = bench::CountEntries(dir + "/dumps");
    bench::RemoveTree(dir);
    return run;
  }
};

std::string CheckLine(const std::string& text, const std::string& prefix) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, prefix.size(), prefix) == 0) return text.substr(at, end - at);
    at = end + 1;
  }
  return "";
}

std::string Tail(const std::string& text) {
  return text.size() > 2000 ? "..." + text.substr(text.size() - 2000) : text;
}

void Usage() {
  fprintf(stderr, "usage: compare_driver --manifest FILE [--rounds N] [--raw FILE.csv] [--no-uftrace]\n");
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  bench::g_prog = "compare_driver";
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--manifest") {
      o.manifest = next();
    } else if (a == "--rounds") {
      o.rounds = atoi(next().c_str());
    } else if (a == "--raw") {
      o.raw = next();
    } else if (a == "--no-uftrace") {
      o.uftrace = false;
    } else {
      Usage();
    }
  }
  if (o.manifest.empty() || o.rounds < 1) Usage();

  Runner runner;
  if (o.uftrace) {
    if (auto u = bench::FindInPath("uftrace")) runner.uftrace = *u;
  }

  // ---- manifest ----------------------------------------------------------------
  std::vector<Variant> variants;
  std::map<std::string, std::string> check_prefix;  // program -> prefix
  std::vector<std::string> programs;
  {
    FILE* f = fopen(o.manifest.c_str(), "r");
    if (f == nullptr) Die("cannot read " + o.manifest);
    char line[8192];
    while (fgets(line, sizeof line, f) != nullptr) {
      std::string s = line;
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
      if (s.empty() || s[0] == '#') continue;
      const std::vector<std::string> fields = bench::Split(s, '\t');
      if (fields[0] == "check" && fields.size() == 3) {
        check_prefix[fields[1]] = fields[2];
      } else if (fields[0] == "run" && fields.size() >= 5) {
        Variant v;
        v.program = fields[1];
        v.compiler = fields[2];
        v.kind = ParseKind(fields[3]);
        v.argv.assign(fields.begin() + 4, fields.end());
        if (!bench::IsExecutable(v.argv[0])) Die(v.argv[0] + " is not an executable");
        if (v.kind == kUftrace && runner.uftrace.empty()) {
          fprintf(stderr, "compare_driver: uftrace not used: skipping %s / %s\n", v.program.c_str(), v.compiler.c_str());
          continue;
        }
        if (std::find(programs.begin(), programs.end(), v.program) == programs.end()) programs.push_back(v.program);
        variants.push_back(v);
      } else {
        Die("bad manifest line: " + s);
      }
    }
    fclose(f);
  }
  if (variants.empty()) Die("no variants in " + o.manifest);
  runner.tmp_root = bench::MakeTempDir("compare-runs");
  bench::g_scratch_dir = runner.tmp_root;

  auto find = [&](const std::string& p, const std::string& c, Kind k) -> int {
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].program == p && variants[i].compiler == c && variants[i].kind == k) return static_cast<int>(i);
    }
    return -1;
  };

  // ---- untimed check runs: same output, trace points, bytes written ------------
  fprintf(stderr, "compare_driver: %zu variants, check runs\n", variants.size());
  for (auto& v : variants) {
    const Run run = runner.Go(v, /*check=*/true);
    const std::string what = v.program + " / " + v.compiler + " / " + kKindNames[v.kind];
    if (!run.child.ok) Die(what + " failed (" + v.argv[0] + "):\n" + Tail(run.child.text));
    if (check_prefix.count(v.program)) {
      v.check_line = CheckLine(run.child.text, check_prefix[v.program]);
      if (v.check_line.empty()) Die(what + ": no line starting with '" + check_prefix[v.program] + "':\n" + Tail(run.child.text));
    }
    if (IsOn(v.kind) && run.counted < 1) {
      Die(what + ": no dump at exit: are lookback's hooks linked?");
    }
    if ((v.kind == kLbOff || IsPassOff(v.kind)) && run.counted > 0) {
      Die(what + ": LOOKBACK_ENABLED=0, yet a dump was written");
    }
    if (v.kind == kFloor || v.kind == kGprof || v.kind == kUftrace || v.kind == kXrayOff || v.kind == kXrayFdr) {
      if (run.counted <= 0) Die(what + ": could not count its trace points:\n" + Tail(run.child.text));
      v.trace_points = run.counted;
    }
    v.check_bytes = run.bytes;
    fprintf(stderr, "compare_driver:   %-40s %6.2f s  %s trace points  %s written\n", what.c_str(), run.child.wall_s,
            FmtCount(static_cast<double>(v.trace_points)).c_str(), FmtBytes(static_cast<double>(run.bytes)).c_str());
  }
  for (auto& v : variants) {
    if (UsesCygObject(v.kind) && v.kind != kFloor) {
      const int floor = find(v.program, v.compiler, kFloor);
      if (floor >= 0) v.trace_points = variants[floor].trace_points;
    }
  }
  for (const auto& p : programs) {
    std::string first;
    for (const auto& v : variants) {
      if (v.program != p || v.check_line.empty()) continue;
      if (first.empty()) first = v.check_line;
      if (v.check_line != first) {
        Die(p + " / " + v.compiler + " / " + kKindNames[v.kind] + " computed something else: '" + v.check_line +
            "' vs '" + first + "'");
      }
    }
  }

  // ---- interleaved rounds ----------------------------------------------------------
  // wall[vi][r], cpu[vi][r], bytes[vi][r]; NAN when a run failed.
  const size_t nv = variants.size();
  std::vector<std::vector<double>> wall(nv, std::vector<double>(o.rounds, NAN)), cpu = wall, bytes = wall;
  FILE* raw = nullptr;
  if (!o.raw.empty()) {
    raw = fopen(o.raw.c_str(), "w");
    if (raw == nullptr) Die("cannot write " + o.raw);
    fprintf(raw, "round,program,compiler,variant,wall_s,cpu_s,bytes_written\n");
  }
  const std::string load_before = bench::LoadAverage();
  for (int r = 0; r < o.rounds; ++r) {
    for (const auto& p : programs) {
      std::vector<size_t> mine;
      for (size_t i = 0; i < nv; ++i) {
        if (variants[i].program == p) mine.push_back(i);
      }
      for (size_t j = 0; j < mine.size(); ++j) {
        const size_t vi = mine[(j + static_cast<size_t>(r)) % mine.size()];  // rotated each round
        const Variant& v = variants[vi];
        const Run run = runner.Go(v, /*check=*/false);
        if (!run.child.ok) {
          fprintf(stderr, "compare_driver: %s / %s / %s failed:\n%s\n", p.c_str(), v.compiler.c_str(),
                  kKindNames[v.kind], Tail(run.child.text).c_str());
          continue;
        }
        if (!v.check_line.empty() && CheckLine(run.child.text, check_prefix[p]) != v.check_line) {
          Die(p + " / " + v.compiler + " / " + kKindNames[v.kind] + ": output changed between runs");
        }
        wall[vi][r] = run.child.wall_s;
        cpu[vi][r] = run.child.cpu_s;
        bytes[vi][r] = static_cast<double>(run.bytes);
        if (raw != nullptr) {
          fprintf(raw, "%d,%s,%s,%s,%.6f,%.6f,%lld\n", r, p.c_str(), v.compiler.c_str(), kKindKeys[v.kind],
                  run.child.wall_s, run.child.cpu_s, run.bytes);
        }
      }
    }
    fprintf(stderr, "compare_driver: round %d/%d done\n", r + 1, o.rounds);
  }
  if (raw != nullptr) fclose(raw);
  bench::RemoveTree(runner.tmp_root);
  const std::string load_after = bench::LoadAverage();

  // ---- tables ------------------------------------------------------------------------
  auto median_of = [&](auto f) {
    std::vector<double> v;
    for (int r = 0; r < o.rounds; ++r) v.push_back(f(r));
    return Median(v);
  };
  // Per-round figures of variant vi against the same round's uninstrumented
  // run (same program and compiler), on wall or CPU time; medians over rounds.
  using Series = std::vector<std::vector<double>>;
  auto added = [&](const Series& t, int vi, int plain) {
    return median_of([&](int r) { return t[vi][r] - t[plain][r]; });
  };
  auto ns_tp = [&](const Series& t, int vi, int plain) -> double {
    if (variants[vi].trace_points <= 0) return NAN;
    return added(t, vi, plain) * 1e9 / static_cast<double>(variants[vi].trace_points);
  };
  // Added time of a over added time of b, per round, then the median.
  auto added_ratio = [&](const Series& t, int a, int b, int plain) {
    return median_of([&](int r) { return (t[a][r] - t[plain][r]) / (t[b][r] - t[plain][r]); });
  };
  auto compilers_of = [&](const std::string& p) {
    std::vector<std::string> out;
    for (const auto& v : variants) {
      if (v.program == p && std::find(out.begin(), out.end(), v.compiler) == out.end()) out.push_back(v.compiler);
    }
    return out;
  };

  printf("Real programs: medians of %d interleaved rounds. Per round, every variant is compared with the same\n", o.rounds);
  printf("round's uninstrumented build (same compiler): added = variant - uninstrumented; ns/tp = added / the\n");
  printf("variant's trace points; x floor = added / the floor hook's added. Wall time is fork to exit; CPU is user +\n");
  printf("system time of the process and its children (uftrace's writers included), which waiting for a CPU on a\n");
  printf("shared machine does not inflate. /proc/loadavg before: %s; after: %s\n", load_before.c_str(),
         load_after.c_str());
  for (const auto& p : programs) {
    printf("\n%s%s\n\n", p.c_str(),
           check_prefix.count(p) ? (" (every variant printed the same '" + check_prefix[p] + "' line)").c_str() : "");
    printf("| compiler | variant | wall s | CPU s | x uninstr. (wall) | trace points | ns/tp (wall) | ns/tp (CPU) | x floor (wall) | x floor (CPU) | bytes written |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& c : compilers_of(p)) {
      const int plain = find(p, c, kPlain), floor = find(p, c, kFloor);
      for (int k = 0; k < kKinds; ++k) {
        const int vi = find(p, c, static_cast<Kind>(k));
        if (vi < 0) continue;
        const Variant& v = variants[vi];
        std::string x_plain = "–", tp_wall = "–", tp_cpu = "–", x_floor = "–", x_floor_cpu = "–";
        if (plain >= 0 && k != kPlain) {
          x_plain = Fmt(median_of([&](int r) { return wall[vi][r] / wall[plain][r]; }), 3);
          tp_wall = Fmt(ns_tp(wall, vi, plain), 2);
          tp_cpu = Fmt(ns_tp(cpu, vi, plain), 2);
          if (floor >= 0) {
            x_floor = Fmt(added_ratio(wall, vi, floor, plain), 3);
            x_floor_cpu = Fmt(added_ratio(cpu, vi, floor, plain), 3);
          }
        }
        double b = NAN;
        if (IsOn(k)) b = static_cast<double>(v.check_bytes);  // the dump at exit (check run)
        if (k == kGprof || k == kUftrace || k == kXrayFdr) b = median_of([&](int r) { return bytes[vi][r]; });
        std::string bytes_cell = FmtBytes(b);
        if (IsOn(k)) bytes_cell += " (dump at exit)";
        printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.c_str(), kKindNames[k],
               Fmt(median_of([&](int r) { return wall[vi][r]; }), 3).c_str(),
               Fmt(median_of([&](int r) { return cpu[vi][r]; }), 3).c_str(), x_plain.c_str(),
               FmtCount(static_cast<double>(v.trace_points)).c_str(), tp_wall.c_str(), tp_cpu.c_str(), x_floor.c_str(),
               x_floor_cpu.c_str(), bytes_cell.c_str());
      }
    }
  }

  printf("\nHeadline: added time of one variant over another's, median of per-round ratios, wall / CPU;\n");
  printf("in brackets ns per trace point (wall) of the two, each with its own trace point count:\n\n");
  printf("| program | compiler | lookback on / floor (goal <= 1.2) | uftrace / lookback on | XRay FDR / lookback on | gprof / lookback on | lookback off, x uninstr. | XRay unpatched, x uninstr. |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& p : programs) {
    for (const auto& c : compilers_of(p)) {
      const int plain = find(p, c, kPlain), on = find(p, c, kLbOn);
      if (plain < 0 || on < 0) continue;
      auto cell = [&](int a, int b, bool goal) {
        if (a < 0 || b < 0) return std::string("–");
        const double w = added_ratio(wall, a, b, plain), cp = added_ratio(cpu, a, b, plain);
        std::string s = Fmt(w, 3) + " / " + Fmt(cp, 3);
        if (goal) s += (w <= 1.2 && cp <= 1.2) ? " (met)" : (w <= 1.2 || cp <= 1.2) ? " (met on one clock)" : " (MISSED)";
        return s + " [" + Fmt(ns_tp(wall, a, plain), 2) + " vs " + Fmt(ns_tp(wall, b, plain), 2) + "]";
      };
      auto x_plain = [&](Kind k) {
        const int vi = find(p, c, k);
        if (vi < 0) return std::string("–");
        return Fmt(median_of([&](int r) { return wall[vi][r] / wall[plain][r]; }), 3) + " / " +
               Fmt(median_of([&](int r) { return cpu[vi][r] / cpu[plain][r]; }), 3);
      };
      printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", p.c_str(), c.c_str(),
             cell(on, find(p, c, kFloor), true).c_str(), cell(find(p, c, kUftrace), on, false).c_str(),
             cell(find(p, c, kXrayFdr), on, false).c_str(), cell(find(p, c, kGprof), on, false).c_str(),
             x_plain(kLbOff).c_str(), x_plain(kXrayOff).c_str());
    }
  }

  // Fast clock (issue 18) beside exact and the other tracers, wall time over
  // uninstrumented. Goal: the pass with every post-inlining function, <= +75 %.
  printf("\nFast clock (LOOKBACK_CLOCK=fast): wall (and CPU) time over uninstrumented, medians of per-round ratios:\n\n");
  printf("| program | compiler | front-end | fast | exact | uftrace | XRay FDR |\n|---|---|---|---:|---:|---:|---:|\n");
  for (const auto& p : programs) {
    for (const auto& c : compilers_of(p)) {
      const int plain = find(p, c, kPlain);
      if (plain < 0) continue;
      auto over = [&](Kind k) {
        const int vi = find(p, c, k);
        if (vi < 0) return std::string("–");
        const double w = median_of([&](int r) { return wall[vi][r] / wall[plain][r]; }) - 1;
        const double cp = median_of([&](int r) { return cpu[vi][r] / cpu[plain][r]; }) - 1;
        return "+" + Fmt(100 * w, 1) + " % (+" + Fmt(100 * cp, 1) + " %)";
      };
      for (auto [fast, exact, name] : {std::tuple{kLbFast, kLbOn, "hooks"}, std::tuple{kPassFast, kPassOn, "pass"},
                                       std::tuple{kPassFullFast, kPassFullOn, "pass (full)"}}) {
        if (find(p, c, fast) < 0) continue;
        printf("| %s | %s | %s | %s | %s | %s | %s |\n", p.c_str(), c.c_str(), name, over(fast).c_str(),
               over(exact).c_str(), over(kUftrace).c_str(), over(kXrayFdr).c_str());
      }
    }
  }

  // The clang pass against the hook front-end (same compiler, clang).
  bool any_pass = false;
  for (const auto& v : variants) any_pass = any_pass || v.kind == kPassOn;
  if (any_pass) {
    printf("\nThe clang pass (inlined trace points) against clang's hook front-end, medians of per-round ratios,\n");
    printf("wall / CPU (code size: bench/compare.sh prints it):\n\n");
    printf("| program | pass off, x uninstr. (goal <= 1.05) | hooks off, x uninstr. | pass on / hooks on, added time | pass on, x uninstr. | hooks on, x uninstr. | full shape off, x uninstr. | full shape on / hooks on |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& p : programs) {
      const int plain = find(p, "clang", kPlain), pon = find(p, "clang", kPassOn), on = find(p, "clang", kLbOn);
      if (plain < 0 || pon < 0) continue;
      auto x_plain = [&](Kind k, bool goal) {
        const int vi = find(p, "clang", k);
        if (vi < 0) return std::string("–");
        const double w = median_of([&](int r) { return wall[vi][r] / wall[plain][r]; });
        const double cp = median_of([&](int r) { return cpu[vi][r] / cpu[plain][r]; });
        std::string s = Fmt(w, 3) + " / " + Fmt(cp, 3);
        if (goal) s += (w <= 1.05 && cp <= 1.05) ? " (met)" : (w <= 1.05 || cp <= 1.05) ? " (met on one clock)" : " (MISSED)";
        return s;
      };
      auto over_hooks = [&](int a) {
        if (on < 0 || a < 0) return std::string("–");
        return Fmt(added_ratio(wall, a, on, plain), 3) + " / " + Fmt(added_ratio(cpu, a, on, plain), 3);
      };
      printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", p.c_str(), x_plain(kPassOff, true).c_str(),
             x_plain(kLbOff, false).c_str(), over_hooks(pon).c_str(), x_plain(kPassOn, false).c_str(),
             x_plain(kLbOn, false).c_str(), x_plain(kPassFullOff, false).c_str(),
             over_hooks(find(p, "clang", kPassFullOn)).c_str());
    }
  }
  return 0;
}
