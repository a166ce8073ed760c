// Snapshot of the rings and the dump file (layout: src/format/FORMAT.md).
//
// A dump is written to DIR/.NAME.tmp (mode 0600, DIR created 0700), fsynced,
// then renamed to DIR/NAME, so a watcher only ever sees complete files. On any
// error the temporary file is removed and the error returned: nothing partial
// is left behind.
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/elf_build_id.h"
#include "format/encode.h"
#include "format/sections.h"
#include "format/record_state.h"
#include "runtime/budget.h"
#include "runtime/cpu_log.h"
#include "runtime/runtime.h"
#include "runtime/sampler.h"
#include "runtime/triggers.h"

namespace lookback::rt {

namespace {

// Entries copied between two re-reads of the writer's position: the writer can
// overwrite at most what it writes while one chunk is copied, so a copy that
// outruns the writer loses only about that much of the oldest records.
constexpr uint64_t kCopyChunkEntries = 8192;

void CopySlots(uint64_t* dst, const uint64_t* src, uint64_t n) {
  // Relaxed atomic loads: the owner may be storing into these slots. Any slot
  // it stored into during the copy is dropped by the caller, so a torn value
  // is never kept.
  for (uint64_t i = 0; i < n; ++i) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

}  // namespace

RingWindow CopyPublishedInto(const uint64_t* pos, const uint64_t* slots, uint64_t capacity, uint32_t width,
                             uint64_t margin, uint64_t* dst, bool* overrun) {
  // Reader side of the ring protocol (hot_path.h), chunk by chunk, oldest
  // first. After each chunk the position is read again (pos_k): entries with
  // index <= pos_k - capacity + margin - 1 may have been overwritten while
  // the chunk was copied, so those of this chunk are dropped, and with them
  // everything older (the window stays contiguous). Entries of earlier chunks
  // were read before pos_k's fence and were checked against their own re-read.
  const uint64_t end = __atomic_load_n(pos, __ATOMIC_ACQUIRE);
  const uint64_t begin = end > capacity ? end - capacity : 0;
  uint64_t valid_from = begin;
  for (uint64_t i = begin; i < end;) {
    const uint64_t at = i & (capacity - 1);
    const uint64_t n = std::min({end - i, capacity - at, kCopyChunkEntries});
    CopySlots(dst + (i - begin) * width, slots + at * width, n * width);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t pos_k = __atomic_load_n(pos, __ATOMIC_RELAXED);
    const uint64_t unsafe_below = pos_k + margin > capacity ? pos_k + margin - capacity : 0;
    if (unsafe_below > i) valid_from = std::max(valid_from, std::min(unsafe_below, i + n));
    i += n;
  }
  *overrun = valid_from > begin;
  return {valid_from, valid_from - begin, end - valid_from};
}

uint64_t CopyPublished(const uint64_t* pos, const uint64_t* slots, uint64_t capacity, uint32_t width,
                       uint64_t margin, std::vector<uint64_t>* out, bool* overrun) {
  out->resize(capacity * width);
  const RingWindow w = CopyPublishedInto(pos, slots, capacity, width, margin, out->data(), overrun);
  out->erase(out->begin(), out->begin() + static_cast<ptrdiff_t>(w.offset * width));
  out->resize(w.count * width);
  return w.first;
}

RingWindow SnapshotRingInto(const Ring& r, uint64_t* dst) {
  // A window of a sync interval (at most a quarter ring) plus two
  // publications holds a complete sync, so it decodes on its own. A writer
  // that overran more than that during the copy (a long preemption of the
  // copying thread, a tiny ring) gets the copy retried a few times.
  const uint64_t decodable = format::SyncInterval(r.capacity) + format::kMaxClockGroup + 2 * kMaxSlotsPerPublish;
  RingWindow w{};
  for (int i = 0; i < 4; ++i) {
    bool overrun = false;
    w = CopyPublishedInto(&r.pos, r.slots, r.capacity, 1, kMaxSlotsPerPublish, dst, &overrun);
    if (!overrun || w.count >= decodable) break;
  }
  return w;
}

uint64_t SnapshotRing(const Ring& r, std::vector<uint64_t>* out) {
  out->resize(r.capacity);
  const RingWindow w = SnapshotRingInto(r, out->data());
  out->erase(out->begin(), out->begin() + static_cast<ptrdiff_t>(w.offset));
  out->resize(w.count);
  return w.first;
}

namespace {

using format::PutString;
using format::PutU32;
using format::PutU64;

std::string ReadSmallFile(const char* path) {
  std::string s;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && s.size() < (1u << 20)) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

std::string ExePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

int OnModule(dl_phdr_info* info, size_t, void* arg) {
  auto* mods = static_cast<std::vector<format::ModuleInfo>*>(arg);
  format::ModuleInfo m;
  m.lo = ~uint64_t{0};  // lowered by each PT_LOAD below
  m.bias = info->dlpi_addr;
  m.path = info->dlpi_name ? info->dlpi_name : "";
  if (m.path.empty() && mods->empty()) m.path = ExePath();  // the main program comes first
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      m.lo = std::min<uint64_t>(m.lo, m.bias + ph.p_vaddr);
      m.hi = std::max<uint64_t>(m.hi, m.bias + ph.p_vaddr + ph.p_memsz);
    }
  }
  m.build_id = GnuBuildId(info);
  if (m.hi == 0) m.lo = 0;
  mods->push_back(std::move(m));
  return 0;
}

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Offsets, lengths and memory of O_DIRECT writes are multiples of this (the
// logical block size of every device we know is 512 or 4096).
constexpr uint64_t kBlock = 4096;
// At most this much per write() call.
constexpr uint64_t kWriteChunk = 8ull << 20;

// The dump file. The bulk (whole blocks of the image, the ring copies) is
// written with O_DIRECT where the file system takes it: no copy into the page
// cache, which on a loaded machine was most of a dump's CPU time and wall
// time (docs/performance.md, "Dump latency"). The last partial block, the
// METADATA section and the header go through the page cache. Remembers the
// first error.
class DumpFile {
 public:
  DumpFile() = default;
  DumpFile(const DumpFile&) = delete;
  DumpFile& operator=(const DumpFile&) = delete;
  ~DumpFile() {
    if (fd_ >= 0) close(fd_);
  }
  // Creates `path` (0600, must not exist). False: errno says why.
  bool Create(const std::string& path) {
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd_ < 0) return false;
    // Set afterwards: a file system without O_DIRECT refuses it here (EINVAL)
    // rather than in open(), which may already have created the file.
    const int flags = fcntl(fd_, F_GETFL);
    direct_ = flags >= 0 && fcntl(fd_, F_SETFL, flags | O_DIRECT) == 0;
    return true;
  }
  // Appends p[0, n): n a multiple of kBlock, p block-aligned.
  void AppendBlocks(const char* p, uint64_t n) { Append(p, n); }
  // Appends the rest (any length) through the page cache.
  void AppendTail(const char* p, uint64_t n) {
    Buffered();
    Append(p, n);
  }
  void PatchAt(uint64_t offset, const std::string& bytes) {
    Buffered();
    if (error_ == 0 && pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)) != static_cast<ssize_t>(bytes.size()))
      error_ = errno != 0 ? errno : EIO;
  }
  // The data and the size on disk (a crash never leaves a short dump), then closed.
  int SyncAndClose() {
    if (error_ == 0 && fdatasync(fd_) != 0) error_ = errno;
    if (close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    return error_;
  }
  int error() const { return error_; }
  uint64_t size() const { return size_; }
  bool direct() const { return direct_; }

 private:
  void Buffered() {
    if (!direct_) return;
    const int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0) fcntl(fd_, F_SETFL, flags & ~O_DIRECT);
    direct_ = false;
  }
  void Append(const char* p, uint64_t n) {
    while (n > 0 && error_ == 0) {
      const ssize_t w = pwrite(fd_, p, std::min(n, kWriteChunk), static_cast<off_t>(size_));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno == EINVAL && direct_) {  // the device wants other alignment: through the page cache
        Buffered();
        continue;
      }
      if (w <= 0) {
        error_ = w < 0 ? errno : ENOSPC;
        return;
      }
      p += w;
      n -= static_cast<uint64_t>(w);
      size_ += static_cast<uint64_t>(w);
      if (direct_ && (size_ % kBlock) != 0) Buffered();  // a short direct write: the rest buffered
    }
  }
  int fd_ = -1;
  bool direct_ = false;
  int error_ = 0;
  uint64_t size_ = 0;
};

