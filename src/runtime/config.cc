#include "runtime/config.h"

#include "format/format.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
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

std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string part = Trim(std::string(s.substr(0, comma)));
    if (!part.empty()) out.push_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

int DetectorIndex(const std::string& name) {
  for (size_t i = 0; i < kDetectorCount; ++i) {
    if (name == kDetectorNames[i]) return static_cast<int>(i);
  }
  return -1;
}

// "VALUE" (every automatic detector: stall, slow-scope, slow-call) or
// "detector=VALUE,...". Each value goes through `parse`.
template <class T, class Parse>
bool ParsePerDetector(const std::string& text, T (&field)[kDetectorCount], Parse parse, std::string* why) {
  T parsed[kDetectorCount];
  std::copy(std::begin(field), std::end(field), parsed);
  for (const std::string& part : SplitList(text)) {
    const size_t eq = part.find('=');
    T v{};
    if (eq == std::string::npos) {
      if (!parse(part, &v)) return *why = "'" + part + "' is not a valid value", false;
      for (Detector d : {Detector::kStall, Detector::kSlowScope, Detector::kSlowCall}) parsed[static_cast<size_t>(d)] = v;
      continue;
    }
    const int d = DetectorIndex(Trim(part.substr(0, eq)));
    if (d < 0) return *why = "'" + Trim(part.substr(0, eq)) + "' is not a detector (stall, slow-scope, slow-call, crash, explicit)", false;
    if (!parse(Trim(part.substr(eq + 1)), &v)) return *why = "'" + part + "' is not a valid value", false;
    parsed[d] = v;
  }
  std::copy(std::begin(parsed), std::end(parsed), field);
  return true;
}

// LOOKBACK_CONFIG: "name = value" lines; '#' starts a comment. Names are the
// variables without LOOKBACK_, in any case, with '-' or '_'.
std::map<std::string, std::string> ReadConfigFile(const std::string& path, std::vector<ConfigProblem>* problems) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  if (!in) {
    problems->push_back({"LOOKBACK_CONFIG='" + path + "': cannot read the file; using the environment and defaults"});
    return out;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = Trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    std::string key = eq == std::string::npos ? line : Trim(line.substr(0, eq));
    for (auto& c : key) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (key.rfind("LOOKBACK_", 0) != 0) key = "LOOKBACK_" + key;
    bool known = false;
    for (const char* const* v = kConfigVariables; *v; ++v) known = known || key == *v;
    if (eq == std::string::npos || !known || key == "LOOKBACK_CONFIG") {
      problems->push_back({path + ":" + std::to_string(n) + ": '" + line + "' is not 'name = value' with a known name (docs/triggers.md); ignored"});
      continue;
    }
    out[key] = Trim(line.substr(eq + 1));
  }
  return out;
}

}  // namespace

const char* const kConfigVariables[] = {
    "LOOKBACK_DIR", "LOOKBACK_BUFFER_SIZE", "LOOKBACK_THREADS", "LOOKBACK_MAX_THREADS", "LOOKBACK_MAX_MEMORY",
    "LOOKBACK_KEEP_EXITED", "LOOKBACK_DUMP_SIGNAL", "LOOKBACK_DUMP_AT_EXIT", "LOOKBACK_ENABLED", "LOOKBACK_QUIET",
    "LOOKBACK_STALL", "LOOKBACK_STALL_IDLE", "LOOKBACK_SLOW_SCOPE", "LOOKBACK_SLOW_CALL", "LOOKBACK_CRASH",
    "LOOKBACK_POST_TRIGGER", "LOOKBACK_WINDOW", "LOOKBACK_RATE_LIMIT", "LOOKBACK_COOLDOWN", "LOOKBACK_MAX_DUMPS",
    "LOOKBACK_MAX_DUMP_BYTES", "LOOKBACK_CONFIG", "LOOKBACK_EXCLUDE", "LOOKBACK_SAMPLE", "LOOKBACK_SAMPLE_INTERVAL",
    "LOOKBACK_STATE_INTERVAL", "LOOKBACK_SAMPLE_SIGNAL", "LOOKBACK_DUMP_MEMORY", "LOOKBACK_HOST", "LOOKBACK_CLOCK", "LOOKBACK_BUDGET", "LOOKBACK_HISTORY", nullptr};

