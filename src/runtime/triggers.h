// Just-in-time capture: what asks for a dump (detectors, crash handler, API,
// socket, signal), the policy every request goes through (rate limit,
// cooldown, post-trigger delay, window, retention), and scopes.
// docs/triggers.md is the user's view; this is the runtime's.
//
// Threads: detectors run on the control thread only (DetectorTick). Fire()
// may be called from any thread except inside a signal handler; the crash
// handler only sets atomics and writes the eventfd (see crash.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config.h"

namespace lookback::rt {

struct Trigger {
  Detector kind = Detector::kExplicit;
  std::string detector;     // written to the dump: kDetectorNames[kind], or "exit" / "exec"
  uint32_t tid = 0;
  uint32_t signal = 0;
  uint64_t tsc = 0;
  uint64_t measured_ns = 0;
  uint64_t threshold_ns = 0;
  uint64_t suppressed = 0;  // filled in by the policy
  uint64_t received_ns = 0; // CLOCK_MONOTONIC when the (oldest) request arrived (0: unknown)
  uint32_t requests = 1;    // requests this dump answers (several `lookback dump` coalesced)
  std::string subject;      // thread pattern, scope, function, signal, request text
  std::string reason;       // one human sentence (the PROCESS section's reason)
};

Trigger ExplicitTrigger(const std::string& reason) __attribute__((no_instrument_function));
Trigger EndTrigger(const char* what) __attribute__((no_instrument_function));  // "exit", "exec"

// Policy (policy.cc).
// Checks rate limit and cooldown; on success the dump is queued for
// now + post-trigger delay (or merged into one already waiting) and the
// control thread woken. False when the request was refused.
bool Fire(Trigger t) __attribute__((no_instrument_function));
// The same checks for a dump written right away (lb_dump_sync, socket).
// Fills t->suppressed. False: refused, *why says why.
bool Admit(Trigger* t, std::string* why) __attribute__((no_instrument_function));
// Control thread: the oldest pending dump if its time has come, one at a
// time, so that at most one is out of the queue and not yet written (the
// exit waits for it); DueDumpWritten() after writing it. *next_ns gets the
// CLOCK_MONOTONIC time of the next one (0 if none).
std::optional<Trigger> TakeDueDump(uint64_t now_ns, uint64_t* next_ns) __attribute__((no_instrument_function));
void DueDumpWritten() __attribute__((no_instrument_function));
// The process is ending: once the dump the control thread is writing is
// done (30 s at most), every pending dump, due or not, oldest first (they are
// written on the exiting thread; the control thread will not get to them).
std::vector<Trigger> TakeAllPendingDumps() __attribute__((no_instrument_function));
// In a fork child: no pending dumps, no rate-limit history (a new process).
void ResetPolicyAfterFork() __attribute__((no_instrument_function));
// Deletes the oldest *.lbk files in `dir` beyond max_dumps / max_dump_bytes,
// never `keep`. Caller holds ControlMutex().
void EnforceRetention(const std::string& dir, const std::string& keep) __attribute__((no_instrument_function));

// Detectors (detectors.cc), on the control thread.
bool DetectorsConfigured() __attribute__((no_instrument_function));
// Runs every detector once; returns the ns until it wants to run again.
uint64_t DetectorTick() __attribute__((no_instrument_function));

// Crash capture (crash.cc).
// adopt: the handlers already installed are the program's own (lookback was
// loaded into a running process): they run first, as if installed after us.
void InstallCrashHandlers(bool adopt) __attribute__((no_instrument_function));
// The calling thread's alternate signal stack (for stack overflows), unless
// the program set one; removed at thread exit if it is still ours.
void InstallAltStack() __attribute__((no_instrument_function));
void RemoveAltStack() __attribute__((no_instrument_function));
// glibc's sigaction, past lookback's interposition (crash.cc).
int RealSigaction(int sig, const struct sigaction* act, struct sigaction* old) __attribute__((no_instrument_function));
// Control thread: a crash is waiting to be dumped (then CrashDumpDone()).
bool CrashPending(Trigger* t) __attribute__((no_instrument_function));
void CrashDumpDone() __attribute__((no_instrument_function));
int CrashWakeFd() __attribute__((no_instrument_function));

}  // namespace lookback::rt
