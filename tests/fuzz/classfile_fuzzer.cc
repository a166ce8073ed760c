// libFuzzer target beside the classfile parser and rewriter: any bytes must
// give a clean error or a rewritten class that parses again, without reading
// out of bounds. Seed corpus: tests/data/classfile-corpus (small javac outputs).
#include <cstddef>
#include <cstdint>
#include <span>

#include "frontends/jvm/classfile.h"
#include "frontends/jvm/rewriter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lookback::jvm::RewriteRequest req;
  req.rename_hook = true;
  uint32_t next = 32760;  // crosses the sipush limit, so ldc_w ids are fuzzed too
  req.assign_id = [&](std::string_view, std::string_view, std::string_view) -> std::optional<uint32_t> {
    return next++;
  };
  req.want_id_sites = (size & 1) != 0;  // the class cache's id sites, half the time
  auto r = lookback::jvm::RewriteClass(data, size, req);
  if (r.changed) {
    auto again = lookback::jvm::ClassFile::Parse(r.bytes);
    if (!again.ok()) __builtin_trap();
    for (const auto& site : r.id_sites) {
      if (site.offset + 3 > r.bytes.size() || site.method >= r.traced.size() || r.bytes[site.offset] != 0x11) __builtin_trap();
    }
  }
  return 0;
}