bool ParseClock(const std::string& raw, uint32_t* group) {
  const std::string t = Trim(raw);
  if (t == "exact") return *group = 1, true;
  if (t == "fast") return *group = 8, true;
  if (t.rfind("fast:", 0) != 0) return false;
  uint64_t n = 0;
  if (!ParseUint(t.substr(5), &n) || n < 2 || n > format::kMaxClockGroup || (n & (n - 1)) != 0) return false;
  *group = static_cast<uint32_t>(n);
  return true;
}

bool ParseBudget(const std::string& raw, uint32_t* basis_points) {
  std::string t = Trim(raw);
  if (t == "off" || t == "0" || t == "0%") return *basis_points = 0, true;
  if (!t.empty() && t.back() == '%') t.pop_back();
  // Digits with at most two decimals: no locale, no strtod.
  uint64_t whole = 0, frac = 0;
  const size_t dot = t.find('.');
  if (!ParseUint(t.substr(0, dot), &whole)) return false;
  if (dot != std::string::npos) {
    const std::string f = t.substr(dot + 1);
    if (f.empty() || f.size() > 2 || !ParseUint(f, &frac)) return false;
    if (f.size() == 1) frac *= 10;
  }
  if (whole > 50) return false;
  const uint64_t bp = whole * 100 + frac;
  if (bp < 10 || bp > 5000) return false;
  *basis_points = static_cast<uint32_t>(bp);
  return true;
}

std::string BudgetText(uint32_t bp) {
  if (bp == 0) return "off";
  std::string s = std::to_string(bp / 100);
  if (const uint32_t frac = bp % 100; frac != 0) {
    s += '.';
    s += static_cast<char>('0' + frac / 10);
    if (frac % 10 != 0) s += static_cast<char>('0' + frac % 10);
  }
  return s + "%";
}

std::string HistoryText(uint64_t ns) {
  if (ns == 0) return "off";
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns >= 1'000'000) return std::to_string(ns / 1'000'000) + "ms";
  return std::to_string(ns / 1'000) + "us";
}

uint64_t DefaultHistoryNs(uint64_t buffer_bytes) {
  if (buffer_bytes >= kDefaultHistoryRingBytes) return kDefaultHistoryNs;
  // Ring sizes are powers of two: this is exact and cannot overflow.
  return kDefaultHistoryNs / (kDefaultHistoryRingBytes / std::max<uint64_t>(buffer_bytes, 1));
}

bool ParseDuration(const std::string& raw, uint64_t* ns) {
  std::string t = Trim(raw);
  uint64_t mult = 1000000;  // bare numbers are milliseconds
  auto strip = [&](const char* suffix, uint64_t m) {
    const size_t n = strlen(suffix);
    if (t.size() > n && t.compare(t.size() - n, n, suffix) == 0) {
      t.resize(t.size() - n);
      mult = m;
      return true;
    }
    return false;
  };
  strip("ns", 1) || strip("us", 1000) || strip("ms", 1000000) || strip("s", 1000000000ull) ||
      strip("m", 60000000000ull) || strip("h", 3600000000000ull);
  uint64_t v = 0;
  if (!ParseUint(Trim(t), &v) || v > (uint64_t{1} << 62) / mult) return false;
  *ns = v * mult;
  return true;
}

