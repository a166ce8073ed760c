#include "frontends/jvm/classfile.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace lookback::jvm {


uint8_t ByteReader::U1() {
  if (failed_ || data_.size() - pos_ < 1) return failed_ = true, 0;
  return data_[pos_++];
}

uint16_t ByteReader::U2() {
  if (failed_ || data_.size() - pos_ < 2) return failed_ = true, 0;
  uint16_t v = static_cast<uint16_t>(data_[pos_] << 8 | data_[pos_ + 1]);
  pos_ += 2;
  return v;
}

uint32_t ByteReader::U4() {
  if (failed_ || data_.size() - pos_ < 4) return failed_ = true, 0;
  uint32_t v = uint32_t{data_[pos_]} << 24 | uint32_t{data_[pos_ + 1]} << 16 | uint32_t{data_[pos_ + 2]} << 8 |
               uint32_t{data_[pos_ + 3]};
  pos_ += 4;
  return v;
}

std::span<const uint8_t> ByteReader::Bytes(size_t n) {
  if (failed_ || data_.size() - pos_ < n) return failed_ = true, std::span<const uint8_t>{};
  auto s = data_.subspan(pos_, n);
  pos_ += n;
  return s;
}

void PutU1(std::vector<uint8_t>& out, uint8_t v) { out.push_back(v); }
void PutU2(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void PutU4(std::vector<uint8_t>& out, uint32_t v) {
  PutU2(out, static_cast<uint16_t>(v >> 16));
  PutU2(out, static_cast<uint16_t>(v));
}
void PutBytes(std::vector<uint8_t>& out, std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }

// ---- constant pool ----------------------------------------------------------

Result<ConstantPool> ConstantPool::Parse(ByteReader& r) {
  ConstantPool cp;
  size_t count = r.U2();
  if (!r.ok() || count == 0) return Error{"constant pool count missing or zero", r.pos()};
  cp.entries_.resize(count);
  for (size_t i = 1; i < count; ++i) {
    size_t at = r.pos();
    CpEntry& e = cp.entries_[i];
    e.tag = r.U1();
    switch (e.tag) {
      case kCpUtf8: {
        uint16_t len = r.U2();
        auto b = r.Bytes(len);
        e.utf8.assign(reinterpret_cast<const char*>(b.data()), b.size());
        break;
      }
      case kCpInteger:
      case kCpFloat:
        e.value = r.U4();
        break;
      case kCpLong:
      case kCpDouble:
        r.U4();
        r.U4();
        // The slot after an 8-byte constant is unusable (JVMS 4.4.5).
        if (++i >= count) return Error{"8-byte constant in the last constant pool slot", at};
        break;
      case kCpClass:
      case kCpString:
      case kCpMethodType:
      case kCpModule:
      case kCpPackage:
        e.a = r.U2();
        break;
      case kCpFieldref:
      case kCpMethodref:
      case kCpInterfaceMethodref:
      case kCpNameAndType:
      case kCpDynamic:
      case kCpInvokeDynamic:
        e.a = r.U2();
        e.b = r.U2();
        break;
      case kCpMethodHandle:
        e.a = r.U1();  // reference_kind
        e.b = r.U2();
        break;
      default:
        return Error{"unknown constant pool tag " + std::to_string(e.tag), at};
    }
    if (!r.ok()) return Error{"constant pool truncated", at};
  }
  return cp;
}

const CpEntry* ConstantPool::Get(uint16_t index) const {
  if (index == 0 || index >= entries_.size() || entries_[index].tag == 0) return nullptr;
  return &entries_[index];
}

std::optional<std::string_view> ConstantPool::Utf8(uint16_t index) const {
  const CpEntry* e = Get(index);
  if (!e || e->tag != kCpUtf8) return std::nullopt;
  return std::string_view(e->utf8);
}

std::optional<std::string_view> ConstantPool::ClassName(uint16_t index) const {
  const CpEntry* e = Get(index);
  if (!e || e->tag != kCpClass) return std::nullopt;
  return Utf8(e->a);
}

std::optional<std::pair<std::string_view, std::string_view>> ConstantPool::RefNameAndType(uint16_t index) const {
  const CpEntry* e = Get(index);
  if (!e) return std::nullopt;
  uint16_t nat = 0;
  switch (e->tag) {
    case kCpFieldref:
    case kCpMethodref:
    case kCpInterfaceMethodref:
    case kCpDynamic:
    case kCpInvokeDynamic:
      nat = e->b;
      break;
    default:
      return std::nullopt;
  }
  const CpEntry* n = Get(nat);
  if (!n || n->tag != kCpNameAndType) return std::nullopt;
  auto name = Utf8(n->a);
  auto desc = Utf8(n->b);
  if (!name || !desc) return std::nullopt;
  return std::make_pair(*name, *desc);
}

std::optional<std::string_view> ConstantPool::RefClassName(uint16_t index) const {
  const CpEntry* e = Get(index);
  if (!e || (e->tag != kCpFieldref && e->tag != kCpMethodref && e->tag != kCpInterfaceMethodref)) return std::nullopt;
  return ClassName(e->a);
}

uint16_t ConstantPool::Append(CpEntry e, std::vector<uint8_t> bytes) {
  // constant_pool_count is a u2 that counts slot 0, so at most 65534 entries.
  if (entries_.size() >= 65535) return 0;
  entries_.push_back(std::move(e));
  appended_.insert(appended_.end(), bytes.begin(), bytes.end());
  const auto index = static_cast<uint16_t>(entries_.size() - 1);
  if (entries_[index].tag == kCpUtf8 && !utf8_slots_.empty()) IndexUtf8(index);
  if (entries_[index].tag == kCpInteger && integers_indexed_) integer_index_.emplace(entries_[index].value, index);
  if (entries_[index].tag == kCpClass && !class_by_name_.empty()) {
    if (class_by_name_.size() <= entries_[index].a) class_by_name_.resize(entries_.size());
    class_by_name_[entries_[index].a] = index;
  }
  return index;
}

void ConstantPool::IndexUtf8(uint16_t index) {
  if (2 * (utf8_indexed_ + 1) > utf8_slots_.size()) {  // at most half full
    std::vector<uint16_t> old = std::move(utf8_slots_);
    utf8_slots_.assign(std::max<size_t>(64, 2 * old.size()), 0);
    utf8_indexed_ = 0;
    for (uint16_t i : old)
      if (i != 0) IndexUtf8(i);
  }
  const size_t mask = utf8_slots_.size() - 1;
  size_t slot = std::hash<std::string_view>{}(entries_[index].utf8) & mask;
  while (utf8_slots_[slot] != 0) {
    if (entries_[utf8_slots_[slot]].utf8 == entries_[index].utf8) return;  // a duplicate: the first one stays
    slot = (slot + 1) & mask;
  }
  utf8_slots_[slot] = index;
  ++utf8_indexed_;
}

uint16_t ConstantPool::FindUtf8(std::string_view s) {
  if (utf8_slots_.empty()) {
    utf8_slots_.assign(64, 0);
    for (size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].tag == kCpUtf8) IndexUtf8(static_cast<uint16_t>(i));
  }
  const size_t mask = utf8_slots_.size() - 1;
  for (size_t slot = std::hash<std::string_view>{}(s) & mask; utf8_slots_[slot] != 0; slot = (slot + 1) & mask)
    if (entries_[utf8_slots_[slot]].utf8 == s) return utf8_slots_[slot];
  return 0;
}

