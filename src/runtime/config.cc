#include "runtime/config.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace lookback::rt {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

bool ParseUint(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

uint64_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

bool ParseSize(const std::string& raw, uint64_t* out) {
  std::string text = Trim(raw);
  if (text.empty()) return false;
  uint64_t mult = 1;
  char last = text.back();
  if (last == 'b' || last == 'B') {
    text.pop_back();
    if (text.empty()) return false;
    last = text.back();
    if (last == 'i') {  // KiB, MiB, GiB
      text.pop_back();
      if (text.empty()) return false;
      last = text.back();
    }
  }
  switch (last) {
    case 'k': case 'K': mult = 1ull << 10; break;
    case 'm': case 'M': mult = 1ull << 20; break;
    case 'g': case 'G': mult = 1ull << 30; break;
    default: break;
  }
  if (mult != 1) text.pop_back();
  uint64_t v = 0;
  if (!ParseUint(text, &v)) return false;
  if (v > (uint64_t{1} << 40) / mult) return false;  // over 1 TiB is a typo
  *out = v * mult;
  return true;
}

bool ParseBool(const std::string& raw, bool* out) {
  std::string t = Trim(raw);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "1" || t == "true" || t == "yes" || t == "on") return *out = true, true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return *out = false, true;
  return false;
}

bool ParseSignal(const std::string& raw, int* out) {
  std::string t = Trim(raw);
  for (auto& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (t.rfind("SIG", 0) == 0) t = t.substr(3);
  uint64_t n = 0;
  if (ParseUint(t, &n)) {
    if (n >= static_cast<uint64_t>(NSIG)) return false;
    *out = static_cast<int>(n);
    return true;
  }
  static const struct { const char* name; int sig; } kNames[] = {
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
      {"URG", SIGURG},   {"PWR", SIGPWR},   {"HUP", SIGHUP},   {"QUIT", SIGQUIT},
  };
  for (const auto& e : kNames) {
    if (t == e.name) return *out = e.sig, true;
  }
  if (t.rfind("RTMIN+", 0) == 0 && ParseUint(t.substr(6), &n) && SIGRTMIN + static_cast<int>(n) <= SIGRTMAX) {
    *out = SIGRTMIN + static_cast<int>(n);
    return true;
  }
  return false;
}

Config ParseConfig(const char* (*getenv_fn)(const char*), std::vector<ConfigProblem>* problems) {
  Config c;
  auto bad = [&](const char* var, const char* value, const std::string& why) {
    problems->push_back({std::string(var) + "='" + value + "' " + why});
  };
  if (const char* v = getenv_fn("LOOKBACK_DIR"); v && *v) c.dir = v;
  if (const char* v = getenv_fn("LOOKBACK_BUFFER_SIZE"); v && *v) {
    uint64_t n = 0;
    if (!ParseSize(v, &n)) {
      bad("LOOKBACK_BUFFER_SIZE", v, "is not a size (examples: 65536, 512K, 8M); using 8 MiB");
    } else if (n < 4096) {
      bad("LOOKBACK_BUFFER_SIZE", v, "is below the 4 KiB minimum; using 4 KiB");
      c.buffer_bytes = 4096;
    } else {
      c.buffer_bytes = RoundUpPow2(n);
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_THREADS"); v && *v) {
    std::string_view s(v);
    while (!s.empty()) {
      size_t comma = s.find(',');
      std::string part = Trim(std::string(s.substr(0, comma)));
      if (!part.empty()) c.thread_patterns.push_back(part);
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_MAX_THREADS"); v && *v) {
    uint64_t n = 0;
    if (!ParseUint(Trim(v), &n) || n == 0 || n > 65536) {
      bad("LOOKBACK_MAX_THREADS", v, "must be a whole number from 1 to 65536; using 256");
    } else {
      c.max_threads = static_cast<uint32_t>(n);
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_MAX_MEMORY"); v && *v) {
    uint64_t n = 0;
    if (!ParseSize(v, &n) || n == 0) {
      bad("LOOKBACK_MAX_MEMORY", v, "is not a size (examples: 512M, 2G); using 1 GiB");
    } else {
      c.max_memory = n;
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_KEEP_EXITED"); v && *v) {
    uint64_t n = 0;
    if (!ParseUint(Trim(v), &n) || n > 65536) {
      bad("LOOKBACK_KEEP_EXITED", v, "must be a whole number from 0 to 65536; using 8");
    } else {
      c.keep_exited = static_cast<uint32_t>(n);
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_DUMP_SIGNAL"); v && *v) {
    int sig = 0;
    if (!ParseSignal(v, &sig) || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
        sig == SIGILL || sig == SIGFPE || sig == SIGABRT) {
      bad("LOOKBACK_DUMP_SIGNAL", v, "is not a usable signal (examples: USR2, SIGUSR1, 0 for none); using none");
      c.dump_signal = 0;
    } else {
      c.dump_signal = sig;
    }
  }
  auto parse_flag = [&](const char* var, bool* field) {
    if (const char* v = getenv_fn(var); v && *v) {
      if (!ParseBool(v, field)) bad(var, v, std::string("is not 0 or 1; using ") + (*field ? "1" : "0"));
    }
  };
  parse_flag("LOOKBACK_DUMP_AT_EXIT", &c.dump_at_exit);
  parse_flag("LOOKBACK_ENABLED", &c.enabled);
  parse_flag("LOOKBACK_QUIET", &c.quiet);
  return c;
}

}  // namespace lookback::rt
