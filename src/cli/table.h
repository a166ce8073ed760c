// Terminal output people like to read: human units, aligned columns, colour
// only on a terminal (and never with NO_COLOR), CSV and JSON escaping.
// Header-only; shared by the analysis commands (report, chains, diff, ...).
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "exporters/json_util.h"

namespace lookback::cli {

// ---- units -------------------------------------------------------------------

// 850 ns, 12.3 µs, 30.0 ms, 1.50 s (and 2 min 5 s past a minute).
inline std::string HumanNs(double ns) {
  const double a = std::fabs(ns);
  const char* sign = ns < 0 ? "-" : "";
  if (a < 1e3) return fmt::format("{}{:.0f} ns", sign, a);
  if (a < 1e6) return fmt::format("{}{:.1f} µs", sign, a / 1e3);
  if (a < 1e9) return fmt::format("{}{:.1f} ms", sign, a / 1e6);
  if (a < 60e9) return fmt::format("{}{:.2f} s", sign, a / 1e9);
  return fmt::format("{}{:.0f} min {:.0f} s", sign, std::floor(a / 60e9), std::fmod(a / 1e9, 60.0));
}
template <std::integral T>
std::string HumanNs(T ns) {
  return HumanNs(static_cast<double>(ns));
}

// A change: "+60.1 ms", "-2.0 µs", "0 ns".
inline std::string SignedHumanNs(int64_t ns) { return (ns > 0 ? "+" : "") + HumanNs(ns); }

// "45.2%", "<0.1%" for tiny non-zero shares, "" when there is no whole.
inline std::string Percent(double part, double whole) {
  if (whole <= 0) return "";
  const double p = 100.0 * part / whole;
  if (p > 0 && p < 0.05) return "<0.1%";
  return fmt::format("{:.1f}%", p);
}

// A relative change: "+200%", "-12.5%", "new", "gone".
inline std::string RelativeChange(int64_t before, int64_t after) {
  if (before == 0 && after == 0) return "0%";
  if (before == 0) return "new";
  if (after == 0) return "gone";
  const double r = 100.0 * static_cast<double>(after - before) / static_cast<double>(before);
  if (std::fabs(r) < 0.05) return "0.0%";
  return fmt::format("{}{:.{}f}%", r > 0 ? "+" : "", r, std::fabs(r) >= 100 ? 0 : 1);
}

// 1234567 -> "1,234,567".
inline std::string Count(uint64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(s[i]);
  }
  return out;
}

// ---- colour --------------------------------------------------------------------

// SGR colour codes for one stream: all empty unless it is a terminal and
// NO_COLOR (https://no-color.org) is unset or empty.
class Style {
 public:
  enum Color { kNone, kBold, kDim, kRed, kGreen, kYellow, kCyan };

  static Style For(FILE* stream) {
    const char* no_color = getenv("NO_COLOR");
    const bool off = (no_color != nullptr && no_color[0] != '\0') || isatty(fileno(stream)) == 0;
    return Style(!off);
  }
  explicit Style(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }

  std::string Paint(std::string_view text, Color c) const {
    if (!enabled_ || c == kNone || text.empty()) return std::string(text);
    static const char* kCodes[] = {"", "1", "2", "31", "32", "33", "36"};
    return fmt::format("\033[{}m{}\033[0m", kCodes[c], text);
  }

 private:
  bool enabled_;
};