uint16_t ConstantPool::FindClass(uint16_t name) {
  if (class_by_name_.empty()) {
    class_by_name_.assign(entries_.size(), 0);
    for (size_t i = entries_.size() - 1; i >= 1; --i)  // backwards: the first of duplicates wins
      if (entries_[i].tag == kCpClass && entries_[i].a < class_by_name_.size())
        class_by_name_[entries_[i].a] = static_cast<uint16_t>(i);
  }
  return name < class_by_name_.size() ? class_by_name_[name] : 0;
}

uint16_t ConstantPool::AddUtf8(std::string_view s) {
  if (const uint16_t found = FindUtf8(s)) return found;
  if (s.size() > 65535) return 0;
  std::vector<uint8_t> b;
  PutU1(b, kCpUtf8);
  PutU2(b, static_cast<uint16_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
  CpEntry e;
  e.tag = kCpUtf8;
  e.utf8 = std::string(s);
  return Append(std::move(e), std::move(b));
}

uint16_t ConstantPool::AddClass(std::string_view internal_name) {
  uint16_t name = AddUtf8(internal_name);
  if (!name) return 0;
  if (const uint16_t found = FindClass(name)) return found;
  std::vector<uint8_t> b;
  PutU1(b, kCpClass);
  PutU2(b, name);
  return Append(CpEntry{kCpClass, name, 0, 0, {}}, std::move(b));
}

uint16_t ConstantPool::AddNameAndType(std::string_view name, std::string_view descriptor) {
  uint16_t n = AddUtf8(name), d = AddUtf8(descriptor);
  if (!n || !d) return 0;
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].tag == kCpNameAndType && entries_[i].a == n && entries_[i].b == d) return static_cast<uint16_t>(i);
  std::vector<uint8_t> b;
  PutU1(b, kCpNameAndType);
  PutU2(b, n);
  PutU2(b, d);
  return Append(CpEntry{kCpNameAndType, n, d, 0, {}}, std::move(b));
}

