#include "cli/fleet_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "cli/commands.h"
#include "cli/opened_dump.h"
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
      if (ec) Fail(a + ": " + ec.message());
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(a, ec)) {
      out.push_back(a);
    } else {
      Fail(a + ": no such file or directory; skipped");
      ++*missing;
    }
  }
  return out;
}

}  // namespace

void AddFleetOptions(CLI::App* sub, FleetInput* in) {
  sub->add_option("dumps", in->paths, "Dumps (.lbk), or directories searched for them")->required();
  sub->add_option("--thread", in->thread, "Only this thread (tid or name)");
  sub->add_option("--window", in->window,
                  "Only START..END: signed times are relative to the dump (-2s.. = the last two seconds), "
                  "unsigned ones to the first event (0..500ms); units ns, us, ms, s");
  sub->add_option("--symbols", in->symbols, "Extra directories to look for the traced binaries in (by name or build id)");
  sub->add_option("--signatures", in->signatures, "Signature file: fill signature_matches (docs/analyses.md, match)");
  sub->add_flag("-q,--quiet", in->quiet, "Print only errors");
}

int ExportFleet(const FleetInput& in, FleetTarget& target, const char* verb) {
  if (int rc = CheckWindow(in.window); rc != kExitOk) return rc;
  analyses::SignatureFile sigs;
  if (!in.signatures.empty()) {
    sigs = analyses::LoadSignatures(in.signatures);
    if (!sigs.error.empty()) return Fail(sigs.error), kExitUsage;
  }
  int skipped = 0;
  const std::vector<std::string> dumps = Expand(in.paths, &skipped);
  int exported = 0, already = 0;
  for (size_t i = 0; i < dumps.size(); ++i) {
    const std::string& path = dumps[i];
    OpenedDump od;
    if (int rc = od.Open(path, in.symbols, in.thread, in.window, true, path + ": "); rc != kExitOk) {
      if (rc == kExitUsage) return rc;  // a bad --window: the same for every dump
      Fail(path + ": skipped");  // Open said why
      ++skipped;
      continue;
    }
    const analyses::fleet::DumpIdentity id = analyses::fleet::IdentityOf(od.dump());
    std::string err;
    const FleetTarget::Start start = target.BeginDump(id, &err);
    if (!err.empty()) {
      Fail(path + ": " + err + "; skipped");
      ++skipped;
      continue;
    }
    if (start == FleetTarget::Start::kAlreadyThere) {
      if (!in.quiet) fprintf(stderr, "lookback: %s: already in the dataset (dump_id %016llx)\n", path.c_str(),
                             static_cast<unsigned long long>(id.dump_id));
      ++already;
      continue;
    }
    analyses::fleet::FleetOptions fo;
    fo.file = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    fo.signatures = in.signatures.empty() ? nullptr : &sigs.signatures;
    const std::string what = dumps.size() > 1 ? fmt::format("{} [{}/{}]", verb, i + 1, dumps.size()) : verb;
    const model::WalkOptions& wo = od.Walking(what);
    fo.window_start_ns = wo.window_start_ns;
    fo.window_end_ns = wo.window_end_ns;
    analyses::fleet::FleetRows rows(target, fo);
    model::WalkResult res = model::Walk(od.dump(), od.symbols(), wo, rows);
    od.Done();
    const std::string end = target.EndDump(res.error.empty());
    if (!res.error.empty() || !end.empty()) {
      Fail(path + ": " + (res.error.empty() ? end : res.error) + "; skipped");
      ++skipped;
      if (!end.empty()) return kExitError;  // the output itself failed: stop
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
  if (exported == 0 && already == 0) {
    Fail(dumps.empty() ? "no dump found" : "no dump could be exported");
    return kExitError;
  }
  if (skipped > 0) {
    Fail(fmt::format("{} dump(s) skipped, {} exported", skipped, exported));
    return kExitPartial;
  }
  return kExitOk;
}

}  // namespace lookback::cli
