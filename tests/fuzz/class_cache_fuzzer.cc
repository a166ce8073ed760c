// libFuzzer target beside the JVM agent's class cache entries
// (src/frontends/jvm/class_cache.h): any bytes, as a whole entry or as the
// payload of an entry whose header and checksum check out, must parse
// cleanly or be refused, and a parsed entry's replay must patch only inside
// its own bytes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "frontends/jvm/class_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lookback::jvm;
  const std::span<const uint8_t> in(data, size);
  const CacheKey key = ClassCacheKey("fuzz", in);
  (void)ParseEntry(key, in);
  if (std::optional<CacheEntry> e = ParseEntry(key, FramePayload(key, in))) {
    if (std::optional<RewriteResult> r = Replay(*e, 1)) {
      if (r->bytes.size() != e->bytes.size()) __builtin_trap();
    }
  }
  return 0;
}
