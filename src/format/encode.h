// Little-endian appenders for building dump sections (writer side).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/format.h"

namespace lookback::format {

inline void PutU16(std::string* out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
// u32 length, then the bytes (no terminator). Longer strings are cut.
inline void PutString(std::string* out, std::string_view s) {
  if (s.size() > kMaxStringBytes) s = s.substr(0, kMaxStringBytes);
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s.data(), s.size());
}
inline void PadTo8(std::string* out) {
  while (out->size() % 8 != 0) out->push_back('\0');
}
inline std::string SectionHeader(SectionType type, uint64_t payload_size) {
  std::string h;
  PutU32(&h, static_cast<uint32_t>(type));
  PutU32(&h, 0);
  PutU64(&h, payload_size);
  return h;
}

}  // namespace lookback::format
