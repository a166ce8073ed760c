// Crash capture: SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT write a dump,
// then the signal goes where it would have gone without lookback.
//
// The crashing thread runs async-signal-safe code only: it stores what
// happened in atomics, writes the control thread's wake pipe and waits in
// poll() on a second pipe (at most kCrashWaitMs). The dump itself is
// written by the control thread, an ordinary thread outside any signal
// handler. If the crash left a lock the writer needs held (glibc's malloc
// arena of the control thread, say), the wait times out and the crash goes
// on without a dump: a crash is never turned into a hang.
//
// Handlers installed before lookback (a sanitizer's, a launcher's) are
// chained to after the dump, as before: the previous disposition is put
// back; a previous handler is called with the original arguments; under the
// default action a fault raised by the CPU re-executes the faulting
// instruction on return (so the kernel reports the same signal, address and
// core dump), and a signal sent by abort()/kill()/raise() is raised again.
//
// Handlers the program installs after lookback started do not replace
// lookback's: sigaction() and signal() are interposed (below), the
// program's handler is recorded and reported back to it by sigaction(sig,
// NULL, &old), and lookback's handler stays installed. On such a signal the
// program's handler runs FIRST, with its own flags and mask:
//   - if it returns, the signal was handled (a JVM's implicit null check, a
//     guard page, a fixed-up context): no dump; a fault that was not fixed
//     comes back, and then the program's disposition decides again;
//   - if it longjmps out, the program recovered: no dump;
//   - if it ends the process — abort(), re-raising after resetting to
//     SIG_DFL, exit() or _exit() (interposed below) — lookback dumps first.
// So a program's own crash handler never hides its crash from lookback, and
// lookback never dumps a fault the program handles as part of its work.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <poll.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "runtime/owned_fd.h"
#include "runtime/runtime.h"
#include "runtime/triggers.h"

extern "C" int __sigaction(int sig, const struct sigaction* act, struct sigaction* old);  // glibc

namespace lookback::rt {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

// glibc's exit (atexit handlers, stdio flush), resolved when the crash
// handlers are installed, not in a signal handler.
//
// The interposed entry points below are reached by any code at any time (a
// sanitizer's start-up, a signal handler): no std::atomic or other std::
// inline code in them, which at -O0 could bind to the program's instrumented
// copies and trace (see exclude.h) — __atomic builtins on plain variables.
using ExitFn = void (*)(int);
ExitFn g_real_exit = nullptr;
ExitFn ResolveRealExit() {
  ExitFn real = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "exit"));
  __atomic_store_n(&g_real_exit, real, __ATOMIC_RELEASE);
  return real;
}
constexpr int kCrashWaitMs = 10000;

struct sigaction g_previous[NSIG];  // before lookback: chained to after the dump
// Installed by the program after lookback (interposed sigaction/signal): run
// first. Guarded by g_program_lock (a spinlock: sigaction may be called from
// signal handlers).
struct sigaction g_program[NSIG];
bool g_program_set[NSIG];
bool g_installed = false;      // __atomic
bool g_program_lock = false;   // __atomic: a spinlock
// The crash signal whose program handler is running on this thread (0: none):
// exit()/_exit() called from it end the process because of that crash.
__thread int t_in_program_handler __attribute__((tls_model("initial-exec"))) = 0;
// That crash's fault address: a handler that ends the process by abort()
// (HotSpot's, after writing hs_err) raises SIGABRT, but the crash is the
// signal whose handler was running, and the dump says so.
__thread uint64_t t_program_handler_addr __attribute__((tls_model("initial-exec"))) = 0;
__thread int t_program_handler_sender __attribute__((tls_model("initial-exec"))) = 0;

