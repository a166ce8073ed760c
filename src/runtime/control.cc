// lookback's control thread: the only place (besides lb_dump_sync and the
// exit handler) that writes dumps, so traced threads never do that work.
//
// It sleeps in poll() on
//   - a pipe, written by the dump policy (lb_dump, triggers), the dump
//     signal's and the crash handler (write() is async-signal-safe) and
//     exiting threads (retention);
// and wakes up on its own for the detectors' ticks and for dumps that wait
// out a post-trigger delay (triggers.h).
//   - a listening UNIX socket in the abstract namespace, "\0lookback-<pid>",
//     for `lookback dump PID` (protocol: runtime/control_protocol.h, shared
//     with the CLI).
// Both are OwnedFds (runtime/owned_fd.h): a program that closes descriptors
// it did not open, or gets their numbers back, loses them to nothing worse
// than the control thread opening new ones.
// Dump requests that wait while a dump is written share the next dump
// (ServeRequests); every one gets its answer.
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include <sys/syscall.h>

#include "runtime/budget.h"
#include "runtime/control_protocol.h"
#include "runtime/cpu_log.h"
#include "runtime/exclude.h"
#include "runtime/jvm_launcher.h"
#include "runtime/owned_fd.h"
#include "runtime/runtime.h"
#include "runtime/sampler.h"
#include "runtime/triggers.h"