// A whole section (header, payload, padding) in one string.
void AppendSection(std::string* out, format::SectionType type, std::string payload, uint32_t* count) {
  const uint64_t size = payload.size();
  format::PadTo8(&payload);
  out->append(format::SectionHeader(type, size));
  out->append(payload);
  ++*count;
}

// Anonymous memory in which a dump is assembled: the ring copies land in it,
// then the sections are packed in place into the file's bytes. Faulted in
// before the first copy, so that the copies (the only time records can be
// lost) touch no new page. Kept for the next dump until it has been idle for
// kKeepImageNs: dumps come in bursts, and memory new to the process costs
// more than the copies themselves, the more so on a VM that hands free memory
// back to its host (docs/performance.md, "Dump latency"). Not huge pages:
// there, the 2 MiB blocks a huge page needs are exactly the ones the host
// took back (5x slower to fault in than small pages, measured). Guarded by
// ControlMutex(); trivially destructible, as an exiting thread may still dump.
constexpr uint64_t kKeepImageNs = 10ull * 1000000000;
struct KeptImage {
  char* base = nullptr;
  uint64_t bytes = 0;
  uint64_t last_used_ns = 0;
};
KeptImage g_image;

void ReleaseImage() {
  if (g_image.base != nullptr) munmap(g_image.base, g_image.bytes);
  g_image = KeptImage{};
}

// Faults in [p, p + bytes) for writing; false when the memory cannot be had.
bool PopulateImage(char* p, uint64_t bytes) {
  char* const begin = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095});
  bytes += static_cast<uint64_t>(p - begin);
  if (bytes == 0) return true;
  if (madvise(begin, bytes, MADV_POPULATE_WRITE) != 0) {
    if (errno != EINVAL) return false;  // EINVAL: a kernel before 5.14; anything else: no memory
    for (uint64_t off = 0; off < bytes; off += 4096) static_cast<volatile char*>(begin)[off] = 0;
  }
  return true;
}

