// How long `lookback dump PID` takes, phase by phase, while the traced
// threads spin on every core (docs/performance.md, "Dump latency").
//
//   dump_latency [--threads 1,8,32] [--dumps 9] [--ring 8M] [--dir DIR]
//                [--lookback PATH] [--spinners PATH] [--no-phases]
//
// For each thread count N it starts `lookback record --buffer-size RING --
// spinners N` (tests/programs/spinners.cc: N threads calling two traced
// functions in a loop; "ready" once every ring has wrapped), asks for DUMPS
// dumps one after another with `lookback dump PID --timings`, deletes each
// dump once it is measured, and prints the median and maximum of every phase
// the process reported (queued, prepare, snapshot, encode, write, fsync,
// rename, total) beside the dump's size and the wall time of the `lookback
// dump` command itself. --no-phases measures only that wall time (for a
// lookback that cannot report phases). Dumps go to DIR (default: a fresh
// directory under $TMPDIR or /tmp, i.e. a disk, so fsync is real).
#include <signal.h>
#include <sys/wait.h>

#include <map>

#include "bench_util.h"

namespace {

using bench::Die;
using bench::Fmt;
using bench::Median;

struct Options {
  std::vector<int> threads = {1, 8, 32};
  int dumps = 9;
  std::string ring = "8M";
  std::string dir;
  std::string lookback;
  std::string spinners;
  bool phases = true;
};

// The phases `lookback dump --timings` prints ("key=value ..." on stderr).
const char* const kPhases[] = {"queued_ns", "prepare_ns", "snapshot_ns", "encode_ns", "write_ns",
                               "fsync_ns",  "rename_ns",  "total_ns",    "cpu_ns"};

std::map<std::string, double> ParseTimings(const std::string& text) {
  std::map<std::string, double> kv;
  const size_t at = text.find("timings:");
  if (at == std::string::npos) return kv;
  const size_t end = text.find('\n', at);
  for (const std::string& f : bench::Split(text.substr(at + 8, end == std::string::npos ? end : end - at - 8), ' ')) {
    const size_t eq = f.find('=');
    if (eq != std::string::npos) kv[f.substr(0, eq)] = strtod(f.c_str() + eq + 1, nullptr);
  }
  return kv;
}

struct Recorder {
  pid_t pid = -1;      // `lookback record`
  int traced_pid = 0;  // the spinners process
  FILE* out = nullptr;
};

Recorder StartRecorder(const Options& o, int threads, const std::string& work) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) Die("pipe2 failed");
  fflush(nullptr);
  Recorder r;
  r.pid = fork();
  if (r.pid < 0) Die("fork failed");
  if (r.pid == 0) {
    dup2(fds[1], 1);
    if (chdir(work.c_str()) != 0) _exit(126);
    const std::string n = std::to_string(threads);
    execl(o.lookback.c_str(), "lookback", "record", "--dir", "dumps", "--buffer-size", o.ring.c_str(),
          "--no-exit-dump", "-q", "--", o.spinners.c_str(), n.c_str(), (char*)nullptr);
    _exit(127);
  }
  close(fds[1]);
  r.out = fdopen(fds[0], "r");
  if (r.out == nullptr || fscanf(r.out, "ready %d", &r.traced_pid) != 1) Die("spinners did not start");
  return r;
}

void StopRecorder(Recorder* r, const std::string& work) {
  FILE* f = fopen((work + "/stop").c_str(), "w");
  if (f != nullptr) fclose(f);
  int status = 0;
  while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {
  }
  fclose(r->out);
}

