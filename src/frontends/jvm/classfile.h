// Parser and writer for the parts of a JVM class file (JVMS chapter 4) the
// rewriter touches: the constant pool (read, look up, append), members, and
// Code attributes. Everything else is carried as opaque attribute bytes and
// written back unchanged.
//
// Class files come from the class loader and are untrusted: every read is
// bounds checked, and problems come back as values (Error with the byte
// offset), never as exceptions or aborts. tests/fuzz/classfile_fuzzer.cc
// feeds it arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>

#include "common/result.h"
#include <vector>

namespace lookback::jvm {

using lookback::Error;  // src/common/result.h
using lookback::Result;

// Big-endian reader over untrusted bytes. A read past the end marks the
// reader failed (sticky) and returns zeros, so a structure is read field by
// field and checked once with ok() instead of after every field.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}
  bool ok() const { return !failed_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return failed_ ? 0 : data_.size() - pos_; }
  uint8_t U1();
  uint16_t U2();
  uint32_t U4();
  std::span<const uint8_t> Bytes(size_t n);
  void Fail() { failed_ = true; }

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool failed_ = false;
};

void PutU1(std::vector<uint8_t>& out, uint8_t v);
void PutU2(std::vector<uint8_t>& out, uint16_t v);
void PutU4(std::vector<uint8_t>& out, uint32_t v);
void PutBytes(std::vector<uint8_t>& out, std::span<const uint8_t> b);

enum CpTag : uint8_t {
  kCpUtf8 = 1,
  kCpInteger = 3,
  kCpFloat = 4,
  kCpLong = 5,
  kCpDouble = 6,
  kCpClass = 7,
  kCpString = 8,
  kCpFieldref = 9,
  kCpMethodref = 10,
  kCpInterfaceMethodref = 11,
  kCpNameAndType = 12,
  kCpMethodHandle = 15,
  kCpMethodType = 16,
  kCpDynamic = 17,
  kCpInvokeDynamic = 18,
  kCpModule = 19,
  kCpPackage = 20,
};

struct CpEntry {
  uint8_t tag = 0;  // 0: unusable slot (index 0, second half of Long/Double)
  uint16_t a = 0;   // first index operand (Class name, NameAndType name, ref class, ...)
  uint16_t b = 0;   // second index operand
  uint32_t value = 0;
  std::string utf8;  // Utf8 entries: the raw (modified UTF-8) bytes
};

// The constant pool as parsed, plus entries appended by the rewriter. The
// original entries are written back byte for byte; appended ones follow.
class ConstantPool {
 public:
  static Result<ConstantPool> Parse(ByteReader& r);
  // Number of slots including the unusable index 0 (the classfile's
  // constant_pool_count).
  size_t count() const { return entries_.size(); }
  const CpEntry* Get(uint16_t index) const;
  std::optional<std::string_view> Utf8(uint16_t index) const;
  std::optional<std::string_view> ClassName(uint16_t index) const;  // of a Class entry
  // Name and descriptor of a Fieldref/Methodref/InterfaceMethodref (or of the
  // NameAndType of an InvokeDynamic/Dynamic entry).
  std::optional<std::pair<std::string_view, std::string_view>> RefNameAndType(uint16_t index) const;
  std::optional<std::string_view> RefClassName(uint16_t index) const;

  // Find-or-append. They return 0 when the pool would reach 65535 slots (the
  // classfile's count is a u2 and counts slot 0).
  uint16_t AddUtf8(std::string_view s);
  uint16_t AddClass(std::string_view internal_name);
  uint16_t AddNameAndType(std::string_view name, std::string_view descriptor);
  uint16_t AddMethodref(std::string_view owner, std::string_view name, std::string_view descriptor);
  uint16_t AddInteger(int32_t v);

  void Write(std::vector<uint8_t>& out) const;

 private:
  friend struct ClassFile;  // sets original_ from the input bytes
  uint16_t Append(CpEntry e, std::vector<uint8_t> bytes);
  std::vector<CpEntry> entries_;
  std::vector<uint8_t> original_;  // the parsed entries' bytes, after the count
  std::vector<uint8_t> appended_;
  // What the finds of Add* use, built on the first Add (a parse builds
  // none): Utf8 entries by content, an open-addressed table of pool indices
  // (0: empty; no allocation per string, unlike a map of strings, which cost
  // a fifth of the class hook's time at a JVM's start-up); Class entries by
  // the index of their name.
  std::vector<uint16_t> utf8_slots_;
  size_t utf8_indexed_ = 0;
  std::vector<uint16_t> class_by_name_;
  // Integer entries by value, the first of duplicates (AddInteger runs once
  // per traced method: a scan of the whole pool each time made a class of
  // many methods and a large pool quadratic). Built on the first AddInteger.
  std::unordered_map<uint32_t, uint16_t> integer_index_;
  bool integers_indexed_ = false;
  void IndexUtf8(uint16_t index);
  uint16_t FindUtf8(std::string_view s);
  uint16_t FindClass(uint16_t name);
};

struct Attribute {
  uint16_t name_index = 0;
  std::vector<uint8_t> info;
};

struct Member {
  uint16_t access_flags = 0, name_index = 0, descriptor_index = 0;
  std::vector<Attribute> attributes;
};

struct ExceptionEntry {
  uint16_t start_pc = 0, end_pc = 0, handler_pc = 0, catch_type = 0;
};

struct CodeAttribute {
  uint16_t max_stack = 0, max_locals = 0;
  std::vector<uint8_t> code;
  std::vector<ExceptionEntry> exceptions;
  std::vector<Attribute> attributes;
  static Result<CodeAttribute> Parse(std::span<const uint8_t> info);
  // Error when the code or a table no longer fits its u2/u4 field.
  std::optional<Error> Write(std::vector<uint8_t>& out) const;
};

struct ClassFile {
  uint16_t minor_version = 0, major_version = 0;
  ConstantPool cp;
  uint16_t access_flags = 0, this_class = 0, super_class = 0;
  std::vector<uint16_t> interfaces;
  std::vector<Member> fields, methods;
  std::vector<Attribute> attributes;

  static Result<ClassFile> Parse(std::span<const uint8_t> data);
  // Where Write put each method's attributes' info, by method and attribute index.
  struct AttributeOffsets {
    std::vector<std::vector<size_t>> method_info;
    // The offset of attribute `a` (of method `m`, both this ClassFile's) in the written bytes; 0: not found.
    size_t Of(const ClassFile& cf, const Member* m, const Attribute* a) const;
  };
  std::vector<uint8_t> Write(AttributeOffsets* offsets = nullptr) const;
  size_t WrittenSizeHint() const;  // Write()'s size exactly, to reserve it once
  std::string_view AttributeName(const Attribute& a) const;
};

enum AccessFlags : uint16_t {
  kAccStatic = 0x0008,
  kAccSynchronized = 0x0020,
  kAccBridge = 0x0040,
  kAccNative = 0x0100,
  kAccInterface = 0x0200,
  kAccAbstract = 0x0400,
  kAccSynthetic = 0x1000,
};

}  // namespace lookback::jvm