// A signal a process sent (kill, tgkill: abort() and raise() send it to
// themselves) has no fault address: si_addr then overlays si_pid.
bool SentByAProcess(const siginfo_t* info) { return info != nullptr && info->si_code <= 0; }
uint64_t FaultAddress(const siginfo_t* info) {
  return info == nullptr || SentByAProcess(info) ? 0 : reinterpret_cast<uint64_t>(info->si_addr);
}
int Sender(const siginfo_t* info) { return SentByAProcess(info) ? static_cast<int>(info->si_pid) : 0; }
// 0 none, 3 claimed by a crashing thread (its fields being stored), 1
// waiting for the control thread (fields stored), 2 dumped. The fields are
// stored between the claim and 1, so the control thread, which acts on 1
// only, never reads a crash half described (it loops every 10 ms now and
// once read signal 0: CrashRepeated under ASan).
std::atomic<int> g_crash_state{0};
std::atomic<int> g_crash_signal{0};
std::atomic<uint32_t> g_crash_tid{0};
std::atomic<uint64_t> g_crash_tsc{0};
std::atomic<uint64_t> g_crash_addr{0};
std::atomic<int> g_crash_sender{0};  // a signal a process sent (abort(), kill): its pid; else 0 and g_crash_addr
std::atomic<int> g_crash_via{0};  // the signal that then ended the process, when not the crash's own
// The pipe the control thread writes once the crash is dumped (OwnedFds:
// runtime/owned_fd.h). If the program closed or reused either end, waiting
// is sleeping 100 ms at a time instead.
OwnedFd g_done_read, g_done_write;

void WaitForDump() {
  int left = kCrashWaitMs;
  while ((g_crash_state.load() == 1 || g_crash_state.load() == 3) && left > 0) {
    pollfd p{g_done_read.Get(), POLLIN, 0};  // (poll skips a -1: then it only sleeps)
    const int step = left < 100 ? left : 100;  // re-check the state: another crashing thread may be waiting too
    poll(&p, 1, step);
    left -= step;
  }
}

void Chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig];
  RealSigaction(sig, &prev, nullptr);
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

bool IsCrashSignal(int sig) {
  for (int s : kCrashSignals) {
    if (s == sig) return true;
  }
  return false;
}

struct ProgramLock {
  ProgramLock() {
    while (__atomic_exchange_n(&g_program_lock, true, __ATOMIC_ACQUIRE)) {
    }
  }
  ~ProgramLock() { __atomic_store_n(&g_program_lock, false, __ATOMIC_RELEASE); }
};

// Runs the program's own handler for `sig` as the kernel would have: its
// mask (plus `sig` unless SA_NODEFER) while it runs, SA_RESETHAND honoured.
// False if the program has none (default or ignore).
bool RunProgramHandler(int sig, siginfo_t* info, void* context) {
  struct sigaction prog;
  {
    ProgramLock lock;
    if (!g_program_set[sig]) return false;
    prog = g_program[sig];
    if (prog.sa_handler == SIG_DFL || prog.sa_handler == SIG_IGN) return false;
    if (prog.sa_flags & SA_RESETHAND) {
      g_program[sig] = {};
      g_program[sig].sa_handler = SIG_DFL;
    }
  }
  sigset_t mask = prog.sa_mask, old;
  if (prog.sa_flags & SA_NODEFER) {
    sigset_t self;
    sigemptyset(&self);
    sigaddset(&self, sig);
    pthread_sigmask(SIG_UNBLOCK, &self, nullptr);
  } else {
    sigaddset(&mask, sig);
  }
  pthread_sigmask(SIG_BLOCK, &mask, &old);
  const int outer = t_in_program_handler;
  const uint64_t outer_addr = t_program_handler_addr;
  const int outer_sender = t_program_handler_sender;
  t_in_program_handler = sig;
  t_program_handler_addr = FaultAddress(info);
  t_program_handler_sender = Sender(info);
  if (prog.sa_flags & SA_SIGINFO) {
    prog.sa_sigaction(sig, info, context);
  } else {
    prog.sa_handler(sig);
  }
  t_in_program_handler = outer;
  t_program_handler_addr = outer_addr;
  t_program_handler_sender = outer_sender;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

// Wakes the control thread for a crash dump of `sig` and waits for it. When
// the program's handler for another crash signal is running on this thread
// and `sig` comes from it (abort()), or it calls exit(), the crash is that
// other signal, at its address; `sig` is what ended the process.
void DumpCrash(int sig, siginfo_t* info) {
  int via = 0;
  uint64_t addr = FaultAddress(info);
  int sender = Sender(info);
  if (t_in_program_handler != 0) {
    if (t_in_program_handler != sig) via = sig;
    sig = t_in_program_handler;
    addr = t_program_handler_addr;
    sender = t_program_handler_sender;
  }
  const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  const bool traced = R().any_traced.load(std::memory_order_relaxed);
  // (A vfork child's crash would wake the parent's control thread to dump the
  // parent; the child's own image has no control thread.)
  if (!traced || ControlThreadTid() == 0 || tid == ControlThreadTid() || InSharedMemoryChild()) return;
  int expected = 0;
  if (g_crash_state.compare_exchange_strong(expected, 3)) {
    g_crash_signal.store(sig);
    g_crash_tid.store(tid);
    g_crash_tsc.store(__rdtsc());
    g_crash_addr.store(addr);
    g_crash_sender.store(sender);
    g_crash_via.store(via);
    g_crash_state.store(1);  // described: the control thread may dump it
    lb_tls_ring = nullptr;  // the chained handler's calls would land after the snapshot anyway
    if (const int wake = CrashWakeFd(); wake >= 0) {  // else the control thread sees it within 10 ms
      ssize_t ignored = write(wake, "c", 1);
      (void)ignored;
    }
  }
  // Every crashing thread waits: the first one's dump must not be cut short
  // by a second thread's default action killing the process.
  WaitForDump();
}

void OnCrash(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (RunProgramHandler(sig, info, context)) {  // it returned: handled (see the file comment)
    errno = saved_errno;
    return;
  }
  bool ignored_fault = false;
  {
    ProgramLock lock;
    ignored_fault = g_program_set[sig] && g_program[sig].sa_handler == SIG_IGN;
  }
  if (ignored_fault && info != nullptr && info->si_code <= 0) {  // a sent signal the program ignores
    errno = saved_errno;
    return;
  }
  if (g_program_set[sig]) {
    // The program's disposition is the default (or ignore, which the kernel
    // turns into the default for a CPU fault): dump, then die of it.
    DumpCrash(sig, info);
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    RealSigaction(sig, &dfl, nullptr);
    if (info == nullptr || info->si_code <= 0) syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
    errno = saved_errno;
    return;
  }
  errno = saved_errno;
  DumpCrash(sig, info);
  errno = saved_errno;
  Chain(sig, info, context);
}

}  // namespace

