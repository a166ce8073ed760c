// A reader of Android method traces (version 3, the .trace files of
// Debug.startMethodTracing), written for the tests from the format's
// description, independent of the exporter:
//   text key: "*version" section (version number, then key=value lines),
//     "*threads" (id TAB name), "*methods" (0xID TAB class TAB name TAB
//     signature TAB source file [TAB line]), "*end";
//   then, little-endian: u32 magic 0x574f4c53 ("SLOW"), u16 version, u16
//     offset of the records from the magic, u64 start time (µs), u16 record
//     size (version 3), padding; records of u16 thread id, u32 method id |
//     action (2 low bits: 0 enter, 1 exit, 2 unroll), u32 thread CPU µs,
//     u32 wall µs (the last only with clock=dual: 14-byte records).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace lookback::testing {

struct ArtMethod {
  std::string cls, name, signature, file;
  long line = -1;
};

struct ArtRecord {
  uint16_t thread;
  uint32_t method;  // action bits cleared
  uint32_t action;
  uint32_t cpu_us, wall_us;
};

struct ArtTrace {
  std::string error;  // "" when the whole file parsed
  int version = 0;
  std::map<std::string, std::string> options;  // key=value lines of *version
  std::map<uint32_t, std::string> threads;
  std::map<uint32_t, ArtMethod> methods;
  size_t key_size = 0;  // bytes of text before the binary header
  uint16_t data_version = 0, data_offset = 0, record_size = 0;
  uint64_t start_us = 0;
  std::vector<ArtRecord> records;
};

inline std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == '\t') out.emplace_back();
    else out.back().push_back(c);
  }
  return out;
}

inline uint64_t LittleEndian(std::string_view b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b[at + i])} << (8 * i);
  return v;
}

inline ArtTrace ParseArtTrace(std::string_view bytes) {
  ArtTrace t;
  auto fail = [&](const std::string& what) {
    if (t.error.empty()) t.error = what;
    return t;
  };
  size_t pos = 0;
  std::string section;
  bool version_line = false;
  for (;;) {
    const size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) return fail("the text key has no *end line");
    const std::string line(bytes.substr(pos, nl - pos));
    pos = nl + 1;
    if (line == "*end") break;
    if (!line.empty() && line[0] == '*') {
      section = line.substr(1);
      version_line = section == "version";
      continue;
    }
    if (section == "version") {
      if (version_line) {
        t.version = std::stoi(line);
        version_line = false;
      } else {
        const size_t eq = line.find('=');
        if (eq == std::string::npos) return fail("bad option line '" + line + "'");
        t.options[line.substr(0, eq)] = line.substr(eq + 1);
      }
    } else if (section == "threads") {
      const auto f = SplitTabs(line);
      if (f.size() != 2) return fail("bad thread line '" + line + "'");
      if (!t.threads.emplace(std::stoul(f[0]), f[1]).second) return fail("thread id listed twice: " + f[0]);
    } else if (section == "methods") {
      const auto f = SplitTabs(line);
      if (f.size() != 5 && f.size() != 6) return fail("bad method line '" + line + "'");
      if (f[0].rfind("0x", 0) != 0) return fail("method id not in hex: '" + line + "'");
      ArtMethod m{f[1], f[2], f[3], f[4], f.size() == 6 ? std::stol(f[5]) : -1};
      for (const auto& s : f) {
        if (s.empty()) return fail("empty field in '" + line + "'");
      }
      const auto id = static_cast<uint32_t>(std::stoul(f[0], nullptr, 16));
      if (!t.methods.emplace(id, m).second) return fail("method id listed twice: " + f[0]);
    } else {
      return fail("line outside any known section: '" + line + "'");
    }
  }
  t.key_size = pos;
  const std::string_view data = bytes.substr(pos);
  if (data.size() < 18) return fail("binary header truncated");
  if (LittleEndian(data, 0, 4) != 0x574f4c53) return fail("no SLOW magic after the key");
  t.data_version = static_cast<uint16_t>(LittleEndian(data, 4, 2));
  t.data_offset = static_cast<uint16_t>(LittleEndian(data, 6, 2));
  t.start_us = LittleEndian(data, 8, 8);
  t.record_size = static_cast<uint16_t>(LittleEndian(data, 16, 2));
  if (t.data_version != 3 || t.record_size != 14) return fail("expected version 3 with 14-byte records");
  if (t.data_offset < 18 || t.data_offset > data.size()) return fail("bad data offset");
  const std::string_view recs = data.substr(t.data_offset);
  if (recs.size() % t.record_size != 0) return fail("records do not fill the file: trailing bytes");
  for (size_t at = 0; at < recs.size(); at += t.record_size) {
    const auto tmid = static_cast<uint32_t>(LittleEndian(recs, at + 2, 4));
    t.records.push_back({static_cast<uint16_t>(LittleEndian(recs, at, 2)), tmid & ~3u, tmid & 3u,
                         static_cast<uint32_t>(LittleEndian(recs, at + 6, 4)),
                         static_cast<uint32_t>(LittleEndian(recs, at + 10, 4))});
  }
  return t;
}

// One thread's calls rebuilt from its records, in order of their end (the
// order of model::CallMatcher's frames).
struct ArtFrame {
  uint32_t method;
  uint32_t start_us, end_us;
  uint32_t depth;        // 0 = outermost
  uint32_t exit_action;  // 1 exit, 2 unroll
};

// Returns "" or what does not nest.
inline std::string RebuildCalls(const ArtTrace& t, uint32_t thread, std::vector<ArtFrame>* out) {
  struct Open {
    uint32_t method, start_us;
  };
  std::vector<Open> stack;
  uint32_t last = 0;
  for (const auto& r : t.records) {
    if (r.thread != thread) continue;
    if (r.wall_us < last) return "wall time steps back";
    last = r.wall_us;
    if (r.action == 0) {
      stack.push_back({r.method, r.wall_us});
    } else if (r.action == 1 || r.action == 2) {
      if (stack.empty() || stack.back().method != r.method) return "exit does not match the innermost call";
      out->push_back({r.method, stack.back().start_us, r.wall_us, static_cast<uint32_t>(stack.size() - 1), r.action});
      stack.pop_back();
    } else {
      return "unknown action 3";
    }
  }
  if (!stack.empty()) return "calls left open at the end";
  return "";
}

}  // namespace lookback::testing
