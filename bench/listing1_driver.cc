// Runs Hubble's Listing 1 (listing1.cc) in every variant, interleaved, and
// prints medians.
//
//   listing1_driver [--dir DIR] [--rounds N] [--work 0,1,10,100,1000]
//                   [--compilers gcc,clang] [--scale F] [--no-uftrace]
//                   [--no-first-lap] [--extra] [--raw FILE.csv] [--quick]
//
// Each variant is a separate binary (built by bench/CMakeLists.txt next to
// this driver) that times its own loop with CLOCK_MONOTONIC after a warm-up
// lap that fills an 8 MiB ring once. One round runs every (work, variant)
// pair once, variants in an order rotated each round; ratios are computed
// within a round and their medians reported.
//
// Then (unless --no-first-lap) the first lap: work 0, exactly one ring's worth
// of calls and no warm-up, so every 4 KiB page of the ring is faulted in
// while timed, for the uninstrumented, floor and lookback-on variants.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr int kFunctionsPerCall = 10;
constexpr int kTracePointsPerCall = 2 * kFunctionsPerCall;
// 2^20 slots / 20 records per call = 52429 calls fill the ring once.
constexpr long kWarmupCalls = 60000;

// Diagnostics (--extra), not goals: kLbStatic*, liblookback.a linked into the
// executable (no PLT jump, TLS offset an immediate); kLbNoPlt*, the program
// built with -fno-plt (the hooks called through the GOT; clang 14 ignores
// -fno-plt for its instrumentation calls).
enum Kind {
  kPlain, kGlibc, kLbOff, kLbOn, kFloor, kUftrace,
  kLbStaticOff, kLbStaticOn, kLbNoPltOff, kLbNoPltOn, kKinds
};
const char* const kKindNames[kKinds] = {
    "uninstrumented",       "glibc no-op hooks",    "lookback, tracing off", "lookback, tracing on",
    "floor hook",           "uftrace record",       "lookback static, off",  "lookback static, on",
    "lookback -fno-plt, off", "lookback -fno-plt, on"};
const char* const kKindShort[kKinds] = {"plain",   "glibc",  "lb-off",     "lb-on",     "floor",
                                        "uftrace", "lbs-off", "lbs-on", "lbnoplt-off", "lbnoplt-on"};
const char* const kSuffix[kKinds] = {"plain", "glibc",    "lookback", "lookback", "floor",
                                     "pg",    "lbstatic", "lbstatic", "lbnoplt",  "lbnoplt"};
bool IsExtra(int k) { return k >= kLbStaticOff; }
bool IsLookback(int k) { return k == kLbOff || k == kLbOn || k >= kLbStaticOff; }
bool IsLookbackOn(int k) { return k == kLbOn || k == kLbStaticOn || k == kLbNoPltOn; }

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
  long warmup = kWarmupCalls;
  bool first_lap = true;
  bool extra = false;
  std::string raw;
};

[[noreturn]] void Die(const std::string& msg) {
  fprintf(stderr, "listing1_driver: %s\n", msg.c_str());
  exit(1);
}

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  const size_t slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    const std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::optional<std::string> FindInPath(const std::string& name) {
  const char* path = getenv("PATH");
  for (const auto& d : Split(path ? path : "/usr/bin:/bin", ':')) {
    const std::string p = d + "/" + name;
    if (IsExecutable(p)) return p;
  }
  return std::nullopt;
}

// Top-level calls timed per run, by work. A traced run at work 0 takes
// ~0.2 s (20 trace points of ~10 ns per call); larger work, fewer calls.
long CallsFor(int work, double scale) {
  const double ns_per_call_guess = 200.0 + 1.0 * work;  // traced variants; the leaf loop is ~1 ns/iteration
  const double target_ns = 1.5e8;
  const long calls = static_cast<long>(std::llround(target_ns / ns_per_call_guess * scale));
  return std::max(calls, 1000L);
}

std::string LoadAverage() {
  FILE* f = fopen("/proc/loadavg", "r");
  if (f == nullptr) return "?";
  char buf[128] = {};
  const bool ok = fgets(buf, sizeof buf, f) != nullptr;
  fclose(f);
  std::string s = ok ? buf : "?";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string MakeTempDir(const char* tag) {
  std::string tmpl = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/listing1-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) Die("mkdtemp: " + std::string(strerror(errno)));
  return buf.data();
}

void RemoveTree(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d != nullptr) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string child = path + "/" + name;
      struct stat st;
      if (lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        RemoveTree(child);
      } else {
        unlink(child.c_str());
      }
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

