#include "import/art_trace.h"

#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "frontends/jvm/method_names.h"

namespace lookback::import {
namespace {

constexpr uint32_t kMagic = 0x574f4c53;  // "SLOW", little-endian
constexpr uint16_t kStreamingBits = 0xF0;
constexpr uint8_t kOpNewMethod = 1, kOpNewThread = 2, kOpSummary = 3;
constexpr uint32_t kActionBits = 2;

uint64_t Le(std::span<const uint8_t> b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{b[at + i]} << (8 * i);
  return v;
}

template <class T>
bool ParseNumber(std::string_view s, T* out, int base = 10) {
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

// The state of the text key (or the streaming summary) being read.
class KeyReader {
 public:
  explicit KeyReader(ImportedTrace* out) : out_(out) {}

  // One line (no '\n'), found at byte `offset`.
  std::optional<Error> Line(std::string_view line, uint64_t offset) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line[0] == '*') {
      if (line == "*version") section_ = kVersion, version_line_next_ = true;
      else if (line == "*threads") section_ = kThreads;
      else if (line == "*methods") section_ = kMethods;
      else if (line == "*end") ended_ = true;
      else warnings_.push_back({"unknown section '" + std::string(line.substr(0, 40)) + "' skipped", offset});
      if (line != "*version" && line != "*threads" && line != "*methods" && line != "*end") section_ = kUnknown;
      return std::nullopt;
    }
    switch (section_) {
      case kNone:
        return Error{"not an ART method trace: the text key must start with *version", offset};
      case kVersion:
        if (version_line_next_) {
          version_line_next_ = false;
          if (!ParseNumber(line, &version) || version < 1 || version > 3)
            return Error{"unsupported ART trace version '" + std::string(line.substr(0, 20)) + "' (1 to 3 are known)", offset};
          return std::nullopt;
        }
        if (size_t eq = line.find('='); eq != std::string_view::npos) {
          keys[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
        } else if (!line.empty()) {
          warnings_.push_back({"key line without '=' skipped", offset});
        }
        return std::nullopt;
      case kThreads: {
        size_t sep = line.find('\t');
        if (sep == std::string_view::npos) sep = line.find(' ');
        uint32_t tid = 0;
        if (sep == std::string_view::npos || !ParseNumber(line.substr(0, sep), &tid)) {
          if (!line.empty()) warnings_.push_back({"malformed thread line skipped", offset});
          return std::nullopt;
        }
        threads.emplace(tid, std::string(line.substr(sep + 1)));
        return std::nullopt;
      }
      case kMethods:
        MethodLine(line, offset);
        return std::nullopt;
      case kUnknown:
        return std::nullopt;
    }
    return std::nullopt;
  }

  // "0xID<TAB>class<TAB>name<TAB>signature[<TAB>source[<TAB>line]]".
  void MethodLine(std::string_view line, uint64_t offset) {
    std::string_view f[4];
    std::string_view rest = line;
    for (int i = 0; i < 4; ++i) {
      const size_t tab = rest.find('\t');
      f[i] = rest.substr(0, tab);
      if (tab == std::string_view::npos) {
        if (i < 3) {
          if (!line.empty()) warnings_.push_back({"malformed method line skipped (fewer than 4 fields)", offset});
          return;
        }
        rest = {};
      } else {
        rest.remove_prefix(tab + 1);
      }
    }
    uint64_t id = 0;
    if (!ParseNumber(f[0], &id, 16) || id > 0xffffffffu) {
      warnings_.push_back({"method line with a bad id skipped", offset});
      return;
    }
    // The class column is PrettyDescriptor's dotted name; old files use slashes.
    std::string internal(f[1]);
    for (char& c : internal) c = c == '.' ? '/' : c;
    const uint32_t index = static_cast<uint32_t>(id >> kActionBits);
    std::string pretty = jvm::PrettyMethod(internal, f[2], f[3]);
    auto [it, added] = out_->methods.emplace(index, pretty);
    if (!added && it->second != pretty)
      warnings_.push_back({"a second, different method line for id " + std::string(f[0]) + " ignored", offset});
  }

  bool ended() const { return ended_; }
  std::vector<Error>& warnings() { return warnings_; }

  int version = 0;
  std::map<std::string, std::string> keys;
  std::map<uint32_t, std::string> threads;

 private:
  enum Section { kNone, kVersion, kThreads, kMethods, kUnknown };
  ImportedTrace* out_;
  Section section_ = kNone;
  bool version_line_next_ = false, ended_ = false;
  std::vector<Error> warnings_;
};

// Feeds `text` (found at `base`) to the reader line by line; stops after
// *end. Returns the offset just past the last line read.
Result<uint64_t> ReadKey(std::span<const uint8_t> bytes, uint64_t from, uint64_t to, KeyReader* key) {
  uint64_t at = from;
  while (at < to && !key->ended()) {
    uint64_t nl = at;
    while (nl < to && bytes[nl] != '\n') ++nl;
    if (nl == to) return Error{"the text key ends without *end (file cut short?)", to};
    std::string_view line(reinterpret_cast<const char*>(bytes.data() + at), nl - at);
    if (auto err = key->Line(line, at)) return *err;
    at = nl + 1;
  }
  if (!key->ended()) return Error{"the text key ends without *end (file cut short?)", to};
  return at;
}

struct Layout {
  int version = 0;
  bool streaming = false;
  uint64_t first_record = 0;  // file offset
  uint64_t record_size = 0;
  int time_fields = 1;
  uint64_t start_us = 0;
};

Result<Layout> ReadBinaryHeader(std::span<const uint8_t> bytes, uint64_t at) {
  if (bytes.size() < at + 16) return Error{"the binary header is cut short (16 bytes needed)", at};
  if (Le(bytes, at, 4) != kMagic) return Error{"no 'SLOW' magic where the records should start", at};
  Layout l;
  const uint64_t version = Le(bytes, at + 4, 2);
  l.streaming = (version & kStreamingBits) == kStreamingBits;
  l.version = static_cast<int>(version & ~uint64_t{kStreamingBits});
  if (l.version < 1 || l.version > 3 || (version & 0xff00) != 0)
    return Error{"unsupported ART trace version " + std::to_string(version) + " in the binary header", at + 4};
  const uint64_t offset = Le(bytes, at + 6, 2);
  l.start_us = Le(bytes, at + 8, 8);
  if (offset < 16) return Error{"records would start inside the binary header (offset " + std::to_string(offset) + ")", at + 6};
  l.first_record = at + offset;
  if (l.version == 1) {
    l.record_size = 9;
  } else if (l.version == 2) {
    l.record_size = 10;
  } else {
    if (offset < 18 || bytes.size() < at + 18) return Error{"a version 3 header needs its record size", at + 16};
    l.record_size = Le(bytes, at + 16, 2);
    if (l.record_size != 10 && l.record_size != 14)
      return Error{"unsupported record size " + std::to_string(l.record_size) + " (10 or 14 are known)", at + 16};
  }
  l.time_fields = l.record_size == 14 ? 2 : 1;
  if (l.first_record > bytes.size() && !l.streaming)
    return Error{"records would start past the end of the file", at + 6};
  return l;
}

class Builder {
 public:
  Builder(ImportedTrace* out, const Layout& l) : out_(out), l_(l) {}