uint16_t ConstantPool::AddMethodref(std::string_view owner, std::string_view name, std::string_view descriptor) {
  uint16_t c = AddClass(owner), nat = AddNameAndType(name, descriptor);
  if (!c || !nat) return 0;
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].tag == kCpMethodref && entries_[i].a == c && entries_[i].b == nat) return static_cast<uint16_t>(i);
  std::vector<uint8_t> b;
  PutU1(b, kCpMethodref);
  PutU2(b, c);
  PutU2(b, nat);
  return Append(CpEntry{kCpMethodref, c, nat, 0, {}}, std::move(b));
}

uint16_t ConstantPool::AddInteger(int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  if (!integers_indexed_) {
    integers_indexed_ = true;
    for (size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].tag == kCpInteger) integer_index_.emplace(entries_[i].value, static_cast<uint16_t>(i));
  }
  if (const auto it = integer_index_.find(u); it != integer_index_.end()) return it->second;
  std::vector<uint8_t> b;
  PutU1(b, kCpInteger);
  PutU4(b, u);
  return Append(CpEntry{kCpInteger, 0, 0, u, {}}, std::move(b));
}

void ConstantPool::Write(std::vector<uint8_t>& out) const {
  PutU2(out, static_cast<uint16_t>(entries_.size()));
  PutBytes(out, original_);
  PutBytes(out, appended_);
}

// ---- members and attributes -------------------------------------------------

namespace {

std::optional<Error> ReadAttributes(ByteReader& r, std::vector<Attribute>& out) {
  uint16_t n = r.U2();
  for (uint16_t i = 0; i < n && r.ok(); ++i) {
    Attribute a;
    a.name_index = r.U2();
    uint32_t len = r.U4();
    auto b = r.Bytes(len);
    a.info.assign(b.begin(), b.end());
    out.push_back(std::move(a));
  }
  if (!r.ok()) return Error{"attribute table truncated", r.pos()};
  return std::nullopt;
}

void WriteAttributes(std::vector<uint8_t>& out, const std::vector<Attribute>& attrs,
                     std::vector<size_t>* info_at = nullptr) {
  PutU2(out, static_cast<uint16_t>(attrs.size()));
  for (const auto& a : attrs) {
    PutU2(out, a.name_index);
    PutU4(out, static_cast<uint32_t>(a.info.size()));
    if (info_at != nullptr) info_at->push_back(out.size());
    PutBytes(out, a.info);
  }
}

std::optional<Error> ReadMembers(ByteReader& r, std::vector<Member>& out) {
  uint16_t n = r.U2();
  for (uint16_t i = 0; i < n && r.ok(); ++i) {
    Member m;
    m.access_flags = r.U2();
    m.name_index = r.U2();
    m.descriptor_index = r.U2();
    if (auto e = ReadAttributes(r, m.attributes)) return e;
    out.push_back(std::move(m));
  }
  if (!r.ok()) return Error{"member table truncated", r.pos()};
  return std::nullopt;
}

void WriteMembers(std::vector<uint8_t>& out, const std::vector<Member>& members,
                  std::vector<std::vector<size_t>>* info_at = nullptr) {
  PutU2(out, static_cast<uint16_t>(members.size()));
  if (info_at != nullptr) info_at->assign(members.size(), {});
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    PutU2(out, m.access_flags);
    PutU2(out, m.name_index);
    PutU2(out, m.descriptor_index);
    WriteAttributes(out, m.attributes, info_at != nullptr ? &(*info_at)[i] : nullptr);
  }
}

}  // namespace

Result<CodeAttribute> CodeAttribute::Parse(std::span<const uint8_t> info) {
  ByteReader r(info);
  CodeAttribute c;
  c.max_stack = r.U2();
  c.max_locals = r.U2();
  uint32_t len = r.U4();
  if (!r.ok()) return Error{"Code attribute truncated", r.pos()};
  if (len == 0 || len > 65535) return Error{"code_length out of range", 4};
  auto code = r.Bytes(len);
  if (!r.ok()) return Error{"code truncated", r.pos()};
  c.code.assign(code.begin(), code.end());
  uint16_t n = r.U2();
  for (uint16_t i = 0; i < n && r.ok(); ++i) {
    ExceptionEntry e;
    e.start_pc = r.U2();
    e.end_pc = r.U2();
    e.handler_pc = r.U2();
    e.catch_type = r.U2();
    c.exceptions.push_back(e);
  }
  if (!r.ok()) return Error{"exception table truncated", r.pos()};
  if (auto e = ReadAttributes(r, c.attributes)) return *e;
  if (r.remaining() != 0) return Error{"bytes after the Code attribute's attributes", r.pos()};
  return c;
}

