#include "cli/fleet_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "cli/commands.h"
#include "cli/opened_dump.h"
#include "cli/progress.h"
#include "model/walk.h"

namespace lookback::cli {
namespace {

// Files as given; directories searched recursively for *.lbk, sorted, so
// the order (and every id) is the same from run to run.
std::vector<std::string> Expand(const std::vector<std::string>& args, int* missing) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& a : args) {
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(a, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".lbk") found.push_back(it->path().string());
      }
      if (ec) Warn(a + ": " + ec.message());
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(a, ec)) {
      out.push_back(a);
    } else {
      Warn(a + ": no such file or directory; skipped");
      ++*missing;
    }
  }
  return out;
}

// One bar for the whole run, over the bytes of the dumps: many small dumps
// move it as surely as one large one (whose walk moves it within the dump).
class FleetProgress {
 public:
  FleetProgress(const char* what, uint64_t total_bytes) : bar_(what, "B of dumps"), total_(total_bytes) {}
  // Messages about the previous dump come after the bar is cleared; it is
  // drawn again at the next update.
  void StartDump(uint64_t bytes) {
    before_ += size_;
    size_ = bytes;
    bar_.Done();
  }
  void Clear() { bar_.Done(); }
  static void Walked(void* self, uint64_t done, uint64_t total) {
    auto* p = static_cast<FleetProgress*>(self);
    const uint64_t within = total == 0 ? 0 : static_cast<uint64_t>(static_cast<double>(p->size_) * done / total);
    p->bar_.Update(p->before_ + within, p->total_);
  }

 private:
  Progress bar_;
  uint64_t total_, before_ = 0, size_ = 0;
};

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(n);
}

}  // namespace

void AddFleetOptions(CLI::App* sub, FleetInput* in) {
  sub->add_option("dumps", in->paths, "Dumps (.lbk), or directories searched for them")->required();
  AddDumpSelectionFlags(sub, in);
  sub->add_option("--signatures", in->signatures, "Signature file: fill signature_matches (docs/analyses.md, match)");
  sub->add_flag("-q,--quiet", in->quiet, "Print only errors");
}

Outcome ExportFleet(const FleetInput& in, analyses::fleet::DatasetSink& target, const char* verb) {
  if (Outcome out = CheckWindow(in.window); !out.ok()) return out;
  std::vector<analyses::Signature> sigs;
  if (!in.signatures.empty()) {
    auto loaded = analyses::LoadSignatures(in.signatures);
    if (!loaded.ok()) return Outcome::Usage(loaded.error().message);
    sigs = std::move(loaded.value());
  }
  int skipped = 0;
  const std::vector<std::string> dumps = Expand(in.paths, &skipped);
  int exported = 0, already = 0;
  uint64_t total_bytes = 0;
  for (const auto& d : dumps) total_bytes += FileSize(d);
  FleetProgress progress(verb, total_bytes);
  for (size_t i = 0; i < dumps.size(); ++i) {
    const std::string& path = dumps[i];
    progress.StartDump(FileSize(path));
    OpenedDump od;
    if (Outcome opened = od.Open(path, in.symbols, in.thread, in.window, in.quiet, path + ": "); !opened.ok()) {
      if (opened.kind() == Outcome::Kind::kUsage) return opened;  // a bad --window: the same for every dump
      Warn(opened.message());
      Warn(path + ": skipped");
      ++skipped;
      continue;
    }
    const analyses::fleet::DumpIdentity id = analyses::fleet::IdentityOf(od.dump());
    const Result<analyses::fleet::DatasetSink::Start> start = target.BeginDump(id);
    if (!start.ok()) {
      Warn(path + ": " + start.error().message + "; skipped");
      ++skipped;
      continue;
    }
    if (start.value() == analyses::fleet::DatasetSink::Start::kAlreadyThere) {
      if (!in.quiet) fprintf(stderr, "lookback: %s: already exported (dump_id %016llx); skipped\n", path.c_str(),
                             static_cast<unsigned long long>(id.dump_id));
      ++already;
      continue;
    }
    analyses::fleet::FleetOptions fo;
    fo.file = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    fo.signatures = in.signatures.empty() ? nullptr : &sigs;
    model::WalkOptions wo = od.Walking(verb);  // --thread, --window; the run's bar instead of the dump's
    od.Done();
    wo.progress = &FleetProgress::Walked;
    wo.progress_ctx = &progress;
    fo.window_start_ns = wo.window_start_ns;
    fo.window_end_ns = wo.window_end_ns;
    analyses::fleet::FleetRows rows(target, fo);
    model::WalkResult res = model::Walk(od.dump(), od.symbols(), wo, rows);
    const Status end = target.EndDump(res.status.ok());
    progress.Clear();
    if (!res.status.ok() || !end.ok()) {
      Warn(path + ": " + (res.status.ok() ? end : res.status).message() + "; skipped");
      ++skipped;
      if (!end.ok()) return Outcome::Error();  // the output itself failed: stop
      continue;
    }
    ++exported;
    if (!in.quiet) {
      const auto& s = rows.stats();
      fprintf(stderr, "lookback: %s: %s thread(s), %s function(s), %s calls%s\n", path.c_str(),
              fmt::format("{}", s.threads).c_str(), fmt::format("{}", s.functions).c_str(),
              fmt::format("{}", s.calls).c_str(),
              s.matches ? fmt::format(", {} signature(s) matched", s.matches).c_str() : "");
    }
  }
  if (exported == 0 && already == 0) return Outcome::Error(dumps.empty() ? "no dump found" : "no dump could be exported");
  if (skipped > 0) return Outcome::Partial(fmt::format("{} dump(s) skipped, {} exported", skipped, exported));
  return Outcome::Ok();
}

}  // namespace lookback::cli
