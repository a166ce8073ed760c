// The one definition of lookback's record encoding and dump-file layout.
//
// Writer (src/runtime) and reader (src/format/reader.*) both include this file
// and nothing else defines a format constant. FORMAT.md beside it documents
// every record and section as a byte table; keep the two in step and bump
// kDumpVersion (with a line in FORMAT.md's history) on any change.
//
// Everything is little-endian and encoded with explicit shifts, never with
// compiler bitfields or struct memcpy.
#pragma once

#include <cstdint>

namespace lookback::format {

// ---------------------------------------------------------------------------
// Ring records: one 64-bit slot each.
//
//   bit 63 = 1  EVENT    bit 62: 0 entry, 1 exit
//                        bits 61..32: low 30 bits of the TSC
//                        bits 31..0 : low 32 bits of the function key
//   bit 63 = 0  CONTROL  bits 62..56: kind (ControlKind)
//                        bits 55..0 : payload
//
// A function key is 56 bits: a native code address (user space, < 2^47), or a
// managed-runtime method id tagged with kKeyMethodTag. The upper 24 bits of
// the key (key >> 32) are the thread's current "function base", announced by
// a FN_BASE record whenever it changes; the upper bits of the TSC (tsc >> 30,
// the "epoch") are announced by an EPOCH record whenever they change. Both are
// re-announced every half ring (kSyncEveryHalfRing) so any window of a ring
// can be decoded on its own.
// ---------------------------------------------------------------------------
inline constexpr unsigned kTscLowBits = 30;
inline constexpr uint64_t kTscLowMask = (uint64_t{1} << kTscLowBits) - 1;
inline constexpr unsigned kKeyBits = 56;
inline constexpr uint64_t kKeyLimit = uint64_t{1} << kKeyBits;  // keys must be below
inline constexpr uint64_t kKeyLowMask = 0xffffffffu;
inline constexpr unsigned kKeyBaseBits = kKeyBits - 32;  // 24
inline constexpr uint64_t kKeyBaseMask = (uint64_t{1} << kKeyBaseBits) - 1;
// Method ids from a managed runtime (JVM) live above every user-space address.
inline constexpr uint64_t kKeyMethodTag = uint64_t{1} << 55;

inline constexpr uint64_t kEventBit = uint64_t{1} << 63;
inline constexpr uint64_t kExitBit = uint64_t{1} << 62;

enum class ControlKind : uint8_t {
  kEmpty = 0,    // an all-zero slot: never written by the recorder
  kEpoch = 1,    // payload: bits 0..33 new epoch (tsc >> 30); bits 34..55 epochs since previous (0 = none, saturates)
  kFnBase = 2,   // payload: bits 0..23 new base; bits 24..47 previous base; bit 48 previous is known
  kResume = 3,   // tracing resumed on this thread after a gap: nesting before it is unrelated
  kUnwindTo = 4, // payload: a call site (code address). Written before the first entry after a
                 // non-local exit (caught exception, longjmp): frames above the innermost frame
                 // of the function containing this address were left without an exit.
};

inline constexpr unsigned kEpochBits = 64 - kTscLowBits;  // 34
inline constexpr uint64_t kEpochMask = (uint64_t{1} << kEpochBits) - 1;
inline constexpr unsigned kEpochDeltaBits = 56 - kEpochBits;  // 22
inline constexpr uint64_t kEpochDeltaMax = (uint64_t{1} << kEpochDeltaBits) - 1;  // saturated: unknown

inline constexpr uint64_t MakeEvent(bool exit, uint64_t tsc, uint64_t key) {
  return kEventBit | (exit ? kExitBit : 0) | ((tsc & kTscLowMask) << 32) | (key & kKeyLowMask);
}

inline constexpr uint64_t MakeControl(ControlKind kind, uint64_t payload) {
  return (uint64_t{static_cast<uint8_t>(kind)} << 56) | (payload & ((uint64_t{1} << 56) - 1));
}

inline constexpr uint64_t MakeEpoch(uint64_t epoch, uint64_t delta) {
  if (delta > kEpochDeltaMax) delta = kEpochDeltaMax;
  return MakeControl(ControlKind::kEpoch, (epoch & kEpochMask) | (delta << kEpochBits));
}

inline constexpr uint64_t MakeFnBase(uint64_t base, uint64_t previous, bool previous_known) {
  return MakeControl(ControlKind::kFnBase, (base & kKeyBaseMask) | ((previous & kKeyBaseMask) << 24) |
                                               (previous_known ? uint64_t{1} << 48 : 0));
}

// Decoding helpers (the reader's side of the same definitions).
inline constexpr bool IsEvent(uint64_t r) { return (r & kEventBit) != 0; }
inline constexpr bool IsExit(uint64_t r) { return (r & kExitBit) != 0; }
inline constexpr uint64_t EventTscLow(uint64_t r) { return (r >> 32) & kTscLowMask; }
inline constexpr uint64_t EventKeyLow(uint64_t r) { return r & kKeyLowMask; }
inline constexpr uint8_t ControlKindOf(uint64_t r) { return static_cast<uint8_t>((r >> 56) & 0x7f); }
inline constexpr uint64_t ControlPayload(uint64_t r) { return r & ((uint64_t{1} << 56) - 1); }
inline constexpr uint64_t EpochValue(uint64_t r) { return ControlPayload(r) & kEpochMask; }
inline constexpr uint64_t EpochDelta(uint64_t r) { return ControlPayload(r) >> kEpochBits; }
inline constexpr uint64_t FnBaseValue(uint64_t r) { return ControlPayload(r) & kKeyBaseMask; }
inline constexpr uint64_t FnBasePrevious(uint64_t r) { return (ControlPayload(r) >> 24) & kKeyBaseMask; }
inline constexpr bool FnBasePreviousKnown(uint64_t r) { return (ControlPayload(r) >> 48) & 1; }

static_assert(MakeEvent(true, ~uint64_t{0}, ~uint64_t{0}) == ~uint64_t{0});
static_assert(EpochValue(MakeEpoch(kEpochMask, 1)) == kEpochMask);
static_assert(EpochDelta(MakeEpoch(5, kEpochDeltaMax + 10)) == kEpochDeltaMax);
static_assert(FnBasePrevious(MakeFnBase(1, kKeyBaseMask, true)) == kKeyBaseMask);

// ---------------------------------------------------------------------------
// Dump file: a 64-byte header, then sections. Every section is
//   u32 type, u32 flags, u64 payload size, payload, zero padding to 8 bytes.
// Readers skip section types they do not know.
// ---------------------------------------------------------------------------
inline constexpr char kMagic[8] = {'L', 'O', 'O', 'K', 'B', 'A', 'C', 'K'};
inline constexpr uint16_t kDumpVersion = 3;  // 2: TRIGGER section, kThreadTrimmed; 3: SAMPLES section
inline constexpr uint16_t kMinReaderVersion = 1;
inline constexpr uint32_t kFileHeaderSize = 64;
inline constexpr uint32_t kSectionHeaderSize = 16;

// File header byte offsets.
inline constexpr uint32_t kHdrMagic = 0;          // u8[8]
inline constexpr uint32_t kHdrVersion = 8;        // u16
inline constexpr uint32_t kHdrMinReader = 10;     // u16
inline constexpr uint32_t kHdrHeaderSize = 12;    // u32
inline constexpr uint32_t kHdrFeatures = 16;      // u64 (FeatureBit)
inline constexpr uint32_t kHdrSectionCount = 24;  // u32
inline constexpr uint32_t kHdrReserved = 28;      // u32, zero
inline constexpr uint32_t kHdrFileSize = 32;      // u64: whole file, to detect truncation
// bytes 40..63 reserved, zero

enum FeatureBit : uint64_t {
  kFeatureX86Tsc = 1u << 0,  // timestamps are x86 TSC ticks
};

enum class SectionType : uint32_t {
  kProcess = 1,
  kClock = 2,
  kModules = 3,
  kThread = 4,
  kNames = 5,
  kStats = 6,
  kTrigger = 7,
  kSamples = 8,  // version 3
};

// PROCESS payload: u32 pid, u32 ppid, u32 dump sequence number (1-based),
// u32 reserved, u64 dump tsc, u64 dump CLOCK_REALTIME ns, u64 dump
// CLOCK_MONOTONIC ns, then strings (u32 length + bytes): process name,
// executable path, command line (arguments separated by NUL), reason.
//
// CLOCK payload: u64 ticks, u64 ns (the calibration: ticks elapsed over ns of
// CLOCK_MONOTONIC), u64 reference tsc, u64 reference CLOCK_MONOTONIC ns, u64
// reference CLOCK_REALTIME ns, u32 tsc low bits (kTscLowBits), u32
// calibration uncertainty in parts per billion.
//
// MODULES payload: u32 count, then per module: u64 load bias, u64 lowest
// mapped address, u64 end of mapping, u32 build-id length, build-id bytes,
// string path.
//
// THREAD payload: u32 tid, u32 flags (ThreadFlag), u64 ring capacity in
// slots, u64 index of the first record kept, u64 record count, u64 records
// lost (overwritten before this dump), u64 tsc of the thread's first trace
// point, u64 tsc when it exited (0 if alive), u64 tsc when the snapshot was
// taken, string name, u32 zero padding to 8, then record count u64 records.
//
// NAMES payload: u32 count, then per entry: u64 key, string name.
//
// STATS payload: u32 threads not traced for lack of memory, u32 threads not
// traced by the selection pattern, u32 rings reclaimed after exit, u32
// invalid keys dropped, u64 configured buffer size in bytes.
//
// TRIGGER payload (version 2): u32 tid the trigger is about (0: none), u32
// signal (crash), u64 tsc when it fired, u64 measured ns, u64 threshold ns,
// u64 window ns (0: the dump keeps everything), u64 triggers suppressed since
// the previous dump, string detector name, string subject.
//
// SAMPLES payload (version 3; one per sampled thread, after its THREAD
// section): u32 tid, u32 flags (SampleFlag), u64 interval ns, u32 fields per
// sample (kSampleFields when written; readers use the ones they know and
// treat missing ones as 0), u32 sample count, u32 state-change count, u32
// zero, u64 samples lost (overwritten before the dump), then sample count x
// fields x u64 (SampleField order), then state-change count x (u64 tsc, u64
// state letter as in /proc/PID/task/TID/stat: R, S, D, T, t, Z, X, I, ...).
enum SampleField : uint32_t {
  kSampleTsc = 0,         // when it was taken: same clock as the records
  kSampleCpuNs,           // CLOCK_THREAD_CPUTIME_ID, cumulative
  kSampleMinorFaults,     // getrusage(RUSAGE_THREAD), cumulative
  kSampleMajorFaults,
  kSampleVoluntarySwitches,
  kSampleInvoluntarySwitches,
  kSampleRssBytes,        // process resident set size (refreshed every 10 ms)
  kSampleHeapBytes,       // process heap bytes in use (allocation counting), else 0
  kSampleHeapObjects,     // process heap blocks in use (allocation counting), else 0
  kSampleAllocBytes,      // bytes this thread ever allocated (allocation counting), else 0
  kSampleFreedBytes,      // bytes this thread ever freed (allocation counting), else 0
  kSampleFields,
};
enum SampleFlag : uint32_t {
  kSampleWall = 1u << 0,      // wall-clock timer (else: thread CPU time)
  kSamplePerf = 1u << 1,      // perf_event_open task clock drove the samples (else a POSIX timer)
  kSampleAlloc = 1u << 2,     // allocation counting was on (the heap and alloc/freed fields are real)
  kSampleStates = 1u << 3,    // the control thread polled the thread's state
};
inline constexpr uint32_t kMaxSampleFields = 64;

enum ThreadFlag : uint32_t {
  kThreadExited = 1u << 0,
  kThreadWrapped = 1u << 1,   // the ring was overwritten: the window starts mid-trace
  kThreadTracing = 1u << 2,   // tracing was on at snapshot time
  kThreadMain = 1u << 3,      // tid == pid
  kThreadTrimmed = 1u << 4,   // records older than the dump's time window were left out; the
                              // first two records are a synthesized EPOCH and FN_BASE
};

inline constexpr uint32_t kMaxStringBytes = 1u << 20;

}  // namespace lookback::format
