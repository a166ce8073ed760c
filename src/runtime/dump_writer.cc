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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/encode.h"
#include "format/record_state.h"
#include "runtime/runtime.h"
#include "runtime/sampler.h"
#include "runtime/triggers.h"

namespace lookback::rt {

uint64_t CopyPublished(const uint64_t* pos, const uint64_t* slots, uint64_t capacity, uint32_t width,
                       uint64_t margin, std::vector<uint64_t>* out, bool* overrun) {
  // Reader side of the ring protocol (hot_path.h). Entries the owner may
  // overwrite while we copy are those with index <= pos2 - capacity +
  // margin - 1 where pos2 is read after the copy: drop them.
  const uint64_t end = __atomic_load_n(pos, __ATOMIC_ACQUIRE);
  uint64_t begin = end > capacity ? end - capacity : 0;
  out->resize((end - begin) * width);
  for (uint64_t i = begin; i < end; ++i) {
    const uint64_t* slot = slots + (i & (capacity - 1)) * width;
    for (uint32_t f = 0; f < width; ++f) (*out)[(i - begin) * width + f] = __atomic_load_n(&slot[f], __ATOMIC_RELAXED);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t pos2 = __atomic_load_n(pos, __ATOMIC_RELAXED);
  const uint64_t unsafe_below = pos2 + margin > capacity ? pos2 + margin - capacity : 0;
  *overrun = unsafe_below > begin;
  if (*overrun) {
    const uint64_t drop = std::min<uint64_t>(unsafe_below - begin, end - begin);
    out->erase(out->begin(), out->begin() + static_cast<ptrdiff_t>(drop * width));
    begin += drop;
  }
  return begin;
}

uint64_t SnapshotRing(const Ring& r, std::vector<uint64_t>* out) {
  // A window of a sync interval (at most a quarter ring) plus two
  // publications holds a complete sync, so it decodes on its own. A writer
  // that overran more than that during the copy (a long preemption of the
  // copying thread, a tiny ring) gets the copy retried a few times; the best
  // window is kept and whatever it cannot decode is reported by readers.
  const uint64_t decodable = format::SyncInterval(r.capacity) + 2 * kMaxSlotsPerPublish;
  std::vector<uint64_t> attempt;
  uint64_t best_first = 0;
  out->clear();
  for (int i = 0; i < 4; ++i) {
    bool overrun = false;
    const uint64_t first = CopyPublished(&r.pos, r.slots, r.capacity, 1, kMaxSlotsPerPublish, &attempt, &overrun);
    if (attempt.size() >= out->size()) {
      out->swap(attempt);
      best_first = first;
    }
    if (!overrun || out->size() >= decodable) break;
  }
  return best_first;
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

struct ModuleInfo {
  uint64_t bias = 0, lo = ~uint64_t{0}, hi = 0;
  std::string build_id, path;
};

int OnModule(dl_phdr_info* info, size_t, void* arg) {
  auto* mods = static_cast<std::vector<ModuleInfo>*>(arg);
  ModuleInfo m;
  m.bias = info->dlpi_addr;
  m.path = info->dlpi_name ? info->dlpi_name : "";
  if (m.path.empty() && mods->empty()) m.path = ExePath();  // the main program comes first
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      m.lo = std::min<uint64_t>(m.lo, m.bias + ph.p_vaddr);
      m.hi = std::max<uint64_t>(m.hi, m.bias + ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_NOTE && m.build_id.empty()) {
      // Notes are mapped: walk them for NT_GNU_BUILD_ID.
      const char* p = reinterpret_cast<const char*>(m.bias + ph.p_vaddr);
      const char* end = p + ph.p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
        const char* name = p + sizeof(ElfW(Nhdr));
        const char* desc = name + ((nh->n_namesz + 3) & ~3u);
        if (desc + nh->n_descsz > end) break;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
          m.build_id.assign(desc, nh->n_descsz);
          break;
        }
        p = desc + ((nh->n_descsz + 3) & ~3u);
      }
    }
  }
  if (m.hi == 0) m.lo = 0;
  mods->push_back(std::move(m));
  return 0;
}

