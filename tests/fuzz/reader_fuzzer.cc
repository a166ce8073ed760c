// libFuzzer target beside the reader: any bytes must give a clean error or a
// dump whose every thread decodes and matches without reading out of bounds.
//   clang -fsanitize=fuzzer,address (LOOKBACK_FUZZ=ON with clang)
// Seed corpus: tests/data/corpus (real dumps). Regressions: tests/data/fuzz-regressions.
#include <cstddef>
#include <cstdint>

#include "format/reader.h"
#include "model/decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto d = lookback::format::Dump::Parse({data, size});
  if (!d.ok()) return 0;
  for (const auto& t : d.value().threads) {
    lookback::model::CallMatcher m;
    lookback::model::DecodeThread(d.value(), t, [&](const lookback::model::Event& e) {
      m.OnEvent(e, [](const lookback::model::Frame&) {});
    });
    m.Finish(t.snapshot_tsc, [](const lookback::model::Frame&) {});
  }
  return 0;
}
