#include "cli/opened_dump.h"

#include "cli/commands.h"
#include "cli/table.h"

namespace lookback::cli {

Outcome CheckWindow(const std::string& window) {
  if (window.empty()) return Outcome::Ok();
  bool relative = false;
  std::optional<int64_t> start, end;
  if (Status s = model::ParseWindow(window, &relative, &start, &end); !s.ok()) return Outcome::Usage(s.message());
  return Outcome::Ok();
}

void AddDumpSelectionFlags(CLI::App* sub, DumpSelection* s, bool both_dumps) {
  sub->add_option("--thread", s->thread,
                  both_dumps ? "Only this thread in both dumps (tid or name; names survive a rerun)"
                             : "Only this thread (tid or name)");
  sub->add_option("--window", s->window,
                  both_dumps ? "Only START..END in both dumps: signed times are relative to each dump, unsigned ones "
                               "to its first event; units ns, us, ms, s"
                             : "Only START..END: signed times are relative to the dump (-2s.. = the last two seconds), "
                               "unsigned ones to the first event (0..500ms); units ns, us, ms, s; "
                               "monotonic:START_NS..END_NS in the traced process's own CLOCK_MONOTONIC");
  sub->add_option("--symbols", s->symbols, "Extra directories to look for the traced binaries in (by name or build id)");
}

Outcome OpenedDump::Open(const std::string& path, const std::vector<std::string>& symbol_dirs,
                         const std::string& thread, const std::string& window, bool quiet,
                         const std::string& say_prefix) {
  auto opened = format::Dump::Open(path);
  if (!opened.ok()) return Outcome::Error(path + ": " + opened.error().ToString());
  dump_.emplace(std::move(opened.value()));
  symbols_ = std::make_unique<symbolize::Symbolizer>(*dump_, symbol_dirs);
  if (!quiet) {
    for (const auto& p : symbols_->problems()) Warn(say_prefix + "symbols: " + p);
  }
  walk_.thread = thread;
  if (Status s = model::ResolveWindow(*dump_, window, &walk_); !s.ok()) return Outcome::Usage(say_prefix + s.message());
  return Outcome::Ok();
}

const model::WalkOptions& OpenedDump::Walking(std::string what) {
  Done();
  what_ = std::move(what);
  progress_ = std::make_unique<Progress>(what_.c_str());
  walk_.progress = &Progress::Callback;
  walk_.progress_ctx = progress_.get();
  return walk_;
}

void OpenedDump::Done() {
  if (progress_) progress_->Done();
  progress_.reset();
  walk_.progress = nullptr;
  walk_.progress_ctx = nullptr;
}

std::string ShedFooter(const format::Dump& dump, symbolize::Symbolizer& symbols) {
  const std::vector<format::ShedInfo>& shed = dump.budget.shed;
  if (shed.empty()) return "";
  std::string names;
  for (size_t i = 0; i < shed.size() && i < 8; ++i) names += (i ? ", " : "") + symbols.Name(shed[i].key);
  if (shed.size() > 8) names += fmt::format(" and {} more", shed.size() - 8);
  return fmt::format("  {} function{} shed by the overhead budget ({}): {}. Their calls are missing while shed and\n"
                     "  their time is in their callers' self time (lookback info lists when; --budget off records all).\n",
                     shed.size(), shed.size() == 1 ? " was" : "s were", dump.budget.percent, names);
}

std::string ShedJson(const format::Dump& dump, symbolize::Symbolizer& symbols) {
  std::string out = "[";
  for (size_t i = 0; i < dump.budget.shed.size(); ++i) {
    const format::ShedInfo& f = dump.budget.shed[i];
    out += fmt::format("{}{{\"name\": {}, \"shed_ns\": {}, \"until_ns\": {}, \"calls_per_s\": {}, \"mean_ns\": {}, \"tid\": {}}}",
                       i ? ", " : "", JsonString(symbols.Name(f.key)), f.at_ns,
                       f.until_ns ? std::to_string(f.until_ns) : "null", f.calls_per_s,
                       f.mean_ns ? std::to_string(f.mean_ns) : "null", f.tid);
  }
  return out + "]";
}

}  // namespace lookback::cli
