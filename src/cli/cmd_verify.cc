// lookback verify DUMP: every problem with its byte offset, then what still
// decodes. Exit code 0 when the dump is sound, 1 when anything is wrong.
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "format/reader.h"
#include "model/decoder.h"

namespace lookback::cli {
namespace {

Outcome Run(const std::string& path) {
  auto r = format::Dump::Open(path, /*salvage=*/true);
  if (!r.ok()) {
    fmt::print("{}: BROKEN: {}\n", path, r.error().ToString());
    return Outcome::Error();
  }
  const format::Dump& d = r.value();
  int problems = 0;
  for (const auto& w : d.warnings) {
    fmt::print("{}: problem: {}\n", path, w.ToString());
    ++problems;
  }
  for (const auto& t : d.threads) {
    uint64_t events = 0;
    const model::DecodeStats st = model::DecodeThread(d, t, [&](const model::Event& e) {
      events += e.kind == model::EventKind::kEnter || e.kind == model::EventKind::kExit;
    });
    std::string notes;
    if (st.undecodable_prefix) notes += fmt::format(", {} events before the first timestamp/base announcement (undecodable)", st.undecodable_prefix);
    if (st.unknown_records) notes += fmt::format(", {} records of unknown kind or empty", st.unknown_records);
    if (st.backwards) notes += fmt::format(", {} timestamps going backwards", st.backwards);
    if (t.record_count > t.capacity && t.capacity != 0) notes += ", more records than the ring holds";
    if (!notes.empty()) ++problems;
    fmt::print("{}: thread {} ({}): {} records at byte {}, {} events decoded{}\n", path, t.tid, t.name, t.record_count,
               t.records_offset, events, notes);
  }
  if (problems == 0) {
    fmt::print("{}: OK: format version {}, {} thread(s)\n", path, d.version, d.threads.size());
    return Outcome::Ok();
  }
  fmt::print("{}: {} problem(s)\n", path, problems);
  return Outcome::Error();
}

}  // namespace

Runner SetupVerify(CLI::App* sub) {
  auto path = std::make_shared<std::string>();
  sub->add_option("dump", *path, "A .lbk dump file")->required();
  return [path] { return Run(*path); };
}

}  // namespace lookback::cli