  // The first name given wins: a streaming trace's own thread record over its summary's list.
  void Thread(uint32_t tid, const std::string& name) { names_.emplace(tid, name); }

  void Record(std::span<const uint8_t> b, uint64_t at) {
    uint32_t tid;
    uint64_t p;
    if (l_.version == 1) {
      tid = b[at];
      p = at + 1;
    } else {
      tid = static_cast<uint32_t>(Le(b, at, 2));
      p = at + 2;
    }
    const uint32_t word = static_cast<uint32_t>(Le(b, p, 4));
    ImportedEvent e;
    const uint32_t action = word & ((1u << kActionBits) - 1);
    if (action > 2) {
      ++bad_actions_;
      return;
    }
    e.action = static_cast<Action>(action);
    e.method = word >> kActionBits;
    ImportedThread& th = ThreadOf(tid);
    if (l_.time_fields == 2) {
      e.cpu_ns = Le(b, p + 4, 4) * 1000;
      e.time_ns = Le(b, p + 8, 4) * 1000;
      th.cpu.emplace_back(e.time_ns, e.cpu_ns);
    } else {
      e.time_ns = Le(b, p + 4, 4) * 1000;
    }
    th.events.push_back(e);
    ++records_;
  }

  // Threads in the order their first record came; names from the key.
  void Finish() {
    for (auto& th : out_->threads) {
      if (auto it = names_.find(th.tid); it != names_.end()) th.name = it->second;
      if (th.name.empty()) th.name = "thread " + std::to_string(th.tid);
    }
    if (bad_actions_ > 0)
      out_->warnings.push_back({std::to_string(bad_actions_) + " records with action 3 (unknown) skipped", 0});
    out_->metadata["import.records"] = std::to_string(records_);
  }

