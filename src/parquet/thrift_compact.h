// The Thrift compact protocol, write side only: what a Parquet footer and
// page headers need (structs, i16/i32/i64, bool, binary, lists). Field ids
// and types follow parquet.thrift; the wire rules follow the Thrift compact
// protocol specification:
//   - a field header is one byte (id delta << 4 | type) when the delta from
//     the previous field of the same struct is 1..15, else the type byte and
//     the id as a zigzag varint;
//   - integers are zigzag varints; binary is a varint length then the bytes;
//   - a bool field carries its value in the type nibble (1 true, 2 false);
//   - a list header is one byte (size << 4 | element type) below 15
//     elements, else 0xF0 | type then the size as a varint;
//   - a struct ends with a 0 byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lookback::parquet {

class ThriftWriter {
 public:
  enum Type : uint8_t {
    kTrue = 1,
    kFalse = 2,
    kByte = 3,
    kI16 = 4,
    kI32 = 5,
    kI64 = 6,
    kDouble = 7,
    kBinary = 8,
    kList = 9,
    kSet = 10,
    kMap = 11,
    kStruct = 12,
  };

  void I16(int16_t id, int16_t v) {
    Field(id, kI16);
    Varint(ZigZag(v));
  }
  void I32(int16_t id, int32_t v) {
    Field(id, kI32);
    Varint(ZigZag(v));
  }
  void I64(int16_t id, int64_t v) {
    Field(id, kI64);
    Varint(ZigZag(v));
  }
  void Bool(int16_t id, bool v) { Field(id, v ? kTrue : kFalse); }
  void Binary(int16_t id, std::string_view v) {
    Field(id, kBinary);
    Bytes(v);
  }
  // A nested struct: BeginStruct(id) ... EndStruct().
  void BeginStruct(int16_t id) {
    Field(id, kStruct);
    last_.push_back(0);
  }
  void EndStruct() {
    out_.push_back(0);
    last_.pop_back();
  }
  // A list field; then its elements: ListI32/ListBinary values, or for
  // structs BeginListStruct() ... EndStruct() per element.
  void BeginList(int16_t id, Type element, size_t size) {
    Field(id, kList);
    if (size < 15) {
      out_.push_back(static_cast<char>((size << 4) | element));
    } else {
      out_.push_back(static_cast<char>(0xF0 | element));
      Varint(size);
    }
  }
  void ListI32(int32_t v) { Varint(ZigZag(v)); }
  void ListBinary(std::string_view v) { Bytes(v); }
  void BeginListStruct() { last_.push_back(0); }

  // The top-level struct's stop byte.
  void End() { out_.push_back(0); }

  const std::string& bytes() const { return out_; }

 private:
  static uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void Bytes(std::string_view v) {
    Varint(v.size());
    out_.append(v);
  }
  void Field(int16_t id, Type t) {
    int16_t& last = last_.back();
    const int delta = id - last;
    if (delta > 0 && delta <= 15) {
      out_.push_back(static_cast<char>((delta << 4) | t));
    } else {
      out_.push_back(static_cast<char>(t));
      Varint(ZigZag(id));
    }
    last = id;
  }

  std::string out_;
  std::vector<int16_t> last_{0};  // the previous field id of each open struct
};

}  // namespace lookback::parquet
