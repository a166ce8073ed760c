// lookback import FILE... -o DIR: Android's method traces (ART .trace files,
// streaming or not, versions 1-3; Nanoscope trace directories or thread
// files) into lookback dumps, one DIR/<name>.lbk per input, so that every
// command that takes a dump works on them (docs/android.md says why import
// and not read them in every command).
//
// A bad input gets one error line naming it and the offset, and no dump
// (each dump is written to a temporary and renamed when whole); the others
// are still imported, and the exit code is 1. A trace that merely stops
// early is imported as far as it goes, with a warning line.
#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "format/dump_builder.h"
#include "import/art_trace.h"
#include "import/nanoscope.h"
#include "import/to_dump.h"

namespace lookback::cli {
namespace {

namespace fs = std::filesystem;

struct ImportOptions {
  std::vector<std::string> inputs;
  std::string out;
  std::string process;  // the dumps' process name (default: the input's name)
  std::string host;     // METADATA process.host: the device, for fleet queries
  bool quiet = false;
};

Result<import::ImportedTrace> Read(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto files = import::ReadNanoscope(path);
    if (!files.ok()) return files.error();
    return import::ParseNanoscope(files.value());
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return Error{std::string("cannot open it: ") + strerror(errno), 0};
  std::string bytes(static_cast<size_t>(std::max<std::streamoff>(0, in.tellg())), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    return Error{std::string("cannot read it: ") + strerror(errno), 0};
  const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (import::LooksLikeArtTrace(span)) return import::ParseArtTrace(span);
  if (import::LooksLikeNanoscope(bytes)) {
    auto files = import::ReadNanoscope(path);
    if (!files.ok()) return files.error();
    return import::ParseNanoscope(files.value());
  }
  return Error{"neither an ART method trace ('*version' or 'SLOW') nor a Nanoscope trace (\"<ns>:<method>\" lines)", 0};
}

// DIR/<input's name without its extension>.lbk, unique among this run's outputs.
std::string OutputPath(const ImportOptions& o, const std::string& input, std::set<std::string>* taken) {
  std::string stem = fs::path(input).filename().string();
  if (stem.empty()) stem = fs::path(input).parent_path().filename().string();
  if (const size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  if (stem.empty()) stem = "trace";
  std::string path = o.out + "/" + stem + ".lbk";
  for (int n = 2; !taken->insert(path).second; ++n) path = fmt::format("{}/{}-{}.lbk", o.out, stem, n);
  return path;
}

Status Write(const std::string& path, const std::string& bytes) {
  AtomicFile f;
  if (Status s = f.Create(path); !s.ok()) return s;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(f.fd(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Error(fmt::format("cannot write '{}': {}", f.temp_path(), strerror(errno)));
    done += static_cast<size_t>(n);
  }
  return f.Commit();
}

Outcome Run(const ImportOptions& o) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return Outcome::Error("cannot create '" + o.out + "': " + ec.message());
  std::set<std::string> taken;
  Outcome outcome = Outcome::Ok();  // kError once an input failed; the others go on
  for (const std::string& input : o.inputs) {
    auto trace = Read(input);
    if (!trace.ok()) {
      // A single Nanoscope file's errors name it already.
      std::string message = trace.error().ToString();
      const std::string own = fs::path(input).filename().string() + ": ";
      if (message.rfind(own, 0) == 0) message.erase(0, own.size());
      Warn(input + ": " + message);
      outcome = Outcome::Error();
      continue;
    }
    for (const auto& w : trace.value().warnings)
      fprintf(stderr, "lookback: warning: %s: %s\n", input.c_str(), w.ToString().c_str());
    std::string source = fs::path(input).filename().string();
    if (source.empty()) source = input;
    const std::string kind = trace.value().format, clock = trace.value().clock;
    format::BuiltDump d = import::ToDump(std::move(trace.value()), source);
    if (!o.process.empty()) d.process_name = o.process;
    else if (const size_t dot = source.rfind('.'); dot != std::string::npos && dot > 0) d.process_name = source.substr(0, dot);
    if (!o.host.empty()) d.metadata[format::metadata::kHost] = o.host;
    const std::string out = OutputPath(o, input, &taken);
    if (Status s = Write(out, format::EncodeDump(d)); !s.ok()) {
      Warn(input + ": " + s.message());
      outcome = Outcome::Error();
      continue;
    }
    if (!o.quiet) {
      uint64_t events = 0;
      for (const auto& th : d.threads) events += th.events.size();
      fprintf(stderr, "lookback: %s -> %s (%s, %s clock): %zu thread(s), %zu method(s), %s events\n", input.c_str(),
              out.c_str(), kind.c_str(), clock.c_str(), d.threads.size(), d.names.size(),
              fmt::format("{}", events).c_str());
    }
  }
  return outcome;
}

}  // namespace

Runner SetupImport(CLI::App* sub) {
  auto o = std::make_shared<ImportOptions>();
  sub->add_option("inputs", o->inputs,
                  "ART .trace files (v1-v3, streaming or not) and Nanoscope trace directories or thread files")
      ->required();
  sub->add_option("-o,--output", o->out, "Directory for the dumps (<input name>.lbk each)")->required();
  sub->add_option("--process", o->process,
                  "Process name the dumps carry (default: the input's name without its extension); "
                  "fleet queries group by it");
  sub->add_option("--host", o->host, "Host the dumps carry (METADATA process.host), e.g. the device's serial");
  sub->add_flag("-q,--quiet", o->quiet, "Print only errors and warnings");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