// Buffered writer over a file descriptor that remembers the first error.
class FileSink {
 public:
  explicit FileSink(int fd) : fd_(fd) {}
  void Write(const void* data, size_t n) {
    if (error_ != 0) return;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = w < 0 ? errno : ENOSPC;
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
      written_ += static_cast<uint64_t>(w);
    }
  }
  void Write(const std::string& s) { Write(s.data(), s.size()); }
  int error() const { return error_; }
  uint64_t written() const { return written_; }

 private:
  int fd_;
  int error_ = 0;
  uint64_t written_ = 0;
};

void WriteSection(FileSink* sink, format::SectionType type, std::string payload, uint32_t* count) {
  const uint64_t size = payload.size();
  format::PadTo8(&payload);
  sink->Write(format::SectionHeader(type, size));
  sink->Write(payload);
  ++*count;
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

// The SAMPLES section of one thread (FORMAT.md). With a window, samples
// older than the cut are left out; the state in effect at the cut is kept
// (stamped with its own time), so the timeline still says what the thread
// was doing when the window opens.
void WriteSamples(FileSink* sink, const SampleBuffer& s, uint32_t tid, const Config& config, uint64_t cutoff,
                  std::vector<uint64_t>* samples, std::vector<uint64_t>* states) {
  const uint64_t lost = SnapshotSamples(s, samples, states);
  constexpr uint32_t kF = format::kSampleFields;
  size_t first_sample = 0, first_state = 0;
  if (cutoff != 0) {
    while (first_sample < samples->size() / kF && (*samples)[first_sample * kF + format::kSampleTsc] < cutoff) ++first_sample;
    while (first_state + 1 < states->size() / 2 && (*states)[(first_state + 1) * 2] < cutoff) ++first_state;
  }
  const uint64_t n_samples = samples->size() / kF - first_sample, n_states = states->size() / 2 - first_state;
  std::string p;
  PutU32(&p, tid);
  PutU32(&p, s.flags);
  PutU64(&p, config.sample_interval_ns);
  PutU32(&p, kF);
  PutU32(&p, static_cast<uint32_t>(n_samples));
  PutU32(&p, static_cast<uint32_t>(n_states));
  PutU32(&p, 0);
  PutU64(&p, lost + first_sample);
  sink->Write(format::SectionHeader(format::SectionType::kSamples, p.size() + n_samples * kF * 8 + n_states * 16));
  sink->Write(p);
  sink->Write(samples->data() + first_sample * kF, n_samples * kF * 8);  // little-endian u64s
  sink->Write(states->data() + first_state * 2, n_states * 16);
}

// LOOKBACK_WINDOW: drops the records of `records` older than `cutoff_tsc`.
// What is kept must still decode on its own and still say where the thread
// was, so the window is prefixed with synthesized records: the entries of the
// frames open at the cut (with their own timestamps, each preceded by the
// EPOCH and the slot-0 FN_BASE it needs), then the EPOCH and every base slot
// in effect at the cut. Returns the number of records dropped (0: nothing to
// trim).
uint64_t TrimToWindow(std::vector<uint64_t>* records, uint64_t cutoff_tsc) {
  using namespace format;
  struct Open {
    uint64_t key, tsc;
  };
  std::vector<Open> open;
  RecordState state;
  state.Prime(records->size(), [&](uint64_t i) { return (*records)[i]; });
  size_t cut = records->size();
  for (size_t i = 0; i < records->size(); ++i) {
    const uint64_t rec = (*records)[i];
    if (!IsEvent(rec)) {
      if (static_cast<ControlKind>(ControlKindOf(rec)) == ControlKind::kResume) open.clear();
      state.Apply(rec);
      continue;
    }
    uint64_t tsc = 0, key = 0;
    if (!state.Decode(rec, &tsc, &key)) continue;  // not decodable: nothing to carry over
    if (tsc >= cutoff_tsc) {
      cut = i;
      break;
    }
    if (!IsExit(rec)) {
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
  std::copy(prefix.begin(), prefix.end(), records->begin() + static_cast<ptrdiff_t>(dropped));
  records->erase(records->begin(), records->begin() + static_cast<ptrdiff_t>(dropped));
  return dropped;
}

}  // namespace

DumpOutcome WriteDumpLocked(const Trigger& trigger) {
  const std::string& reason = trigger.reason;
  Runtime& rt = R();
  DumpOutcome out;
  ReclaimExitedRings();  // a dump holds at most keep_exited exited threads
  const std::string& dir = rt.config.dir;
  if (!MakeDirs(dir, &out.error)) return out;
  // After an exec the same pid counts from 1 again: never replace a dump.
  uint32_t seq;
  std::string name, final_path;
  do {
    seq = rt.dump_seq.fetch_add(1) + 1;
    name = rt.process_name + "-" + std::to_string(rt.pid) + "-" + std::to_string(seq) + ".lbk";
    final_path = dir + "/" + name;
  } while (access(final_path.c_str(), F_OK) == 0);
  const std::string tmp_path = dir + "/." + name + ".tmp";
  int fd = open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    out.error = "cannot create '" + tmp_path + "': " + strerror(errno);
    return out;
  }
  FileSink sink(fd);
  sink.Write(std::string(format::kFileHeaderSize, '\0'));  // patched at the end
  uint32_t sections = 0;

  // Clock first: the dump-time reference pair, and a baseline of >= 10 ms
  // for the TSC frequency (short runs wait out the rest: it is off the hot path).
  ClockPair now = ReadClockPair();
  if (now.mono_ns < rt.start_clock.mono_ns + 10000000ull) {
    const uint64_t wait_ns = rt.start_clock.mono_ns + 10000000ull - now.mono_ns;
    timespec ts{0, static_cast<long>(wait_ns)};
    nanosleep(&ts, nullptr);
    now = ReadClockPair();
  }
  const Calibration cal = Calibrate(rt.start_clock, now);

  {
    std::string p;
    PutU32(&p, rt.pid);
    PutU32(&p, static_cast<uint32_t>(getppid()));
    PutU32(&p, seq);
    PutU32(&p, 0);
    PutU64(&p, now.tsc);
    PutU64(&p, now.real_ns);
    PutU64(&p, now.mono_ns);
    PutString(&p, rt.process_name);
    PutString(&p, ExePath());
    std::string cmdline = ReadSmallFile("/proc/self/cmdline");
    if (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    PutString(&p, cmdline);
    PutString(&p, reason);
    WriteSection(&sink, format::SectionType::kProcess, std::move(p), &sections);
  }
  {
    std::string p;
    PutU64(&p, cal.ticks);
    PutU64(&p, cal.ns);
    PutU64(&p, now.tsc);
    PutU64(&p, now.mono_ns);
    PutU64(&p, now.real_ns);
    PutU32(&p, format::kTscLowBits);
    PutU32(&p, cal.uncertainty_ppb);
    WriteSection(&sink, format::SectionType::kClock, std::move(p), &sections);
  }
  {
    std::vector<ModuleInfo> mods;
    dl_iterate_phdr(OnModule, &mods);
    std::string p;
    PutU32(&p, static_cast<uint32_t>(mods.size()));
    for (const auto& m : mods) {
      PutU64(&p, m.bias);
      PutU64(&p, m.lo);
      PutU64(&p, m.hi);
      PutString(&p, m.build_id);
      PutString(&p, m.path);
    }
    WriteSection(&sink, format::SectionType::kModules, std::move(p), &sections);
  }
  {
    std::vector<std::pair<uint64_t, std::string>> names = KeyNames();
    if (!names.empty()) {
      std::string p;
      PutU32(&p, static_cast<uint32_t>(names.size()));
      for (const auto& [key, n] : names) {
        PutU64(&p, key);
        PutString(&p, n);
      }
      WriteSection(&sink, format::SectionType::kNames, std::move(p), &sections);
    }
  }
  {
    const std::vector<std::pair<std::string, std::string>> notes = Notes();
    if (!notes.empty()) {
      std::string p;
      PutU32(&p, static_cast<uint32_t>(notes.size()));
      for (const auto& [key, text] : notes) {
        PutString(&p, key);
        PutString(&p, text);
      }
      WriteSection(&sink, format::SectionType::kNotes, std::move(p), &sections);
    }
  }
  {
    std::string p;
    PutU32(&p, rt.stats.untraced_memory.load());
    PutU32(&p, rt.stats.untraced_pattern.load());
    PutU32(&p, rt.stats.reclaimed.load());
    PutU32(&p, rt.stats.invalid_keys.load());
    PutU64(&p, rt.config.buffer_bytes);
    WriteSection(&sink, format::SectionType::kStats, std::move(p), &sections);
  }
  {
    std::string p;
    PutU32(&p, trigger.tid);
    PutU32(&p, trigger.signal);
    PutU64(&p, trigger.tsc);
    PutU64(&p, trigger.measured_ns);
    PutU64(&p, trigger.threshold_ns);
    PutU64(&p, rt.config.window_ns);
    PutU64(&p, trigger.suppressed);
    PutString(&p, trigger.detector);
    PutString(&p, trigger.subject);
    WriteSection(&sink, format::SectionType::kTrigger, std::move(p), &sections);
  }

  std::vector<uint64_t> records, samples, states;
  for (uint32_t i = 0; i < rt.registry_size && sink.error() == 0; ++i) {
    Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r == nullptr) continue;
    const bool exited = r->state.load(std::memory_order_acquire) == kRingExited;
    const uint64_t lost = SnapshotRing(*r, &records);  // overwritten before the snapshot
    uint64_t first = lost;
    const uint64_t snap_tsc = __rdtsc();
    bool trimmed = false;
    const uint64_t cutoff = WindowCutoff(rt.config.window_ns, cal, snap_tsc);
    if (cutoff != 0) {
      const uint64_t dropped = TrimToWindow(&records, cutoff);
      first += dropped;
      trimmed = dropped != 0;
    }
    std::string name_now = RingName(*r);
    uint32_t flags = 0;
    if (exited) flags |= format::kThreadExited;
    if (lost > 0) flags |= format::kThreadWrapped;
    if (!exited) flags |= format::kThreadTracing;
    if (r->tid == rt.pid) flags |= format::kThreadMain;
    if (trimmed) flags |= format::kThreadTrimmed;
    std::string p;
    PutU32(&p, r->tid);
    PutU32(&p, flags);
    PutU64(&p, r->capacity);
    PutU64(&p, first);
    PutU64(&p, records.size());
    PutU64(&p, lost);
    PutU64(&p, r->start_tsc);
    PutU64(&p, exited ? r->exit_tsc.load(std::memory_order_relaxed) : 0);
    PutU64(&p, snap_tsc);
    PutString(&p, name_now);
    format::PadTo8(&p);
    const uint64_t size = p.size() + records.size() * 8;
    sink.Write(format::SectionHeader(format::SectionType::kThread, size));
    sink.Write(p);
    sink.Write(records.data(), records.size() * 8);  // x86-64 is little-endian: the slots are the bytes
    ++sections;
    if (r->samples != nullptr) {
      WriteSamples(&sink, *r->samples, r->tid, rt.config, cutoff, &samples, &states);
      ++sections;
    }
  }

  // Header last, now that the size and section count are known.
  std::string h;
  h.append(format::kMagic, 8);
  format::PutU16(&h, format::kDumpVersion);
  format::PutU16(&h, format::kMinReaderVersion);
  PutU32(&h, format::kFileHeaderSize);
  PutU64(&h, format::kFeatureX86Tsc);
  PutU32(&h, sections);
  PutU32(&h, 0);
  PutU64(&h, sink.written());
  h.resize(format::kFileHeaderSize, '\0');
  int err = sink.error();
  if (err == 0 && pwrite(fd, h.data(), h.size(), 0) != static_cast<ssize_t>(h.size())) err = errno ? errno : EIO;
  if (err == 0 && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  // link() never replaces an existing file, unlike rename().
  if (err == 0 && link(tmp_path.c_str(), final_path.c_str()) != 0) err = errno;
  unlink(tmp_path.c_str());
  if (err != 0) {
    out.error = "cannot write dump '" + final_path + "': " + strerror(err);
    return out;
  }
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // make the rename itself durable
    close(dfd);
  }
  out.ok = true;
  out.path = final_path;
  EnforceRetention(dir, final_path);
  return out;
}

DumpOutcome WriteDump(const Trigger& trigger) {
  DumpOutcome out;
  {
    std::lock_guard<std::mutex> lock(ControlMutex());
    out = WriteDumpLocked(trigger);
  }
  if (!out.ok) SayOnce(out.error + " (the program continues; no dump was kept)");
  return out;
}

}  // namespace lookback::rt