// At least `bytes` of image, of which the first `populate` faulted in;
// nullptr when the memory cannot be had. The rest is faulted in per thread,
// as much as its ring holds, before the copy (DumpWriter::WriteBatches): a
// ring that is far from full does not pay for the room it might have used
// (an empty main under `record` spent 9 ms populating 24 MiB at exit).
char* MapImage(uint64_t bytes, uint64_t populate) {
  bytes = (bytes + kBlock - 1) & ~(kBlock - 1);
  if (g_image.base == nullptr || g_image.bytes < bytes) {
    ReleaseImage();
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    g_image.base = static_cast<char*>(p);
    g_image.bytes = bytes;
  }
  if (!PopulateImage(g_image.base, std::min(populate, bytes))) {
    ReleaseImage();
    return nullptr;
  }
  return g_image.base;
}

bool MakeDirs(const std::string& dir, std::string* error) {
  std::string path;
  size_t i = 0;
  while (i <= dir.size()) {
    size_t slash = dir.find('/', i);
    if (slash == std::string::npos) slash = dir.size();
    path = dir.substr(0, slash);
    i = slash + 1;
    if (path.empty()) continue;
    if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = "cannot create dump directory '" + path + "': " + strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "dump directory '" + dir + "' is not a directory";
    return false;
  }
  return true;
}

// The oldest TSC a dump keeps with LOOKBACK_WINDOW (0: keep everything).
uint64_t WindowCutoff(uint64_t window_ns, const Calibration& cal, uint64_t snap_tsc) {
  if (window_ns == 0 || cal.ns == 0) return 0;
  const unsigned __int128 window_ticks = static_cast<unsigned __int128>(window_ns) * cal.ticks / cal.ns;
  return window_ticks < snap_tsc ? snap_tsc - static_cast<uint64_t>(window_ticks) : 0;
}

// One traced thread's part of a dump, from its ring to its sections.
struct ThreadDump {
  Ring* ring = nullptr;
  std::string name;            // read before the snapshot (live threads)
  bool exited = false;         // at the snapshot
  uint64_t room = 0;           // bytes of the image reserved for its sections
  uint64_t* records = nullptr; // the copy (in the image)
  uint64_t count = 0;
  uint64_t lost = 0;           // records overwritten before the copy
  bool unpopulated = false;    // its room could not be faulted in: nothing copied (PopulateBatch)
  uint64_t snap_tsc = 0;
  std::vector<uint64_t> samples, states;  // sized for a whole copy before the snapshot
  uint64_t samples_lost = 0;
  std::vector<uint64_t> cpu;  // (tsc, cpu ns) pairs (cpu_log.h); reserved before the snapshot
};

// Fixed part of a THREAD payload: tid, flags, 7 u64 (FORMAT.md).
constexpr uint64_t kThreadFixedBytes = 4 + 4 + 7 * 8;
// The most a THREAD section's header, fixed part and name take (the name of
// a thread that exits before the copy becomes its 16-byte exit name), padded
// to 8 like the section, so that the copy after it is 8-byte aligned.
uint64_t ThreadHeadRoom(const std::string& name) {
  return (format::kSectionHeaderSize + kThreadFixedBytes + 4 + std::max<uint64_t>(name.size(), 16) + 7) & ~uint64_t{7};
}
constexpr uint64_t kSamplesFixedBytes = 4 + 4 + 8 + 4 * 4 + 8;
constexpr uint64_t kCpuFixedBytes = 4 + 4 + 8 + 4 + 4;

// The CPU section of one thread (FORMAT.md), appended at `out`; returns its
// size. With a window, the readings before the cut are left out except the
// last one before it, so the CPU time at the window's start is known.
uint64_t PackCpu(const ThreadDump& t, uint64_t cutoff, char* out) {
  size_t first = 0;
  const size_t n = t.cpu.size() / 2;
  if (cutoff != 0) {
    while (first + 1 < n && t.cpu[(first + 1) * 2] < cutoff) ++first;
  }
  const std::string p = format::EncodeCpuHead(t.ring->tid, kCpuLogTickNs, static_cast<uint32_t>(n - first));
  const std::string head = format::SectionHeader(format::SectionType::kCpu, p.size() + (n - first) * 16) + p;
  memcpy(out, head.data(), head.size());
  memcpy(out + head.size(), t.cpu.data() + first * 2, (n - first) * 16);
  return head.size() + (n - first) * 16;  // a multiple of 8: no padding
}

// The SAMPLES section of one thread (FORMAT.md), appended at `out`; returns
// its size. With a window, samples older than the cut are left out; the
// state in effect at the cut is kept (stamped with its own time), so the
// timeline still says what the thread was doing when the window opens.
uint64_t PackSamples(const ThreadDump& t, const Config& config, uint64_t cutoff, char* out) {
  constexpr uint32_t kF = format::kSampleFields;
  const std::vector<uint64_t>& samples = t.samples;
  const std::vector<uint64_t>& states = t.states;
  size_t first_sample = 0, first_state = 0;
  if (cutoff != 0) {
    while (first_sample < samples.size() / kF && samples[first_sample * kF + format::kSampleTsc] < cutoff) ++first_sample;
    while (first_state + 1 < states.size() / 2 && states[(first_state + 1) * 2] < cutoff) ++first_state;
  }
  const uint64_t n_samples = samples.size() / kF - first_sample, n_states = states.size() / 2 - first_state;
  std::string p;
  PutU32(&p, t.ring->tid);
  PutU32(&p, t.ring->samples->flags);
  PutU64(&p, config.sample_interval_ns);
  PutU32(&p, kF);
  PutU32(&p, static_cast<uint32_t>(n_samples));
  PutU32(&p, static_cast<uint32_t>(n_states));
  PutU32(&p, 0);
  PutU64(&p, t.samples_lost + first_sample);
  const std::string head = format::SectionHeader(format::SectionType::kSamples, p.size() + n_samples * kF * 8 + n_states * 16) + p;
  char* at = out;
  memcpy(at, head.data(), head.size());
  at += head.size();
  memcpy(at, samples.data() + first_sample * kF, n_samples * kF * 8);  // little-endian u64s, as in memory
  at += n_samples * kF * 8;
  memcpy(at, states.data() + first_state * 2, n_states * 16);
  at += n_states * 16;
  return static_cast<uint64_t>(at - out);  // a multiple of 8: no padding
}

