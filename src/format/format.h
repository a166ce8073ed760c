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
// Ring records: one 64-bit slot each (version 4 layout; see RecordLayout for
// the layout of older dumps, which readers still decode).
//
//   bit 63 = 1  EVENT    bit 62: 0 entry, 1 exit
//                        bits 61..60: base slot (which of the thread's four
//                                     announced key bases the key is under)
//                        bits 59..32: low 28 bits of the TSC
//                        bits 31..0 : low 32 bits of the function key
//   bit 63 = 0  CONTROL  bits 62..56: kind (ControlKind)
//                        bits 55..0 : payload
//
// A function key is 56 bits: a native code address (user space, < 2^47), or a
// managed-runtime method id tagged with kKeyMethodTag. Its upper 24 bits
// (key >> 32, the "base") live in one of four per-thread base slots, each
// announced by a FN_BASE record when it is (re)assigned, so a program whose
// calls alternate between up to four 4 GiB regions (executable, libstdc++, a
// JIT region, the runtime) writes one record per event. The upper bits of the
// TSC (tsc >> 28, the "epoch") are announced by an EPOCH record whenever they
// change. Both are re-announced at least every SyncInterval(capacity) records
// ("sync"), and each announcement carries what it replaced, so every window of
// a ring that holds one sync decodes completely (FORMAT.md, "The bound").
//
// Fast-clock rings (THREAD flag kThreadFastClock, version 5): the writer
// reads the TSC only for some records (every Nth position, after the thread
// was descheduled, and on the slow path); those are EVENTs as above, each a
// reading. Every other entry or exit is an UNTIMED_ENTRY/UNTIMED_EXIT control
// record carrying the whole key and no time: it lies between the EVENTs
// around it, and an OFFCPU record before a reading tightens that upper
// bound by the time the thread spent off CPU (FORMAT.md, "Fast clock").
// ---------------------------------------------------------------------------

// How a ring's records are laid out. The writer always uses kLayout; a reader
// takes the layout of the dump's version (LayoutOfVersion).
struct RecordLayout {
  unsigned tsc_low_bits;  // TSC bits kept in an EVENT
  unsigned slot_bits;     // base-slot bits in an EVENT (0: one base, versions 1-3)
};
inline constexpr RecordLayout kLayoutV1{30, 0};  // dump versions 1..3
inline constexpr RecordLayout kLayoutV4{28, 2};  // dump version 4
inline constexpr RecordLayout kLayout = kLayoutV4;

inline constexpr unsigned kTscLowBits = kLayout.tsc_low_bits;
inline constexpr uint64_t kTscLowMask = (uint64_t{1} << kTscLowBits) - 1;
inline constexpr unsigned kKeyBits = 56;
inline constexpr uint64_t kKeyLimit = uint64_t{1} << kKeyBits;  // keys must be below
inline constexpr uint64_t kKeyLowMask = 0xffffffffu;
inline constexpr unsigned kKeyBaseBits = kKeyBits - 32;  // 24
inline constexpr uint64_t kKeyBaseMask = (uint64_t{1} << kKeyBaseBits) - 1;
// Method ids from a managed runtime (JVM) live above every user-space address.
inline constexpr uint64_t kKeyMethodTag = uint64_t{1} << 55;
inline constexpr unsigned kBaseSlots = 4;  // 1 << kLayout.slot_bits
inline constexpr unsigned kSlotShift = 60;

inline constexpr uint64_t kEventBit = uint64_t{1} << 63;
inline constexpr uint64_t kExitBit = uint64_t{1} << 62;

