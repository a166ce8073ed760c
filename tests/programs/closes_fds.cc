// A daemon's start-up: after some traced work it closes every descriptor it
// did not open itself (3..1023, as daemons and closefrom() do) and opens its
// log, which takes the lowest free number: one that lookback's control pipe
// or socket had. Then it serves: threads that come and go (each exit wakes
// lookback's control thread), one line in the log for each. For
// control_test.cc (Descriptors.*).
//   closes-fds LOG          prints "ready PID" once the log is open, serves
//                           until LOG.stop exists (at most 30 s), then prints
//                           "control-cpu-ms N wall-ms M": the CPU time of
//                           lookback's control thread, and its own run time
//   closes-fds LOG crash    the same start, then a segmentation fault
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

volatile unsigned long sink;

__attribute__((noinline)) void work(int n) {
  for (int i = 0; i < n; i++) sink += static_cast<unsigned long>(i);
}

__attribute__((noinline)) void serve_one(int fd, int i) {
  std::thread([] { work(1000); }).join();
  const std::string line = "line " + std::to_string(i) + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
}

// utime + stime of the thread named "lookback", in ms.
long ControlThreadCpuMs() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  long ms = -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[96], comm[32] = {};
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE* f = fopen(path, "r");
    if (f == nullptr) continue;
    const bool control = fgets(comm, sizeof comm, f) != nullptr && strcmp(comm, "lookback\n") == 0;
    fclose(f);
    if (!control) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    f = fopen(path, "r");
    if (f == nullptr) continue;
    char buf[1024] = {};
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    const char* p = strrchr(buf, ')');  // the fields after the name: state is field 3, utime 14, stime 15
    unsigned long utime = 0, stime = 0;
    if (n > 0 && p != nullptr &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2) {
      ms = static_cast<long>((utime + stime) * 1000 / static_cast<unsigned long>(sysconf(_SC_CLK_TCK)));
    }
  }
  closedir(d);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const bool crash = argc > 2 && strcmp(argv[2], "crash") == 0;
  const auto start = std::chrono::steady_clock::now();
  work(1000);
  std::thread([] { work(1000); }).join();  // lookback's control thread runs by now
  for (int fd = 3; fd < 1024; fd++) close(fd);
  const int log = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) return 4;
  printf("ready %d\n", static_cast<int>(getpid()));
  fflush(stdout);
  if (crash) {
    serve_one(log, 0);
    int* volatile null = nullptr;
    asm volatile("movl $1, (%0)" : : "r"(null) : "memory");  // a real fault: UBSan would stop a C null store first
    return 5;
  }
  const std::string stop = std::string(argv[1]) + ".stop";
  for (int i = 0; i < 3000 && access(stop.c_str(), F_OK) != 0; i++) {
    serve_one(log, i);
    usleep(10000);
  }
  close(log);
  const long wall_ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  printf("control-cpu-ms %ld wall-ms %ld\n", ControlThreadCpuMs(), wall_ms);
  return 0;
}
