#include "symbolize/names.h"

namespace lookback::symbolize {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

namespace {


// Matches one bracket class at pattern[*pi] ('[' ... ']') against c; moves
// *pi past it.
bool ClassMatches(std::string_view p, size_t* pi, char c) {
  size_t i = *pi + 1;
  bool negate = false;
  if (i < p.size() && p[i] == '!') negate = true, ++i;
  bool hit = false;
  bool first = true;
  for (; i < p.size() && (first || p[i] != ']'); ++i, first = false) {
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      if (c >= p[i] && c <= p[i + 2]) hit = true;
      i += 2;
    } else if (p[i] == c) {
      hit = true;
    }
  }
  *pi = i + 1;  // past ']'
  return hit != negate;
}

}  // namespace

bool GlobMatch(std::string_view p, std::string_view t) {
  // Iterative, backtracking only to the last '*': linear in practice.
  size_t pi = 0, ti = 0, star_p = std::string_view::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size()) {
      const char pc = p[pi];
      if (pc == '*') {
        star_p = ++pi;
        star_t = ti;
        continue;
      }
      if (pc == '?') {
        ++pi, ++ti;
        continue;
      }
      if (pc == '[') {
        size_t next = pi;
        if (ClassMatches(p, &next, t[ti])) {
          pi = next, ++ti;
          continue;
        }
      } else if (pc == t[ti]) {
        ++pi, ++ti;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p;
    ti = ++star_t;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {
// Template functions demangle with their return type first: "unsigned long
// ns::Level<9>(int)". Keeps what follows the last blank outside brackets
// (not for operators, whose names may hold blanks: "operator new").
std::string_view WithoutReturnType(std::string_view s) {
  if (s.find("operator") != std::string_view::npos) return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == '>' || c == ')') ++depth;
    else if ((c == '<' || c == '(') && depth > 0) --depth;
    else if (c == ' ' && depth == 0) return s.substr(i + 1);
  }
  return s;
}
}  // namespace

std::string_view WithoutParameters(std::string_view s) {
  // Drop " [clone .cold]" and the like.
  while (!s.empty() && s.back() == ']') {
    const size_t open = s.rfind(" [");
    if (open == std::string_view::npos) break;
    s = s.substr(0, open);
  }
  // Then cv/ref qualifiers after the parameter list.
  size_t close = s.size();
  while (true) {
    std::string_view head = Trim(s.substr(0, close));
    bool stripped = false;
    for (std::string_view q : {"const", "volatile", "&&", "&", "noexcept"}) {
      if (head.size() > q.size() && head.substr(head.size() - q.size()) == q) {
        head.remove_suffix(q.size());
        close = head.size();
        stripped = true;
        break;
      }
    }
    if (!stripped) break;
  }
  std::string_view head = Trim(s.substr(0, close));
  if (head.empty() || head.back() != ')') return s;
  int depth = 0;
  for (size_t i = head.size(); i-- > 0;) {
    if (head[i] == ')') ++depth;
    if (head[i] == '(' && --depth == 0) {
      // "foo()" -> "foo"; "(anonymous namespace)" alone is not a parameter list.
      return i == 0 ? s : WithoutReturnType(head.substr(0, i));
    }
  }
  return s;
}

std::string_view LastComponent(std::string_view demangled) {
  std::string_view s = WithoutParameters(demangled);
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == '>' || c == ')') ++depth;
    if ((c == '<' || c == '(') && depth > 0) --depth;
    if (depth == 0 && c == ':' && i > 0 && s[i - 1] == ':') return s.substr(i + 1);
  }
  return s;
}

std::string_view ShortName(std::string_view demangled) {
  std::string_view last = LastComponent(demangled);
  // Drop template arguments ("bar<int>" -> "bar"), not operators' angle brackets.
  if (!last.empty() && last.back() == '>' && last.substr(0, 8) != "operator") {
    int d = 0;
    for (size_t i = last.size(); i-- > 0;) {
      if (last[i] == '>') ++d;
      if (last[i] == '<' && --d == 0) return i == 0 ? last : last.substr(0, i);
    }
  }
  return last;
}

bool NameMatches(std::string_view pattern, std::string_view name) {
  if (GlobMatch(pattern, name)) return true;
  const std::string_view bare = WithoutParameters(name);
  if (bare.size() != name.size() && GlobMatch(pattern, bare)) return true;
  const std::string_view last = LastComponent(name);
  if (last.size() != bare.size() && GlobMatch(pattern, last)) return true;
  const std::string_view brief = ShortName(name);
  return brief.size() != last.size() && GlobMatch(pattern, brief);
}

}  // namespace lookback::symbolize