// LOOKBACK_WINDOW: drops the records of `records[0, n)` older than `cutoff_tsc`.
// What is kept must still decode on its own and still say where the thread
// was, so the window is prefixed with synthesized records: the entries of the
// frames open at the cut (with their own timestamps, an untimed entry's lower bound, each preceded by the
// EPOCH and the slot-0 FN_BASE it needs), then the EPOCH and every base slot
// in effect at the cut, written over the last of the dropped records. Returns
// the number of records dropped (0: nothing to trim): the window is then
// records[dropped, n).
uint64_t TrimToWindow(uint64_t* records, uint64_t n, uint64_t cutoff_tsc) {
  using namespace format;
  struct Open {
    uint64_t key, tsc;
  };
  std::vector<Open> open;
  RecordState state;
  state.Prime(n, [&](uint64_t i) { return records[i]; });
  size_t cut = n;
  uint64_t reading = 0;  // fast clock: the latest reading, an untimed event's lower bound (0: none yet)
  for (size_t i = 0; i < n; ++i) {
    const uint64_t rec = records[i];
    uint64_t tsc = 0, key = 0;
    if (IsUntimed(rec)) {
      // Cut only at a reading (the window then starts with a timed event);
      // an open untimed entry is carried over at its lower bound.
      if (reading == 0) continue;
      tsc = reading;
      key = ControlPayload(rec);
    } else if (!IsEvent(rec)) {
      if (static_cast<ControlKind>(ControlKindOf(rec)) == ControlKind::kResume) open.clear();
      state.Apply(rec);
      continue;
    } else {
      if (!state.Decode(rec, &tsc, &key)) continue;  // not decodable: nothing to carry over
      if (tsc >= cutoff_tsc) {
        cut = i;
        break;
      }
      reading = tsc;
    }
    if (!(IsEvent(rec) ? IsExit(rec) : IsUntimedExit(rec))) {
      if (open.size() < 256) open.push_back({key, tsc});
      continue;
    }
    for (size_t k = open.size(); k-- > 0;) {  // a named exit closes its frame and any abandoned above it
      if (open[k].key == key) {
        open.resize(k);
        break;
      }
    }
  }
  if (state.epoch() == RecordState::kUnknown) return 0;
  std::vector<uint64_t> prefix;
  uint64_t e_prev = RecordState::kUnknown, b_prev = RecordState::kUnknown;
  for (const Open& o : open) {
    if (o.tsc >> kTscLowBits != e_prev) prefix.push_back(MakeEpoch(o.tsc >> kTscLowBits, 0));
    if (o.key >> 32 != b_prev) prefix.push_back(MakeFnBase(0, o.key >> 32, 0, false, 1));
    e_prev = o.tsc >> kTscLowBits;
    b_prev = o.key >> 32;
    prefix.push_back(MakeEvent(false, 0, o.tsc, o.key));
  }
  // The state at the cut, announced in full: "previous unknown", so a reader
  // never looks before it.
  prefix.push_back(MakeEpoch(state.epoch(), 0));
  unsigned in_use = 0;
  for (unsigned s = 0; s < kBaseSlots; ++s) {
    if (state.base(s) != RecordState::kUnknown) in_use |= 1u << s;
  }
  for (unsigned s = 0; s < kBaseSlots; ++s) {
    if (state.base(s) != RecordState::kUnknown) prefix.push_back(MakeFnBase(s, state.base(s), 0, false, in_use));
  }
  if (cut <= prefix.size()) return 0;  // trimming would not make the window smaller
  const uint64_t dropped = cut - prefix.size();
  std::copy(prefix.begin(), prefix.end(), records + dropped);
  return dropped;
}

}  // namespace

// The fixed sections' contents (format/sections.h encodes them).
format::ProcessInfo ProcessSection(uint32_t seq, const ClockPair& now, const std::string& reason) {
  const Runtime& rt = R();
  format::ProcessInfo p;
  p.pid = rt.pid;
  p.ppid = static_cast<uint32_t>(getppid());
  p.dump_seq = seq;
  p.dump_tsc = now.tsc;
  p.dump_realtime_ns = now.real_ns;
  p.dump_monotonic_ns = now.mono_ns;
  p.name = rt.process_name;
  p.exe = ExePath();
  p.cmdline = ReadSmallFile("/proc/self/cmdline");
  if (!p.cmdline.empty() && p.cmdline.back() == '\0') p.cmdline.pop_back();
  p.reason = reason;
  return p;
}

format::ClockInfo ClockSection(const Calibration& cal, const ClockPair& now) {
  format::ClockInfo k;
  k.ticks = cal.ticks;
  k.ns = cal.ns;
  k.ref_tsc = now.tsc;
  k.ref_monotonic_ns = now.mono_ns;
  k.ref_realtime_ns = now.real_ns;
  k.tsc_low_bits = format::kTscLowBits;
  k.uncertainty_ppb = cal.uncertainty_ppb;
  return k;
}