enum class ControlKind : uint8_t {
  kEmpty = 0,    // an all-zero slot: never written by the recorder
  kEpoch = 1,    // payload: new epoch (tsc >> tsc_low_bits), then epochs since the previous (0: none; saturates)
  kFnBase = 2,   // payload: bits 0..23 new base; 24..47 the slot's previous base; 48 previous is known;
                 // 49..50 slot (version 4); 51..54 slots in use once this record is applied (version 4)
  kResume = 3,   // tracing resumed on this thread after a gap: nesting before it is unrelated
  kUnwindTo = 4, // payload: a call site (code address). Written before the first entry after a
                 // non-local exit (caught exception, longjmp): frames above the innermost frame
                 // of the function containing this address were left without an exit.
  kOffCpu = 5,   // version 5, fast-clock rings only: payload = ns the thread spent off CPU since it
                 // was last seen on CPU with a reading (less the measurement slack), written
                 // before the EVENT of the first reading after it was descheduled. Every event
                 // since the reading before it happened at least this long before that EVENT.
  kUntimedEntry = 6,  // version 5, fast-clock rings only: payload = the full 56-bit function key.
  kUntimedExit = 7,   // An entry or exit written without a TSC reading: it happened after the
                      // latest EVENT before it and before the next EVENT after it.
};

inline constexpr uint64_t kPayloadMax = (uint64_t{1} << 56) - 1;

// EPOCH payload: the epoch in the low (64 - tsc_low_bits) bits, the distance
// back to the previous announcement in the rest (kEpochDeltaMax: unknown).
inline constexpr unsigned EpochBits(RecordLayout l) { return 64 - l.tsc_low_bits; }
inline constexpr unsigned kEpochBits = EpochBits(kLayout);  // 36
inline constexpr uint64_t kEpochMask = (uint64_t{1} << kEpochBits) - 1;
inline constexpr unsigned kEpochDeltaBits = 56 - kEpochBits;  // 20: 2^48 ticks, 30 h at 2.6 GHz
inline constexpr uint64_t kEpochDeltaMax = (uint64_t{1} << kEpochDeltaBits) - 1;  // saturated: unknown

// An EVENT is its tag (bits 63..60: EVENT, exit, base slot), which the hot
// path looks up (Ring::event_tags), or'ed with its body (the TSC's low bits
// and the key's low bits), written in the fewest instructions: the TSC bits
// by two shifts instead of a 64-bit mask constant.
inline constexpr uint64_t EventTag(bool exit, unsigned slot) {
  return uint64_t{(exit ? 0xcu : 0x8u) | (slot & (kBaseSlots - 1))} << kSlotShift;
}
inline constexpr uint64_t EventBody(uint64_t tsc, uint64_t key) {
  return ((tsc << (64 - kTscLowBits)) >> (32 - kTscLowBits)) | (key & kKeyLowMask);
}
// The same body from the TSC's offset into its epoch (tsc - (epoch << kTscLowBits),
// below 2^kTscLowBits) and the key's low half (below 2^32): the hot path has
// both from its tests (the epoch's, the hot base slot's) and only places them.
inline constexpr uint64_t EventBodyFromParts(uint64_t offset, uint64_t key_low) { return (offset << 32) | key_low; }
static_assert(EventBodyFromParts(0x0abcdefu, 0x34567890u) ==
              EventBody((uint64_t{77} << kTscLowBits) | 0x0abcdefu, 0x1234567890ull));
inline constexpr uint64_t MakeEvent(bool exit, unsigned slot, uint64_t tsc, uint64_t key) {
  return EventTag(exit, slot) | EventBody(tsc, key);
}

inline constexpr uint64_t MakeControl(ControlKind kind, uint64_t payload) {
  return (uint64_t{static_cast<uint8_t>(kind)} << 56) | (payload & ((uint64_t{1} << 56) - 1));
}

// An untimed entry or exit (fast clock): the key whole, no timestamp, so the
// writer needs neither the base slots nor the clock. `key` < kKeyLimit.
inline constexpr uint64_t MakeUntimed(bool exit, uint64_t key) {
  return (uint64_t{static_cast<uint8_t>(exit ? ControlKind::kUntimedExit : ControlKind::kUntimedEntry)} << 56) | key;
}

inline constexpr uint64_t MakeOffCpu(uint64_t ns) {
  return MakeControl(ControlKind::kOffCpu, ns > kPayloadMax ? kPayloadMax : ns);
}

