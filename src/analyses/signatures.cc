#include "analyses/signatures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "symbolize/symbolizer.h"

namespace lookback::analyses {
namespace {

using symbolize::Trim;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// '#' at the start of a line or after a blank starts a comment.
std::string_view StripComment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || IsBlank(line[i - 1]))) return line.substr(0, i);
  }
  return line;
}

// Ok when `pattern` is a well-formed glob.
Status CheckGlob(std::string_view pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '[') continue;
    size_t j = i + 1;
    if (j < pattern.size() && pattern[j] == '!') ++j;
    if (j < pattern.size() && pattern[j] == ']') ++j;  // a leading ']' is literal
    while (j < pattern.size() && pattern[j] != ']') ++j;
    if (j >= pattern.size()) return Status::Error(fmt::format("unclosed '[' in pattern '{}'", pattern));
    i = j;
  }
  return Status::Ok();
}

const char* const kKeys = "name, chain, min, min-top, description";

}  // namespace

Status ParseDuration(std::string_view text, int64_t* ns) {
  const std::string s(Trim(text));
  if (s.empty()) return Status::Error("missing duration");
  errno = 0;
  char* rest = nullptr;
  const double v = strtod(s.c_str(), &rest);
  if (rest == s.c_str() || errno != 0 || !std::isfinite(v) || v < 0)
    return Status::Error(fmt::format("bad duration '{}' (e.g. 10ms, 1.5s, 250us)", s));
  const std::string unit(Trim(rest));
  double mult = 0;
  if (unit == "ns") mult = 1;
  else if (unit == "us" || unit == "\xc2\xb5s") mult = 1e3;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "s") mult = 1e9;
  else return Status::Error(fmt::format("bad duration '{}': the unit must be ns, us, ms or s", s));
  if (v * mult > 9e18) return Status::Error(fmt::format("duration '{}' is too long", s));
  *ns = static_cast<int64_t>(std::llround(v * mult));
  return Status::Ok();
}

std::string ChainText(const Signature& s) {
  std::string out;
  for (size_t i = 0; i < s.chain.size(); ++i) {
    if (i > 0) out += s.chain[i].direct ? " > " : " >> ";
    out += s.chain[i].pattern;
  }
  return out;
}

Result<std::vector<Signature>> ParseSignatures(std::string_view text, const std::string& origin) {
  std::vector<Signature> sigs;
  std::set<std::string> names;
  std::set<std::string> keys_seen;  // in the current block
  int line_no = 0;
  auto fail = [&](int line, const std::string& message) { return Error{fmt::format("{}:{}: {}", origin, line, message)}; };
  auto finish_block = [&]() -> Status {
    if (sigs.empty()) return Status::Ok();
    const Signature& s = sigs.back();
    if (s.chain.empty()) return Status::Error(fmt::format("signature '{}' has no 'chain:'", s.name));
    return Status::Ok();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view raw = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    const std::string_view line = Trim(StripComment(raw));
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      return fail(line_no, fmt::format("expected 'key: value' (keys: {}), got '{}'", kKeys, line));
    std::string key(Trim(line.substr(0, colon)));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "min-last") key = "min";
    if (key == "name") {
      if (Status st = finish_block(); !st.ok()) return fail(sigs.back().line, st.message());
      if (value.empty()) return fail(line_no, "empty signature name");
      if (!names.insert(std::string(value)).second)
        return fail(line_no, fmt::format("signature '{}' is defined twice", value));
      Signature s;
      s.name = value;
      s.line = line_no;
      sigs.push_back(std::move(s));
      keys_seen.clear();
      keys_seen.insert(key);
      continue;
    }
    if (key != "chain" && key != "min" && key != "min-top" && key != "description")
      return fail(line_no, fmt::format("unknown key '{}' (keys: {})", key, kKeys));
    if (sigs.empty())
      return fail(line_no, fmt::format("'{}:' before any 'name:' (each signature starts with 'name: NAME')", key));
    if (!keys_seen.insert(key).second)
      return fail(line_no, fmt::format("'{}:' given twice for signature '{}'", key, sigs.back().name));
    Signature& s = sigs.back();
    if (key == "description") {
      s.description = value;
    } else if (key == "min" || key == "min-top") {
      int64_t ns = 0;
      if (Status st = ParseDuration(value, &ns); !st.ok()) return fail(line_no, st.message());
      (key == "min" ? s.min_last_ns : s.min_top_ns) = ns;
    } else {  // chain: operators are '>' and '>>' with blanks on both sides
      if (value.empty()) return fail(line_no, "empty chain");
      bool direct = false;
      size_t at = 0;
      while (true) {
        size_t op = std::string_view::npos, op_len = 0;
        for (size_t i = at; i < value.size(); ++i) {
          if (value[i] != '>' || (i > 0 && !IsBlank(value[i - 1]))) continue;
          const size_t len = (i + 1 < value.size() && value[i + 1] == '>') ? 2 : 1;
          if (i + len < value.size() && !IsBlank(value[i + len])) continue;
          op = i, op_len = len;
          break;
        }
        const std::string_view pattern =
            Trim(value.substr(at, op == std::string_view::npos ? std::string_view::npos : op - at));
        if (pattern.empty()) {
          if (s.chain.empty()) return fail(line_no, "the chain starts with an operator: expected a pattern first");
          return fail(line_no, fmt::format("missing pattern after '{}'", direct ? ">" : ">>"));
        }
        if (Status st = CheckGlob(pattern); !st.ok()) return fail(line_no, st.message());
        if (pattern.front() == '>' || (pattern.find(">>") != std::string_view::npos &&
                                       pattern.find("operator>>") == std::string_view::npos))
          return fail(line_no, fmt::format("'{}': write '>' and '>>' with blanks on both sides", pattern));
        s.chain.push_back({std::string(pattern), direct});
        if (op == std::string_view::npos) break;
        direct = op_len == 1;
        at = op + op_len;
      }
    }
  }
  if (Status st = finish_block(); !st.ok()) return fail(sigs.back().line, st.message());
  if (sigs.empty()) return fail(line_no == 0 ? 1 : line_no, "no signature in the file (expected 'name: NAME' then 'chain: A >> B')");
  return sigs;
}

