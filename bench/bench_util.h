// Helpers shared by the benchmark drivers (listing1_driver.cc,
// compare_driver.cc): running a child with a clean environment and timing it,
// temporary directories, sizes on disk, medians, gmon.out call counts.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace bench {

// Name printed by Die(); each driver sets it first thing in main().
inline const char* g_prog = "bench";
// A scratch directory Die() removes before exiting.
inline std::string g_scratch_dir;

inline void RemoveTree(const std::string& path);

[[noreturn]] inline void Die(const std::string& msg) {
  fprintf(stderr, "%s: %s\n", g_prog, msg.c_str());
  if (!g_scratch_dir.empty()) RemoveTree(g_scratch_dir);
  exit(1);
}

inline bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

inline std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  const size_t slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

inline std::vector<std::string> Split(const std::string& s, char sep) {
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

inline std::optional<std::string> FindInPath(const std::string& name) {
  const char* path = getenv("PATH");
  for (const auto& d : Split(path ? path : "/usr/bin:/bin", ':')) {
    const std::string p = d + "/" + name;
    if (IsExecutable(p)) return p;
  }
  return std::nullopt;
}

inline std::string LoadAverage() {
  FILE* f = fopen("/proc/loadavg", "r");
  if (f == nullptr) return "?";
  char buf[128] = {};
  const bool ok = fgets(buf, sizeof buf, f) != nullptr;
  fclose(f);
  std::string s = ok ? buf : "?";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A fresh directory $TMPDIR/<prefix>-XXXXXX (or inside `parent` when given).
inline std::string MakeTempDir(const std::string& prefix, const std::string& parent = "") {
  const char* tmp = getenv("TMPDIR");
  const std::string base = parent.empty() ? std::string(tmp ? tmp : "/tmp") : parent;
  std::string tmpl = base + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) Die("mkdtemp " + tmpl + ": " + strerror(errno));
  return buf.data();
}

inline void RemoveTree(const std::string& path) {
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

inline int CountEntries(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
  }
  closedir(d);
  return n;
}

// Bytes in the regular files under `path` whose names satisfy `keep` (apparent
// sizes, like `du -b`).
template <typename Keep>
long long TreeBytesIf(const std::string& path, const Keep& keep) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return 0;
  if (S_ISREG(st.st_mode)) {
    const size_t slash = path.rfind('/');
    return keep(slash == std::string::npos ? path : path.substr(slash + 1)) ? static_cast<long long>(st.st_size) : 0;
  }
  if (!S_ISDIR(st.st_mode)) return 0;
  long long total = 0;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    total += TreeBytesIf(path + "/" + e->d_name, keep);
  }
  closedir(d);
  return total;
}

inline long long TreeBytes(const std::string& path) {
  return TreeBytesIf(path, [](const std::string&) { return true; });
}

// uftrace writes one <tid>.dat file per thread, 16 bytes per record (entry or
// exit) when no arguments or return values are recorded.
inline long long UftraceRecords(const std::string& data_dir) {
  const long long bytes = TreeBytesIf(data_dir, [](const std::string& name) {
    return name.size() > 4 && name.compare(name.size() - 4, 4, ".dat") == 0 && name.compare(0, 4, "perf") != 0;
  });
  return bytes / 16;
}

// Sum of the call-graph arc counts in a gmon.out file (glibc format): the
// number of mcount calls the run made, i.e. entries of -pg functions. -1 when
// the file is missing or malformed.
inline long long GmonCalls(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return -1;
  std::vector<unsigned char> b;
  unsigned char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) b.insert(b.end(), chunk, chunk + n);
  fclose(f);
  auto u32 = [&](size_t at) {
    uint32_t v;
    memcpy(&v, &b[at], 4);
    return v;
  };
  constexpr size_t kHeader = 20;               // "gmon", version, 12 spare bytes
  constexpr size_t kHistHeader = 8 + 8 + 4 + 4 + 15 + 1;
  constexpr size_t kArc = 8 + 8 + 4;           // from_pc, self_pc, count
  if (b.size() < kHeader || memcmp(b.data(), "gmon", 4) != 0) return -1;
  long long calls = 0;
  size_t at = kHeader;
  while (at < b.size()) {
    const unsigned char tag = b[at++];
    if (tag == 0) {  // GMON_TAG_TIME_HIST: header, then hist_size 16-bit bins
      if (at + kHistHeader > b.size()) return -1;
      const uint32_t bins = u32(at + 16);
      at += kHistHeader + 2 * static_cast<size_t>(bins);
    } else if (tag == 1) {  // GMON_TAG_CG_ARC
      if (at + kArc > b.size()) return -1;
      calls += u32(at + 16);
      at += kArc;
    } else {
      return -1;  // GMON_TAG_BB_COUNT is not written by -pg builds
    }
  }
  return at == b.size() ? calls : -1;
}

inline double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Child {
  bool ok = false;        // exited with status 0
  int status = 0;         // as from waitpid
  std::string text;       // stdout and stderr, interleaved
  double wall_s = 0;      // fork to reaped, CLOCK_MONOTONIC
  double cpu_s = 0;       // user + system time of the child and its descendants
};

// Runs argv (argv[0] a path) with the parent's environment minus every
// variable starting with one of `drop_prefixes`, plus `env`, in `cwd` (when
// not empty), stdin from /dev/null, stdout and stderr captured.
inline Child Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::vector<std::string>& drop_prefixes, const std::string& cwd = "") {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    bool drop = false;
    for (const auto& p : drop_prefixes) drop = drop || strncmp(*e, p.c_str(), p.size()) == 0;
    if (!drop) envs.emplace_back(*e);
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
  Child out;
  const double t0 = NowSeconds();
  const pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      fprintf(stderr, "chdir %s: %s\n", cwd.c_str(), strerror(errno));
      _exit(127);
    }
    execve(cargv[0], cargv.data(), cenv.data());
    fprintf(stderr, "exec %s: %s\n", cargv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
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
  rusage ru{};
  while (wait4(pid, &out.status, 0, &ru) < 0 && errno == EINTR) {
  }
  out.wall_s = NowSeconds() - t0;
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  out.cpu_s = tv(ru.ru_utime) + tv(ru.ru_stime);
  out.ok = WIFEXITED(out.status) && WEXITSTATUS(out.status) == 0;
  return out;
}

inline double Median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline std::string Fmt(double v, int prec) {
  if (std::isnan(v)) return "–";
  char b[64];
  snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

// 8.39 MB style, decimal units; "–" for negative (unknown).
inline std::string FmtBytes(double bytes) {
  if (std::isnan(bytes) || bytes < 0) return "–";
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  char b[64];
  snprintf(b, sizeof b, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return b;
}

// 1.23 M style counts.
inline std::string FmtCount(double n) {
  if (std::isnan(n) || n < 0) return "–";
  char b[64];
  if (n >= 1e9) {
    snprintf(b, sizeof b, "%.3g G", n / 1e9);
  } else if (n >= 1e6) {
    snprintf(b, sizeof b, "%.3g M", n / 1e6);
  } else if (n >= 1e3) {
    snprintf(b, sizeof b, "%.3g k", n / 1e3);
  } else {
    snprintf(b, sizeof b, "%.0f", n);
  }
  return b;
}

}  // namespace bench