void Usage() {
  fprintf(stderr,
          "usage: dump_latency [--threads 1,8,32] [--dumps 9] [--ring 8M] [--dir DIR]\n"
          "                    [--lookback PATH] [--spinners PATH] [--no-phases]\n");
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  bench::g_prog = "dump_latency";
  Options o;
  const std::string self = bench::SelfDir();  // BUILD/bench
  o.lookback = self + "/../lookback";
  o.spinners = self + "/spinners";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--threads") {
      o.threads.clear();
      for (const auto& t : bench::Split(value(), ',')) o.threads.push_back(atoi(t.c_str()));
    } else if (a == "--dumps") {
      o.dumps = atoi(value().c_str());
    } else if (a == "--ring") {
      o.ring = value();
    } else if (a == "--dir") {
      o.dir = value();
    } else if (a == "--lookback") {
      o.lookback = value();
    } else if (a == "--spinners") {
      o.spinners = value();
    } else if (a == "--no-phases") {
      o.phases = false;
    } else {
      Usage();
    }
  }
  if (!bench::IsExecutable(o.lookback)) Die(o.lookback + " not found (--lookback)");
  if (!bench::IsExecutable(o.spinners)) Die(o.spinners + " not found (--spinners)");
  if (o.dumps < 1) Usage();
  const std::string base = o.dir.empty() ? bench::MakeTempDir("lookback-dump-latency") : o.dir;
  if (o.dir.empty()) bench::g_scratch_dir = base;

  printf("# dump latency: rings of %s, %d dumps per row, one after another; load average %s\n", o.ring.c_str(),
         o.dumps, bench::LoadAverage().c_str());
  printf("# ms: median / max of all dumps; `cli` is the wall time of `lookback dump PID` itself; `first total`:\n"
         "# the first dump of the row alone (its memory is new to the process; later ones reuse it)\n");
  printf("%7s %9s", "threads", "dump MB");
  if (o.phases) {
    for (const char* p : kPhases) printf(" %15.*s", static_cast<int>(strlen(p) - 3), p);
  }
  printf(" %15s %11s\n", "cli", "first total");
  for (int n : o.threads) {
    const std::string work = base + "/t" + std::to_string(n);
    mkdir(work.c_str(), 0700);
    Recorder rec = StartRecorder(o, n, work);
    std::map<std::string, std::vector<double>> ms;
    std::vector<double> bytes;
    for (int k = 0; k < o.dumps; ++k) {
      std::vector<std::string> args = {o.lookback, "dump", std::to_string(rec.traced_pid)};
      if (o.phases) args.push_back("--timings");
      bench::Child c = bench::Spawn(args, {}, {});
      if (!c.ok) Die("lookback dump failed: " + c.text);
      std::string path;  // stdout's line; the timings come on stderr, in any order
      for (const std::string& line : bench::Split(c.text, '\n')) {
        if (line.find("timings:") == std::string::npos) path = line;
      }
      struct stat st;
      if (stat(path.c_str(), &st) != 0) Die("no dump at '" + path + "': " + c.text);
      bytes.push_back(static_cast<double>(st.st_size));
      ms["cli"].push_back(c.wall_s * 1e3);
      if (o.phases) {
        const auto kv = ParseTimings(c.text);
        if (kv.empty()) Die("lookback dump --timings printed no timings: " + c.text);
        for (const char* p : kPhases) {
          auto it = kv.find(p);
          ms[p].push_back(it == kv.end() ? NAN : it->second / 1e6);
        }
      }
      unlink(path.c_str());
      usleep(200000);  // the rings fill again
    }
    StopRecorder(&rec, work);
    bench::RemoveTree(work);
    auto cell = [](const std::vector<double>& v) {
      const double mx = v.empty() ? NAN : *std::max_element(v.begin(), v.end());
      return Fmt(Median(v), 1) + " / " + Fmt(mx, 1);
    };
    printf("%7d %9s", n, Fmt(Median(bytes) / 1e6, 1).c_str());
    if (o.phases) {
      for (const char* p : kPhases) printf(" %15s", cell(ms[p]).c_str());
    }
    printf(" %15s %11s\n", cell(ms["cli"]).c_str(), Fmt(o.phases ? ms["total_ns"][0] : ms["cli"][0], 1).c_str());
    fflush(stdout);
  }
  if (o.dir.empty()) bench::RemoveTree(base);
  return 0;
}