void InstallCrashHandlers(bool adopt) {
  int done[2];
  if (pipe2(done, O_CLOEXEC | O_NONBLOCK) == 0) {
    g_done_read.Set(done[0]);
    g_done_write.Set(done[1]);
  }
  InstallAltStack();  // the initialising thread; others in ThreadInit
  struct sigaction sa{};
  sa.sa_sigaction = OnCrash;
  sigemptyset(&sa.sa_mask);
  // SA_ONSTACK: a program that set up an alternate stack (for stack
  // overflows) keeps using it. SA_RESETHAND is not used: Chain() restores
  // exactly the previous disposition, flags included.
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  for (int sig : kCrashSignals) {
    RealSigaction(sig, &sa, &g_previous[sig]);
    const struct sigaction& prev = g_previous[sig];
    const bool handler = (prev.sa_flags & SA_SIGINFO) ? prev.sa_sigaction != nullptr
                                                      : prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN;
    if (adopt && handler) {
      // A running JVM's SIGSEGV handler does its work (implicit null checks,
      // safepoint polls) thousands of times: it must see each signal first,
      // exactly as a handler the program installs after lookback does.
      ProgramLock lock;
      g_program[sig] = prev;
      g_program_set[sig] = true;
      g_previous[sig] = {};
      g_previous[sig].sa_handler = SIG_DFL;
    }
  }
  ResolveRealExit();
  __atomic_store_n(&g_installed, true, __ATOMIC_RELEASE);
}

// ---- alternate signal stacks ------------------------------------------------

namespace {
// A stack overflow faults with the thread's stack exhausted: the handler can
// only run on an alternate stack. Each traced thread gets one unless the
// program set its own (sigaltstack is per thread). The handler itself needs
// little (it waits for the control thread, which writes the dump); the
// program's own handler may run on it too, hence more than MINSIGSTKSZ.
constexpr size_t kAltStackBytes = 64 * 1024;
__thread void* t_alt_stack __attribute__((tls_model("initial-exec"))) = nullptr;
}  // namespace

void InstallAltStack() {
  if (t_alt_stack != nullptr) return;
  stack_t old{};
  if (sigaltstack(nullptr, &old) != 0 || (old.ss_flags & SS_DISABLE) == 0) return;  // the program's own
  const size_t bytes = kAltStackBytes + 4096;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mem == MAP_FAILED) return;
  mprotect(mem, 4096, PROT_NONE);  // a guard page below: an overflowing handler faults instead of scribbling
  stack_t st{};
  st.ss_sp = static_cast<char*>(mem) + 4096;
  st.ss_size = kAltStackBytes;
  if (sigaltstack(&st, nullptr) != 0) {
    munmap(mem, bytes);
    return;
  }
  t_alt_stack = mem;
}

