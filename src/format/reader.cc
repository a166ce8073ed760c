#include "format/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lookback::format {
namespace {

// Bounds-checked little-endian cursor over [begin, end) of the file.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> file, uint64_t begin, uint64_t end) : file_(file), pos_(begin), end_(end) {}
  bool U16(uint16_t* v) { return Int(v, 2); }
  bool U32(uint32_t* v) { return Int(v, 4); }
  bool U64(uint64_t* v) { return Int(v, 8); }
  bool String(std::string* s, const char* what) {
    uint32_t n = 0;
    const uint64_t at = pos_;
    if (!U32(&n)) return false;
    if (n > kMaxStringBytes || n > end_ - pos_) {
      Fail(std::string(what) + ": string length " + std::to_string(n) + " runs past its section", at);
      return false;
    }
    s->assign(reinterpret_cast<const char*>(file_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool Skip(uint64_t n) {
    if (n > end_ - pos_) return Fail("unexpected end of section", pos_);
    pos_ += n;
    return true;
  }
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return end_ - pos_; }
  bool failed() const { return failed_; }
  const Error& error() const { return error_; }
  bool Fail(std::string msg, uint64_t at) {
    if (!failed_) {
      failed_ = true;
      error_ = {std::move(msg), at};
    }
    return false;
  }

 private:
  template <class T>
  bool Int(T* v, unsigned n) {
    if (failed_) return false;
    if (n > end_ - pos_) return Fail("unexpected end of section", pos_);
    uint64_t x = 0;
    for (unsigned i = 0; i < n; ++i) x |= uint64_t{file_[pos_ + i]} << (8 * i);
    *v = static_cast<T>(x);
    pos_ += n;
    return true;
  }
  std::span<const uint8_t> file_;
  uint64_t pos_, end_;
  bool failed_ = false;
  Error error_;
};

}  // namespace


std::string HexBuildId(const std::string& raw) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : raw) {
    s.push_back(kHex[c >> 4]);
    s.push_back(kHex[c & 15]);
  }
  return s;
}

uint64_t Dump::Record(const ThreadInfo& t, uint64_t i) const {
  uint64_t v;
  memcpy(&v, bytes_.data() + t.records_offset + i * 8, 8);  // validated at parse time
  return v;
}

Result<Dump> Dump::Open(const std::string& path) { return Open(path, false); }

Result<Dump> Dump::Open(const std::string& path, bool salvage) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open '" + path + "': " + strerror(errno), 0};
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Error{"'" + path + "' is not a regular file", 0};
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return Error{"'" + path + "' is empty: not a lookback dump", 0};
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return Error{"cannot map '" + path + "': " + strerror(errno), 0};
  madvise(p, size, MADV_SEQUENTIAL);  // decoders stream through each thread's records
  std::shared_ptr<void> mapping(p, [size](void* q) { munmap(q, size); });
  Result<Dump> r = Parse({static_cast<const uint8_t*>(p), size}, salvage);
  if (r.ok()) r.value().mapping_ = std::move(mapping);
  return r;
}

const ThreadSamples* Dump::SamplesOf(const ThreadInfo& t) const {
  if (threads.empty() || &t < &threads.front() || &t > &threads.back()) return nullptr;
  const size_t index = static_cast<size_t>(&t - &threads.front());
  for (const ThreadSamples& s : samples) {
    if (s.thread_index == index) return &s;
  }
  return nullptr;
}

bool BudgetInfo::ShedAt(uint64_t key, int64_t ns) const {
  for (const ShedInfo& f : shed) {
    if (f.key == key && ns >= static_cast<int64_t>(f.at_ns) && (f.until_ns == 0 || ns < static_cast<int64_t>(f.until_ns))) return true;
  }
  return false;
}