inline constexpr uint64_t MakeEpoch(uint64_t epoch, uint64_t delta) {
  if (delta > kEpochDeltaMax) delta = kEpochDeltaMax;
  return MakeControl(ControlKind::kEpoch, (epoch & kEpochMask) | (delta << kEpochBits));
}

// `in_use`: bit s set for every slot that holds a base once this record is
// applied (readers use it to know which slots a window may refer to).
inline constexpr uint64_t MakeFnBase(unsigned slot, uint64_t base, uint64_t previous, bool previous_known,
                                     unsigned in_use) {
  return MakeControl(ControlKind::kFnBase, (base & kKeyBaseMask) | ((previous & kKeyBaseMask) << 24) |
                                               (previous_known ? uint64_t{1} << 48 : 0) |
                                               (uint64_t{slot & (kBaseSlots - 1)} << 49) |
                                               (uint64_t{in_use & 0xfu} << 51));
}

// Decoding helpers (the reader's side of the same definitions). Those that
// depend on the layout take it; the default is the one this writer writes.
inline constexpr bool IsEvent(uint64_t r) { return (r & kEventBit) != 0; }
inline constexpr bool IsExit(uint64_t r) { return (r & kExitBit) != 0; }
inline constexpr uint64_t EventTscLow(uint64_t r, RecordLayout l = kLayout) {
  return (r >> 32) & ((uint64_t{1} << l.tsc_low_bits) - 1);
}
inline constexpr unsigned EventSlot(uint64_t r, RecordLayout l = kLayout) {
  return l.slot_bits == 0 ? 0 : static_cast<unsigned>((r >> kSlotShift) & ((1u << l.slot_bits) - 1));
}
inline constexpr uint64_t EventKeyLow(uint64_t r) { return r & kKeyLowMask; }
inline constexpr uint8_t ControlKindOf(uint64_t r) { return static_cast<uint8_t>((r >> 56) & 0x7f); }
inline constexpr uint64_t ControlPayload(uint64_t r) { return r & ((uint64_t{1} << 56) - 1); }
// An untimed entry or exit (kUntimedEntry/kUntimedExit); its key is ControlPayload.
inline constexpr bool IsUntimed(uint64_t r) {
  return !IsEvent(r) && (ControlKindOf(r) == static_cast<uint8_t>(ControlKind::kUntimedEntry) ||
                         ControlKindOf(r) == static_cast<uint8_t>(ControlKind::kUntimedExit));
}
inline constexpr bool IsUntimedExit(uint64_t r) {
  return ControlKindOf(r) == static_cast<uint8_t>(ControlKind::kUntimedExit);
}
inline constexpr uint64_t EpochValue(uint64_t r, RecordLayout l = kLayout) {
  return ControlPayload(r) & ((uint64_t{1} << EpochBits(l)) - 1);
}
inline constexpr uint64_t EpochDelta(uint64_t r, RecordLayout l = kLayout) { return ControlPayload(r) >> EpochBits(l); }
inline constexpr uint64_t EpochDeltaMax(RecordLayout l) { return (uint64_t{1} << (56 - EpochBits(l))) - 1; }
inline constexpr uint64_t FnBaseValue(uint64_t r) { return ControlPayload(r) & kKeyBaseMask; }
inline constexpr uint64_t FnBasePrevious(uint64_t r) { return (ControlPayload(r) >> 24) & kKeyBaseMask; }
inline constexpr bool FnBasePreviousKnown(uint64_t r) { return (ControlPayload(r) >> 48) & 1; }
inline constexpr unsigned FnBaseSlot(uint64_t r, RecordLayout l = kLayout) {
  return l.slot_bits == 0 ? 0 : static_cast<unsigned>((ControlPayload(r) >> 49) & (kBaseSlots - 1));
}
inline constexpr unsigned FnBaseInUse(uint64_t r, RecordLayout l = kLayout) {
  return l.slot_bits == 0 ? 1u : static_cast<unsigned>((ControlPayload(r) >> 51) & 0xfu);
}