void RemoveAltStack() {
  if (t_alt_stack == nullptr) return;
  stack_t cur{};
  // Only if it is still ours and not in use (a thread exiting from a handler).
  if (sigaltstack(nullptr, &cur) == 0 && cur.ss_sp == static_cast<char*>(t_alt_stack) + 4096 &&
      (cur.ss_flags & SS_ONSTACK) == 0) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    munmap(t_alt_stack, kAltStackBytes + 4096);
  }
  t_alt_stack = nullptr;
}

// ---- the program's sigaction/signal -----------------------------------------

// glibc's own entry (exported as __sigaction since 2.2.5), called by name:
// no dlsym, which allocates — a sanitizer runtime resolving `sigaction` to
// ours during its own start-up must not see an allocation from here.
int RealSigaction(int sig, const struct sigaction* act, struct sigaction* old) { return __sigaction(sig, act, old); }

// sigaction() as the program sees it once lookback's crash handlers are in:
// for a crash signal, what it installs is recorded and run first by OnCrash,
// and what it reads back is what it installed.
int ProgramSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (!__atomic_load_n(&g_installed, __ATOMIC_ACQUIRE) || sig <= 0 || sig >= NSIG || !IsCrashSignal(sig)) {
    return RealSigaction(sig, act, old);
  }
  ProgramLock lock;
  if (old != nullptr) {
    if (g_program_set[sig]) {
      *old = g_program[sig];
    } else {
      *old = g_previous[sig];  // what was there before lookback
    }
  }
  if (act != nullptr) {
    g_program[sig] = *act;
    g_program_set[sig] = true;
  }
  return 0;
}

void ExitFromProgramHandler() {
  if (t_in_program_handler != 0) DumpCrash(t_in_program_handler, nullptr);
}

}  // namespace lookback::rt

using namespace lookback::rt;

extern "C" {

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act,
                                                    struct sigaction* old) noexcept {
  return ProgramSigaction(sig, act, old);
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) noexcept {
  // glibc's signal(): BSD semantics (the handler stays installed, the signal
  // is blocked while it runs, interrupted calls restart), through sigaction.
  if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction act{}, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (ProgramSigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

// A program's crash handler that ends the process with exit()/_exit() ends
// it because of the crash: dump first.
// _exit is the exit_group system call (what glibc's does), so nothing needs
// resolving here: it may be called from a signal handler.
__attribute__((visibility("default"), noreturn)) void _exit(int status) {  // unistd.h: not __THROW
  ExitFromProgramHandler();
  for (;;) syscall(SYS_exit_group, status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) noexcept { _exit(status); }

__attribute__((visibility("default"), noreturn)) void exit(int status) noexcept {
  ExitFromProgramHandler();
  ExitFn real = __atomic_load_n(&g_real_exit, __ATOMIC_ACQUIRE);
  if (real == nullptr) real = ResolveRealExit();
  if (real != nullptr) real(status);
  for (;;) syscall(SYS_exit_group, status);
}

}  // extern "C"

namespace lookback::rt {

int CrashWakeFd() { return ControlWakeFd(); }

bool CrashPending(Trigger* t) {
  if (g_crash_state.load() != 1) return false;
  const int sig = g_crash_signal.load();
  char subject[160];
  const int via = g_crash_via.load();
  char where[64];
  const int sender = g_crash_sender.load();
  if (sender == 0) {
    snprintf(where, sizeof where, "at address 0x%llx", static_cast<unsigned long long>(g_crash_addr.load()));
  } else if (sender == static_cast<int>(getpid())) {
    snprintf(where, sizeof where, "raised by the program itself");  // abort(), raise()
  } else {
    snprintf(where, sizeof where, "sent by process %d", sender);
  }
  snprintf(subject, sizeof subject, "%s %s%s%s%s", strsignal(sig), where,
           via ? " (the program's handler then raised " : "", via ? strsignal(via) : "", via ? ")" : "");
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
  if (const int fd = g_done_write.Get(); fd >= 0) {
    ssize_t ignored = write(fd, "d", 1);
    (void)ignored;
  }
}

}  // namespace lookback::rt