format::StatsInfo StatsSection() {
  const Runtime& rt = R();
  format::StatsInfo st;
  st.untraced_memory = rt.stats.untraced_memory.load();
  st.untraced_pattern = rt.stats.untraced_pattern.load();
  st.reclaimed = rt.stats.reclaimed.load();
  st.invalid_keys = rt.stats.invalid_keys.load();
  st.buffer_bytes = rt.config.buffer_bytes;
  return st;
}

format::TriggerInfo TriggerSection(const Trigger& trigger) {
  format::TriggerInfo t;
  t.tid = trigger.tid;
  t.signal = trigger.signal;
  t.tsc = trigger.tsc;
  t.measured_ns = trigger.measured_ns;
  t.threshold_ns = trigger.threshold_ns;
  t.window_ns = R().config.window_ns;
  t.suppressed = trigger.suppressed;
  t.detector = trigger.detector;
  t.subject = trigger.subject;
  return t;
}

namespace {

// One dump being written: what its phases hand on to each other.
// WriteDumpLocked runs the phases in order and times them (DumpPhases); they
// are defined below in that order.
struct DumpWriter {
  DumpWriter(const Trigger& t, DumpOutcome* o) : trigger(t), rt(R()), out(*o), ph(o->phases), dir(rt.config.dir) {}

  bool CreateTemporary();
  void ReadDumpClock();
  void BuildHead();
  void CollectThreads();
  void TakeFreeText();
  bool PrepareImage();
  void WriteBatches();
  size_t BatchEnd(size_t b) const;
  void PopulateBatch(size_t b, size_t e);
  void SnapshotBatch(size_t b, size_t e);
  char* PackBatch(size_t b, size_t e);
  char* PackThread(ThreadDump& t, char* at);
  void WriteWholeBlocks(const char* packed_end);
  void AppendMetadata();
  void PatchHeader();
  int LinkFinalName();
  DumpOutcome Fail(int err);

  const Trigger& trigger;
  Runtime& rt;
  DumpOutcome& out;
  DumpPhases& ph;
  const std::string& dir;
  uint32_t seq = 0;
  std::string final_path, tmp_path;
  DumpFile file;
  ClockPair now;
  Calibration cal;
  std::string head;       // the file header (patched at the end) and the first sections
  uint32_t sections = 0;  // so far (the file header's count)
  std::vector<ThreadDump> threads;
  uint64_t all_room = 0, largest = 0;  // the threads' rooms in the image: all together, the largest one
  std::vector<std::pair<std::string, std::string>> free_text;  // METADATA's entries of any length
  uint64_t metadata_room = 0;
  uint64_t lead = 0;    // bytes of the image before the threads' rooms
  uint64_t budget = 0;  // bytes of the image for the rooms of one batch
  char* image = nullptr;
  uint64_t pending = 0;         // bytes at the start of the image not yet written
  bool any_fast_clock = false;  // then the header asks for a reader that knows fast-clock bounds
};

// Names the dump and creates its temporary file. False: out.error says why.
bool DumpWriter::CreateTemporary() {
  // After an exec the same pid counts from 1 again: never replace a dump.
  std::string name;
  do {
    seq = rt.dump_seq.fetch_add(1) + 1;
    name = rt.process_name + "-" + std::to_string(rt.pid) + "-" + std::to_string(seq) + ".lbk";
    final_path = dir + "/" + name;
  } while (access(final_path.c_str(), F_OK) == 0);
  tmp_path = dir + "/." + name + ".tmp";
  if (!file.Create(tmp_path)) {
    out.error = "cannot create '" + tmp_path + "': " + strerror(errno);
    return false;
  }
  return true;
}

// Clock first: the dump-time reference pair, and a baseline of >= 10 ms
// for the TSC frequency (short runs wait out the rest: it is off the hot path).
void DumpWriter::ReadDumpClock() {
  now = ReadClockPair();
  if (now.mono_ns < rt.start_clock.mono_ns + 10000000ull) {
    const uint64_t wait_ns = rt.start_clock.mono_ns + 10000000ull - now.mono_ns;
    timespec ts{0, static_cast<long>(wait_ns)};
    nanosleep(&ts, nullptr);
    now = ReadClockPair();
  }
  cal = Calibrate(rt.start_clock, now);
}

// Everything but the threads: the file header (patched at the end) and the
// first sections.
void DumpWriter::BuildHead() {
  head.assign(format::kFileHeaderSize, '\0');
  AppendSection(&head, format::SectionType::kProcess, format::EncodeProcess(ProcessSection(seq, now, trigger.reason)),
                &sections);
  AppendSection(&head, format::SectionType::kClock, format::EncodeClock(ClockSection(cal, now)), &sections);
  {
    std::vector<format::ModuleInfo> mods;
    dl_iterate_phdr(OnModule, &mods);
    AppendSection(&head, format::SectionType::kModules, format::EncodeModules(mods), &sections);
  }
  if (std::vector<std::pair<uint64_t, std::string>> names = KeyNames(); !names.empty()) {
    AppendSection(&head, format::SectionType::kNames, format::EncodeNames(names), &sections);
  }
  AppendSection(&head, format::SectionType::kStats, format::EncodeStats(StatsSection()), &sections);
  AppendSection(&head, format::SectionType::kTrigger, format::EncodeTrigger(TriggerSection(trigger)), &sections);
}

// The threads, their names (a /proc read each: not while copying) and the
// room each needs in the image.
void DumpWriter::CollectThreads() {
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r == nullptr) continue;
    ThreadDump& t = threads.emplace_back();
    t.ring = r;
    t.name = RingName(*r);
    t.room = ThreadHeadRoom(t.name) + r->capacity * 8;
    if (r->samples != nullptr) {
      t.samples.resize(kSampleCapacity * format::kSampleFields);
      t.states.resize(kStateCapacity * 2);
      t.room += format::kSectionHeaderSize + kSamplesFixedBytes + (t.samples.size() + t.states.size()) * 8;
    } else {
      t.cpu.reserve(kCpuLogCapacity * 2 + 2);
      t.room += format::kSectionHeaderSize + kCpuFixedBytes + (kCpuLogCapacity + 1) * 16;
    }
    all_room += t.room;
    largest = std::max(largest, t.room);
  }
  ph.threads = static_cast<uint32_t>(threads.size());
}

