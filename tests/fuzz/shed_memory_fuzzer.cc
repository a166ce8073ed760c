// libFuzzer target beside the shed memory's parser
// (src/frontends/jvm/shed_memory_file.h): any bytes as a memory file must
// give entries or an error, without a read outside them; and what it accepts
// must come back the same through FormatShedMemory.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "frontends/jvm/shed_memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (uint64_t hash : {uint64_t{0}, uint64_t{0x1234abcd}}) {
    std::string error;
    auto got = lookback::jvm::ParseShedMemory(text, hash, &error);
    if (!got) {
      if (error.empty()) abort();  // a refusal always says why
      continue;
    }
    const std::string again = lookback::jvm::FormatShedMemory(hash, *got);
    auto back = lookback::jvm::ParseShedMemory(again, hash, &error);
    if (!back || back->size() != got->size()) abort();
    for (size_t i = 0; i < got->size(); ++i) {
      const auto& a = (*got)[i];
      const auto& b = (*back)[i];
      if (a.cls != b.cls || a.name != b.name || a.descriptor != b.descriptor || a.calls_per_s != b.calls_per_s ||
          a.mean_ns != b.mean_ns || a.runs_left != b.runs_left) {
        abort();
      }
    }
  }
  return 0;
}