namespace lookback::rt {
namespace {

struct Control {
  std::mutex m;  // guards `started`
  bool started = false;
  OwnedFd wake_read;     // the wake pipe's read end (its write end: g_wake)
  OwnedFd listen;        // the control socket
  bool listening = false;  // the socket was opened: reopen it if the program takes it
};

alignas(Control) unsigned char g_control_storage[sizeof(Control)];
std::atomic<bool> g_control_constructed{false};
OwnedFd g_wake;  // the wake pipe's write end, used by signal handlers too
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

using control::SocketName;

// Connections waiting to be accepted; beyond that, connect() blocks until the
// control thread catches up.
constexpr int kBacklog = 64;

int OpenListenSocket(uint32_t pid) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = SocketName(pid);
  memcpy(addr.sun_path + 1, name.data(), name.size());  // abstract: leading NUL
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, kBacklog) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A new wake pipe; the ends of the old one that are still ours are closed.
void OpenWakePipe(Control& c) {
  c.wake_read.Close();
  g_wake.Close();
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return;
  c.wake_read.Set(p[0]);
  g_wake.Set(p[1]);
}

void OpenControlSocket(Control& c) {
  c.listen.Set(OpenListenSocket(R().pid));
  c.listening = c.listen.Get() >= 0;
}

// Before each poll: descriptors the program closed or took back are opened
// anew (it said so once), so the thread neither spins on a closed one nor
// reads or writes the program's files.
void KeepDescriptors(Control& c) {
  static bool said = false;
  const bool wake_lost = c.wake_read.Get() < 0 || g_wake.Get() < 0;
  const bool socket_lost = c.listening && c.listen.Get() < 0;
  if (!wake_lost && !socket_lost) return;
  if (!said) {
    said = true;
    Say("the program closed or reused lookback's descriptors (its control pipe or socket); opened new ones");
  }
  if (wake_lost) OpenWakePipe(c);
  if (socket_lost) OpenControlSocket(c);
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    // MSG_NOSIGNAL: a requester that gave up must not raise SIGPIPE.
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// A connection on the control socket whose request line is still coming or
// whose dump is still to be written.
struct Requester {
  int fd = -1;
  std::string line;
  uint64_t received_ns = 0;  // when its line was complete
  bool timed = false;        // TIMED-DUMP: wants the phases too
};

// The reply to a dump request that was answered by `out`.
std::string DumpReply(const DumpOutcome& out, const Requester& q, uint32_t requests) {
  if (!out.ok) return std::string(control::kErr) + out.error + "\n";
  std::string r = std::string(control::kOk) + out.path + "\n";
  if (q.timed) {
    const DumpPhases& p = out.phases;
    r += std::string(control::kTiming) + "requests=" + std::to_string(requests) + " threads=" + std::to_string(p.threads) +
         " bytes=" + std::to_string(p.bytes) + " snapshot_bytes=" + std::to_string(p.snapshot_bytes) +
         " batches=" + std::to_string(p.batches) + " direct=" + std::to_string(p.direct ? 1 : 0) + " queued_ns=" + std::to_string(p.queued_ns) +
         " prepare_ns=" + std::to_string(p.prepare_ns) + " snapshot_ns=" + std::to_string(p.snapshot_ns) +
         " encode_ns=" + std::to_string(p.encode_ns) + " write_ns=" + std::to_string(p.write_ns) +
         " fsync_ns=" + std::to_string(p.fsync_ns) + " rename_ns=" + std::to_string(p.rename_ns) +
         " total_ns=" + std::to_string(p.total_ns) + " cpu_ns=" + std::to_string(p.cpu_ns) + "\n";
  }
  return r;
}

// Serves the connections waiting on the control socket. Dump requests are
// coalesced: those that are waiting when the control thread gets to them
// share one dump, whose snapshot is taken after the last of them arrived,
// and each gets its own answer naming it. A request that arrives while a
// dump is being written waits in the socket's backlog (connect() blocks when
// it is full: nothing is dropped) and is answered by the next dump, with
// every other request that arrived meanwhile. One sweep of the backlog per
// call, so a stream of requests cannot put a dump off. Each connection has
// 2 s to send its line.
void ServeRequests(int listen_fd) {
  constexpr uint64_t kLineTimeoutNs = 2000000000;
  std::vector<Requester> pending, dumps;
  for (;;) {  // everything that has connected so far
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: no one else is waiting
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != getuid() && cred.uid != 0)) {
      WriteAll(fd, std::string(control::kErr) + "permission denied: not the same user\n");
      close(fd);
      continue;
    }
    Requester q;
    q.fd = fd;
    pending.push_back(std::move(q));
  }
  const uint64_t deadline = MonotonicNs() + kLineTimeoutNs;
  while (!pending.empty()) {
    std::vector<pollfd> fds;
    for (const Requester& q : pending) fds.push_back({q.fd, POLLIN, 0});
    const uint64_t now = MonotonicNs();
    const int timeout_ms = now >= deadline ? 0 : static_cast<int>((deadline - now) / 1000000 + 1);
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    const bool late = n <= 0 || MonotonicNs() >= deadline;
    std::vector<Requester> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      Requester& q = pending[i];
      bool done = false, drop = false;
      if (fds[i].revents != 0) {
        char buf[512];
        const ssize_t r = read(q.fd, buf, sizeof buf);
        if (r <= 0) {
          drop = true;  // hung up before asking
        } else {
          q.line.append(buf, static_cast<size_t>(r));
          const size_t nl = q.line.find('\n');
          if (nl != std::string::npos) {
            q.line.resize(nl);
            done = true;
          } else if (q.line.size() > 4096) {
            WriteAll(q.fd, std::string(control::kErr) + "request too long\n");
            drop = true;
          }
        }
      }
      if (!done && !drop && late) drop = true;  // never sent a whole line
      if (drop) {
        close(q.fd);
      } else if (!done) {
        still.push_back(std::move(q));
      } else if (q.line == control::kPing) {
        WriteAll(q.fd, std::string(control::kOk) + std::to_string(R().pid) + " " + R().process_name + "\n");
        close(q.fd);
      } else if (q.line.rfind(control::kDump, 0) == 0 || q.line.rfind(control::kTimedDump, 0) == 0) {
        q.timed = q.line.rfind(control::kTimedDump, 0) == 0;
        q.line.erase(0, q.timed ? control::kTimedDump.size() : control::kDump.size());
        if (!q.line.empty() && q.line[0] == ' ') q.line.erase(0, 1);
        if (q.line.empty()) q.line = "lookback dump";
        q.received_ns = MonotonicNs();
        dumps.push_back(std::move(q));
      } else {
        WriteAll(q.fd, std::string(control::kUnknownRequest));
        close(q.fd);
      }
    }
    pending.swap(still);
  }
  if (dumps.empty()) return;

  // One dump for all of them. Reason and subject: the distinct request texts.
  std::string reason;
  uint64_t oldest = dumps.front().received_ns;
  for (const Requester& q : dumps) {
    oldest = std::min(oldest, q.received_ns);
    bool seen = false;
    for (const Requester& p : dumps) {
      if (&p == &q) break;
      seen = seen || p.line == q.line;
    }
    if (!seen && reason.size() < 1000) reason += (reason.empty() ? "" : "; ") + q.line;
  }
  Trigger t = ExplicitTrigger(reason);
  t.received_ns = oldest;
  t.requests = static_cast<uint32_t>(dumps.size());
  std::string why;
  DumpOutcome out;
  if (!Admit(&t, &why)) {
    out.error = why;
  } else {
    t.suppressed += dumps.size() - 1;  // merged into this one
    out = WriteDump(t);
  }
  for (const Requester& q : dumps) {
    DumpOutcome mine = out;
    if (mine.ok) {  // its own wait, not the oldest's
      const uint64_t began = out.phases.queued_ns + oldest;
      mine.phases.queued_ns = began > q.received_ns ? began - q.received_ns : 0;
    }
    WriteAll(q.fd, DumpReply(mine, q, t.requests));
    close(q.fd);
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

void DumpPendingCrash() {
  Trigger crash;
  if (!CrashPending(&crash)) return;
  std::string why;
  if (Admit(&crash, &why)) WriteDump(crash);
  CrashDumpDone();
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
  // The overhead budget's first look comes a tick after start: nothing to judge before.
  uint64_t next_budget_ns = BudgetOn() ? MonotonicNs() + kBudgetTickNs : 0;
  uint64_t next_cpu_ns = 1;  // every thread's CPU time, always (cpu_log.h)
  for (;;) {
    // Sleep until woken, the next detector tick, or the next delayed dump.
    uint64_t now = MonotonicNs();
    if (detectors && now >= next_tick_ns) next_tick_ns = now + DetectorTick();
    uint64_t next_dump_ns = 0;
    while (std::optional<Trigger> t = TakeDueDump(now, &next_dump_ns)) {
      DumpPendingCrash();  // a crash goes before the queue: its thread is waiting
      WriteDump(*t);
      DueDumpWritten();
      now = MonotonicNs();
    }
    now = MonotonicNs();
    RefreshExcludesIfModulesChanged(now, kExcludeRecheckNs);  // modules loaded since: new functions to exclude
    if (next_state_ns != 0 && now >= next_state_ns) {
      next_state_ns = PollThreadStates(now);
      now = MonotonicNs();
    }
    if (next_budget_ns != 0 && now >= next_budget_ns) {
      next_budget_ns = BudgetTick(now);
      now = MonotonicNs();
    }
    if (now >= next_cpu_ns) {
      next_cpu_ns = CpuLogTick(now);
      now = MonotonicNs();
    }
    uint64_t wake_at = detectors ? next_tick_ns : 0;
    if (next_budget_ns != 0 && (wake_at == 0 || next_budget_ns < wake_at)) wake_at = next_budget_ns;
    if (wake_at == 0 || next_cpu_ns < wake_at) wake_at = next_cpu_ns;
    if (next_state_ns != 0 && (wake_at == 0 || next_state_ns < wake_at)) wake_at = next_state_ns;
    if (!R().config.exclude.empty() && (wake_at == 0 || wake_at > now + kExcludeRecheckNs)) wake_at = now + kExcludeRecheckNs;
    if (next_dump_ns != 0 && (wake_at == 0 || next_dump_ns < wake_at)) wake_at = next_dump_ns;
    uint64_t release_ns;  // the memory of the last dump, kept for a burst of dumps
    {
      std::lock_guard<std::mutex> lock(ControlMutex());
      release_ns = ReleaseIdleDumpMemory(now);
    }
    if (release_ns != 0 && (wake_at == 0 || release_ns < wake_at)) wake_at = release_ns;
    const int timeout_ms = wake_at == 0 ? -1 : wake_at <= now ? 0 : static_cast<int>((wake_at - now + 999999) / 1000000);
    KeepDescriptors(c);
    const int wake_fd = c.wake_read.Get(), listen_fd = c.listen.Get();
    pollfd fds[2] = {{wake_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}};  // (poll skips a -1)
    pthread_mutex_unlock(&g_busy);
    const int n = poll(fds, 2, timeout_ms);
    pthread_mutex_lock(&g_busy);
    if (n < 0) {
      if (errno == EINTR) continue;
      pthread_mutex_unlock(&g_busy);
      return nullptr;
    }
    DumpPendingCrash();  // first: the crashing thread is waiting for it
    if (n == 0) continue;
    if (fds[0].revents & POLLIN) {
      char drained[512];  // a byte per wake-up: thread exits, dump signals, crashes
      ssize_t ignored = read(wake_fd, drained, sizeof drained);
      (void)ignored;
      if (g_signal_pending.exchange(false)) Fire(ExplicitTrigger("signal " + std::string(strsignal(g_dump_signal))));
      std::lock_guard<std::mutex> lock(ControlMutex());
      ReclaimExitedRings();
      ApplyQueuedNames();  // renames lb_thread_set_name_of could not apply while we were busy
    }
    if (listen_fd >= 0 && (fds[1].revents & POLLIN)) ServeRequests(listen_fd);
  }
}

void OnDumpSignal(int) {
  const int saved = errno;
  g_signal_pending.store(true);
  if (const int fd = g_wake.Get(); fd >= 0) {
    ssize_t ignored = write(fd, "w", 1);
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
  if (c.wake_read.Get() < 0 || g_wake.Get() < 0) OpenWakePipe(c);
  OpenControlSocket(c);
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
  const int saved = errno;
  if (const int fd = g_wake.Get(); fd >= 0) {
    ssize_t ignored = write(fd, "w", 1);
    (void)ignored;
  }
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

// The pipe the crash handler writes; -1 until the control thread runs, or
// while the program holds its number (the thread then sees the crash at its
// next wake-up, within 10 ms).
int ControlWakeFd() { return g_control_tid.load() != 0 ? g_wake.Get() : -1; }

// /proc/self/exe is a JVM launcher: `java`, or a JDK tool such as javac
// (runtime/jvm_launcher.h).
bool IsJavaLauncherProcess() { return lb_classify_launcher("/proc/self/exe") != LB_NOT_A_LAUNCHER; }

void InstallDumpSignal() {
  int sig = R().config.dump_signal;
  if (sig == 0) return;
  struct sigaction old{};
  if (sig < 0) {  // default: SIGUSR2, unless the program already handles it
    // A JVM takes SIGUSR2 for itself once it has started (after lookback has
    // looked): a process whose program is a JVM launcher (`java`, javac,
    // ...) gets SIGPWR, which HotSpot leaves alone, as `lookback record`
    // sets for a launcher it starts (a JVM started by a launcher script or
    // another JVM gets the same).
    sig = IsJavaLauncherProcess() ? SIGPWR : SIGUSR2;
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  }
  g_dump_signal = sig;
  struct sigaction sa{};
  sa.sa_handler = OnDumpSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
  // The pipe must exist before the first signal can arrive.
  Control& c = C();
  std::lock_guard<std::mutex> lock(c.m);
  if (c.wake_read.Get() < 0 || g_wake.Get() < 0) OpenWakePipe(c);
}

void ResetControlAfterFork() {
  // The control thread did not survive fork; the child gets its own on its
  // first traced thread, with a socket named after the child's pid.
  if (g_control_constructed.load()) {
    Control& old = C();
    old.listen.Close();     // bound to the parent's name
    old.wake_read.Close();  // the pipe is shared with the parent
  }
  g_wake.Close();
  g_control_constructed.store(false);
  g_control_tid.store(0);
  OpenWakePipe(C());
}

}  // namespace lookback::rt