Result<std::vector<Signature>> LoadSignatures(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Error{fmt::format("{}: cannot read: {}", path, strerror(errno))};
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseSignatures(ss.str(), path);
}

// ---- matching -----------------------------------------------------------------

namespace {
constexpr size_t kStepsCacheSize = 1024;  // a power of two
size_t CacheIndex(uint64_t key) { return (key * 0x9e3779b97f4a7c15ull) >> 54; }
static_assert(kStepsCacheSize == size_t{1} << (64 - 54));
}  // namespace

SignatureMatcher::SignatureMatcher(std::vector<Signature> signatures)
    : signatures_(std::move(signatures)), stats_(signatures_.size()), steps_cache_(kStepsCacheSize) {
  for (size_t s = 0; s < signatures_.size(); ++s) {
    const auto& chain = signatures_[s].chain;
    for (size_t i = 0; i < chain.size(); ++i) {
      steps_.push_back(chain[i]);
      step_sig_.push_back(static_cast<uint32_t>(s));
      step_first_.push_back(i == 0);
      step_last_.push_back(i + 1 == chain.size());
    }
  }
}

SignatureMatcher::~SignatureMatcher() = default;

Status SignatureMatcher::Begin(const model::ExportContext& ctx) {
  symbols_ = ctx.symbols;
  origin_ns_ = ctx.origin_ns;
  dump_ns_ = ctx.dump_ns;
  return Status::Ok();
}

void SignatureMatcher::BeginThread(const format::ThreadInfo& t) {
  stack_.clear();
  for (auto& p : pending_) p.clear();  // the walk closes every frame; this is only in case
  tid_ = t.tid;
  thread_ = t.name;
}

const std::vector<uint32_t>& SignatureMatcher::StepsOf(uint64_t key) {
  CacheSlot& slot = steps_cache_[CacheIndex(key)];
  if (slot.key == key) return *slot.steps;
  auto [it, added] = steps_of_key_.try_emplace(key);
  slot.key = key;
  slot.steps = &it->second;  // unordered_map nodes do not move
  if (added) {
    const std::string name = symbols_ != nullptr ? symbols_->Name(key) : fmt::format("0x{:x}", key);
    for (size_t k = 0; k < steps_.size(); ++k) {
      if (NameMatches(steps_[k].pattern, name)) it->second.push_back(static_cast<uint32_t>(k));
    }
  }
  return it->second;
}