std::optional<Error> CodeAttribute::Write(std::vector<uint8_t>& out) const {
  if (code.empty() || code.size() > 65535) return Error{"code_length out of range", 0};
  if (exceptions.size() > 65535 || attributes.size() > 65535) return Error{"Code table too long", 0};
  PutU2(out, max_stack);
  PutU2(out, max_locals);
  PutU4(out, static_cast<uint32_t>(code.size()));
  PutBytes(out, code);
  PutU2(out, static_cast<uint16_t>(exceptions.size()));
  for (const auto& e : exceptions) {
    PutU2(out, e.start_pc);
    PutU2(out, e.end_pc);
    PutU2(out, e.handler_pc);
    PutU2(out, e.catch_type);
  }
  WriteAttributes(out, attributes);
  return std::nullopt;
}

Result<ClassFile> ClassFile::Parse(std::span<const uint8_t> data) {
  ByteReader r(data);
  ClassFile cf;
  if (r.U4() != 0xCAFEBABE) return Error{"not a class file (bad magic)", 0};
  cf.minor_version = r.U2();
  cf.major_version = r.U2();
  if (!r.ok()) return Error{"class file truncated in its header", r.pos()};
  size_t cp_begin = r.pos();
  auto cp = ConstantPool::Parse(r);
  if (!cp.ok()) return cp.error();
  cf.cp = std::move(cp.value());
  // Keep the pool's exact bytes (after its count) so it is written back unchanged.
  cf.cp.original_.assign(data.begin() + static_cast<ptrdiff_t>(cp_begin + 2),
                         data.begin() + static_cast<ptrdiff_t>(r.pos()));
  cf.access_flags = r.U2();
  cf.this_class = r.U2();
  cf.super_class = r.U2();
  uint16_t ni = r.U2();
  for (uint16_t i = 0; i < ni && r.ok(); ++i) cf.interfaces.push_back(r.U2());
  if (!r.ok()) return Error{"class file truncated before its fields", r.pos()};
  if (!cf.cp.ClassName(cf.this_class)) return Error{"this_class is not a Class constant", r.pos()};
  if (auto e = ReadMembers(r, cf.fields)) return *e;
  if (auto e = ReadMembers(r, cf.methods)) return *e;
  if (auto e = ReadAttributes(r, cf.attributes)) return *e;
  if (r.remaining() != 0) return Error{"extra bytes at the end of the class file", r.pos()};
  return cf;
}

size_t ClassFile::AttributeOffsets::Of(const ClassFile& cf, const Member* m, const Attribute* a) const {
  if (m < cf.methods.data() || m >= cf.methods.data() + cf.methods.size()) return 0;
  const size_t mi = static_cast<size_t>(m - cf.methods.data());
  if (mi >= method_info.size() || a < m->attributes.data() || a >= m->attributes.data() + m->attributes.size()) return 0;
  const size_t ai = static_cast<size_t>(a - m->attributes.data());
  return ai < method_info[mi].size() ? method_info[mi][ai] : 0;
}

std::vector<uint8_t> ClassFile::Write(AttributeOffsets* offsets) const {
  std::vector<uint8_t> out;
  out.reserve(WrittenSizeHint());
  PutU4(out, 0xCAFEBABE);
  PutU2(out, minor_version);
  PutU2(out, major_version);
  cp.Write(out);
  PutU2(out, access_flags);
  PutU2(out, this_class);
  PutU2(out, super_class);
  PutU2(out, static_cast<uint16_t>(interfaces.size()));
  for (uint16_t i : interfaces) PutU2(out, i);
  WriteMembers(out, fields);
  WriteMembers(out, methods, offsets != nullptr ? &offsets->method_info : nullptr);
  WriteAttributes(out, attributes);
  return out;
}

size_t ClassFile::WrittenSizeHint() const {
  size_t n = 24 + cp.original_.size() + cp.appended_.size() + 2 * interfaces.size();
  for (const auto* members : {&fields, &methods}) {
    for (const Member& m : *members) {
      n += 8;
      for (const Attribute& a : m.attributes) n += 6 + a.info.size();
    }
  }
  for (const Attribute& a : attributes) n += 6 + a.info.size();
  return n;
}

std::string_view ClassFile::AttributeName(const Attribute& a) const { return cp.Utf8(a.name_index).value_or(""); }

}  // namespace lookback::jvm
