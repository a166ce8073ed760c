// lookback chains DUMP: per thread, the top chains (root-to-leaf paths ranked
// by their leaf's time, or by depth) and the critical path, as indented trees
// with durations, or as JSON. Definitions in analyses/chains.h.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "analyses/chains.h"
#include "cli/commands.h"
#include "cli/opened_dump.h"
#include "cli/progress.h"
#include "cli/table.h"
#include "format/reader.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

struct ChainsOptions : DumpSelection {
  std::string path, rank = "time", format = "text";
  size_t top = 5;
};

std::string ThreadLabel(const analyses::ThreadChains& t) {
  std::string label = t.name.empty() ? fmt::format("thread {}", t.tid) : fmt::format("{} ({})", t.name, t.tid);
  label += fmt::format(": {} traced, {} on CPU", HumanNs(t.span_ns), HumanNs(t.cpu_ns));
  if (t.housekeeping) label += "; JVM housekeeping";
  else if (t.waited) label += "; only waited";
  return label;
}

// What the flags of a frame mean, for a reader.
std::string FlagNotes(uint8_t flags, bool at_dump) {
  std::string notes;
  auto add = [&](const char* s) { notes += std::string(notes.empty() ? "" : ", ") + s; };
  if (flags & model::kSliceStartCut) add("begun before the window");
  if (flags & model::kSliceOpen) add(at_dump ? "still running at the dump" : "still running at the window end");
  if (flags & model::kSliceUnwound) add("exit missing, repaired");
  return notes;
}

// Frame i of a chain as one row.
void AddTreeRow(Table* t, const std::vector<analyses::ChainFrame>& frames, size_t i, bool details, bool at_dump,
                const std::string& indent) {
  const auto& f = frames[i];
  std::string detail;
  if (details) {
    detail = "self " + HumanNs(f.self_ns);
    if (f.callees) detail += fmt::format(", {} callee{}", Count(f.callees), f.callees == 1 ? "" : "s");
    if (i + 1 < frames.size() && f.callees > 1) {
      const int64_t others = f.inclusive_ns() - f.self_ns - frames[i + 1].inclusive_ns();
      const std::string rest = f.callees == 2 ? "the other" : "the " + Count(f.callees - 1) + " others";
      detail += fmt::format(" ({}: {})", rest, HumanNs(std::max<int64_t>(0, others)));
    }
    detail += "; " + HumanNs(f.cpu_ns) + " on CPU";
  }
  const std::string notes = FlagNotes(f.flags, at_dump);
  if (!notes.empty()) detail += (detail.empty() ? "" : "; ") + notes;
  const bool leaf = i + 1 == frames.size();
  t->AddRow({{HumanNs(f.inclusive_ns()), leaf ? Style::kCyan : Style::kNone},
             {indent + f.name, leaf ? Style::kBold : Style::kNone},
             {detail, Style::kDim}});
}

// One frame per line: duration, then the name indented by depth, then notes.
// A deep recursion would make that many lines, each indented by its depth (a
// 10,000-deep StackOverflowError chain: hundreds of MB of spaces), so a run
// of more than kRecursionShown frames of one function shows its first and
// last frames around one line that counts the rest, and the indent stops
// growing at kMaxIndent levels. --format json has every frame.
void AddTreeRows(Table* t, const std::vector<analyses::ChainFrame>& frames, bool details, bool at_dump) {
  constexpr size_t kRecursionShown = 4, kMaxIndent = 40;
  size_t level = 0;
  auto indent = [&] { return std::string(2 * std::min(level++, kMaxIndent), ' '); };
  for (size_t i = 0; i < frames.size(); ++i) {
    AddTreeRow(t, frames, i, details, at_dump, indent());
    size_t same = 0;  // the frames right below i that are of its function
    while (i + 1 + same < frames.size() && frames[i + 1 + same].key == frames[i].key) ++same;
    if (same > kRecursionShown) {
      const size_t hidden = same - 1;  // the run's last frame is shown next
      t->AddRow({{"", Style::kNone},
                 {indent() + fmt::format("... {} more frames of {} (recursion)", Count(hidden), frames[i].name),
                  Style::kDim},
                 {"", Style::kNone}});
      i += hidden;
    }
  }
}

std::string Text(const ChainsOptions& o, const analyses::ChainsResult& r, bool at_dump) {
  const Style style = Style::For(stdout);
  std::string out;
  // The threads that worked first; those that only waited, and a JVM's
  // housekeeping threads, after them.
  std::vector<const analyses::ThreadChains*> order;
  for (const auto& t : r.threads) order.push_back(&t);
  std::stable_partition(order.begin(), order.end(), [](const auto* t) { return !t->waited && !t->housekeeping; });
  for (const auto* tp : order) {
    const auto& t = *tp;
    out += style.Paint(ThreadLabel(t), Style::kBold) + "\n";
    out += fmt::format("\n  Top {} chain{} by {} (root to leaf; each shown by its worst occurrence):\n\n",
                       t.chains.size(), t.chains.size() == 1 ? "" : "s", o.rank == "time" ? "leaf time" : "depth");
    for (size_t i = 0; i < t.chains.size(); ++i) {
      const auto& c = t.chains[i];
      out += fmt::format("  #{}  {} in {}, depth {}, at +{}; {} of it on CPU\n", i + 1,
                         style.Paint(HumanNs(c.leaf_ns()), Style::kCyan), c.frames.back().name, c.depth(),
                         HumanNs(c.frames.back().start_ns - r.origin_ns), HumanNs(c.frames.back().cpu_ns));
      Table tree;
      tree.ShowHeader(false);
      tree.AddColumn("", Table::kRight);
      tree.AddColumn("", Table::kLeft);
      tree.AddColumn("", Table::kLeft);
      AddTreeRows(&tree, c.frames, false, at_dump);
      out += tree.Render(style, 0, 6) + "\n";
    }
    if (t.critical_path.empty()) continue;
    const auto& root = t.critical_path.front();
    if (t.running > 0) {
      out += fmt::format("  Critical path: {} frame{} still running at the {}, then the slowest callee at each level:\n\n",
                         t.running, t.running == 1 ? "" : "s", at_dump ? "dump" : "window end");
    } else {
      out += fmt::format(
          "  Critical path: the slowest top-level frame ({} at +{}), then the slowest callee at each level:\n\n",
          root.name, HumanNs(root.start_ns - r.origin_ns));
    }
    Table tree;
    tree.ShowHeader(false);
    tree.AddColumn("", Table::kRight);
    tree.AddColumn("", Table::kLeft);
    tree.AddColumn("", Table::kLeft);
    AddTreeRows(&tree, t.critical_path, true, at_dump);
    out += tree.Render(style, 0, 4) + "\n";
  }
  return out;
}