void SignatureMatcher::Enter(uint64_t key, int64_t ts_ns, uint32_t, uint8_t) {
  const size_t n = steps_.size();
  const size_t f = stack_.size();
  const std::vector<uint32_t>& steps = StepsOf(key);
  stack_.push_back({key, ts_ns, &steps});
  if (pending_.size() < stack_.size()) {
    pending_.resize(stack_.size());
    end_.resize(stack_.size() * n);
    anc_.resize(stack_.size() * n);
  }
  int32_t* end = end_.data() + f * n;
  int32_t* anc = anc_.data() + f * n;
  std::fill(end, end + n, -1);
  if (f == 0) {
    std::fill(anc, anc + n, -1);
  } else {
    std::copy(anc - n, anc, anc);
  }
  const int32_t* parent_end = f > 0 ? end - n : nullptr;
  const int32_t* parent_anc = f > 0 ? anc - n : nullptr;
  for (uint32_t k : steps) {
    int32_t top = -1;
    if (step_first_[k]) {
      top = static_cast<int32_t>(f);
    } else if (f > 0) {  // step k-1 is the previous step of the same chain
      top = steps_[k].direct ? parent_end[k - 1] : parent_anc[k - 1];
    }
    end[k] = top;
    if (top >= 0 && (anc[k] < 0 || top < anc[k])) anc[k] = top;
  }
}

void SignatureMatcher::Merge(const SignatureStats& from, SignatureStats* into) {
  into->matches += from.matches;
  into->open += from.open;
  into->total_ns += from.total_ns;
  into->max_ns = std::max(into->max_ns, from.max_ns);
  if (from.worst.dur_ns > into->worst.dur_ns) into->worst = from.worst;
}

void SignatureMatcher::Record(int64_t dur, bool open, size_t top, int64_t ts, int64_t worst_ns,
                              SignatureStats* into) {
  into->matches += 1;
  into->open += open ? 1 : 0;
  into->total_ns += dur;
  into->max_ns = std::max(into->max_ns, dur);
  if (dur > into->worst.dur_ns && dur > worst_ns) {  // only when the worst changes: O(depth) names
    MatchWorst& w = into->worst;
    w.tid = tid_;
    w.thread = thread_;
    w.ts_ns = ts;
    w.dur_ns = dur;
    w.stack.clear();
    for (size_t i = top; i < stack_.size(); ++i)
      w.stack.push_back(symbols_ != nullptr ? symbols_->Name(stack_[i].key) : fmt::format("0x{:x}", stack_[i].key));
  }
}

void SignatureMatcher::Exit(uint64_t, int64_t ts_ns, uint32_t, uint8_t flags) {
  if (stack_.empty()) return;
  const size_t n = steps_.size();
  const size_t f = stack_.size() - 1;
  const Frame fr = stack_[f];
  const int64_t dur = ts_ns > fr.start_ns ? ts_ns - fr.start_ns : 0;
  const bool open = (flags & model::kSliceOpen) != 0;
  const int32_t* end = end_.data() + f * n;
  for (uint32_t k : *fr.steps) {
    if (!step_last_[k] || end[k] < 0) continue;
    const size_t s = step_sig_[k];
    const Signature& sig = signatures_[s];
    if (dur < sig.min_last_ns) continue;
    const size_t top = static_cast<size_t>(end[k]);  // the outermost start: the longest first frame
    if (sig.min_top_ns <= 0) {
      Record(dur, open, top, fr.start_ns, -1, &stats_[s]);
    } else if (top == f) {
      if (dur >= sig.min_top_ns) Record(dur, open, top, fr.start_ns, -1, &stats_[s]);
    } else {  // decided when the first frame ends
      auto& list = pending_[top];
      auto it = std::find_if(list.begin(), list.end(), [&](const Pending& p) { return p.signature == s; });
      if (it == list.end()) it = list.insert(list.end(), Pending{s, {}});
      // The overall worst only grows: a match no slower than it now never replaces it.
      Record(dur, open, top, fr.start_ns, stats_[s].worst.dur_ns, &it->stats);
    }
  }
  if (!pending_[f].empty()) {
    for (const Pending& p : pending_[f]) {
      if (dur >= signatures_[p.signature].min_top_ns) Merge(p.stats, &stats_[p.signature]);
    }
    pending_[f].clear();
  }
  stack_.pop_back();
}

void SignatureMatcher::EndThread(const model::ThreadSummary&) {}

Status SignatureMatcher::End() { return Status::Ok(); }

}  // namespace lookback::analyses
