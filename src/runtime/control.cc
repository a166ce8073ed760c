// lookback's control thread: the only place (besides lb_dump_sync and the
// exit handler) that writes dumps, so traced threads never do that work.
//
// It sleeps in poll() on
//   - an eventfd, written by the dump policy (lb_dump, triggers), the dump
//     signal's and the crash handler (write() is async-signal-safe) and
//     exiting threads (retention);
// and wakes up on its own for the detectors' ticks and for dumps that wait
// out a post-trigger delay (triggers.h).
//   - a listening UNIX socket in the abstract namespace, "\0lookback-<pid>",
//     for `lookback dump PID`. Only peers with our uid (or root) are served.
// Protocol on the socket, one line each way:
//   -> "DUMP <reason>\n"      <- "OK <path>\n" | "ERR <message>\n"
//   -> "PING\n"               <- "OK <pid> <process name>\n"
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>

#include <sys/syscall.h>

#include "runtime/exclude.h"
#include "runtime/runtime.h"
#include "runtime/sampler.h"
#include "runtime/triggers.h"

namespace lookback::rt {
namespace {

struct Control {
  std::mutex m;  // guards `started`
  bool started = false;
  int wake_fd = -1;
  int listen_fd = -1;
};

alignas(Control) unsigned char g_control_storage[sizeof(Control)];
std::atomic<bool> g_control_constructed{false};
std::atomic<int> g_wake_fd{-1};  // read by the signal handler
std::atomic<bool> g_signal_pending{false};
std::atomic<uint32_t> g_control_tid{0};
int g_dump_signal = 0;

Control& C() {
  if (!g_control_constructed.load(std::memory_order_acquire)) {
    static std::mutex once;
    std::lock_guard<std::mutex> lock(once);
    if (!g_control_constructed.load(std::memory_order_relaxed)) {
      new (g_control_storage) Control;
      g_control_constructed.store(true, std::memory_order_release);
    }
  }
  return *std::launder(reinterpret_cast<Control*>(g_control_storage));
}

std::string SocketName(uint32_t pid) { return "lookback-" + std::to_string(pid); }

int OpenListenSocket(uint32_t pid) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = SocketName(pid);
  memcpy(addr.sun_path + 1, name.data(), name.size());  // abstract: leading NUL
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads one line (up to 4 KiB) within `timeout_ms`.
bool ReadLine(int fd, std::string* line, int timeout_ms) {
  char buf[256];
  while (line->size() < 4096) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    line->append(buf, static_cast<size_t>(n));
    size_t nl = line->find('\n');
    if (nl != std::string::npos) {
      line->resize(nl);
      return true;
    }
  }
  return false;
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void ServeClient(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != getuid() && cred.uid != 0)) {
    WriteAll(fd, "ERR permission denied: not the same user\n");
    return;
  }
  std::string line;
  if (!ReadLine(fd, &line, 2000)) return;
  if (line == "PING") {
    WriteAll(fd, "OK " + std::to_string(R().pid) + " " + R().process_name + "\n");
  } else if (line.rfind("DUMP", 0) == 0) {
    Trigger t = ExplicitTrigger(line.size() > 5 ? line.substr(5) : "lookback dump");
    std::string why;
    if (!Admit(&t, &why)) {
      WriteAll(fd, "ERR " + why + "\n");
      return;
    }
    DumpOutcome out = WriteDump(t);
    WriteAll(fd, out.ok ? "OK " + out.path + "\n" : "ERR " + out.error + "\n");
  } else {
    WriteAll(fd, "ERR unknown request\n");
  }
}

// How often the control thread looks for newly loaded modules when
// LOOKBACK_EXCLUDE is set (functions of a dlopen'ed library are recorded until then).
constexpr uint64_t kExcludeRecheckNs = 1000000000;

// Held by the control thread whenever it is not asleep in poll(), and taken by
// fork() (pthread_atfork), so a fork never copies the control thread in the
// middle of its work: the child would inherit whatever it held (a malloc
// lock under allocators without fork handlers, ASan's among them; a static
// initialisation guard) and its first thread to need it would hang. A fork
// may wait for a dump being written.
pthread_mutex_t g_busy = PTHREAD_MUTEX_INITIALIZER;
// Set once the control thread holds g_busy: before that it is still being
// set up by the C library (or a sanitizer), which allocates.
bool g_control_running = false;

void ForkPrepare() { pthread_mutex_lock(&g_busy); }
void ForkParent() { pthread_mutex_unlock(&g_busy); }
void ForkChild() {  // the control thread did not survive
  pthread_mutex_init(&g_busy, nullptr);
  __atomic_store_n(&g_control_running, false, __ATOMIC_RELAXED);
}