std::string JsonFrames(const std::vector<analyses::ChainFrame>& frames, int64_t origin) {
  std::string out = "[";
  for (size_t i = 0; i < frames.size(); ++i) {
    const auto& f = frames[i];
    out += fmt::format(
        "{}{{\"name\": {}, \"start_ns\": {}, \"inclusive_ns\": {}, \"self_ns\": {}, \"cpu_ns\": {}, \"callees\": {}, "
        "\"start_cut\": {}, \"running\": {}, \"unwound\": {}}}",
        i ? ", " : "", JsonString(f.name), f.start_ns - origin, f.inclusive_ns(), f.self_ns, f.cpu_ns, f.callees,
        (f.flags & model::kSliceStartCut) != 0, (f.flags & model::kSliceOpen) != 0,
        (f.flags & model::kSliceUnwound) != 0);
  }
  return out + "]";
}

std::string Json(const ChainsOptions& o, const analyses::ChainsResult& r, const std::string& shed) {
  std::string out = fmt::format("{{\n  \"dump\": {},\n  \"rank\": {},\n  \"origin_ns\": {},\n  \"shed\": {},\n  \"threads\": [",
                                JsonString(o.path), JsonString(o.rank), r.origin_ns, shed);
  for (size_t i = 0; i < r.threads.size(); ++i) {
    const auto& t = r.threads[i];
    out += fmt::format(
        "{}\n    {{\"tid\": {}, \"name\": {}, \"span_ns\": {}, \"cpu_ns\": {}, \"waited\": {}, \"housekeeping\": {},\n"
        "     \"chains\": [",
        i ? "," : "", t.tid, JsonString(t.name), t.span_ns, t.cpu_ns, t.waited, t.housekeeping);
    for (size_t c = 0; c < t.chains.size(); ++c) {
      out += fmt::format("{}\n       {{\"leaf_ns\": {}, \"depth\": {}, \"frames\": {}}}", c ? "," : "",
                         t.chains[c].leaf_ns(), t.chains[c].depth(), JsonFrames(t.chains[c].frames, r.origin_ns));
    }
    out += fmt::format("],\n     \"critical_path\": {{\"running\": {}, \"frames\": {}}}}}", t.running,
                       JsonFrames(t.critical_path, r.origin_ns));
  }
  out += r.threads.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Outcome Run(const ChainsOptions& o) {
  analyses::ChainsOptions co;
  co.top = o.top;
  if (!analyses::ParseChainRank(o.rank, &co.rank)) return Outcome::Usage("unknown rank '" + o.rank + "' (time or depth)");
  if (o.format != "text" && o.format != "json") return Outcome::Usage("unknown format '" + o.format + "' (text or json)");
  if (Outcome out = CheckWindow(o.window); !out.ok()) return out;
  OpenedDump od;
  if (Outcome out = od.Open(o.path, o.symbols, o.thread, o.window); !out.ok()) return out;
  analyses::ChainsBuilder builder(co);
  const std::string shed_json = ShedJson(od.dump(), od.symbols()), shed_footer = ShedFooter(od.dump(), od.symbols());
  const model::WalkOptions& wo = od.Walking("finding chains");
  model::WalkResult res = model::Walk(od.dump(), od.symbols(), wo, builder);
  od.Done();
  if (!res.status.ok()) return Outcome::Of(res.status);
  analyses::ChainsResult r = builder.Take();
  // Frames still running at the end were cut by the dump unless --window ended first.
  const bool at_dump = !wo.window_end_ns || *wo.window_end_ns >= r.dump_ns;
  std::string text = o.format == "json" ? Json(o, r, shed_json) : Text(o, r, at_dump);
  if (r.threads.empty() && o.format == "text") text = "no call in the selected threads and window\n";
  if (o.format == "text" && !shed_footer.empty()) text += "\n" + shed_footer;
  fwrite(text.data(), 1, text.size(), stdout);
  return Outcome::Ok();
}

}  // namespace

Runner SetupChains(CLI::App* sub) {
  auto o = std::make_shared<ChainsOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("--top", o->top, "Chains per thread (default 5)");
  sub->add_option("--rank", o->rank, "Rank chains by the leaf's time (time, default) or by depth");
  sub->add_option("--format", o->format, "text (default) or json");
  AddDumpSelectionFlags(sub, o.get());
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
