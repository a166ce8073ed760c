// Internal interface between the runtime's pieces (threads, control thread,
// dump writer). Not installed; front-ends use hot_path.h and lookback.h.
//
// Who touches what:
//   - Registry slots (std::atomic<Ring*>): a thread claims a free slot for its
//     own ring (CAS nullptr -> ring) in its first trace point; only code that
//     holds ControlMutex() releases a slot and unmaps its ring (retention,
//     fork). Dumps also hold ControlMutex(), so a ring is never unmapped while
//     it is being copied, and traced threads never take the mutex.
//   - Ring::state / exit_tsc / exit_name / exit_order: written once by the
//     owner in its exit path (state last, release); read by the dumper.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/clock.h"
#include "runtime/config.h"
#include "runtime/hot_path.h"

namespace lookback::rt {

struct Stats {
  std::atomic<uint32_t> untraced_memory{0};   // threads refused: memory or thread cap
  std::atomic<uint32_t> untraced_pattern{0};  // threads not selected by LOOKBACK_THREADS
  std::atomic<uint32_t> reclaimed{0};         // exited threads' rings given back
  std::atomic<uint32_t> invalid_keys{0};      // keys >= 2^56, dropped
};

struct Runtime {
  Config config;
  std::atomic<Ring*>* registry = nullptr;  // config.max_threads slots
  uint32_t registry_size = 0;
  std::atomic<uint64_t> reserved_bytes{0};
  std::atomic<uint64_t> exit_counter{0};
  std::atomic<bool> any_traced{false};
  Stats stats;
  ClockPair start_clock;
  uint32_t pid = 0;
  std::atomic<uint32_t> dump_seq{0};
  std::string process_name;
};

Runtime& R() __attribute__((no_instrument_function));
// Initialises the runtime once (idempotent; safe before main and from hooks).
bool EnsureInitialised() __attribute__((no_instrument_function));
std::mutex& ControlMutex() __attribute__((no_instrument_function));

// Ring memory: header page + slots, one anonymous mapping.
void FreeRing(Ring* r) __attribute__((no_instrument_function));
// Gives back the rings of exited threads beyond config.keep_exited, oldest
// first. Caller holds ControlMutex().
void ReclaimExitedRings() __attribute__((no_instrument_function));

// Control thread (control.cc).
void EnsureControlThread() __attribute__((no_instrument_function));
void WakeControlThread() __attribute__((no_instrument_function));
void InstallDumpSignal() __attribute__((no_instrument_function));
// The process's program is a JVM launcher: `java`, or a JDK tool such as
// javac (runtime/jvm_launcher.h).
bool IsJavaLauncherProcess() __attribute__((no_instrument_function));
void ResetControlAfterFork() __attribute__((no_instrument_function));
int QueueDump(const char* reason) __attribute__((no_instrument_function));
// The control thread's id (0: not running): never traced, never crash-dumps itself.
uint32_t ControlThreadTid() __attribute__((no_instrument_function));
// The eventfd that wakes the control thread; -1 until the thread runs.
int ControlWakeFd() __attribute__((no_instrument_function));

// Dump writer (dump_writer.cc). Caller holds ControlMutex().
// Where a dump's time went (CLOCK_MONOTONIC ns). The phases up to `write`
// are also stored in the dump (METADATA section); fsync and rename happen
// after its last byte. `lookback dump --timings` prints them all.
struct DumpPhases {
  uint64_t queued_ns = 0;    // the (oldest) request arrived -> this dump began
  uint64_t prepare_ns = 0;   // directory, temporary file, clock, thread names, snapshot memory
  uint64_t snapshot_ns = 0;  // first ring copy began -> last one ended: the only time records can be lost
  uint64_t encode_ns = 0;    // sections built (window trim included)
  uint64_t write_ns = 0;     // write() of the sections
  uint64_t fsync_ns = 0;     // the file's data on disk
  uint64_t rename_ns = 0;    // final name linked, temporary name removed, directory synced
  uint64_t total_ns = 0;     // this dump began -> file in place (prepare .. rename)
  uint64_t cpu_ns = 0;       // CPU time the dumping thread used meanwhile (total_ns much larger: it waited for a core)
  uint64_t bytes = 0;        // file size
  uint64_t snapshot_bytes = 0;
  uint32_t threads = 0;
  uint32_t batches = 0;      // snapshot passes: 1 unless memory for one copy of every ring was short
  bool direct = false;       // the bulk was written with O_DIRECT (else through the page cache)
};
struct DumpOutcome {
  bool ok = false;
  std::string path;   // when ok
  std::string error;  // when not ok
  DumpPhases phases;  // when ok
};
struct Trigger;
DumpOutcome WriteDumpLocked(const Trigger& trigger) __attribute__((no_instrument_function));
// Takes the mutex, writes, reports a failure on stderr once per message.
DumpOutcome WriteDump(const Trigger& trigger) __attribute__((no_instrument_function));
// When the calling thread paused its own ring `r` to write a dump (at exit,
// lb_dump_sync), the TSC at which it stopped recording; else 0. Nothing is
// written to that ring after it, so the dump may end the ring's window there
// (a fast-clock ring's last untimed records are then bounded by it, not by
// the end of the dump's preparation).
uint64_t PausedAt(const Ring* r);
// The memory a dump is assembled in is kept for the next dump while dumps
// keep coming. Releases it once idle long enough; returns the CLOCK_MONOTONIC
// time at which to call again (0: nothing kept). Caller holds ControlMutex().
uint64_t ReleaseIdleDumpMemory(uint64_t now_ns) __attribute__((no_instrument_function));
// In a forked child: the parent's kept memory is not the child's to reuse.
void ForgetDumpMemoryAfterFork() __attribute__((no_instrument_function));

// What a copy of a single-writer log kept: entries [first, first + count) of
// everything ever published, found at dst + offset * width.
struct RingWindow {
  uint64_t first = 0;   // index of the first entry kept (entries before it are lost)
  uint64_t offset = 0;  // entries skipped at the start of dst
  uint64_t count = 0;
};
// One copy of a single-writer log published through `*pos` (entries of
// `width` u64 in `capacity` slots, a power of two; a publication writes at
// most `margin` entries) into `dst` (room for capacity * width u64). Sets
// `overrun` when the writer overwrote part of what was copied.
RingWindow CopyPublishedInto(const uint64_t* pos, const uint64_t* slots, uint64_t capacity, uint32_t width,
                             uint64_t margin, uint64_t* dst, bool* overrun) __attribute__((no_instrument_function));
// The same into a vector; returns the index of the first entry kept.
uint64_t CopyPublished(const uint64_t* pos, const uint64_t* slots, uint64_t capacity, uint32_t width, uint64_t margin,
                       std::vector<uint64_t>* out, bool* overrun) __attribute__((no_instrument_function));
// Copies a live ring without stopping its writer (the seqlock reader side)
// into `dst` (room for r.capacity records), retrying when the writer overran
// the copy so far that the window would not decode alone.
RingWindow SnapshotRingInto(const Ring& r, uint64_t* dst) __attribute__((no_instrument_function));
// The same into a vector; returns the index of the first record kept.
uint64_t SnapshotRing(const Ring& r, std::vector<uint64_t>* out) __attribute__((no_instrument_function));

// A caught exception or longjmp just left frames without exits on this
// thread: the next entry records its call site (ControlKind::kUnwindTo).
extern "C" void lb_note_nonlocal_exit(void) __attribute__((no_instrument_function));
// Called by the exec interposers: the dump an exit would have written.
extern "C" void lb_before_exec(void) __attribute__((no_instrument_function));
void NoteNonLocalExit() __attribute__((no_instrument_function));

// The calling thread is lookback's control thread: never traced.
void MarkControlThread() __attribute__((no_instrument_function));
// Re-enables tracing on the calling thread (after disable or re-selection).
void ResumeTracing() __attribute__((no_instrument_function));

// Names given to non-native keys with lb_set_key_name (a copy).
std::vector<std::pair<uint64_t, std::string>> KeyNames() __attribute__((no_instrument_function));
size_t KeyNameCount() __attribute__((no_instrument_function));
// Front-ends' notes (lb_set_note), for the dump's NOTES section.
std::vector<std::pair<std::string, std::string>> Notes() __attribute__((no_instrument_function));

// Informational/error line on stderr, prefixed "lookback: ".
void Say(const std::string& line) __attribute__((no_instrument_function));
void SayOnce(const std::string& line) __attribute__((no_instrument_function));
// Inlined trace points of another ring ABI called the slow path: tracing off
// for the calling thread and, from now on, for every thread (said once).
void ForeignAbi(uint32_t abi) __attribute__((no_instrument_function));
// The calling thread's LOOKBACK_THREADS selection, checked again after a rename.
void ReselectByName(const char* name) __attribute__((no_instrument_function));
// True in a child that shares the parent's memory (vfork, clone(CLONE_VM)),
// where no dump may be written.
bool InSharedMemoryChild() __attribute__((no_instrument_function));
// Writes a ring's given name (lb_thread_set_name, lb_thread_set_name_of); any thread.
void WriteGivenName(Ring* r, const char* name) __attribute__((no_instrument_function));
// Names for other threads (lb_thread_set_name_of): queued, then applied to live
// rings under ControlMutex() (ApplyQueuedNames), or taken by the thread itself
// when it sets up its ring (TakeQueuedName).
void QueueNameFor(uint32_t tid, const char* name) __attribute__((no_instrument_function));
bool TakeQueuedName(uint32_t tid, char* out, size_t out_size) __attribute__((no_instrument_function));
void ApplyQueuedNames() __attribute__((no_instrument_function));
// A ring's thread name: the one given with lb_thread_set_name, else the name
// at exit (exited rings), else the kernel's current name. Any thread.
std::string RingName(const Ring& r) __attribute__((no_instrument_function));

}  // namespace lookback::rt