// Announcements are repeated at least this often (in records), so any window
// of SyncInterval + 2 * kMaxSlotsPerPublish records holds a complete sync.
// A quarter ring at most, so a snapshot's window (at least half a ring) always
// holds one; at most 4096, so small windows decode too (the cost is five
// records every 4096, 0.12 %).
inline constexpr uint64_t kMaxSyncInterval = 4096;
inline constexpr uint64_t SyncInterval(uint64_t capacity) {
  return capacity / 4 < kMaxSyncInterval ? capacity / 4 : kMaxSyncInterval;
}
// At most this many slots are written by one publication: EPOCH, a FN_BASE
// per slot (a sync re-announces all four), UNWIND_TO, OFFCPU (fast clock),
// the EVENT. Snapshot readers widen their "maybe torn" margin by it.
inline constexpr uint64_t kMaxSlotsPerPublish = 2 + kBaseSlots + 2;
// Fast-clock rings read the TSC once per group of at most this many records
// and, while dense, hold a sync back to the next reading position: the sync
// interval of such a ring stretches by up to a group.
inline constexpr uint64_t kMaxClockGroup = 64;

static_assert(MakeEvent(true, 3, ~uint64_t{0}, ~uint64_t{0}) == ~uint64_t{0});
static_assert(MakeEvent(false, 1, 0x123456789abcdefull, 0xfedcba9876543210ull) ==
              (kEventBit | (uint64_t{1} << kSlotShift) | ((0x123456789abcdefull & kTscLowMask) << 32) | 0x76543210u));
static_assert(MakeEvent(true, 2, 0, 0) == (kEventBit | kExitBit | (uint64_t{2} << kSlotShift)));
static_assert(EventSlot(MakeEvent(false, 2, 0, 0)) == 2 && EventTscLow(MakeEvent(false, 3, ~uint64_t{0}, 0)) == kTscLowMask);
static_assert(EpochValue(MakeEpoch(kEpochMask, 1)) == kEpochMask);
static_assert(EpochDelta(MakeEpoch(5, kEpochDeltaMax + 10)) == kEpochDeltaMax);
static_assert(FnBasePrevious(MakeFnBase(3, 1, kKeyBaseMask, true, 0xf)) == kKeyBaseMask);
static_assert(FnBaseSlot(MakeFnBase(3, 1, 0, false, 0xf)) == 3 && FnBaseInUse(MakeFnBase(0, 1, 0, false, 0xf)) == 0xf);
static_assert(FnBaseSlot(MakeFnBase(3, 1, 0, false, 0xf), kLayoutV1) == 0);
static_assert(ControlPayload(MakeOffCpu(~uint64_t{0})) == kPayloadMax && ControlKindOf(MakeOffCpu(1)) == 5);
static_assert(IsUntimed(MakeUntimed(true, kKeyLimit - 1)) && IsUntimedExit(MakeUntimed(true, 1)) &&
              !IsUntimedExit(MakeUntimed(false, 1)) && ControlPayload(MakeUntimed(false, kKeyLimit - 1)) == kKeyLimit - 1);

// ---------------------------------------------------------------------------
// Dump file: a 64-byte header, then sections. Every section is
//   u32 type, u32 flags, u64 payload size, payload, zero padding to 8 bytes.
// Readers skip section types they do not know.
// ---------------------------------------------------------------------------
inline constexpr char kMagic[8] = {'L', 'O', 'O', 'K', 'B', 'A', 'C', 'K'};
inline constexpr uint16_t kDumpVersion = 6;  // 2: TRIGGER section, kThreadTrimmed; 3: SAMPLES section;
                                             // 4: base slots in records, 28 TSC bits; 5: fast-clock rings;
                                             // 6: CPU section
inline constexpr uint16_t kMinReaderVersion = 4;
// A dump holding a fast-clock ring needs a reader that knows their TSCs are
// bounds (a version-4 reader would take them for exact times).
inline constexpr uint16_t kMinReaderVersionFastClock = 5;