namespace {

// Whitespace-separated unsigned fields of one line: `hex_first` reads the
// first in hex. False on anything else, or on a count that differs.
bool SplitFields(const std::string& line, size_t count, bool hex_first, uint64_t* out) {
  size_t at = 0, n = 0;
  while (at < line.size()) {
    while (at < line.size() && line[at] == ' ') ++at;
    if (at == line.size()) break;
    if (n == count) return false;
    const int base = n == 0 && hex_first ? 16 : 10;
    uint64_t v = 0;
    size_t digits = 0;
    for (; at < line.size() && line[at] != ' '; ++at, ++digits) {
      const char c = line[at];
      int d = c >= '0' && c <= '9' ? c - '0' : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0 || d >= base || digits >= (base == 16 ? 16u : 19u)) return false;
      v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    }
    out[n++] = v;
  }
  return n == count;
}

}  // namespace

std::optional<Error> ParseBudgetMetadata(const std::map<std::string, std::string>& m, BudgetInfo* out) {
  auto get = [&](const char* key) -> const std::string* {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };
  if (const std::string* v = get(metadata::kBudget)) out->percent = *v;
  if (const std::string* v = get(metadata::kBudgetHistory)) out->history = *v;
  uint64_t f[6];
  if (const std::string* v = get(metadata::kBudgetCostPs)) {
    if (!SplitFields(*v, 2, false, f)) return Error{"metadata " + std::string(metadata::kBudgetCostPs) + " is not two numbers: '" + *v + "'", 0};
    out->cost_ps = f[0];
    out->filtered_cost_ps = f[1];
  }
  if (const std::string* v = get(metadata::kBudgetPassShedPs)) {
    if (!SplitFields(*v, 1, false, f)) return Error{"metadata " + std::string(metadata::kBudgetPassShedPs) + " is not a number: '" + *v + "'", 0};
    out->pass_shed_cost_ps = f[0];
  }
  auto lines = [](const std::string& text, auto&& each) {
    size_t at = 0;
    while (at < text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      if (nl > at && !each(text.substr(at, nl - at))) return false;
      at = nl + 1;
    }
    return true;
  };
  std::string bad;
  if (const std::string* v = get(metadata::kBudgetThreads)) {
    lines(*v, [&](const std::string& line) {
      if (!SplitFields(line, 4, false, f) || f[0] > UINT32_MAX || f[1] > UINT32_MAX) return bad = line, false;
      out->threads.push_back({static_cast<uint32_t>(f[0]), static_cast<uint32_t>(f[1]), f[2], f[3]});
      return true;
    });
    if (!bad.empty()) return Error{"metadata " + std::string(metadata::kBudgetThreads) + " has a bad line: '" + bad + "'", 0};
  }
  if (const std::string* v = get(metadata::kBudgetShed)) {
    lines(*v, [&](const std::string& line) {
      if (!SplitFields(line, 6, true, f) || f[0] >= kKeyLimit || f[5] > UINT32_MAX) return bad = line, false;
      // Back before it was shed: runtimes before 2026-11-29 wrote that, some
      // microseconds apart, for a function that one control-thread tick shed
      // (the history floor) and brought back (the calm). Read as a shed of
      // no duration, not as a dump no command can open.
      if (f[2] != 0 && f[2] < f[1]) f[2] = f[1];
      out->shed.push_back({f[0], f[1], f[2], f[3], f[4], static_cast<uint32_t>(f[5])});
      return true;
    });
    if (!bad.empty()) return Error{"metadata " + std::string(metadata::kBudgetShed) + " has a bad line: '" + bad + "'", 0};
  }
  return std::nullopt;
}

