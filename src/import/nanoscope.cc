#include "import/nanoscope.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

namespace lookback::import {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// "<tid>-<name>.txt" -> tid and name; otherwise no tid and the stem.
void ThreadIdentity(const std::string& file, uint32_t fallback_tid, ImportedThread* th) {
  std::string stem = file;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".txt") == 0) stem.resize(stem.size() - 4);
  const size_t dash = stem.find('-');
  uint32_t tid = 0;
  if (dash != std::string::npos && dash > 0) {
    auto [p, ec] = std::from_chars(stem.data(), stem.data() + dash, tid);
    if (ec == std::errc() && p == stem.data() + dash && tid != 0) {
      th->tid = tid;
      th->name = stem.substr(dash + 1);
      return;
    }
  }
  th->tid = fallback_tid;
  th->name = stem;
}

std::optional<Error> ParseThread(const NanoscopeFile& f, ImportedTrace* out, std::map<std::string, uint32_t>* ids,
                                 ImportedThread* th, uint64_t* stray_pops) {
  std::vector<uint32_t> stack;
  std::string_view text = f.text;
  uint64_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) {
      const size_t colon = line.find(':');
      uint64_t ns = 0;
      if (colon == std::string_view::npos || !ParseU64(line.substr(0, colon), &ns))
        return Error{f.name + ": not a Nanoscope line (\"<ns>:<method>\" or \"<ns>:POP\")", at};
      const std::string_view what = line.substr(colon + 1);
      ImportedEvent e;
      e.time_ns = ns;
      if (what == "POP") {
        if (stack.empty()) {
          ++*stray_pops;
        } else {
          e.action = Action::kExit;
          e.method = stack.back();
          stack.pop_back();
          th->events.push_back(e);
        }
      } else {
        auto [it, added] = ids->emplace(std::string(what), static_cast<uint32_t>(ids->size() + 1));
        if (added) out->methods[it->second] = it->first;
        e.action = Action::kEnter;
        e.method = it->second;
        stack.push_back(e.method);
        th->events.push_back(e);
      }
    }
    at = nl + 1;
  }
  // Side files: a malformed line there is a warning, the calls stand alone.
  std::istringstream timer(f.timer);
  std::string line;
  uint64_t offset = 0, bad = 0;
  while (std::getline(timer, line)) {
    const size_t c1 = line.find(',');
    const size_t c2 = c1 == std::string::npos ? std::string::npos : line.find(',', c1 + 1);
    uint64_t wall = 0, cpu = 0;
    if (c1 != std::string::npos &&
        ParseU64(std::string_view(line).substr(0, c1), &wall) &&
        ParseU64(std::string_view(line).substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1), &cpu)) {
      th->cpu.emplace_back(wall, cpu);
    } else if (!line.empty() && bad++ == 0) {
      out->warnings.push_back({f.name + ".timer: malformed sample line(s) skipped", offset});
    }
    offset += line.size() + 1;
  }
  return std::nullopt;
}

}  // namespace

bool LooksLikeNanoscope(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return i > 0 && i < text.size() && text[i] == ':';
}

Result<ImportedTrace> ParseNanoscope(const std::vector<NanoscopeFile>& files) {
  ImportedTrace out;
  out.format = "nanoscope";
  std::map<std::string, uint32_t> ids;
  uint64_t stray_pops = 0, states = 0;
  bool cpu = false;
  uint32_t next_tid = 1;
  for (const NanoscopeFile& f : files) {
    ImportedThread th;
    ThreadIdentity(f.name, next_tid++, &th);
    if (auto err = ParseThread(f, &out, &ids, &th, &stray_pops)) return *err;
    for (char c : f.state) states += c == '\n';
    cpu = cpu || !th.cpu.empty();
    if (!th.events.empty()) out.threads.push_back(std::move(th));
  }
  if (stray_pops > 0) out.warnings.push_back({std::to_string(stray_pops) + " POP lines with no open method skipped", 0});
  out.clock = cpu ? "monotonic+thread-cpu" : "monotonic";
  out.metadata["import.nanoscope.threads"] = std::to_string(out.threads.size());
  if (states > 0) out.metadata["import.nanoscope.state_changes"] = std::to_string(states);
  return out;
}

Result<std::vector<NanoscopeFile>> ReadNanoscope(const std::string& path) {
  namespace fs = std::filesystem;
  auto slurp = [](const fs::path& p, std::string* out) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    *out = s.str();
    return true;
  };
  std::vector<fs::path> threads;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.empty() || name[0] == '.') continue;
      if (name.ends_with(".timer") || name.ends_with(".state")) continue;
      threads.push_back(e.path());
    }
    if (ec) return Error{"cannot list the directory: " + ec.message(), 0};
    std::sort(threads.begin(), threads.end());
  } else {
    threads.emplace_back(path);
  }
  if (threads.empty()) return Error{"no Nanoscope thread files in the directory", 0};
  std::vector<NanoscopeFile> out;
  for (const fs::path& p : threads) {
    NanoscopeFile f;
    f.name = p.filename().string();
    if (!slurp(p, &f.text)) return Error{f.name + ": cannot read it", 0};
    slurp(fs::path(p.string() + ".timer"), &f.timer);
    slurp(fs::path(p.string() + ".state"), &f.state);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace lookback::import
