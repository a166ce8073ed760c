// Crash capture: SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT write a dump,
// then the signal goes where it would have gone without lookback.
//
// The crashing thread runs async-signal-safe code only: it stores what
// happened in atomics, writes the control thread's eventfd and waits in
// poll() on a second eventfd (at most kCrashWaitMs). The dump itself is
// written by the control thread, an ordinary thread outside any signal
// handler. If the crash left a lock the writer needs held (glibc's malloc
// arena of the control thread, say), the wait times out and the crash goes
// on without a dump: a crash is never turned into a hang.
//
// Chaining: the previous disposition is put back; a previous handler is
// called with the original arguments; under the default action a fault
// raised by the CPU re-executes the faulting instruction on return (so the
// kernel reports the same signal, address and core dump), and a signal sent
// by abort()/kill()/raise() is raised again.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "runtime/runtime.h"
#include "runtime/triggers.h"

namespace lookback::rt {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr int kCrashWaitMs = 10000;

struct sigaction g_previous[NSIG];
std::atomic<int> g_crash_state{0};  // 0 none, 1 waiting for the control thread, 2 dumped
std::atomic<int> g_crash_signal{0};
std::atomic<uint32_t> g_crash_tid{0};
std::atomic<uint64_t> g_crash_tsc{0};
std::atomic<uint64_t> g_crash_addr{0};
std::atomic<int> g_done_fd{-1};

void WaitForDump() {
  const int fd = g_done_fd.load();
  if (fd < 0) return;
  int left = kCrashWaitMs;
  while (g_crash_state.load() == 1 && left > 0) {
    pollfd p{fd, POLLIN, 0};
    const int step = left < 100 ? left : 100;  // re-check the state: another crashing thread may be waiting too
    poll(&p, 1, step);
    left -= step;
  }
}

void Chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig];
  sigaction(sig, &prev, nullptr);
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler == SIG_IGN) {
    return;
  } else if (prev.sa_handler != SIG_DFL) {
    prev.sa_handler(sig);
  } else if (info == nullptr || info->si_code <= 0) {
    // Sent, not caused (abort, kill, raise): send it again; it is blocked in
    // this handler and arrives, with the default action, when we return.
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
  }
  // A CPU fault re-executes the faulting instruction on return and raises the
  // same signal again, now with the default action.
}

void OnCrash(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  const bool traced = R().any_traced.load(std::memory_order_relaxed);
  const int wake = CrashWakeFd();
  if (traced && wake >= 0 && tid != ControlThreadTid()) {
    int expected = 0;
    if (g_crash_state.compare_exchange_strong(expected, 1)) {
      g_crash_signal.store(sig);
      g_crash_tid.store(tid);
      g_crash_tsc.store(__rdtsc());
      g_crash_addr.store(info ? reinterpret_cast<uint64_t>(info->si_addr) : 0);
      lb_tls_ring = nullptr;  // the chained handler's calls would land after the snapshot anyway
      uint64_t one = 1;
      ssize_t ignored = write(wake, &one, sizeof one);
      (void)ignored;
    }
    // Every crashing thread waits: the first one's dump must not be cut short
    // by a second thread's default action killing the process.
    WaitForDump();
  }
  errno = saved_errno;
  Chain(sig, info, context);
}

}  // namespace

void InstallCrashHandlers() {
  g_done_fd.store(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  struct sigaction sa{};
  sa.sa_sigaction = OnCrash;
  sigemptyset(&sa.sa_mask);
  // SA_ONSTACK: a program that set up an alternate stack (for stack
  // overflows) keeps using it. SA_RESETHAND is not used: Chain() restores
  // exactly the previous disposition, flags included.
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  for (int sig : kCrashSignals) sigaction(sig, &sa, &g_previous[sig]);
}

int CrashWakeFd() { return ControlWakeFd(); }

bool CrashPending(Trigger* t) {
  if (g_crash_state.load() != 1) return false;
  const int sig = g_crash_signal.load();
  char subject[96];
  snprintf(subject, sizeof subject, "%s at address 0x%llx", strsignal(sig),
           static_cast<unsigned long long>(g_crash_addr.load()));
  *t = ExplicitTrigger(subject);
  t->kind = Detector::kCrash;
  t->detector = kDetectorNames[static_cast<size_t>(Detector::kCrash)];
  t->tid = g_crash_tid.load();
  t->signal = static_cast<uint32_t>(sig);
  t->tsc = g_crash_tsc.load();
  t->reason = std::string("crash: ") + subject + " on thread " + std::to_string(t->tid);
  return true;
}

void CrashDumpDone() {
  g_crash_state.store(2);
  const int fd = g_done_fd.load();
  if (fd >= 0) {
    uint64_t one = 1;
    ssize_t ignored = write(fd, &one, sizeof one);
    (void)ignored;
  }
}

}  // namespace lookback::rt
