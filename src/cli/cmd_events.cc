// lookback events DUMP: the decoded event stream, one tab-separated line per
// entry or exit: tid, CLOCK_MONOTONIC ns, ENTER|EXIT|RESUME, key, name.
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "format/reader.h"
#include "model/clock_model.h"
#include "model/decoder.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

struct EventsOptions {
  std::string path;
  std::string thread;
  bool no_names = false;
};

Outcome Run(const EventsOptions& o) {
  auto r = format::Dump::Open(o.path);
  if (!r.ok()) return Outcome::Error(o.path + ": " + r.error().ToString());
  const format::Dump& d = r.value();
  const model::ClockModel clock(d.clock);
  symbolize::Symbolizer sym(d);
  bool matched = false;
  std::string out;
  for (const auto& t : d.threads) {
    if (!o.thread.empty() && o.thread != std::to_string(t.tid) && o.thread != t.name) continue;
    matched = true;
    model::DecodeThread(d, t, [&](const model::Event& e) {
      static const char* const kKinds[] = {"ENTER", "EXIT", "RESUME", "UNWIND_TO"};
      const bool timed = e.kind == model::EventKind::kEnter || e.kind == model::EventKind::kExit;
      fmt::format_to(std::back_inserter(out), "{}\t{}\t{}\t{:#x}\t{}\n", t.tid, timed ? clock.MonotonicNs(e.tsc) : 0,
                     kKinds[static_cast<int>(e.kind)], e.key, o.no_names || !timed ? "" : sym.Name(e.key));
      if (out.size() > (1u << 20)) {
        fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    });
  }
  fwrite(out.data(), 1, out.size(), stdout);
  if (!o.thread.empty() && !matched) return Outcome::Error("no thread '" + o.thread + "' in " + o.path);
  return Outcome::Ok();
}

}  // namespace

Runner SetupEvents(CLI::App* sub) {
  auto o = std::make_shared<EventsOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("--thread", o->thread, "Only this thread (tid or name)");
  sub->add_flag("--no-names", o->no_names, "Skip symbolization (faster)");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