int CountEntries(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
  }
  closedir(d);
  return n;
}

struct RunOutput {
  bool ok = false;
  std::string text;  // stdout and stderr of the child
  long long elapsed_ns = 0;
  long long floor_records = 0;
  unsigned long long sink = 0;
};

// Runs argv with the parent's environment minus LOOKBACK_* plus `env`.
RunOutput Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    if (strncmp(*e, "LOOKBACK_", 9) != 0) envs.emplace_back(*e);
  }
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) Die("pipe2 failed");
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execve(cargv[0], cargv.data(), cenv.data());
    fprintf(stderr, "exec %s: %s\n", cargv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  RunOutput out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      out.text.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return out;
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

  std::vector<std::string> LookbackEnv(bool on, const std::string& dir, bool dump_at_exit) const {
    std::vector<std::string> env = {"LOOKBACK_DIR=" + dir, std::string("LOOKBACK_DUMP_AT_EXIT=") + (dump_at_exit ? "1" : "0"),
                                    "LOOKBACK_QUIET=1"};
    if (!on) env.push_back("LOOKBACK_ENABLED=0");
    return env;
  }

  RunOutput Run(const Variant& v, int work, long calls, long warmup) const {
    std::vector<std::string> args = {v.binary, std::to_string(work), std::to_string(calls), std::to_string(warmup)};
    std::vector<std::string> env;
    std::string dir;
    if (IsLookback(v.kind)) {
      env = LookbackEnv(IsLookbackOn(v.kind), tmp_root, false);
    } else if (v.kind == kUftrace) {
      dir = MakeTempDir("uftrace");
      args.insert(args.begin(), {uftrace, "record", "-d", dir});
    }
    RunOutput out = Spawn(args, env);
    if (!dir.empty()) RemoveTree(dir);
    return out;
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string Fmt(double v, int prec) {
  if (std::isnan(v)) return "–";
  char b[64];
  snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

void Usage() {
  fprintf(stderr,
          "usage: listing1_driver [--dir DIR] [--rounds N] [--work 0,1,10,100,1000] [--compilers gcc,clang]\n"
          "                       [--scale F] [--no-uftrace] [--no-first-lap] [--extra]\n"
          "                       [--raw FILE.csv] [--quick]\n");
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.dir = SelfDir();
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
      for (const auto& w : Split(next(), ',')) o.works.push_back(atoi(w.c_str()));
    } else if (a == "--compilers") {
      o.compilers = Split(next(), ',');
    } else if (a == "--scale") {
      o.scale = atof(next().c_str());
    } else if (a == "--no-uftrace") {
      o.uftrace = false;
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

  Runner runner;
  runner.tmp_root = MakeTempDir("dumps");
  if (o.uftrace) {
    if (auto u = FindInPath("uftrace")) {
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
      if (IsExtra(k) && !o.extra) continue;
      if (!IsExecutable(bin)) {
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

  // ---- untimed checks: lookback's hooks are the ones called ----------------
  for (const auto& v : variants) {
    if (!IsLookback(v.kind)) continue;
    const std::string dir = MakeTempDir("check");
    const std::vector<std::string> args = {v.binary, "0", "1000", "0"};
    RunOutput out = Spawn(args, runner.LookbackEnv(IsLookbackOn(v.kind), dir, true));
    const int dumps = CountEntries(dir);
    RemoveTree(dir);
    if (!out.ok) Die(v.binary + " failed:\n" + out.text);
    if (IsLookbackOn(v.kind) && dumps < 1) Die(v.binary + ": tracing on, but no dump at exit: are lookback's hooks linked?");
    if (!IsLookbackOn(v.kind) && dumps != 0) Die(v.binary + ": LOOKBACK_ENABLED=0, yet a dump was written");
  }

  // ---- interleaved rounds ----------------------------------------------------
  // ns per top-level call, [variant][work index][round]; NAN when a run failed.
  std::vector<std::vector<std::vector<double>>> ns(
      variants.size(), std::vector<std::vector<double>>(o.works.size(), std::vector<double>(o.rounds, NAN)));
  FILE* raw = nullptr;
  if (!o.raw.empty()) {
    raw = fopen(o.raw.c_str(), "w");
    if (raw == nullptr) Die("cannot write " + o.raw);
    fprintf(raw, "round,compiler,variant,work,calls,warmup,elapsed_ns,ns_per_call\n");
  }
  std::map<std::pair<size_t, size_t>, unsigned long long> plain_sink;  // (compiler idx, work idx) -> sink
  fprintf(stderr, "listing1_driver: %zu variants x %zu work values x %d rounds\n", variants.size(), o.works.size(),
          o.rounds);
  const std::string load_before = LoadAverage();
  for (int r = 0; r < o.rounds; ++r) {
    for (size_t w = 0; w < o.works.size(); ++w) {
      const int work = o.works[w];
      for (size_t j = 0; j < variants.size(); ++j) {
        const size_t vi = (j + static_cast<size_t>(r)) % variants.size();  // rotate the order each round
        const Variant& v = variants[vi];
        long calls = CallsFor(work, o.scale);
        const long warmup = o.warmup;
        if (v.kind == kUftrace) calls = std::max(calls / 10, 1000L);  // >10x slower, 16 B per record to disk
        RunOutput out = runner.Run(v, work, calls, warmup);
        if (!out.ok) {
          fprintf(stderr, "listing1_driver: %s work=%d failed:\n%s\n", v.binary.c_str(), work, out.text.c_str());
          continue;
        }
        if (v.kind == kFloor && out.floor_records != static_cast<long long>(kTracePointsPerCall) * (calls + warmup)) {
          Die(v.binary + ": the floor hook recorded " + std::to_string(out.floor_records) + " trace points, expected " +
              std::to_string(kTracePointsPerCall * (calls + warmup)));
        }
        if (v.kind != kFloor && out.floor_records != -1) Die(v.binary + ": the floor hook is linked in");
        if (v.kind != kUftrace) {  // same calls, same result
          const size_t ci = static_cast<size_t>(
              std::find(o.compilers.begin(), o.compilers.end(), v.compiler) - o.compilers.begin());
          auto [it, fresh] = plain_sink.emplace(std::make_pair(ci, w), out.sink);
          if (!fresh && it->second != out.sink) Die(v.binary + ": result differs from the other variants");
        }
        const double per_call = static_cast<double>(out.elapsed_ns) / static_cast<double>(calls);
        ns[vi][w][r] = per_call;
        if (raw != nullptr) {
          fprintf(raw, "%d,%s,%s,%d,%ld,%ld,%lld,%.3f\n", r, v.compiler.c_str(), kKindShort[v.kind], work, calls,
                  warmup, out.elapsed_ns, per_call);
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
          fprintf(raw, "%d,%s,%s-first-lap,0,%ld,0,%lld,%.3f\n", r, variants[vi].compiler.c_str(),
                  kKindShort[variants[vi].kind], kLapCalls, out.elapsed_ns, first[vi][r]);
        }
      }
    }
    fprintf(stderr, "listing1_driver: first-lap runs done\n");
  }
  if (raw != nullptr) fclose(raw);
  RemoveTree(runner.tmp_root);
  const std::string load_after = LoadAverage();

  // ---- per-round ratios, medians -------------------------------------------
  auto find = [&](const std::string& c, Kind k) -> int {
    for (size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].compiler == c && variants[i].kind == k) return static_cast<int>(i);
    }
    return -1;
  };
  // Per round: ns per trace point of variant vi over the same round's uninstrumented run.
  auto tp_of = [&](int vi, int plain, size_t w, int r) {
    return (ns[vi][w][r] - ns[plain][w][r]) / kTracePointsPerCall;
  };
  // Median over rounds of f(r), skipping failed runs (NAN).
  auto median_of = [&](auto f) {
    std::vector<double> v;
    for (int r = 0; r < o.rounds; ++r) {
      const double x = f(r);
      if (!std::isnan(x)) v.push_back(x);
    }
    return Median(v);
  };

  printf("Listing 1, depth %d: %d trace points per top-level call. Medians of %d interleaved rounds;\n",
         kFunctionsPerCall, kTracePointsPerCall, o.rounds);
  printf("ns/tp = (variant - uninstrumented) / %d; ratios computed within each round, then the median taken.\n",
         kTracePointsPerCall);
  printf("/proc/loadavg before: %s; after: %s\n\n", load_before.c_str(), load_after.c_str());
  printf("| compiler | work | variant | ns/call | ns/fn call | ns/trace point | tp min..max | x floor (per tp) | x uninstr. (per call) |\n");
  printf("|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
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
        printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.c_str(), o.works[w], kKindNames[k],
               Fmt(call, 1).c_str(), Fmt(call / kFunctionsPerCall, 2).c_str(), tp.c_str(), range.c_str(),
               x_floor.c_str(), Fmt(x_plain, 3).c_str());
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
