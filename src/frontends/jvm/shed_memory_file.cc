#include "frontends/jvm/shed_memory_file.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>

namespace lookback::jvm {
namespace {

constexpr std::string_view kMagic = "lookback-shed-memory 1 ";

// A whole decimal (or, with base 16, hex) number and the space after it.
bool Number(std::string_view* s, uint64_t* out, int base = 10) {
  const char* end = s->data() + s->size();
  auto [p, ec] = std::from_chars(s->data(), end, *out, base);
  if (ec != std::errc() || p == s->data() || p == end || *p != ' ') return false;
  s->remove_prefix(static_cast<size_t>(p - s->data()) + 1);
  return true;
}

bool Storable(std::string_view s) { return !s.empty() && s.find_first_of(";\n") == std::string_view::npos; }

}  // namespace

std::optional<std::vector<RememberedMethod>> ParseShedMemory(std::string_view text, uint64_t program_hash,
                                                             std::string* error) {
  auto fail = [&](std::string why) -> std::optional<std::vector<RememberedMethod>> {
    if (error != nullptr) *error = std::move(why);
    return std::nullopt;
  };
  if (text.size() > kShedMemoryMaxBytes) return fail("larger than 16 MiB");
  if (text.substr(0, kMagic.size()) != kMagic) return fail("not a shed memory file of this version");
  text.remove_prefix(kMagic.size());
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return fail("its first line has no end");
  std::string_view head = text.substr(0, nl);
  text.remove_prefix(nl + 1);
  uint64_t hash = 0;
  std::string_view h = head;
  auto [p, ec] = std::from_chars(h.data(), h.data() + h.size(), hash, 16);
  if (ec != std::errc() || p != h.data() + h.size() || h.empty()) return fail("its first line has no program hash");
  if (hash != program_hash) return fail("written for another program");
  std::vector<RememberedMethod> out;
  size_t line_no = 1;
  while (!text.empty()) {
    ++line_no;
    nl = text.find('\n');
    if (nl == std::string_view::npos) return fail("line " + std::to_string(line_no) + " has no end (a torn write?)");
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    RememberedMethod m;
    uint64_t runs = 0;
    if (!Number(&line, &runs) || !Number(&line, &m.calls_per_s) || !Number(&line, &m.mean_ns) || runs == 0 ||
        runs > kRememberRuns) {
      return fail("line " + std::to_string(line_no) + " does not start with three numbers");
    }
    m.runs_left = static_cast<uint32_t>(runs);
    const size_t a = line.find(';');
    const size_t b = a == std::string_view::npos ? a : line.find(';', a + 1);
    if (b == std::string_view::npos || a == 0 || b == a + 1 || b + 1 >= line.size() || line[b + 1] != '(') {
      return fail("line " + std::to_string(line_no) + " has no class;name;(descriptor)");
    }
    m.cls = line.substr(0, a);
    m.name = line.substr(a + 1, b - a - 1);
    m.descriptor = line.substr(b + 1);
    out.push_back(std::move(m));
  }
  return out;
}

std::string FormatShedMemory(uint64_t program_hash, const std::vector<RememberedMethod>& methods) {
  std::string s(kMagic);
  char buf[96];
  snprintf(buf, sizeof buf, "%016" PRIx64 "\n", program_hash);
  s += buf;
  for (const RememberedMethod& m : methods) {
    // The descriptor may hold ';' (it comes last), never a newline or nothing.
    if (!Storable(m.cls) || !Storable(m.name) || m.descriptor.empty() || m.descriptor[0] != '(' ||
        m.descriptor.find('\n') != std::string::npos || m.runs_left == 0 || m.runs_left > kRememberRuns) {
      continue;
    }
    snprintf(buf, sizeof buf, "%u %" PRIu64 " %" PRIu64 " ", m.runs_left, m.calls_per_s, m.mean_ns);
    s += buf;
    s += m.cls;
    s += ';';
    s += m.name;
    s += ';';
    s += m.descriptor;
    s += '\n';
  }
  return s;
}

}  // namespace lookback::jvm