 private:
  ImportedThread& ThreadOf(uint32_t tid) {
    auto [it, added] = index_.emplace(tid, out_->threads.size());
    if (added) out_->threads.push_back({tid, "", {}, {}});
    return out_->threads[it->second];
  }

  ImportedTrace* out_;
  Layout l_;
  std::map<uint32_t, size_t> index_;
  std::map<uint32_t, std::string> names_;
  uint64_t records_ = 0, bad_actions_ = 0;
};

// What the key says about the clocks; the record layout decides when the key
// is silent (v1, or a cut streaming trace without its summary).
std::string ClockOf(const KeyReader& key, const Layout& l) {
  if (l.time_fields == 2) return "dual";
  auto it = key.keys.find("clock");
  if (it != key.keys.end() && it->second == "thread-cpu") return "thread-cpu";
  return "wall";
}

void Finish(ImportedTrace* out, KeyReader& key, const Layout& l, Builder& b) {
  for (auto& w : key.warnings()) out->warnings.push_back(w);
  for (const auto& [tid, name] : key.threads) b.Thread(tid, name);
  b.Finish();
  out->format = "art-trace";
  out->clock = ClockOf(key, l);
  if (out->clock == "thread-cpu") {
    for (auto& th : out->threads) th.cpu.clear();  // the CPU clock is the records' time already
  }
  out->realtime_at_zero_ns = out->clock == "thread-cpu" ? 0 : l.start_us * 1000;
  out->metadata["import.version"] = std::to_string(l.version);
  out->metadata["import.streaming"] = l.streaming ? "1" : "0";
  out->metadata["import.start_realtime_us"] = std::to_string(l.start_us);
  for (const auto& [k, v] : key.keys) out->metadata["import.art." + k] = v;
  if (auto it = key.keys.find("pid"); it != key.keys.end()) ParseNumber(std::string_view(it->second), &out->pid);
  if (auto it = key.keys.find("data-file-overflow"); it != key.keys.end() && it->second == "true")
    out->warnings.push_back({"ART's trace buffer filled (data-file-overflow=true): calls after the last record were not recorded", 0});
  if (key.version != 0 && key.version != l.version)
    out->warnings.push_back({"the text key says version " + std::to_string(key.version) + ", the binary header " +
                                 std::to_string(l.version) + " (the header's layout is used)", 0});
}

Result<ImportedTrace> ParseNonStreaming(std::span<const uint8_t> bytes) {
  ImportedTrace out;
  KeyReader key(&out);
  auto end = ReadKey(bytes, 0, bytes.size(), &key);
  if (!end.ok()) return end.error();
  auto layout = ReadBinaryHeader(bytes, end.value());
  if (!layout.ok()) return layout.error();
  const Layout& l = layout.value();
  if (l.streaming) return Error{"a streaming header after a text key", end.value() + 4};
  Builder b(&out, l);
  uint64_t at = l.first_record;
  for (; at + l.record_size <= bytes.size(); at += l.record_size) b.Record(bytes, at);
  if (at < bytes.size())
    out.warnings.push_back({"the trace is cut short: a last record of " + std::to_string(bytes.size() - at) + " of " +
                                std::to_string(l.record_size) + " bytes ignored",
                            at});
  Finish(&out, key, l, b);
  return out;
}

Result<ImportedTrace> ParseStreaming(std::span<const uint8_t> bytes) {
  ImportedTrace out;
  auto layout = ReadBinaryHeader(bytes, 0);
  if (!layout.ok()) return layout.error();
  const Layout& l = layout.value();
  if (!l.streaming) return Error{"a binary header without its text key (the key may be in a separate file)", 4};
  KeyReader key(&out);
  KeyReader methods(&out);  // op 1 lines: the *methods section's lines, one at a time
  methods.Line("*version", 0);
  methods.Line(std::to_string(l.version), 0);
  methods.Line("*methods", 0);
  Builder b(&out, l);
  const uint64_t size = bytes.size();
  uint64_t at = l.first_record;
  bool summary = false;
  auto cut = [&](const char* what) {
    out.warnings.push_back({std::string("the trace is cut short inside ") + what + ": the rest is not readable", at});
  };
  while (at < size) {
    if (size - at < 2) {
      cut("a record");
      break;
    }
    const uint64_t tid = Le(bytes, at, 2);
    if (tid != 0) {
      if (size - at < l.record_size) {
        cut("a record");
        break;
      }
      b.Record(bytes, at);
      at += l.record_size;
      continue;
    }
    if (size - at < 3) {
      cut("a special record");
      break;
    }
    const uint8_t op = bytes[at + 2];
    if (op == kOpNewMethod) {
      if (size - at < 5 || size - at - 5 < Le(bytes, at + 3, 2)) {
        cut("a method record");
        break;
      }
      const uint64_t len = Le(bytes, at + 3, 2);
      std::string_view text(reinterpret_cast<const char*>(bytes.data() + at + 5), len);
      while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
      methods.MethodLine(text, at + 5);
      at += 5 + len;
    } else if (op == kOpNewThread) {
      if (size - at < 7 || size - at - 7 < Le(bytes, at + 5, 2)) {
        cut("a thread record");
        break;
      }
      const uint64_t len = Le(bytes, at + 5, 2);
      b.Thread(static_cast<uint32_t>(Le(bytes, at + 3, 2)), std::string(reinterpret_cast<const char*>(bytes.data() + at + 7), len));
      at += 7 + len;
    } else if (op == kOpSummary) {
      if (size - at < 7 || size - at - 7 < Le(bytes, at + 3, 4)) {
        cut("the summary");
        break;
      }
      const uint64_t len = Le(bytes, at + 3, 4);
      auto end = ReadKey(bytes, at + 7, at + 7 + len, &key);
      if (!end.ok()) return end.error();
      at += 7 + len;
      summary = true;
      if (at < size) out.warnings.push_back({std::to_string(size - at) + " bytes after the summary ignored", at});
      break;
    } else {
      return Error{"unknown streaming record kind " + std::to_string(op), at + 2};
    }
  }
  if (!summary)
    out.warnings.push_back({"the trace has no summary (tracing never stopped: the app died or the file was copied early); "
                            "the clock is taken from the record size",
                            size});
  for (auto& w : methods.warnings()) out.warnings.push_back(w);
  Finish(&out, key, l, b);
  return out;
}

}  // namespace

bool LooksLikeArtTrace(std::span<const uint8_t> bytes) {
  static constexpr std::string_view kKey = "*version";
  if (bytes.size() >= kKey.size() && std::string_view(reinterpret_cast<const char*>(bytes.data()), kKey.size()) == kKey) return true;
  return bytes.size() >= 4 && Le(bytes, 0, 4) == kMagic;
}

Result<ImportedTrace> ParseArtTrace(std::span<const uint8_t> bytes) {
  if (bytes.size() >= 4 && Le(bytes, 0, 4) == kMagic) return ParseStreaming(bytes);
  if (!LooksLikeArtTrace(bytes)) return Error{"not an ART method trace (neither '*version' nor the 'SLOW' magic)", 0};
  return ParseNonStreaming(bytes);
}

}  // namespace lookback::import