// The record layout of a dump of version `v`.
inline constexpr RecordLayout LayoutOfVersion(uint16_t v) { return v >= 4 ? kLayoutV4 : kLayoutV1; }
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
  kMetadata = 9, // version 4: key/value strings (format::metadata, and front-ends' notes); readers of any version skip it
  kCpu = 10,     // version 6: a thread's CPU time read every 10 ms by the control thread (runtime/cpu_log.h)
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
// METADATA payload (version 4; at most one, written last): u32 count, then
// count x (string key, string value). Keys are dotted names; a reader ignores
// keys it does not know. The writer's keys are below (values are decimal).
namespace metadata {
inline constexpr const char* kRequests = "dump.requests";          // requests this dump answers (coalesced)
inline constexpr const char* kQueuedNs = "dump.queued_ns";         // oldest request -> dump began
inline constexpr const char* kPrepareNs = "dump.prepare_ns";       // directory, file, clock, snapshot memory
inline constexpr const char* kSnapshotNs = "dump.snapshot_ns";     // first ring copy began -> last one ended
inline constexpr const char* kSnapshotBytes = "dump.snapshot_bytes";  // records and samples copied
inline constexpr const char* kSnapshotBatches = "dump.snapshot_batches";  // 1 unless memory was short
inline constexpr const char* kEncodeNs = "dump.encode_ns";         // sections built (names, window trim)
inline constexpr const char* kWriteNs = "dump.write_ns";           // write() of everything before METADATA
inline constexpr const char* kWriteDirect = "dump.write_direct";   // 1: the bulk went out with O_DIRECT
// Text values (fleet analysis, docs/fleet.md): absent from dumps written
// before they were added; readers fall back to "" / the reader's version.
inline constexpr const char* kHost = "process.host";               // LOOKBACK_HOST, else gethostname()
inline constexpr const char* kLookbackVersion = "lookback.version"; // the runtime that wrote the dump
// A front-end's note (lb_set_note(key, text)): "note.<key>" -> text, e.g. the
// JVM agent's "note.jvm" (methods traced and skipped). `lookback info` shows them.
inline constexpr const char* kNotePrefix = "note.";
// The overhead budget (runtime/budget.h). Text values, absent from dumps of
// runtimes without a budget (readers take "off").
inline constexpr const char* kBudget = "budget.percent";        // "3%", "2.5%" or "off"
// The history the budget keeps in each busy thread's ring: "2s", "500ms" or
// "off" (absent from older dumps: readers take "off").
inline constexpr const char* kBudgetHistory = "budget.history";
// "RECORDED FILTERED": a trace point's measured cost in picoseconds, recorded
// and dropped by the filter (a shed function's call through the hooks).
inline constexpr const char* kBudgetCostPs = "budget.cost_ps";
// "PASS_SHED": a shed function's trace point in code built with the clang
// pass (its guard path), in picoseconds, measured at start. Those calls are
// not counted: the estimate prices them from their rate when shed.
inline constexpr const char* kBudgetPassShedPs = "budget.pass_shed_ps";
// Lines "TID ESTIMATE TRACE_POINTS_PER_S FILTERED_PER_S": each judged
// thread's latest estimate (basis points of its CPU time), records and
// filtered calls per second of its CPU time.
inline constexpr const char* kBudgetThreads = "budget.threads";
// Lines "KEY AT_NS UNTIL_NS CALLS_PER_S MEAN_NS TID", KEY in hex, the rest
// decimal: a function shed at CLOCK_MONOTONIC AT_NS, back at UNTIL_NS (0:
// still shed), its calls per CPU second and mean duration (0: unmeasured)
// then, and the thread whose estimate shed it.
inline constexpr const char* kBudgetShed = "budget.shed";
// The --stall-idle globs (LOOKBACK_STALL_IDLE), comma-separated: functions
// in which the program waits by its own account. Analyses count the time
// inside them as waiting (model/cpu_time.h).
inline constexpr const char* kStallIdle = "stall.idle";
}  // namespace metadata

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
  kThreadFastClock = 1u << 5, // version 5: the ring was written in fast-clock mode (EVENT TSCs are
                              // lower bounds; FORMAT.md, "Fast clock")
};

inline constexpr uint32_t kMaxStringBytes = 1u << 20;

}  // namespace lookback::format
