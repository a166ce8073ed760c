// A minimal protobuf wire-format reader for the Perfetto exporter's tests,
// written from the encoding rules (varints, tags = field << 3 | wire type,
// length-delimited bytes), independent of the exporter's writer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lookback::testing {

struct ProtoField {
  uint32_t number = 0;
  uint32_t wire_type = 0;  // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t value = 0;      // varint / fixed value
  std::string_view bytes;  // length-delimited payload
};

// Reads a varint at `*pos`; false when truncated or longer than 10 bytes.
inline bool ReadVarint(std::string_view in, size_t* pos, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= in.size()) return false;
    const uint8_t b = static_cast<uint8_t>(in[(*pos)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

// Splits one message into its fields. Returns "" or what is wrong and where.
inline std::string ParseMessage(std::string_view msg, std::vector<ProtoField>* fields) {
  fields->clear();
  size_t pos = 0;
  while (pos < msg.size()) {
    const size_t at = pos;
    uint64_t tag = 0;
    if (!ReadVarint(msg, &pos, &tag)) return "truncated tag at byte " + std::to_string(at);
    ProtoField f;
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire_type = static_cast<uint32_t>(tag & 7);
    if (f.number == 0) return "field number 0 at byte " + std::to_string(at);
    switch (f.wire_type) {
      case 0:
        if (!ReadVarint(msg, &pos, &f.value)) return "truncated varint at byte " + std::to_string(at);
        break;
      case 1:
      case 5: {
        const size_t n = f.wire_type == 1 ? 8 : 4;
        if (msg.size() - pos < n) return "truncated fixed value at byte " + std::to_string(at);
        for (size_t i = 0; i < n; ++i) f.value |= uint64_t{static_cast<uint8_t>(msg[pos + i])} << (8 * i);
        pos += n;
        break;
      }
      case 2: {
        uint64_t len = 0;
        if (!ReadVarint(msg, &pos, &len)) return "truncated length at byte " + std::to_string(at);
        if (len > msg.size() - pos) return "length past the end at byte " + std::to_string(at);
        f.bytes = msg.substr(pos, len);
        pos += len;
        break;
      }
      default: return "unsupported wire type " + std::to_string(f.wire_type) + " at byte " + std::to_string(at);
    }
    fields->push_back(f);
  }
  return "";
}

// Convenience lookups over parsed fields.
inline const ProtoField* FindField(const std::vector<ProtoField>& fields, uint32_t number) {
  for (const auto& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}
inline std::vector<const ProtoField*> FindAll(const std::vector<ProtoField>& fields, uint32_t number) {
  std::vector<const ProtoField*> out;
  for (const auto& f : fields) {
    if (f.number == number) out.push_back(&f);
  }
  return out;
}

}  // namespace lookback::testing