// METADATA's entries of any length (front-ends' notes as "note.<key>",
// the budget's lists) are taken now, so its room is known: a block for
// the fixed entries, and what these need.
void DumpWriter::TakeFreeText() {
  free_text = BudgetMetadata();
  for (const auto& [k, text] : Notes()) free_text.emplace_back(std::string(format::metadata::kNotePrefix) + k, text);
  if (!rt.config.stall_idle.empty()) {  // where the program waits by its own account: analyses count it as waiting
    std::string globs;
    for (const std::string& g : rt.config.stall_idle) globs += (globs.empty() ? "" : ",") + g;
    free_text.emplace_back(format::metadata::kStallIdle, globs);
  }
  metadata_room = kBlock;
  for (const auto& [k, v] : free_text) metadata_room += 8 + k.size() + v.size();
}

// The image starts with what is still to be written (the first sections,
// later the last partial block), then the threads' rooms, then room for
// METADATA. With too little memory for every thread at once, batches of
// threads, each copied, packed and written before the next. False: not even
// one thread's room could be had.
bool DumpWriter::PrepareImage() {
  lead = std::max<uint64_t>(head.size(), kBlock);
  budget = all_room;
  if (rt.config.dump_memory != 0) budget = std::min(budget, std::max(rt.config.dump_memory, largest));
  while ((image = MapImage(lead + budget + metadata_room, lead)) == nullptr) {
    if (budget <= largest) return false;
    budget = std::max(budget / 2, largest);
  }
  g_image.last_used_ns = MonotonicNs();
  memcpy(image, head.data(), head.size());
  pending = head.size();
  return true;
}

// The batch loop: each batch of threads copied, packed and written before the
// next (one batch, normally).
void DumpWriter::WriteBatches() {
  uint64_t snapshot_begin = 0, snapshot_end = 0;
  for (size_t b = 0; b < threads.size() && file.error() == 0;) {
    const size_t e = BatchEnd(b);
    ++ph.batches;
    PopulateBatch(b, e);
    const uint64_t t0 = MonotonicNs();
    if (snapshot_begin == 0) snapshot_begin = t0;
    SnapshotBatch(b, e);
    const uint64_t t1 = MonotonicNs();
    snapshot_end = t1;
    char* const packed_end = PackBatch(b, e);
    const uint64_t t2 = MonotonicNs();
    ph.encode_ns += t2 - t1;
    WriteWholeBlocks(packed_end);
    ph.write_ns += MonotonicNs() - t2;
    b = e;
  }
  ph.snapshot_ns = snapshot_end - snapshot_begin;
  ph.direct = file.direct() && file.size() > 0;  // still on after the bulk: every block went out that way
}

// The batch from thread b: threads [b, e), whose rooms fit the image (all, normally).
size_t DumpWriter::BatchEnd(size_t b) const {
  size_t e = b;
  for (uint64_t used = 0; e < threads.size() && (e == b || used + threads[e].room <= budget); ++e) {
    used += threads[e].room;
  }
  return e;
}

// Before the copy, out of the loss window: each thread's room faulted in as
// far as its ring holds records now, and a little more for what it writes
// meanwhile (a page fault past that is slower, not wrong). A room the kernel
// cannot fault in (no memory) is not copied into: that thread's records are
// left out of the dump rather than risk the process on a fault.
void DumpWriter::PopulateBatch(size_t b, size_t e) {
  constexpr uint64_t kSlack = 64 * 1024;
  char* room = image + lead;
  for (size_t i = b; i < e; ++i) {
    ThreadDump& t = threads[i];
    const Ring& r = *t.ring;
    const uint64_t held = std::min<uint64_t>(__atomic_load_n(&r.pos, __ATOMIC_ACQUIRE), r.capacity) * 8;
    t.unpopulated = !PopulateImage(room, std::min(t.room, ThreadHeadRoom(t.name) + held + kSlack));
    room += t.room;
  }
}