Result<Dump> Dump::Parse(std::span<const uint8_t> bytes, bool salvage) {
  Dump d;
  d.bytes_ = bytes;
  if (bytes.size() < kFileHeaderSize) {
    if (bytes.size() >= 8 && memcmp(bytes.data(), kMagic, 8) == 0)
      return Error{"truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the 64-byte header", 0};
    return Error{"not a lookback dump (too short, no LOOKBACK magic)", 0};
  }
  if (memcmp(bytes.data(), kMagic, 8) != 0) return Error{"not a lookback dump (no LOOKBACK magic)", 0};
  Cursor h(bytes, 8, kFileHeaderSize);
  uint16_t version = 0, min_reader = 0;
  uint32_t header_size = 0, section_count_untrusted = 0, reserved = 0;
  uint64_t features = 0, file_size_untrusted = 0;
  h.U16(&version);
  h.U16(&min_reader);
  h.U32(&header_size);
  h.U64(&features);
  h.U32(&section_count_untrusted);
  h.U32(&reserved);
  h.U64(&file_size_untrusted);
  if (min_reader > kDumpVersion)
    return Error{"dump needs reader version " + std::to_string(min_reader) + "; this lookback reads up to " +
                     std::to_string(kDumpVersion),
                 kHdrMinReader};
  if (header_size < kFileHeaderSize || header_size > bytes.size())
    return Error{"bad header size " + std::to_string(header_size), kHdrHeaderSize};
  // Damage that salvage mode reports and reads past.
  auto damage = [&](Error e) -> bool {
    if (!salvage) return false;
    d.warnings.push_back(std::move(e));
    return true;
  };
  if (file_size_untrusted == 0 &&
      !damage({"dump was not finished (header has no size): written by a process that died mid-dump?", kHdrFileSize}))
    return Error{"dump was not finished (header has no size): written by a process that died mid-dump?",
                 kHdrFileSize};
  if (file_size_untrusted > bytes.size()) {
    Error e{"truncated: header says " + std::to_string(file_size_untrusted) + " bytes, file has " +
                std::to_string(bytes.size()),
            kHdrFileSize};
    if (!damage(e)) return e;
  }
  if (salvage && (file_size_untrusted == 0 || file_size_untrusted > bytes.size())) file_size_untrusted = bytes.size();
  if (file_size_untrusted < bytes.size())
    d.warnings.push_back({std::to_string(bytes.size() - file_size_untrusted) + " trailing bytes after the dump",
                          file_size_untrusted});
  d.version = version;
  d.min_reader = min_reader;
  d.features = features;
  const uint64_t end = file_size_untrusted;
  uint64_t off = header_size;
  bool have_process = false, have_clock = false;
  uint32_t seen = 0;
  while (off < end) {
    if (end - off < kSectionHeaderSize) {
      if (!damage({"truncated section header", off})) return Error{"truncated section header", off};
      break;
    }
    Cursor sh(bytes, off, end);
    uint32_t type = 0, flags = 0;
    uint64_t size = 0;
    sh.U32(&type);
    sh.U32(&flags);
    sh.U64(&size);
    const uint64_t body = off + kSectionHeaderSize;
    if (size > end - body) {
      Error e{"section of type " + std::to_string(type) + " runs past the end of the file (size " + std::to_string(size) + ")", off};
      if (!damage(e)) return e;
      size = end - body;  // read what is there; a cut THREAD keeps its whole records
    }
    const uint64_t body_end = body + size;
    Cursor c(bytes, body, body_end);
    switch (static_cast<SectionType>(type)) {
      case SectionType::kProcess: {
        ProcessInfo& p = d.process;
        uint32_t pad;
        c.U32(&p.pid), c.U32(&p.ppid), c.U32(&p.dump_seq), c.U32(&pad);
        c.U64(&p.dump_tsc), c.U64(&p.dump_realtime_ns), c.U64(&p.dump_monotonic_ns);
        c.String(&p.name, "process name") && c.String(&p.exe, "executable") && c.String(&p.cmdline, "command line") &&
            c.String(&p.reason, "reason");
        have_process = !c.failed();
        break;
      }
      case SectionType::kClock: {
        ClockInfo& k = d.clock;
        c.U64(&k.ticks), c.U64(&k.ns), c.U64(&k.ref_tsc), c.U64(&k.ref_monotonic_ns), c.U64(&k.ref_realtime_ns);
        c.U32(&k.tsc_low_bits), c.U32(&k.uncertainty_ppb);
        if (!c.failed() && k.tsc_low_bits != d.layout().tsc_low_bits)
          return Error{"unsupported timestamp truncation of " + std::to_string(k.tsc_low_bits) + " bits for a version " +
                           std::to_string(d.version) + " dump (expected " + std::to_string(d.layout().tsc_low_bits) + ")",
                       body + 40};
        have_clock = !c.failed();
        break;
      }
      case SectionType::kModules: {
        uint32_t n = 0;
        c.U32(&n);
        if (!c.failed() && n > c.remaining() / 28) return Error{"module count " + std::to_string(n) + " does not fit its section", body};
        for (uint32_t i = 0; i < n && !c.failed(); ++i) {
          ModuleInfo m;
          c.U64(&m.bias), c.U64(&m.lo), c.U64(&m.hi);
          c.String(&m.build_id, "build id") && c.String(&m.path, "module path");
          if (!c.failed()) d.modules.push_back(std::move(m));
        }
        break;
      }
      case SectionType::kThread: {
        ThreadInfo t;
        c.U32(&t.tid), c.U32(&t.flags);
        c.U64(&t.capacity), c.U64(&t.first_index), c.U64(&t.record_count), c.U64(&t.lost);
        c.U64(&t.start_tsc), c.U64(&t.exit_tsc), c.U64(&t.snapshot_tsc);
        c.String(&t.name, "thread name");
        if (c.failed()) break;
        const uint64_t aligned = (c.pos() + 7) & ~uint64_t{7};
        if (!c.Skip(aligned - c.pos())) break;
        if (t.record_count > c.remaining() / 8) {
          Error e{"thread " + std::to_string(t.tid) + " claims " + std::to_string(t.record_count) +
                      " records but its section holds " + std::to_string(c.remaining() / 8),
                  body + 16};
          if (!damage(e)) return e;
          t.record_count = c.remaining() / 8;
        }
        t.records_offset = c.pos();
        d.threads.push_back(std::move(t));
        break;
      }
      case SectionType::kNames: {
        uint32_t n = 0;
        c.U32(&n);
        if (!c.failed() && n > c.remaining() / 12) return Error{"name count " + std::to_string(n) + " does not fit its section", body};
        for (uint32_t i = 0; i < n && !c.failed(); ++i) {
          uint64_t key = 0;
          std::string name;
          c.U64(&key) && c.String(&name, "key name");
          if (!c.failed()) d.names[key] = std::move(name);
        }
        break;
      }
      case SectionType::kStats: {
        StatsInfo& s = d.stats;
        c.U32(&s.untraced_memory), c.U32(&s.untraced_pattern), c.U32(&s.reclaimed), c.U32(&s.invalid_keys);
        c.U64(&s.buffer_bytes);
        break;
      }
      case SectionType::kTrigger: {
        TriggerInfo t;
        c.U32(&t.tid), c.U32(&t.signal);
        c.U64(&t.tsc), c.U64(&t.measured_ns), c.U64(&t.threshold_ns), c.U64(&t.window_ns), c.U64(&t.suppressed);
        c.String(&t.detector, "detector") && c.String(&t.subject, "trigger subject");
        if (!c.failed()) d.trigger = std::move(t);
        break;
      }
      case SectionType::kMetadata: {
        uint32_t n = 0;
        c.U32(&n);
        if (!c.failed() && n > c.remaining() / 8) return Error{"metadata count " + std::to_string(n) + " does not fit its section", body};
        for (uint32_t i = 0; i < n && !c.failed(); ++i) {
          std::string key, value;
          c.String(&key, "metadata key") && c.String(&value, "metadata value");
          if (!c.failed()) d.metadata[key] = std::move(value);
        }
        break;
      }
      case SectionType::kSamples: {
        ThreadSamples ts;
        uint32_t fields = 0, count = 0, states = 0, zero = 0;
        c.U32(&ts.tid), c.U32(&ts.flags), c.U64(&ts.interval_ns);
        c.U32(&fields), c.U32(&count), c.U32(&states), c.U32(&zero), c.U64(&ts.lost);
        if (c.failed()) break;
        if (d.threads.empty() || d.threads.back().tid != ts.tid)
          return Error{"samples of thread " + std::to_string(ts.tid) + " do not follow that thread's section", body};
        if (fields == 0 || fields > kMaxSampleFields)
          return Error{"samples have " + std::to_string(fields) + " fields (1.." + std::to_string(kMaxSampleFields) + ")", body + 16};
        const uint64_t sample_bytes = uint64_t{fields} * 8;
        if (count > c.remaining() / sample_bytes || states > (c.remaining() - count * sample_bytes) / 16) {
          Error e{"thread " + std::to_string(ts.tid) + " claims " + std::to_string(count) + " samples and " +
                      std::to_string(states) + " state changes that do not fit their section",
                  body + 20};
          if (!damage(e)) return e;
          break;
        }
        ts.thread_index = d.threads.size() - 1;
        ts.samples.resize(count);
        for (uint32_t i = 0; i < count; ++i) {
          for (uint32_t f = 0; f < fields; ++f) {
            uint64_t v = 0;
            c.U64(&v);
            if (f < kSampleFields) ts.samples[i][f] = v;
          }
        }
        ts.states.resize(states);
        for (uint32_t i = 0; i < states; ++i) {
          uint64_t letter = 0;
          c.U64(&ts.states[i].tsc), c.U64(&letter);
          ts.states[i].state = letter >= 0x21 && letter < 0x7f ? static_cast<char>(letter) : '?';
        }
        if (!c.failed()) d.samples.push_back(std::move(ts));
        break;
      }
      case SectionType::kCpu: {
        ThreadCpu tc;
        uint32_t flags = 0, count = 0, zero = 0;
        c.U32(&tc.tid), c.U32(&flags), c.U64(&tc.interval_ns), c.U32(&count), c.U32(&zero);
        if (c.failed()) break;
        if (d.threads.empty() || d.threads.back().tid != tc.tid)
          return Error{"CPU readings of thread " + std::to_string(tc.tid) + " do not follow that thread's section", body};
        if (count > c.remaining() / 16) {
          Error e{"thread " + std::to_string(tc.tid) + " claims " + std::to_string(count) +
                      " CPU readings that do not fit their section",
                  body + 16};
          if (!damage(e)) return e;
          break;
        }
        tc.thread_index = d.threads.size() - 1;
        tc.readings.reserve(count);
        for (uint32_t i = 0; i < count && !c.failed(); ++i) {
          CpuReading r;
          c.U64(&r.tsc), c.U64(&r.cpu_ns);
          if (!tc.readings.empty() && (r.tsc < tc.readings.back().tsc || r.cpu_ns < tc.readings.back().cpu_ns)) continue;
          tc.readings.push_back(r);
        }
        if (!c.failed()) d.cpu.push_back(std::move(tc));
        break;
      }
      default:
        d.warnings.push_back({"skipped unknown section type " + std::to_string(type), off});
        break;
    }
    if (c.failed()) {
      Error e{"section type " + std::to_string(type) + ": " + c.error().message, c.error().offset};
      if (!damage(e)) return e;
      break;  // the rest of the file cannot be trusted to be framed
    }
    ++seen;
    off = (body_end + 7) & ~uint64_t{7};
  }
  if (!have_process && !damage({"dump has no PROCESS section", header_size}))
    return Error{"dump has no PROCESS section", header_size};
  if (!have_clock && !damage({"dump has no CLOCK section: times cannot be converted", header_size}))
    return Error{"dump has no CLOCK section", header_size};
  if (std::optional<Error> e = ParseBudgetMetadata(d.metadata, &d.budget); e && !damage(*e)) return *e;
  if (seen != section_count_untrusted)
    d.warnings.push_back({"header announces " + std::to_string(section_count_untrusted) + " sections, found " +
                              std::to_string(seen),
                          kHdrSectionCount});
  return d;
}

}  // namespace lookback::format
