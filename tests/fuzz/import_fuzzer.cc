// libFuzzer target beside the importers (src/import): any bytes, read as an
// ART .trace and as a Nanoscope thread file, must give a clean error or a
// trace whose dump the reader accepts and whose every thread decodes, with
// no read out of bounds.
//   clang -fsanitize=fuzzer,address,undefined (built by the clang build)
// Seed corpus: tests/data/import-corpus (device traces, a streaming trace,
// Nanoscope files). Run by .ci/run for 60 s.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "format/dump_builder.h"
#include "format/reader.h"
#include "import/art_trace.h"
#include "import/nanoscope.h"
#include "import/to_dump.h"
#include "model/decoder.h"

namespace {

void CheckDump(const lookback::import::ImportedTrace& t) {
  const std::string bytes = lookback::format::EncodeDump(lookback::import::ToDump(t, "fuzz"));
  auto d = lookback::format::Dump::Parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  if (!d.ok()) abort();  // the builder wrote a dump its own reader refuses
  for (const auto& th : d.value().threads) {
    lookback::model::CallMatcher m;
    lookback::model::DecodeThread(d.value(), th, [&](const lookback::model::Event& e) {
      m.OnEvent(e, [](const lookback::model::Frame&) {});
    });
    m.Finish(th.snapshot_tsc, [](const lookback::model::Frame&) {});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto art = lookback::import::ParseArtTrace({data, size});
  if (art.ok()) CheckDump(art.value());
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The input as a thread file, and its second half as the .timer side file.
  auto nano = lookback::import::ParseNanoscope({{"42-main.txt", text, text.substr(size / 2), ""}});
  if (nano.ok()) CheckDump(nano.value());
  return 0;
}
