// What report, chains, diff, match, sql and convert do before they walk a
// dump, in one place: reject a bad --window before reading anything, open the
// dump, load its symbols, resolve --thread and --window, and show a progress
// bar while walking.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/progress.h"
#include "format/reader.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {

// A bad window is a usage error, found before any dump is read.
Outcome CheckWindow(const std::string& window);

// The flags every command that walks dumps takes, with one help text:
// --thread, --window and --symbols. `both_dumps`: diff's wording (the
// selection applies to each of two dumps).
struct DumpSelection {
  std::string thread, window;
  std::vector<std::string> symbols;
};
void AddDumpSelectionFlags(CLI::App* sub, DumpSelection* s, bool both_dumps = false);

class OpenedDump {
 public:
  OpenedDump() = default;
  OpenedDump(const OpenedDump&) = delete;  // the symbolizer refers to the dump
  OpenedDump& operator=(const OpenedDump&) = delete;

  // Opens `path` with extra --symbols directories, for --thread and --window.
  // `quiet`: do not list symbol problems; `say_prefix` goes before each
  // message ("a.lbk: " when there are two dumps). An unreadable dump is
  // kError, a bad window kUsage.
  Outcome Open(const std::string& path, const std::vector<std::string>& symbol_dirs, const std::string& thread,
               const std::string& window, bool quiet = false, const std::string& say_prefix = "");

  const format::Dump& dump() const { return *dump_; }
  symbolize::Symbolizer& symbols() { return *symbols_; }  // it caches lookups
  // Walk options for --thread and --window, with a progress bar named `what`
  // until Done().
  const model::WalkOptions& Walking(std::string what);
  void Done();

 private:
  std::optional<format::Dump> dump_;
  std::unique_ptr<symbolize::Symbolizer> symbols_;
  model::WalkOptions walk_;
  std::string what_;  // the bar keeps a pointer to it
  std::unique_ptr<Progress> progress_;
};

// The functions the overhead budget shed (runtime/budget.h), for the
// analyses that print calls: a footer saying which (empty when none), and a
// JSON array of them.
std::string ShedFooter(const format::Dump& dump, symbolize::Symbolizer& symbols);
std::string ShedJson(const format::Dump& dump, symbolize::Symbolizer& symbols);

}  // namespace lookback::cli