void* ControlMain(void*) {
  pthread_mutex_lock(&g_busy);
  __atomic_store_n(&g_control_running, true, __ATOMIC_RELEASE);
  MarkControlThread();
  g_control_tid.store(static_cast<uint32_t>(syscall(SYS_gettid)));
  Control& c = C();
  const bool detectors = DetectorsConfigured();
  uint64_t next_tick_ns = 0;
  uint64_t next_state_ns = SamplingOn() ? 1 : 0;  // 0: not sampling
  for (;;) {
    // Sleep until woken, the next detector tick, or the next delayed dump.
    uint64_t now = MonotonicNs();
    if (detectors && now >= next_tick_ns) next_tick_ns = now + DetectorTick();
    uint64_t next_dump_ns = 0;
    for (const Trigger& t : TakeDueDumps(now, &next_dump_ns)) WriteDump(t);
    now = MonotonicNs();
    RefreshExcludesIfModulesChanged(now, kExcludeRecheckNs);  // modules loaded since: new functions to exclude
    if (next_state_ns != 0 && now >= next_state_ns) {
      next_state_ns = PollThreadStates(now);
      now = MonotonicNs();
    }
    uint64_t wake_at = detectors ? next_tick_ns : 0;
    if (next_state_ns != 0 && (wake_at == 0 || next_state_ns < wake_at)) wake_at = next_state_ns;
    if (!R().config.exclude.empty() && (wake_at == 0 || wake_at > now + kExcludeRecheckNs)) wake_at = now + kExcludeRecheckNs;
    if (next_dump_ns != 0 && (wake_at == 0 || next_dump_ns < wake_at)) wake_at = next_dump_ns;
    const int timeout_ms = wake_at == 0 ? -1 : wake_at <= now ? 0 : static_cast<int>((wake_at - now + 999999) / 1000000);
    pollfd fds[2] = {{c.wake_fd, POLLIN, 0}, {c.listen_fd, POLLIN, 0}};
    pthread_mutex_unlock(&g_busy);
    const int n = poll(fds, c.listen_fd >= 0 ? 2 : 1, timeout_ms);
    pthread_mutex_lock(&g_busy);
    if (n < 0) {
      if (errno == EINTR) continue;
      pthread_mutex_unlock(&g_busy);
      return nullptr;
    }
    Trigger crash;
    if (CrashPending(&crash)) {  // first: the crashing thread is waiting for it
      std::string why;
      if (Admit(&crash, &why)) WriteDump(crash);
      CrashDumpDone();
    }
    if (n == 0) continue;
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      ssize_t ignored = read(c.wake_fd, &v, sizeof v);
      (void)ignored;
      if (g_signal_pending.exchange(false)) Fire(ExplicitTrigger("signal " + std::string(strsignal(g_dump_signal))));
      std::lock_guard<std::mutex> lock(ControlMutex());
      ReclaimExitedRings();
    }
    if (c.listen_fd >= 0 && (fds[1].revents & POLLIN)) {
      int client = accept4(c.listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        ServeClient(client);
        close(client);
      }
    }
  }
}

void OnDumpSignal(int) {
  const int saved = errno;
  g_signal_pending.store(true);
  const int fd = g_wake_fd.load();
  if (fd >= 0) {
    uint64_t one = 1;
    ssize_t ignored = write(fd, &one, sizeof one);
    (void)ignored;
  }
  errno = saved;
}

}  // namespace

void EnsureControlThread() {
  Control& c = C();
  std::lock_guard<std::mutex> lock(c.m);
  if (c.started) return;
  c.started = true;
  if (c.wake_fd < 0) c.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  g_wake_fd.store(c.wake_fd);
  c.listen_fd = OpenListenSocket(R().pid);
  static bool fork_handlers = false;  // once per process image: a forked child inherits them
  if (!fork_handlers) {
    fork_handlers = true;
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  // The control thread must not inherit signals meant for the program's threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  const int rc = pthread_create(&t, &attr, ControlMain, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    c.started = false;
    Say(std::string("cannot start the control thread: ") + strerror(rc) + "; dumps only at exit or via lb_dump_sync");
    return;
  }
  // Until the new thread holds g_busy, a fork could copy it halfway through
  // its start-up (allocations included): wait for it, once per process.
  while (!__atomic_load_n(&g_control_running, __ATOMIC_ACQUIRE)) sched_yield();
  pthread_setname_np(t, "lookback");
}

void WakeControlThread() {
  const int fd = g_wake_fd.load();
  if (fd < 0) return;
  const int saved = errno;
  uint64_t one = 1;
  ssize_t ignored = write(fd, &one, sizeof one);
  (void)ignored;
  errno = saved;
}

int QueueDump(const char* reason) {
  EnsureControlThread();
  {
    Control& c = C();
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.started) return -1;
  }
  // The policy bounds what can wait (16 dumps) and applies rate limits.
  return Fire(ExplicitTrigger(reason)) ? 0 : -1;
}

uint32_t ControlThreadTid() { return g_control_tid.load(); }

// The eventfd the crash handler writes; -1 until the control thread runs.
int ControlWakeFd() { return g_control_tid.load() != 0 ? g_wake_fd.load() : -1; }

void InstallDumpSignal() {
  int sig = R().config.dump_signal;
  if (sig == 0) return;
  struct sigaction old{};
  if (sig < 0) {  // default: SIGUSR2, unless the program already handles it
    sig = SIGUSR2;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  }
  g_dump_signal = sig;
  struct sigaction sa{};
  sa.sa_handler = OnDumpSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
  // The eventfd must exist before the first signal can arrive.
  Control& c = C();
  std::lock_guard<std::mutex> lock(c.m);
  if (c.wake_fd < 0) c.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  g_wake_fd.store(c.wake_fd);
}

void ResetControlAfterFork() {
  // The control thread did not survive fork; the child gets its own on its
  // first traced thread, with a socket named after the child's pid.
  if (g_control_constructed.load()) {
    Control& old = C();
    if (old.listen_fd >= 0) close(old.listen_fd);  // bound to the parent's name
    if (old.wake_fd >= 0) close(old.wake_fd);      // its counter is shared with the parent
  }
  g_control_constructed.store(false);
  g_control_tid.store(0);
  Control& c = C();
  c.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  g_wake_fd.store(c.wake_fd);
}

}  // namespace lookback::rt