// Snapshot: copies only, nothing else while the writers may overwrite.
// Each copy goes to the end of its thread's room, after the space its
// section headers will take.
void DumpWriter::SnapshotBatch(size_t b, size_t e) {
  char* room = image + lead;
  for (size_t i = b; i < e; ++i) {
    ThreadDump& t = threads[i];
    const Ring& r = *t.ring;
    t.exited = r.state.load(std::memory_order_acquire) == kRingExited;
    auto* dst = reinterpret_cast<uint64_t*>(room + ThreadHeadRoom(t.name));
    RingWindow w{};
    if (t.unpopulated) {
      w.first = __atomic_load_n(&r.pos, __ATOMIC_ACQUIRE);  // every record lost
    } else {
      w = SnapshotRingInto(r, dst);
    }
    t.records = dst + w.offset;
    t.count = w.count;
    t.lost = w.first;
    t.snap_tsc = __rdtsc();
    // A fast-clock ring of the dumping thread itself ends where it stopped
    // recording: its last untimed records are bounded there.
    if (r.fast_mask != 0 && PausedAt(&r) != 0) t.snap_tsc = PausedAt(&r);
    if (r.samples != nullptr) {
      t.samples_lost = SnapshotSamples(*r.samples, &t.samples, &t.states);
    } else {
      CopyCpuLog(r, !t.exited, &t.cpu);
      if (t.cpu.size() > (kCpuLogCapacity + 1) * 2) t.cpu.resize((kCpuLogCapacity + 1) * 2);  // the room reserved
    }
    ph.snapshot_bytes += t.count * 8 + (t.samples.size() + t.states.size()) * 8;
    room += t.room;
  }
}

// Encode: the window trim, then each thread's sections packed in place
// (always towards the start of the image: nothing not yet packed is
// overwritten). Returns the end of what is packed.
char* DumpWriter::PackBatch(size_t b, size_t e) {
  char* at = image + pending;
  for (size_t i = b; i < e; ++i) at = PackThread(threads[i], at);
  return at;
}

// Where the kept records of a thread's copy start (t->records and t->count
// move to them); returns the ring index of the first one. *trimmed: the
// window (`cutoff`, 0: none) dropped some.
uint64_t StartWindow(ThreadDump* t, uint64_t cutoff, bool* trimmed) {
  uint64_t first = t->lost;
  *trimmed = false;
  if (cutoff != 0) {
    const uint64_t dropped = TrimToWindow(t->records, t->count, cutoff);
    t->records += dropped;
    t->count -= dropped;
    first += dropped;
    *trimmed = dropped != 0;
  }
  if (t->ring->fast_mask != 0 && t->lost > 0 && !*trimmed) {
    // A wrapped fast-clock ring: the untimed records at the window's
    // start lost the reading before them to the wrap, so nothing bounds
    // them below; the window starts at the first record that decodes
    // (at most a group later), so every record in it does.
    uint64_t skip = 0;
    while (skip < t->count && format::IsUntimed(t->records[skip])) ++skip;
    if (skip < t->count) {
      t->records += skip;
      t->count -= skip;
      first += skip;
    }
  }
  return first;
}

// One thread's sections (THREAD, then SAMPLES or CPU) packed at `at`; returns
// their end.
char* DumpWriter::PackThread(ThreadDump& t, char* at) {
  const Ring& r = *t.ring;
  const uint64_t cutoff = WindowCutoff(rt.config.window_ns, cal, t.snap_tsc);
  bool trimmed = false;
  const uint64_t first = StartWindow(&t, cutoff, &trimmed);
  if (t.exited) {
    // The name at exit; its room was planned for the name before the
    // copy (at least 16 bytes): a longer name given since is cut to fit.
    const std::string at_exit = RingName(r);
    t.name = at_exit.substr(0, std::max<size_t>(t.name.size(), 16));
  }
  uint32_t flags = 0;
  if (t.exited) flags |= format::kThreadExited;
  if (t.lost > 0) flags |= format::kThreadWrapped;
  if (!t.exited) flags |= format::kThreadTracing;
  if (r.tid == rt.pid) flags |= format::kThreadMain;
  if (trimmed) flags |= format::kThreadTrimmed;
  if (r.fast_mask != 0) {
    flags |= format::kThreadFastClock;
    any_fast_clock = true;
  }
  format::ThreadInfo info;
  info.tid = r.tid;
  info.flags = flags;
  info.capacity = r.capacity;
  info.first_index = first;
  info.record_count = t.count;
  info.lost = t.lost;
  info.start_tsc = r.start_tsc;
  info.exit_tsc = t.exited ? r.exit_tsc.load(std::memory_order_relaxed) : 0;
  info.snapshot_tsc = t.snap_tsc;
  info.name = t.name;
  const std::string p = format::EncodeThread(info);
  const std::string h = format::SectionHeader(format::SectionType::kThread, p.size() + t.count * 8) + p;
  memcpy(at, h.data(), h.size());
  at += h.size();
  memmove(at, t.records, t.count * 8);  // x86-64 is little-endian: the slots are the bytes
  at += t.count * 8;
  ++sections;
  if (r.samples != nullptr) {
    at += PackSamples(t, rt.config, cutoff, at);
    ++sections;
  } else if (!t.cpu.empty()) {
    at += PackCpu(t, cutoff, at);
    ++sections;
  }
  return at;
}

// Write the whole blocks; the rest moves to the start of the image.
void DumpWriter::WriteWholeBlocks(const char* packed_end) {
  const uint64_t packed = static_cast<uint64_t>(packed_end - image);
  const uint64_t blocks = packed & ~(kBlock - 1);
  file.AppendBlocks(image, blocks);
  memmove(image, image + blocks, packed - blocks);
  pending = packed - blocks;
}

