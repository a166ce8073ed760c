#include "frontends/jvm/bytecode.h"

#include <algorithm>
#include <unordered_map>

namespace lookback::jvm {

int FixedLength(uint8_t op) {
  if (op <= kOpDconst1) return 1;
  if (op == kOpBipush || op == kOpLdc) return 2;
  if (op == kOpSipush || op == kOpLdcW || op == kOpLdc2W) return 3;
  if (op <= kOpAload) return 2;   // iload .. aload: a one-byte local index
  if (op <= kOpSaload) return 1;  // xload_<n>, xaload
  if (op <= kOpAstore) return 2;  // istore .. astore: a one-byte local index
  if (op <= kOpLxor) return 1;    // xstore_<n>, xastore, stack, math
  if (op == kOpIinc) return 3;
  if (op <= kOpDcmpg) return 1;  // conversions, lcmp .. dcmpg
  if (op <= kOpJsr) return 3;    // ifeq .. if_acmpne, goto, jsr: a two-byte offset
  if (op == kOpRet) return 2;
  if (op == kOpTableswitch || op == kOpLookupswitch) return 0;
  if (op <= kOpReturn) return 1;        // ireturn .. return
  if (op <= kOpInvokestatic) return 3;  // field access, invokevirtual/special/static
  if (op == kOpInvokeinterface || op == kOpInvokedynamic) return 5;
  if (op == kOpNew) return 3;
  if (op == kOpNewarray) return 2;
  if (op == kOpAnewarray) return 3;
  if (op == kOpArraylength || op == kOpAthrow) return 1;
  if (op == kOpCheckcast || op == kOpInstanceof) return 3;
  if (op == kOpMonitorenter || op == kOpMonitorexit) return 1;
  if (op == kOpWide) return 0;
  if (op == kOpMultianewarray) return 4;
  if (op <= kOpIfnonnull) return 3;  // ifnull, ifnonnull
  if (op <= kOpJsrW) return 5;       // goto_w, jsr_w
  return 0;
}

int32_t ReadS4(std::span<const uint8_t> c, size_t at) {
  return static_cast<int32_t>(uint32_t{c[at]} << 24 | uint32_t{c[at + 1]} << 16 | uint32_t{c[at + 2]} << 8 |
                              uint32_t{c[at + 3]});
}
int16_t ReadS2(std::span<const uint8_t> c, size_t at) { return static_cast<int16_t>(c[at] << 8 | c[at + 1]); }
uint16_t ReadU2(std::span<const uint8_t> c, size_t at) { return static_cast<uint16_t>(c[at] << 8 | c[at + 1]); }

Result<std::vector<Insn>> DecodeInstructions(std::span<const uint8_t> code) {
  std::vector<Insn> out;
  size_t pc = 0;
  const size_t n = code.size();
  while (pc < n) {
    Insn in;
    in.offset = static_cast<uint32_t>(pc);
    in.op = code[pc];
    size_t len = static_cast<size_t>(FixedLength(in.op));
    if (in.op == kOpTableswitch || in.op == kOpLookupswitch) {
      size_t base = (pc + 4) & ~size_t{3};  // operands start 4-byte aligned
      if (base + 12 > n) return Error{"switch truncated", pc};
      if (in.op == kOpTableswitch) {
        int64_t lo = ReadS4(code, base + 4), hi = ReadS4(code, base + 8);
        if (hi < lo) return Error{"tableswitch high < low", pc};
        int64_t count = hi - lo + 1;
        if (count > static_cast<int64_t>(n)) return Error{"tableswitch too large", pc};
        len = base + 12 + static_cast<size_t>(count) * 4 - pc;
      } else {
        int64_t pairs = ReadS4(code, base + 4);
        if (pairs < 0 || pairs > static_cast<int64_t>(n)) return Error{"lookupswitch pair count out of range", pc};
        len = base + 8 + static_cast<size_t>(pairs) * 8 - pc;
      }
    } else if (in.op == kOpWide) {
      if (pc + 1 >= n) return Error{"wide truncated", pc};
      in.wide_op = code[pc + 1];
      uint8_t w = in.wide_op;
      if ((w >= kOpIload && w <= kOpAload) || (w >= kOpIstore && w <= kOpAstore) || w == kOpRet) {
        len = 4;
      } else if (w == kOpIinc) {
        len = 6;
      } else {
        return Error{"invalid opcode after wide", pc};
      }
    } else if (len == 0) {
      return Error{"invalid opcode " + std::to_string(in.op), pc};
    }
    if (len > n - pc) return Error{"instruction runs past the end of the code", pc};
    in.length = static_cast<uint32_t>(len);
    out.push_back(in);
    pc += len;
  }
  return out;
}

uint8_t InvertBranch(uint8_t op) {
  if (op == kOpIfnull) return kOpIfnonnull;
  if (op == kOpIfnonnull) return kOpIfnull;
  // ifeq/ifne, iflt/ifge, ifgt/ifle, if_icmpeq/ne, ... come in pairs that
  // differ in the low bit, starting at ifeq (0x99, odd).
  return static_cast<uint8_t>(((op - kOpIfeq) ^ 1) + kOpIfeq);
}

std::vector<int64_t> BranchTargets(std::span<const uint8_t> code, const Insn& in) {
  std::vector<int64_t> t;
  const int64_t pc = in.offset;
  if (IsShortBranch(in.op)) {
    t.push_back(pc + ReadS2(code, in.offset + 1));
  } else if (in.op == kOpGotoW || in.op == kOpJsrW) {
    t.push_back(pc + ReadS4(code, in.offset + 1));
  } else if (in.op == kOpTableswitch || in.op == kOpLookupswitch) {
    size_t base = (in.offset + 4) & ~size_t{3};
    t.push_back(pc + ReadS4(code, base));
    if (in.op == kOpTableswitch) {
      int64_t count = int64_t{ReadS4(code, base + 8)} - ReadS4(code, base + 4) + 1;
      for (int64_t i = 0; i < count; ++i) t.push_back(pc + ReadS4(code, base + 12 + static_cast<size_t>(i) * 4));
    } else {
      int64_t pairs = ReadS4(code, base + 4);
      for (int64_t i = 0; i < pairs; ++i) t.push_back(pc + ReadS4(code, base + 12 + static_cast<size_t>(i) * 8));
    }
  }
  return t;
}

// ---- descriptors --------------------------------------------------------------

namespace {

// Length of the field descriptor at the start of d, 0 if malformed.
size_t FieldDescriptorLength(std::string_view d) {
  size_t i = 0;
  while (i < d.size() && d[i] == '[') ++i;
  if (i > 255 || i >= d.size()) return 0;
  switch (d[i]) {
    case 'B': case 'C': case 'D': case 'F': case 'I': case 'J': case 'S': case 'Z':
      return i + 1;
    case 'L': {
      size_t semi = d.find(';', i);
      if (semi == std::string_view::npos || semi == i + 1) return 0;
      return semi + 1;
    }
    default:
      return 0;
  }
}

}  // namespace

std::optional<MethodDescriptor> ParseMethodDescriptor(std::string_view d) {
  if (d.empty() || d[0] != '(') return std::nullopt;
  MethodDescriptor m;
  size_t i = 1;
  while (i < d.size() && d[i] != ')') {
    size_t len = FieldDescriptorLength(d.substr(i));
    if (len == 0) return std::nullopt;
    m.params.emplace_back(d.substr(i, len));
    i += len;
  }
  if (i >= d.size()) return std::nullopt;
  std::string_view ret = d.substr(i + 1);
  // FieldDescriptorLength says 0 for malformed, which an empty return type
  // ("(II)", found by the fuzzer) would match by its size alone.
  if (ret != "V" && (ret.empty() || FieldDescriptorLength(ret) != ret.size())) return std::nullopt;
  m.ret = std::string(ret);
  return m;
}

int SlotSize(std::string_view fd) {
  if (fd.empty() || fd == "V") return 0;
  return (fd[0] == 'J' || fd[0] == 'D') ? 2 : 1;
}

std::optional<VType> VType::FromDescriptor(std::string_view fd) {
  if (fd.empty()) return std::nullopt;
  switch (fd[0]) {
    case 'B': case 'C': case 'I': case 'S': case 'Z':
      return Of(kInteger);
    case 'F':
      return Of(kFloat);
    case 'J':
      return Of(kLong);
    case 'D':
      return Of(kDouble);
    case 'L':
      if (fd.size() < 3 || fd.back() != ';') return std::nullopt;
      return Object(std::string(fd.substr(1, fd.size() - 2)));
    case '[':
      return Object(std::string(fd));
    default:
      return std::nullopt;
  }
}

std::vector<VType> InitialLocals(std::string_view class_name, std::string_view method_name,
                                 const MethodDescriptor& d, bool is_static) {
  std::vector<VType> l;
  if (!is_static) {
    if (method_name == "<init>" && class_name != "java/lang/Object") {
      l.push_back(VType::Of(VType::kUninitThis));
    } else {
      l.push_back(VType::Object(std::string(class_name)));
    }
  }
  for (const auto& p : d.params) l.push_back(*VType::FromDescriptor(p));
  return l;
}

// ---- StackMapTable --------------------------------------------------------------

namespace {

bool ReadVType(ByteReader& r, const ConstantPool& cp, VType& v) {
  uint8_t tag = r.U1();
  if (!r.ok() || tag > VType::kUninit) return false;
  v = VType::Of(static_cast<VType::Tag>(tag));
  if (tag == VType::kObject) {
    auto name = cp.ClassName(r.U2());
    if (!name) return false;
    v.name = std::string(*name);
  } else if (tag == VType::kUninit) {
    v.offset = r.U2();
  }
  return r.ok();
}

bool ReadVTypes(ByteReader& r, const ConstantPool& cp, size_t n, std::vector<VType>& out) {
  for (size_t i = 0; i < n; ++i) {
    VType v;
    if (!ReadVType(r, cp, v)) return false;
    out.push_back(std::move(v));
  }
  return true;
}

}  // namespace

Result<std::vector<Frame>> DecodeStackMapTable(std::span<const uint8_t> info, const ConstantPool& cp,
                                               const std::vector<VType>& initial_locals) {
  ByteReader r(info);
  uint16_t n = r.U2();
  std::vector<Frame> frames;
  std::vector<VType> locals = initial_locals;
  int64_t prev = -1;
  for (uint16_t i = 0; i < n; ++i) {
    size_t at = r.pos();
    uint8_t type = r.U1();
    if (!r.ok()) return Error{"StackMapTable truncated", at};
    Frame f;
    uint32_t delta = 0;
    if (type <= 63) {
      delta = type;
    } else if (type <= 127) {
      delta = type - 64u;
      if (!ReadVTypes(r, cp, 1, f.stack)) return Error{"bad verification type", at};
    } else if (type < 247) {
      return Error{"reserved stack map frame type", at};
    } else if (type == 247) {
      delta = r.U2();
      if (!ReadVTypes(r, cp, 1, f.stack)) return Error{"bad verification type", at};
    } else if (type <= 250) {  // chop
      delta = r.U2();
      size_t k = 251u - type;
      if (k > locals.size()) return Error{"chop_frame removes more locals than there are", at};
      locals.resize(locals.size() - k);
    } else if (type == 251) {
      delta = r.U2();
    } else if (type <= 254) {  // append
      delta = r.U2();
      if (!ReadVTypes(r, cp, type - 251u, locals)) return Error{"bad verification type", at};
    } else {  // full_frame
      delta = r.U2();
      locals.clear();
      uint16_t nl = r.U2();
      if (!ReadVTypes(r, cp, nl, locals)) return Error{"bad verification type", at};
      uint16_t ns = r.U2();
      if (!ReadVTypes(r, cp, ns, f.stack)) return Error{"bad verification type", at};
    }
    if (!r.ok()) return Error{"StackMapTable truncated", at};
    int64_t off = prev + 1 + delta;
    if (prev < 0) off = delta;
    if (off > 65535) return Error{"stack map frame offset out of range", at};
    f.offset = static_cast<uint32_t>(off);
    f.locals = locals;
    prev = off;
    frames.push_back(std::move(f));
  }
  if (r.remaining() != 0) return Error{"bytes after the last stack map frame", r.pos()};
  return frames;
}

namespace {

bool WriteVType(const VType& v, ConstantPool& cp, std::vector<uint8_t>& out) {
  PutU1(out, v.tag);
  if (v.tag == VType::kObject) {
    uint16_t c = cp.AddClass(v.name);
    if (!c) return false;
    PutU2(out, c);
  } else if (v.tag == VType::kUninit) {
    if (v.offset > 65535) return false;
    PutU2(out, static_cast<uint16_t>(v.offset));
  }
  return true;
}

}  // namespace

std::optional<Error> EncodeStackMapTable(const std::vector<Frame>& frames, const std::vector<VType>& initial_locals,
                                         ConstantPool& cp, std::vector<uint8_t>& out) {
  if (frames.size() > 65535) return Error{"too many stack map frames", 0};
  PutU2(out, static_cast<uint16_t>(frames.size()));
  const std::vector<VType>* prev_locals = &initial_locals;
  int64_t prev = -1;
  for (const Frame& f : frames) {
    int64_t d = prev < 0 ? f.offset : int64_t{f.offset} - prev - 1;
    if (d < 0 || d > 65535) return Error{"stack map frames out of order", f.offset};
    uint16_t delta = static_cast<uint16_t>(d);
    const auto& pl = *prev_locals;
    const auto& l = f.locals;
    bool same_locals = l == pl;
    bool ok = true;
    if (same_locals && f.stack.empty()) {
      if (delta <= 63) {
        PutU1(out, static_cast<uint8_t>(delta));
      } else {
        PutU1(out, 251);
        PutU2(out, delta);
      }
    } else if (same_locals && f.stack.size() == 1) {
      if (delta <= 63) {
        PutU1(out, static_cast<uint8_t>(64 + delta));
      } else {
        PutU1(out, 247);
        PutU2(out, delta);
      }
      ok = WriteVType(f.stack[0], cp, out);
    } else if (f.stack.empty() && l.size() < pl.size() && pl.size() - l.size() <= 3 &&
               std::equal(l.begin(), l.end(), pl.begin())) {
      PutU1(out, static_cast<uint8_t>(251 - (pl.size() - l.size())));
      PutU2(out, delta);
    } else if (f.stack.empty() && l.size() > pl.size() && l.size() - pl.size() <= 3 &&
               std::equal(pl.begin(), pl.end(), l.begin())) {
      PutU1(out, static_cast<uint8_t>(251 + (l.size() - pl.size())));
      PutU2(out, delta);
      for (size_t i = pl.size(); i < l.size() && ok; ++i) ok = WriteVType(l[i], cp, out);
    } else {
      if (l.size() > 65535 || f.stack.size() > 65535) return Error{"stack map frame too large", f.offset};
      PutU1(out, 255);
      PutU2(out, delta);
      PutU2(out, static_cast<uint16_t>(l.size()));
      for (size_t i = 0; i < l.size() && ok; ++i) ok = WriteVType(l[i], cp, out);
      PutU2(out, static_cast<uint16_t>(f.stack.size()));
      for (size_t i = 0; i < f.stack.size() && ok; ++i) ok = WriteVType(f.stack[i], cp, out);
    }
    if (!ok) return Error{"constant pool full or offset out of range in a stack map frame", f.offset};
    prev = f.offset;
    prev_locals = &f.locals;
  }
  return std::nullopt;
}

// ---- straight-line simulation ---------------------------------------------------

SlotState ToSlots(const Frame& f, size_t max_locals) {
  SlotState s;
  for (const auto& v : f.locals) {
    s.locals.push_back(v);
    if (v.wide()) s.locals.push_back(VType::Of(VType::kTop));
  }
  if (s.locals.size() < max_locals) s.locals.resize(max_locals);
  for (const auto& v : f.stack) {
    s.stack.push_back(v);
    if (v.wide()) s.stack.push_back(VType::Of(VType::kTop));
  }
  return s;
}

Frame ToFrame(const SlotState& s, uint32_t offset) {
  Frame f;
  f.offset = offset;
  for (size_t i = 0; i < s.locals.size(); ++i) {
    f.locals.push_back(s.locals[i]);
    if (s.locals[i].wide()) ++i;
  }
  while (!f.locals.empty() && f.locals.back().tag == VType::kTop) f.locals.pop_back();
  for (size_t i = 0; i < s.stack.size(); ++i) {
    f.stack.push_back(s.stack[i]);
    if (s.stack[i].wide()) ++i;
  }
  return f;
}

namespace {

class Sim {
 public:
  Sim(SlotState& s) : s_(s) {}
  bool ok = true;
  void Push(const VType& v) {
    s_.stack.push_back(v);
    if (v.wide()) s_.stack.push_back(VType::Of(VType::kTop));
  }
  void Push(VType::Tag t) { Push(VType::Of(t)); }
  void Pop(size_t slots) {
    if (s_.stack.size() < slots) {
      ok = false;
      return;
    }
    s_.stack.resize(s_.stack.size() - slots);
  }
  VType Top(size_t depth = 0) {
    if (s_.stack.size() <= depth) return ok = false, VType{};
    return s_.stack[s_.stack.size() - 1 - depth];
  }
  VType Local(size_t i) {
    if (i >= s_.locals.size()) return ok = false, VType{};
    return s_.locals[i];
  }
  void Store(size_t i, const VType& v) {
    size_t w = v.wide() ? 2 : 1;
    if (i + w > s_.locals.size()) {
      ok = false;
      return;
    }
    if (i > 0 && s_.locals[i - 1].wide()) s_.locals[i - 1] = VType::Of(VType::kTop);
    s_.locals[i] = v;
    if (w == 2) s_.locals[i + 1] = VType::Of(VType::kTop);
  }
  void PopStore(size_t i, VType::Tag t) {
    VType v = t == VType::kObject || t == VType::kTop ? Top() : VType::Of(t);
    Pop(VType::Of(t).wide() ? 2 : 1);
    Store(i, v);
  }
  // Stack shuffles (dup_x1 ...) on raw slots, as the JVMS defines them.
  void Shuffle(size_t take, size_t insert_depth) {
    if (s_.stack.size() < take + insert_depth) {
      ok = false;
      return;
    }
    std::vector<VType> top(s_.stack.end() - static_cast<ptrdiff_t>(take), s_.stack.end());
    s_.stack.insert(s_.stack.end() - static_cast<ptrdiff_t>(take + insert_depth), top.begin(), top.end());
  }
  void Replace(const VType& from, const VType& to) {
    for (auto& v : s_.locals)
      if (v == from) v = to;
    for (auto& v : s_.stack)
      if (v == from) v = to;
  }
  SlotState& s_;
};

std::optional<VType> LdcType(const ConstantPool& cp, uint16_t index) {
  const CpEntry* e = cp.Get(index);
  if (!e) return std::nullopt;
  switch (e->tag) {
    case kCpInteger: return VType::Of(VType::kInteger);
    case kCpFloat: return VType::Of(VType::kFloat);
    case kCpLong: return VType::Of(VType::kLong);
    case kCpDouble: return VType::Of(VType::kDouble);
    case kCpString: return VType::Object("java/lang/String");
    case kCpClass: return VType::Object("java/lang/Class");
    case kCpMethodType: return VType::Object("java/lang/invoke/MethodType");
    case kCpMethodHandle: return VType::Object("java/lang/invoke/MethodHandle");
    case kCpDynamic: {
      auto nt = cp.RefNameAndType(index);
      if (!nt) return std::nullopt;
      return VType::FromDescriptor(nt->second);
    }
    default: return std::nullopt;
  }
}

}  // namespace

bool ApplyInstruction(std::span<const uint8_t> code, const Insn& in, const ConstantPool& cp,
                      std::string_view this_class, SlotState& state) {
  Sim s(state);
  const uint8_t op = in.op;
  const size_t pc = in.offset;
  using T = VType;
  auto u1 = [&](size_t k) { return code[pc + k]; };
  auto u2 = [&](size_t k) { return ReadU2(code, pc + k); };
  static constexpr T::Tag kKinds[4] = {T::kInteger, T::kLong, T::kFloat, T::kDouble};
  if (op == kOpNop) {
  } else if (op == kOpAconstNull) {
    s.Push(T::kNull);
  } else if (op <= kOpIconst5 || op == kOpBipush || op == kOpSipush) {
    s.Push(T::kInteger);
  } else if (op <= kOpLconst1) {
    s.Push(T::kLong);
  } else if (op <= kOpFconst2) {
    s.Push(T::kFloat);
  } else if (op <= kOpDconst1) {
    s.Push(T::kDouble);
  } else if (op >= kOpLdc && op <= kOpLdc2W) {
    auto t = LdcType(cp, op == kOpLdc ? u1(1) : u2(1));
    if (!t) return false;
    s.Push(*t);
  } else if (op >= kOpIload && op <= kOpAload) {  // xload index
    s.Push(op == kOpAload ? s.Local(u1(1))
                          : T::Of(op == kOpIload   ? T::kInteger
                                  : op == kOpLload ? T::kLong
                                  : op == kOpFload ? T::kFloat
                                                   : T::kDouble));
  } else if (op >= kOpIload0 && op <= kOpAload3) {  // xload_n
    int kind = (op - kOpIload0) / 4, n = (op - kOpIload0) % 4;
    if (kind == 4) s.Push(s.Local(static_cast<size_t>(n)));
    else s.Push(T::Of(kind == 0 ? T::kInteger : kind == 1 ? T::kLong : kind == 2 ? T::kFloat : T::kDouble));
  } else if (op >= kOpIaload && op <= kOpSaload) {  // xaload
    if (op == kOpAaload) {
      T arr = s.Top(1);
      s.Pop(2);
      if (arr.tag == T::kNull) {
        s.Push(T::kNull);
      } else if (arr.tag == T::kObject && arr.name.size() > 1 && arr.name[0] == '[') {
        auto t = T::FromDescriptor(std::string_view(arr.name).substr(1));
        if (!t) return false;
        s.Push(*t);
      } else {
        return false;
      }
    } else {
      s.Pop(2);
      s.Push(op == kOpLaload ? T::kLong : op == kOpFaload ? T::kFloat : op == kOpDaload ? T::kDouble : T::kInteger);
    }
  } else if (op >= kOpIstore && op <= kOpAstore) {  // xstore index
    s.PopStore(u1(1), op == kOpAstore ? T::kObject
                                      : kKinds[op == kOpIstore   ? 0
                                               : op == kOpLstore ? 1
                                               : op == kOpFstore ? 2
                                                                 : 3]);
  } else if (op >= kOpIstore0 && op <= kOpAstore3) {  // xstore_n
    int kind = (op - kOpIstore0) / 4, n = (op - kOpIstore0) % 4;
    s.PopStore(static_cast<size_t>(n), kind == 4 ? T::kObject : kKinds[kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? 2 : 3]);
  } else if (op >= kOpIastore && op <= kOpSastore) {  // xastore
    s.Pop(op == kOpLastore || op == kOpDastore ? 4 : 3);
  } else if (op == kOpPop) {
    s.Pop(1);
  } else if (op == kOpPop2) {
    s.Pop(2);
  } else if (op == kOpDup) {
    s.Shuffle(1, 0);
  } else if (op == kOpDupX1) {
    s.Shuffle(1, 1);
  } else if (op == kOpDupX2) {
    s.Shuffle(1, 2);
  } else if (op == kOpDup2) {
    s.Shuffle(2, 0);
  } else if (op == kOpDup2X1) {
    s.Shuffle(2, 1);
  } else if (op == kOpDup2X2) {
    s.Shuffle(2, 2);
  } else if (op == kOpSwap) {
    T a = s.Top(0), b = s.Top(1);
    s.Pop(2);
    s.Push(a);
    s.Push(b);
  } else if (op >= kOpIadd && op <= kOpDrem) {  // add sub mul div rem
    T t = T::Of(kKinds[(op - kOpIadd) % 4]);
    s.Pop(t.wide() ? 4 : 2);
    s.Push(t);
  } else if (op >= kOpIneg && op <= kOpDneg) {  // neg
    T t = T::Of(kKinds[op - kOpIneg]);
    s.Pop(t.wide() ? 2 : 1);
    s.Push(t);
  } else if (op >= kOpIshl && op <= kOpLushr) {  // shifts: value, int count
    bool l = (op - kOpIshl) % 2 == 1;
    s.Pop(l ? 3 : 2);
    s.Push(l ? T::kLong : T::kInteger);
  } else if (op >= kOpIand && op <= kOpLxor) {  // and or xor
    bool l = (op - kOpIand) % 2 == 1;
    s.Pop(l ? 4 : 2);
    s.Push(l ? T::kLong : T::kInteger);
  } else if (op == kOpIinc) {
  } else if (op >= kOpI2l && op <= kOpI2s) {  // conversions
    static constexpr T::Tag kFrom[15] = {T::kInteger, T::kInteger, T::kInteger, T::kLong,   T::kLong,
                                         T::kLong,    T::kFloat,   T::kFloat,   T::kFloat,  T::kDouble,
                                         T::kDouble,  T::kDouble,  T::kInteger, T::kInteger, T::kInteger};
    static constexpr T::Tag kTo[15] = {T::kLong,    T::kFloat, T::kDouble,  T::kInteger, T::kFloat,
                                       T::kDouble,  T::kInteger, T::kLong,  T::kDouble,  T::kInteger,
                                       T::kLong,    T::kFloat, T::kInteger, T::kInteger, T::kInteger};
    s.Pop(T::Of(kFrom[op - kOpI2l]).wide() ? 2 : 1);
    s.Push(kTo[op - kOpI2l]);
  } else if (op >= kOpLcmp && op <= kOpDcmpg) {  // lcmp fcmpl fcmpg dcmpl dcmpg
    s.Pop(op == kOpFcmpl || op == kOpFcmpg ? 2 : 4);
    s.Push(T::kInteger);
  } else if (op >= kOpIfeq && op <= kOpIfle) {  // compare one int with zero
    s.Pop(1);
  } else if (op >= kOpIfIcmpeq && op <= kOpIfAcmpne) {  // compare two ints or two references
    s.Pop(2);
  } else if (op == kOpGoto || op == kOpGotoW) {
  } else if (op == kOpTableswitch || op == kOpLookupswitch) {
    s.Pop(1);
  } else if (IsReturn(op)) {
    s.Pop(op == kOpLreturn || op == kOpDreturn ? 2 : op == kOpReturn ? 0 : 1);
  } else if (op >= kOpGetstatic && op <= kOpPutfield) {  // field access
    auto nt = cp.RefNameAndType(u2(1));
    if (!nt) return false;
    auto t = T::FromDescriptor(nt->second);
    if (!t) return false;
    size_t w = t->wide() ? 2 : 1;
    if (op == kOpGetstatic) {
      s.Push(*t);
    } else if (op == kOpPutstatic) {
      s.Pop(w);
    } else if (op == kOpGetfield) {
      s.Pop(1);
      s.Push(*t);
    } else {
      s.Pop(w + 1);
    }
  } else if (op >= kOpInvokevirtual && op <= kOpInvokedynamic) {  // invokes
    auto nt = cp.RefNameAndType(u2(1));
    if (!nt) return false;
    auto d = ParseMethodDescriptor(nt->second);
    if (!d) return false;
    size_t args = 0;
    for (const auto& p : d->params) args += static_cast<size_t>(SlotSize(p));
    if (op != kOpInvokestatic && op != kOpInvokedynamic) {
      T receiver = s.Top(args);
      s.Pop(args + 1);
      if (op == kOpInvokespecial && nt->first == "<init>") {
        if (receiver.tag == T::kUninitThis) {
          s.Replace(receiver, T::Object(std::string(this_class)));
        } else if (receiver.tag == T::kUninit) {
          if (receiver.offset + 3 > code.size() || code[receiver.offset] != kOpNew) return false;
          auto name = cp.ClassName(ReadU2(code, receiver.offset + 1));
          if (!name) return false;
          s.Replace(receiver, T::Object(std::string(*name)));
        } else {
          return false;
        }
      }
    } else {
      s.Pop(args);
    }
    if (d->ret != "V") {
      auto ret = T::FromDescriptor(d->ret);
      if (!ret) return false;
      s.Push(*ret);
    }
  } else if (op == kOpNew) {
    s.Push(T{T::kUninit, in.offset, {}});
  } else if (op == kOpNewarray) {
    static constexpr const char* kArr[12] = {"", "", "", "", "[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J"};
    uint8_t at = u1(1);
    if (at < 4 || at > 11) return false;
    s.Pop(1);
    s.Push(T::Object(kArr[at]));
  } else if (op == kOpAnewarray) {
    auto name = cp.ClassName(u2(1));
    if (!name) return false;
    s.Pop(1);
    s.Push(T::Object((*name)[0] == '[' ? "[" + std::string(*name) : "[L" + std::string(*name) + ";"));
  } else if (op == kOpArraylength) {
    s.Pop(1);
    s.Push(T::kInteger);
  } else if (op == kOpAthrow) {
    s.Pop(1);
  } else if (op == kOpCheckcast) {
    auto name = cp.ClassName(u2(1));
    if (!name) return false;
    s.Pop(1);
    s.Push(T::Object(std::string(*name)));
  } else if (op == kOpInstanceof) {
    s.Pop(1);
    s.Push(T::kInteger);
  } else if (op == kOpMonitorenter || op == kOpMonitorexit) {
    s.Pop(1);
  } else if (op == kOpWide) {
    uint8_t w = in.wide_op;
    size_t idx = u2(2);
    if (w >= kOpIload && w <= kOpAload) {
      s.Push(w == kOpAload ? s.Local(idx)
                           : T::Of(w == kOpIload   ? T::kInteger
                                   : w == kOpLload ? T::kLong
                                   : w == kOpFload ? T::kFloat
                                                   : T::kDouble));
    } else if (w >= kOpIstore && w <= kOpAstore) {
      s.PopStore(idx, w == kOpAstore ? T::kObject
                                     : kKinds[w == kOpIstore   ? 0
                                              : w == kOpLstore ? 1
                                              : w == kOpFstore ? 2
                                                               : 3]);
    } else if (w != kOpIinc) {
      return false;  // wide ret
    }
  } else if (op == kOpMultianewarray) {
    auto name = cp.ClassName(u2(1));
    if (!name) return false;
    s.Pop(u1(3));
    s.Push(T::Object(std::string(*name)));
  } else if (op == kOpIfnull || op == kOpIfnonnull) {
    s.Pop(1);
  } else {
    return false;  // jsr, ret, jsr_w
  }
  return s.ok;
}

// No instruction follows this one on its path: an unconditional jump, a
// switch, a return or a throw.
bool EndsBlock(uint8_t op) {
  return op == kOpGoto || op == kOpGotoW || op == kOpTableswitch || op == kOpLookupswitch || IsReturn(op) ||
         op == kOpAthrow;
}

void SimulateLinear(std::span<const uint8_t> code, const std::vector<Insn>& insns, const std::vector<Frame>& frames,
                    const std::vector<VType>& initial_locals, size_t max_locals, const ConstantPool& cp,
                    std::string_view this_class,
                    const std::function<void(size_t insn_index, const SlotState* before)>& visit) {
  std::optional<SlotState> state = ToSlots(Frame{0, initial_locals, {}}, max_locals);
  if (state->locals.size() > max_locals) state.reset();
  size_t fi = 0;
  for (size_t i = 0; i < insns.size(); ++i) {
    const Insn& in = insns[i];
    while (fi < frames.size() && frames[fi].offset < in.offset) ++fi;
    if (fi < frames.size() && frames[fi].offset == in.offset) {
      state = ToSlots(frames[fi], max_locals);
      if (state->locals.size() > max_locals) state.reset();
    }
    visit(i, state ? &*state : nullptr);
    if (!state) continue;
    if (EndsBlock(in.op) || !ApplyInstruction(code, in, cp, this_class, *state)) state.reset();
  }
}

void SimulateFlow(std::span<const uint8_t> code, const std::vector<Insn>& insns, const std::vector<VType>& initial_locals,
                  size_t max_locals, const ConstantPool& cp, std::string_view this_class,
                  const std::function<void(size_t insn_index, const SlotState* before)>& visit) {
  // Every state a branch carries is a copy of the locals: a hostile method
  // (thousands of jumps, 65535 locals) would need gigabytes. Past this many
  // slots the states stay unknown, as the linear walk left them.
  constexpr size_t kMaxSlots = 4'000'000;
  if (insns.size() * std::max<size_t>(max_locals, 1) > kMaxSlots) {
    for (size_t i = 0; i < insns.size(); ++i) visit(i, nullptr);
    return;
  }
  std::unordered_map<uint32_t, size_t> index;  // offset -> instruction
  for (size_t i = 0; i < insns.size(); ++i) index.emplace(insns[i].offset, i);
  std::vector<std::optional<SlotState>> reached(insns.size());  // by a branch
  // A pass learns a target's state from each branch it can simulate; code
  // reached only by a backward branch from code reached that way needs
  // another (javac's code: two or three). At most 16, so that a hostile
  // class cannot make this quadratic; what is still unknown then stays
  // unknown (the rewriter leaves such a method as it is).
  for (size_t pass = 0; pass < 16; ++pass) {
    bool learned = false;
    std::optional<SlotState> state = ToSlots(Frame{0, initial_locals, {}}, max_locals);
    if (state->locals.size() > max_locals) state.reset();
    for (size_t i = 0; i < insns.size(); ++i) {
      const Insn& in = insns[i];
      if (!state && reached[i]) state = reached[i];
      if (!state) continue;
      const uint8_t op = in.op;
      const bool branches = op == kOpGoto || op == kOpGotoW || op == kOpTableswitch || op == kOpLookupswitch ||
                            (op >= kOpIfeq && op <= kOpIfAcmpne) || op == kOpIfnull || op == kOpIfnonnull;
      const bool ends = EndsBlock(op);
      if (!ApplyInstruction(code, in, cp, this_class, *state)) {
        state.reset();
      } else if (branches) {
        for (int64_t t : BranchTargets(code, in)) {
          auto it = index.find(static_cast<uint32_t>(t));
          if (it != index.end() && !reached[it->second]) {
            reached[it->second] = *state;
            learned = true;
          }
        }
      }
      if (ends) state.reset();
    }
    if (!learned) break;
  }
  // The states, as a last pass sees them.
  std::optional<SlotState> state = ToSlots(Frame{0, initial_locals, {}}, max_locals);
  if (state->locals.size() > max_locals) state.reset();
  for (size_t i = 0; i < insns.size(); ++i) {
    const Insn& in = insns[i];
    if (!state && reached[i]) state = reached[i];
    visit(i, state ? &*state : nullptr);
    if (!state) continue;
    if (EndsBlock(in.op) || !ApplyInstruction(code, in, cp, this_class, *state)) state.reset();
  }
}

}  // namespace lookback::jvm