// Columns of a terminal on `stream`, 0 when it is not one (no truncation).
inline int TerminalColumns(FILE* stream) {
  struct winsize ws {};
  if (isatty(fileno(stream)) == 0 || ioctl(fileno(stream), TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

// ---- aligned columns -------------------------------------------------------------

// Width on a terminal: UTF-8 code points (every character used here is one
// column wide).
inline size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Cuts `s` to `width` columns, eliding the middle ("std::vector<…>::push_back").
inline std::string Elide(const std::string& s, size_t width) {
  if (width < 5 || DisplayWidth(s) <= width) return s;
  auto prefix = [&](size_t cols) {  // bytes of the first `cols` code points
    size_t i = 0;
    for (size_t seen = 0; i < s.size(); ++i) {
      if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == cols) break;
    }
    return i;
  };
  const size_t total = DisplayWidth(s), head = (width - 1) / 2, tail = width - 1 - head;
  return s.substr(0, prefix(head)) + "…" + s.substr(prefix(total - tail));
}

class Table {
 public:
  enum Align { kLeft, kRight };
  struct Cell {
    std::string text;
    Style::Color color = Style::kNone;
    Cell(std::string t = "", Style::Color c = Style::kNone) : text(std::move(t)), color(c) {}  // NOLINT: implicit
    Cell(const char* t, Style::Color c = Style::kNone) : text(t), color(c) {}                  // NOLINT: implicit
  };

  // `elastic`: the one column cut (middle elided) to fit `max_width`.
  void AddColumn(std::string header, Align align, bool elastic = false) {
    columns_.push_back({std::move(header), align, elastic});
  }
  void AddRow(std::vector<Cell> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
  }
  size_t rows() const { return rows_.size(); }
  void ShowHeader(bool show) { show_header_ = show; }

  // Header in bold, columns two spaces apart, `indent` spaces first. With
  // max_width > 0 the elastic column shrinks (not below 16) to fit it.
  std::string Render(const Style& style, int max_width = 0, size_t indent = 2) const {
    std::vector<size_t> width(columns_.size());
    for (size_t c = 0; c < columns_.size(); ++c) {
      width[c] = DisplayWidth(columns_[c].header);
      for (const auto& r : rows_) width[c] = std::max(width[c], DisplayWidth(r[c].text));
    }
    if (max_width > 0) {
      size_t total = indent + 2 * (columns_.size() - 1);  // the gaps
      for (size_t w : width) total += w;
      for (size_t c = 0; c < columns_.size(); ++c) {
        if (!columns_[c].elastic || total <= static_cast<size_t>(max_width)) continue;
        const size_t excess = total - static_cast<size_t>(max_width);
        width[c] = std::max<size_t>(16, width[c] > excess ? width[c] - excess : 0);
      }
    }
    std::string out;
    auto line = [&](const std::vector<Cell>& cells, bool header) {
      std::string text(indent, ' ');
      for (size_t c = 0; c < columns_.size(); ++c) {
        std::string t = columns_[c].elastic ? Elide(cells[c].text, width[c]) : cells[c].text;
        const size_t pad = width[c] > DisplayWidth(t) ? width[c] - DisplayWidth(t) : 0;
        const bool last = c + 1 == columns_.size();
        const Style::Color color = header ? Style::kBold : cells[c].color;
        if (columns_[c].align == kRight) text.append(pad, ' ');
        text += style.Paint(t, color);
        if (columns_[c].align == kLeft && !last) text.append(pad, ' ');
        if (!last) text += "  ";
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text + "\n";
    };
    std::vector<Cell> header;
    for (const auto& c : columns_) header.emplace_back(c.header);
    if (show_header_) line(header, true);
    for (const auto& r : rows_) line(r, false);
    return out;
  }

 private:
  struct Column {
    std::string header;
    Align align;
    bool elastic;
  };
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  bool show_header_ = true;
};

// ---- machine-readable output ---------------------------------------------------

// RFC 4180: quoted when it holds a comma, quote or line break.
inline std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

// A JSON string literal: the exporters' escaping (exporters/json_util.h), one
// definition for every JSON lookback writes.
inline std::string JsonString(std::string_view s) {
  std::string out;
  exporters::AppendJsonString(&out, s);
  return out;
}

// A finite double for JSON (null when not finite), e.g. a relative change.
inline std::string JsonNumber(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

}  // namespace lookback::cli