bool ParseWatches(const std::string& text, std::vector<Watch>* out, std::string* why) {
  std::vector<Watch> parsed;
  for (const std::string& part : SplitList(text)) {
    const size_t colon = part.rfind(':');
    Watch w;
    if (colon == std::string::npos || colon == 0 || !ParseDuration(part.substr(colon + 1), &w.threshold_ns) ||
        w.threshold_ns == 0) {
      *why = "'" + part + "' is not PATTERN:DURATION (example: ui:100ms)";
      return false;
    }
    w.pattern = Trim(part.substr(0, colon));
    parsed.push_back(w);
  }
  *out = std::move(parsed);
  return true;
}

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

Config ParseConfig(const char* (*env)(const char*), std::vector<ConfigProblem>* problems) {
  Config c;
  auto bad = [&](const char* var, const char* value, const std::string& why) {
    problems->push_back({std::string(var) + "='" + value + "' " + why});
  };
  std::map<std::string, std::string> file;
  if (const char* v = env("LOOKBACK_CONFIG"); v && *v) {
    c.config_file = v;
    file = ReadConfigFile(v, problems);
  }
  // The environment overrides the file.
  auto getenv_fn = [&](const char* var) -> const char* {
    if (const char* v = env(var); v && *v) return v;
    auto it = file.find(var);
    return it == file.end() ? nullptr : it->second.c_str();
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
  if (const char* v = getenv_fn("LOOKBACK_DUMP_MEMORY"); v && *v) {
    uint64_t n = 0;
    if (!ParseSize(v, &n)) {
      bad("LOOKBACK_DUMP_MEMORY", v, "is not a size (examples: 64M, 1G, 0 for no limit); using no limit");
    } else {
      c.dump_memory = n;
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
  parse_flag("LOOKBACK_CRASH", &c.crash);
  parse_flag("LOOKBACK_ATTACHED", &c.attached);
  if (const char* v = getenv_fn("LOOKBACK_HOST"); v && *v) c.host = v;
  if (const char* v = getenv_fn("LOOKBACK_CLOCK"); v && *v) {
    if (!ParseClock(v, &c.clock_group)) bad("LOOKBACK_CLOCK", v, "is not exact, fast or fast:N (N a power of two, 2 to 64); using exact");
  }

  // After LOOKBACK_BUFFER_SIZE, whose ring the default is scaled to.
  c.history_ns = DefaultHistoryNs(c.buffer_bytes);
  if (const char* v = getenv_fn("LOOKBACK_HISTORY"); v && *v) {
    uint64_t ns = 0;
    if (Trim(v) == "off") {
      c.history_ns = 0;
    } else if (!ParseDuration(v, &ns) || ns < 100'000'000 || ns > 3'600'000'000'000ull) {
      bad("LOOKBACK_HISTORY", v, "is not off or a duration from 100ms to 1h (examples: 2s, 500ms); using the default, " + HistoryText(c.history_ns));
    } else {
      c.history_ns = ns;
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_BUDGET"); v && *v) {
    if (!ParseBudget(v, &c.budget_bp)) {
      bad("LOOKBACK_BUDGET", v, "is not off or a percentage from 0.1 to 50 (examples: 3, 2.5%); using " + BudgetText(kDefaultBudgetBp));
    }
  }

  std::string why;
  auto parse_watches = [&](const char* var, std::vector<Watch>* field) {
    if (const char* v = getenv_fn(var); v && *v) {
      if (!ParseWatches(v, field, &why)) bad(var, v, why + "; this detector is off");
    }
  };
  parse_watches("LOOKBACK_STALL", &c.stall);
  parse_watches("LOOKBACK_SLOW_SCOPE", &c.slow_scope);
  parse_watches("LOOKBACK_SLOW_CALL", &c.slow_call);
  if (const char* v = getenv_fn("LOOKBACK_STALL_IDLE"); v && *v) c.stall_idle = SplitList(v);
  if (const char* v = getenv_fn("LOOKBACK_EXCLUDE"); v && *v) c.exclude = SplitList(v);
  auto parse_duration = [&](const char* var, uint64_t* field, const char* fallback) {
    if (const char* v = getenv_fn(var); v && *v) {
      if (!ParseDuration(v, field)) bad(var, v, std::string("is not a duration (examples: 100ms, 2s); using ") + fallback);
    }
  };
  parse_duration("LOOKBACK_POST_TRIGGER", &c.post_trigger_ns, "0");
  parse_duration("LOOKBACK_WINDOW", &c.window_ns, "0 (everything)");
  if (const char* v = getenv_fn("LOOKBACK_RATE_LIMIT"); v && *v) {
    auto count = [](const std::string& t, uint32_t* out) {
      std::string n = t;
      if (n.size() > 2 && n.compare(n.size() - 2, 2, "/h") == 0) n.resize(n.size() - 2);
      uint64_t x = 0;
      if (!ParseUint(Trim(n), &x) || x > 1000000) return false;
      *out = static_cast<uint32_t>(x);
      return true;
    };
    if (!ParsePerDetector(v, c.rate_limit, count, &why))
      bad("LOOKBACK_RATE_LIMIT", v, why + " (examples: 12, 12/h, stall=4,explicit=100); using the defaults");
  }
  if (const char* v = getenv_fn("LOOKBACK_COOLDOWN"); v && *v) {
    auto dur = [](const std::string& t, uint64_t* out) { return ParseDuration(t, out); };
    if (!ParsePerDetector(v, c.cooldown_ns, dur, &why))
      bad("LOOKBACK_COOLDOWN", v, why + " (examples: 10s, stall=1m,slow-call=0); using the defaults");
  }
  if (const char* v = getenv_fn("LOOKBACK_SAMPLE"); v && *v) {
    const std::string t = Trim(v);
    bool on = false;
    if (t == "cpu") {
      c.sample_mode = 1;
    } else if (t == "wall") {
      c.sample_mode = 2;
    } else if (ParseBool(t, &on)) {
      c.sample_mode = on ? 1 : 0;
    } else {
      bad("LOOKBACK_SAMPLE", v, "is not cpu, wall, 1 or 0; sampling is off");
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_SAMPLE_INTERVAL"); v && *v) {
    uint64_t ns = 0;
    if (!ParseDuration(v, &ns) || ns < 100'000 || ns > 10'000'000'000) {
      bad("LOOKBACK_SAMPLE_INTERVAL", v, "is not a duration from 100us to 10s; using 1ms");
    } else {
      c.sample_interval_ns = ns;
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_STATE_INTERVAL"); v && *v) {
    uint64_t ns = 0;
    if (!ParseDuration(v, &ns) || (ns != 0 && (ns < 100'000 || ns > 10'000'000'000))) {
      bad("LOOKBACK_STATE_INTERVAL", v, "is not 0 (off) or a duration from 100us to 10s; using 10ms");
    } else {
      c.state_interval_ns = ns;
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_SAMPLE_SIGNAL"); v && *v) {
    int sig = 0;
    if (!ParseSignal(v, &sig) || sig == 0 || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
        sig == SIGILL || sig == SIGFPE || sig == SIGABRT) {
      bad("LOOKBACK_SAMPLE_SIGNAL", v, "is not a usable signal (examples: URG, SIGRTMIN+4, 40); using URG");
    } else {
      c.sample_signal = sig;
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_MAX_DUMPS"); v && *v) {
    uint64_t n = 0;
    if (!ParseUint(Trim(v), &n) || n > 1000000) {
      bad("LOOKBACK_MAX_DUMPS", v, "must be a whole number (0: no limit); using 100");
    } else {
      c.max_dumps = static_cast<uint32_t>(n);
    }
  }
  if (const char* v = getenv_fn("LOOKBACK_MAX_DUMP_BYTES"); v && *v) {
    uint64_t n = 0;
    if (!ParseSize(v, &n)) {
      bad("LOOKBACK_MAX_DUMP_BYTES", v, "is not a size (examples: 500M, 4G, 0 for no limit); using 4 GiB");
    } else {
      c.max_dump_bytes = n;
    }
  }
  return c;
}

}  // namespace lookback::rt