// METADATA last, after what is pending in the image: how this dump was
// written, as far as known before its end (fsync and rename come after the
// last byte).
void DumpWriter::AppendMetadata() {
  std::vector<std::pair<std::string, std::string>> entries = {
      {format::metadata::kRequests, std::to_string(trigger.requests)},
      {format::metadata::kQueuedNs, std::to_string(ph.queued_ns)},
      {format::metadata::kPrepareNs, std::to_string(ph.prepare_ns)},
      {format::metadata::kSnapshotNs, std::to_string(ph.snapshot_ns)},
      {format::metadata::kSnapshotBytes, std::to_string(ph.snapshot_bytes)},
      {format::metadata::kSnapshotBatches, std::to_string(ph.batches)},
      {format::metadata::kEncodeNs, std::to_string(ph.encode_ns)},
      {format::metadata::kWriteNs, std::to_string(ph.write_ns)},
      {format::metadata::kWriteDirect, std::to_string(ph.direct)},
      // Who wrote it, for fleets (docs/fleet.md): dumps from many machines end up side by side.
      {format::metadata::kHost, rt.config.host},
      {format::metadata::kLookbackVersion, LOOKBACK_VERSION},
  };
  entries.insert(entries.end(), free_text.begin(), free_text.end());
  std::string p = format::EncodeMetadata(entries);
  std::string section;
  AppendSection(&section, format::SectionType::kMetadata, std::move(p), &sections);
  memcpy(image + pending, section.data(), section.size());
  pending += section.size();
}

// The file header, now that the size and section count are known.
void DumpWriter::PatchHeader() {
  const std::string h = format::EncodeFileHeader(
      any_fast_clock ? format::kMinReaderVersionFastClock : format::kMinReaderVersion, sections, file.size());
  file.PatchAt(0, h);
}

// The final name, once the file is synced and closed; 0 or errno (the
// temporary is still there then).
int DumpWriter::LinkFinalName() {
  // link() never replaces an existing file, unlike rename().
  if (link(tmp_path.c_str(), final_path.c_str()) != 0) return errno;
  unlink(tmp_path.c_str());
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // make the rename itself durable
    close(dfd);
  }
  return 0;
}

// Nothing partial is left behind: the temporary goes, the error is returned.
DumpOutcome DumpWriter::Fail(int err) {
  unlink(tmp_path.c_str());
  out.error = "cannot write dump '" + final_path + "': " + strerror(err);
  return out;
}

}  // namespace

DumpOutcome WriteDumpLocked(const Trigger& trigger) {
  // Phases (DumpPhases): prepare everything that does not depend on the
  // records and memory for a copy of every ring; copy every ring in one pass
  // (the loss window); pack the sections in place around the copies; write.
  const uint64_t t_begin = MonotonicNs();
  const uint64_t cpu_begin = ThreadCpuNs();
  DumpOutcome out;
  DumpPhases& ph = out.phases;
  ph.queued_ns = trigger.received_ns != 0 && trigger.received_ns < t_begin ? t_begin - trigger.received_ns : 0;
  ReclaimExitedRings();  // a dump holds at most keep_exited exited threads
  DumpWriter d(trigger, &out);
  if (!MakeDirs(d.dir, &out.error) || !d.CreateTemporary()) return out;
  d.ReadDumpClock();
  d.BuildHead();
  d.CollectThreads();
  d.TakeFreeText();
  if (!d.PrepareImage()) return d.Fail(ENOMEM);
  const uint64_t t_prepared = MonotonicNs();
  ph.prepare_ns = t_prepared - t_begin;

  d.WriteBatches();
  d.AppendMetadata();
  d.file.AppendTail(d.image, d.pending);
  d.PatchHeader();
  ph.bytes = d.file.size();
  const uint64_t t_written = MonotonicNs();
  int err = d.file.SyncAndClose();
  const uint64_t t_synced = MonotonicNs();
  if (err == 0) err = d.LinkFinalName();
  if (err != 0) return d.Fail(err);
  const uint64_t t_done = MonotonicNs();
  ph.fsync_ns = t_synced - t_written;
  ph.rename_ns = t_done - t_synced;
  ph.total_ns = t_done - t_begin;
  ph.cpu_ns = ThreadCpuNs() - cpu_begin;
  g_image.last_used_ns = t_done;
  out.ok = true;
  out.path = d.final_path;
  EnforceRetention(d.dir, d.final_path);
  return out;
}

uint64_t ReleaseIdleDumpMemory(uint64_t now_ns) {
  if (g_image.base == nullptr) return 0;
  if (now_ns >= g_image.last_used_ns + kKeepImageNs) {
    ReleaseImage();
    return 0;
  }
  return g_image.last_used_ns + kKeepImageNs;
}

void ForgetDumpMemoryAfterFork() { ReleaseImage(); }

DumpOutcome WriteDump(const Trigger& trigger) {
  DumpOutcome out;
  {
    std::lock_guard<std::mutex> lock(ControlMutex());
    out = WriteDumpLocked(trigger);
  }
  if (!out.ok) SayOnce(out.error + " (the program continues; no dump was kept)");
  // Written on another thread (lb_dump_sync, exit): the control thread may
  // be asleep with no timer, and must come round to release the kept image.
  if (static_cast<uint32_t>(syscall(SYS_gettid)) != ControlThreadTid()) WakeControlThread();
  return out;
}

}  // namespace lookback::rt
