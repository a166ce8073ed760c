#include "frontends/jvm/rewriter.h"

#include <algorithm>
#include <limits>
#include <span>

#include "frontends/jvm/bytecode.h"
#include "frontends/jvm/classfile.h"

namespace lookback::jvm {

const char* SkipReasonName(SkipReason r) {
  switch (r) {
    case SkipReason::kNative: return "native";
    case SkipReason::kAbstract: return "abstract";
    case SkipReason::kIntrinsicCandidate: return "intrinsic-candidate";
    case SkipReason::kTooLarge: return "too-large";
    case SkipReason::kExcluded: return "excluded";
    case SkipReason::kBridgeOrSynthetic: return "bridge";
    case SkipReason::kMalformed: return "malformed";
    case SkipReason::kInlined: return "inlined";
    case SkipReason::kShed: return "shed";
  }
  return "unknown";
}

bool AlwaysInlined(std::string_view method_name, uint16_t access_flags, std::span<const uint8_t> code,
                   size_t exception_table_length, const ConstantPool& cp) {
  if (access_flags & (kAccNative | kAccAbstract | kAccSynchronized)) return false;
  if (method_name == "<init>" || method_name == "<clinit>") return false;
  if (code.empty() || code.size() > kMaxInlineSize || exception_table_length != 0) return false;
  auto insns = DecodeInstructions(code);
  if (!insns.ok()) return false;
  for (const Insn& in : insns.value()) {
    switch (in.op) {
      case kOpInvokevirtual: case kOpInvokespecial: case kOpInvokestatic: case kOpInvokeinterface:
      case kOpInvokedynamic:
      case kOpMonitorenter: case kOpMonitorexit:
      case kOpAthrow:
      case kOpJsr: case kOpJsrW: case kOpRet:
        return false;
      case kOpLdc: case kOpLdcW: case kOpLdc2W: {  // a dynamic constant runs its bootstrap method
        const uint16_t index = in.op == kOpLdc ? code[in.offset + 1] : ReadU2(code, in.offset + 1);
        const CpEntry* e = cp.Get(index);
        if (e == nullptr || e->tag == kCpDynamic) return false;
        break;
      }
      case kOpWide:
        if (in.wide_op == kOpRet) return false;
        break;
      default:
        break;
    }
    for (int64_t target : BranchTargets(code, in)) {
      if (target <= static_cast<int64_t>(in.offset)) return false;  // a backward branch: a loop
    }
  }
  return true;
}

namespace {

constexpr std::string_view kIntrinsicCandidate = "Ljdk/internal/vm/annotation/IntrinsicCandidate;";
constexpr uint32_t kPushLength = 3;    // sipush id | ldc_w #Integer
constexpr uint32_t kCallLength = 3;    // invokestatic

// The entry's decision lives in a local of its own, the method's last
// (max_locals before the rewrite): the entry probe stores what enter
// returned, and every exit hands it to exit, so an invocation's exits follow
// its entry's decision whatever the guards do meanwhile (the budget sheds or
// brings back the method while the frame runs). iload/istore in their
// shortest form for that index.
uint32_t LocalInsnLength(uint16_t local) { return local <= 3 ? 1 : local <= 255 ? 2 : 4; }
void PutLocalInsn(std::vector<uint8_t>& out, uint8_t op, uint8_t op0, uint16_t local) {
  if (local <= 3) {
    out.push_back(static_cast<uint8_t>(op0 + local));
  } else if (local <= 255) {
    out.push_back(op);
    out.push_back(static_cast<uint8_t>(local));
  } else {
    out.push_back(kOpWide);
    out.push_back(op);
    out.push_back(static_cast<uint8_t>(local >> 8));
    out.push_back(static_cast<uint8_t>(local));
  }
}

// Skips one element_value (JVMS 4.7.16.1); depth bounds the recursion on
// untrusted input.
bool SkipElementValue(ByteReader& r, int depth);

bool SkipAnnotation(ByteReader& r, int depth) {
  if (depth > 32) return false;
  r.U2();
  uint16_t pairs = r.U2();
  for (uint16_t i = 0; i < pairs && r.ok(); ++i) {
    r.U2();
    if (!SkipElementValue(r, depth + 1)) return false;
  }
  return r.ok();
}

bool SkipElementValue(ByteReader& r, int depth) {
  if (depth > 32) return false;
  uint8_t tag = r.U1();
  switch (tag) {
    case 'B': case 'C': case 'D': case 'F': case 'I': case 'J': case 'S': case 'Z': case 's': case 'c':
      r.U2();
      break;
    case 'e':
      r.U2();
      r.U2();
      break;
    case '@':
      return SkipAnnotation(r, depth + 1);
    case '[': {
      uint16_t n = r.U2();
      for (uint16_t i = 0; i < n && r.ok(); ++i)
        if (!SkipElementValue(r, depth + 1)) return false;
      break;
    }
    default:
      return false;
  }
  return r.ok();
}

// True when a Runtime(In)VisibleAnnotations attribute names IntrinsicCandidate.
// A malformed annotation table counts as no annotation: HotSpot parses these
// tables itself and rejects what it cannot read.
bool HasIntrinsicCandidate(const ClassFile& cf, const Member& m) {
  for (const auto& a : m.attributes) {
    auto name = cf.AttributeName(a);
    if (name != "RuntimeVisibleAnnotations" && name != "RuntimeInvisibleAnnotations") continue;
    ByteReader r(a.info);
    uint16_t n = r.U2();
    for (uint16_t i = 0; i < n && r.ok(); ++i) {
      size_t at = r.pos();
      if (!SkipAnnotation(r, 0)) break;
      ByteReader t(std::span<const uint8_t>(a.info).subspan(at));
      if (cf.cp.Utf8(t.U2()) == kIntrinsicCandidate) return true;
    }
  }
  return false;
}

// A method whose code is a single `return`.
bool IsEmptyMethod(const ClassFile& cf, const Member& m) {
  for (const auto& a : m.attributes) {
    if (cf.AttributeName(a) != "Code") continue;
    auto c = CodeAttribute::Parse(a.info);
    return c.ok() && c.value().code.size() == 1 && c.value().code[0] == kOpReturn;
  }
  return false;
}

struct MethodOutcome {
  std::optional<SkipReason> skip;
  std::string detail;
  std::vector<uint8_t> code_attribute;  // the new Code attribute's info
  std::vector<size_t> id_pushes;        // offsets (in code_attribute) of the 3-byte id pushes
};

MethodOutcome Skip(SkipReason r, std::string detail = {}) {
  MethodOutcome o;
  o.skip = r;
  o.detail = std::move(detail);
  return o;
}

struct ProbeRefs {
  uint16_t enter = 0, exit = 0;
};

// What goes into a method: probes (a traced method), and code at its start
// after the entry probe (the rename hook).
struct Insertion {
  bool probes = true;
  std::vector<uint8_t> prefix;  // must leave the stack as it found it, and touch no local's type
  uint16_t prefix_stack = 0;    // stack slots the prefix needs
};

class MethodRewriter {
 public:
  MethodRewriter(ClassFile& cf, std::string_view class_name, std::string_view name, std::string_view desc,
                 uint16_t access, ProbeRefs probes, Insertion insertion)
      : cf_(cf), class_name_(class_name), name_(name), desc_(desc), access_(access), probes_(probes),
        ins_(std::move(insertion)), typed_(cf.major_version >= 51) {}

  MethodOutcome Run(const Attribute& code_attr);

 private:
  // Run's phases, in order. Each returns a skip (the method stays as it
  // was, with the reason) or nullopt to go on.
  std::optional<MethodOutcome> ParseAndCheck(const Attribute& code_attr);  // code_, insns_, frames_
  std::optional<MethodOutcome> PlanConstructor();                          // cover_from_, pre_super_
  std::optional<MethodOutcome> NewFrames(std::vector<Frame>* frames);     // after Layout()
  std::optional<MethodOutcome> Write(const std::vector<Frame>& frames, MethodOutcome* o);
  // The simulator's state before each instruction (constructors, widened
  // branches), computed once when first needed.
  const std::vector<std::optional<SlotState>>& States();
  // Index of the instruction starting at old offset `off`, or -1.
  int64_t IndexOf(int64_t off) const {
    if (off < 0 || off >= static_cast<int64_t>(code_.code.size())) return -1;
    int32_t i = index_of_[static_cast<size_t>(off)];
    return i;
  }
  // New offset a jump to old offset `off` lands on (before any probe inserted
  // in front of that instruction); the end of the old code maps to the handler.
  uint32_t MapTarget(int64_t off) const {
    if (off == static_cast<int64_t>(code_.code.size())) return end_code_;
    return start_[static_cast<size_t>(IndexOf(off))];
  }
  bool ValidOffset(int64_t off, bool allow_end) const {
    if (allow_end && off == static_cast<int64_t>(code_.code.size())) return true;
    return IndexOf(off) >= 0;
  }
  uint32_t InsnSize(size_t k, uint32_t at) const;
  // push id; invokestatic enter(I)Z; istore decision
  uint32_t EnterLength() const { return kPushLength + kCallLength + LocalInsnLength(decision_); }
  // push id; iload decision; invokestatic exit(IZ)V
  uint32_t ExitLength() const { return kPushLength + LocalInsnLength(decision_) + kCallLength; }
  uint32_t HandlerLength() const { return ExitLength() + 1; }  // + athrow
  void Layout();
  std::optional<std::string> Emit(std::vector<uint8_t>& out, std::vector<size_t>& pushes);
  std::optional<std::string> RemapTables(std::vector<Frame>& new_frames);
  std::optional<std::string> RemapRanges(Attribute& a, bool local_vars);
  std::optional<std::string> RemapTypeAnnotations(Attribute& a);
  VType MapVType(VType v) const {
    if (v.tag == VType::kUninit) v.offset = at_[static_cast<size_t>(IndexOf(v.offset))];
    return v;
  }

  ClassFile& cf_;
  std::string class_name_, name_, desc_;
  uint16_t access_;
  ProbeRefs probes_;
  Insertion ins_;
  // The method is checked by the type-checking verifier (JVMS 4.10.1) and
  // needs its StackMapTable: class files from version 51 on, and version 50
  // methods that have one. Older code is verified by type inference (4.10.2),
  // which needs no frames: none are written for it.
  bool typed_;
  CodeAttribute code_;
  std::vector<Insn> insns_;
  std::vector<int32_t> index_of_;
  std::vector<Frame> frames_;
  std::vector<VType> initial_locals_;
  std::vector<std::optional<SlotState>> states_;  // States()
  bool has_stack_map_table_ = false;
  std::vector<bool> wide_;        // short branch k is emitted as goto_w (inverted if + goto_w)
  std::vector<uint32_t> start_;   // new offset where old instruction k's probe prefix (if any) begins
  std::vector<uint32_t> at_;      // new offset of old instruction k itself
  uint32_t end_code_ = 0;         // new offset of the catch-all handler
  uint16_t decision_ = 0;         // the local holding enter's decision: the old max_locals
  size_t cover_from_ = 0;         // first old instruction the catch-all covers
  bool pre_super_ = false;        // a second catch-all covers a constructor up to its super()/this() call
};

uint32_t MethodRewriter::InsnSize(size_t k, uint32_t at) const {
  const Insn& in = insns_[k];
  if (in.op == kOpTableswitch || in.op == kOpLookupswitch) {
    uint32_t old_pad = ((in.offset + 4) & ~3u) - (in.offset + 1);
    uint32_t new_pad = ((at + 4) & ~3u) - (at + 1);
    return in.length - old_pad + new_pad;
  }
  if (IsShortBranch(in.op) && wide_[k]) return in.op == kOpGoto ? 5 : 8;
  return in.length;
}

void MethodRewriter::Layout() {
  const size_t n = insns_.size();
  start_.assign(n, 0);
  at_.assign(n, 0);
  // Widening only grows code, so iterate until no branch needs it; padding of
  // switches follows the positions each round.
  for (;;) {
    uint32_t pos = (ins_.probes ? EnterLength() : 0) + static_cast<uint32_t>(ins_.prefix.size());
    for (size_t k = 0; k < n; ++k) {
      start_[k] = pos;
      if (ins_.probes && IsReturn(insns_[k].op)) pos += ExitLength();
      at_[k] = pos;
      pos += InsnSize(k, pos);
    }
    end_code_ = pos;
    bool grew = false;
    for (size_t k = 0; k < n; ++k) {
      const Insn& in = insns_[k];
      if (!IsShortBranch(in.op) || wide_[k]) continue;
      int64_t target = MapTarget(BranchTargets(code_.code, in)[0]);
      int64_t delta = target - at_[k];
      if (delta < std::numeric_limits<int16_t>::min() || delta > std::numeric_limits<int16_t>::max()) {
        wide_[k] = true;
        grew = true;
      }
    }
    if (!grew) return;
  }
}

std::optional<std::string> MethodRewriter::Emit(std::vector<uint8_t>& out, std::vector<size_t>& pushes) {
  auto push_id = [&]() {
    pushes.push_back(out.size());
    PutU1(out, kOpSipush);  // patched with the id once assign_id has run
    PutU2(out, 0);
  };
  auto enter = [&]() {
    push_id();
    PutU1(out, kOpInvokestatic);
    PutU2(out, probes_.enter);
    PutLocalInsn(out, kOpIstore, kOpIstore0, decision_);
  };
  auto exit = [&]() {
    push_id();
    PutLocalInsn(out, kOpIload, kOpIload0, decision_);
    PutU1(out, kOpInvokestatic);
    PutU2(out, probes_.exit);
  };
  if (ins_.probes) enter();
  PutBytes(out, ins_.prefix);
  const auto& code = code_.code;
  for (size_t k = 0; k < insns_.size(); ++k) {
    const Insn& in = insns_[k];
    if (out.size() != start_[k]) return "layout mismatch";
    if (ins_.probes && IsReturn(in.op)) exit();
    const uint32_t at = at_[k];
    if (IsShortBranch(in.op)) {
      int64_t target = MapTarget(BranchTargets(code, in)[0]);
      if (!wide_[k]) {
        PutU1(out, in.op);
        PutU2(out, static_cast<uint16_t>(static_cast<int16_t>(target - at)));
      } else if (in.op == kOpGoto) {
        PutU1(out, kOpGotoW);
        PutU4(out, static_cast<uint32_t>(static_cast<int32_t>(target - at)));
      } else {
        // if<cond> L  ==>  if<!cond> +8; goto_w L
        PutU1(out, InvertBranch(in.op));
        PutU2(out, 8);
        PutU1(out, kOpGotoW);
        PutU4(out, static_cast<uint32_t>(static_cast<int32_t>(target - (at + 3))));
      }
    } else if (in.op == kOpGotoW) {
      int64_t target = MapTarget(BranchTargets(code, in)[0]);
      PutU1(out, in.op);
      PutU4(out, static_cast<uint32_t>(static_cast<int32_t>(target - at)));
    } else if (in.op == kOpTableswitch || in.op == kOpLookupswitch) {
      auto targets = BranchTargets(code, in);
      size_t base = (in.offset + 4) & ~size_t{3};
      PutU1(out, in.op);
      while (out.size() % 4 != 0) PutU1(out, 0);
      auto rel = [&](int64_t old_target) { return static_cast<uint32_t>(static_cast<int32_t>(MapTarget(old_target) - at)); };
      PutU4(out, rel(targets[0]));
      if (in.op == kOpTableswitch) {
        PutBytes(out, std::span<const uint8_t>(code).subspan(base + 4, 8));  // low, high
        for (size_t t = 1; t < targets.size(); ++t) PutU4(out, rel(targets[t]));
      } else {
        PutBytes(out, std::span<const uint8_t>(code).subspan(base + 4, 4));  // npairs
        for (size_t t = 1; t < targets.size(); ++t) {
          PutBytes(out, std::span<const uint8_t>(code).subspan(base + 8 + (t - 1) * 8, 4));  // match
          PutU4(out, rel(targets[t]));
        }
      }
    } else {
      PutBytes(out, std::span<const uint8_t>(code).subspan(in.offset, in.length));
    }
    if (out.size() != at + InsnSize(k, at)) return "instruction size mismatch";
  }
  if (out.size() != end_code_) return "layout mismatch at the end";
  if (!ins_.probes) return std::nullopt;
  exit();
  PutU1(out, kOpAthrow);
  if (pre_super_) {  // the same code; only its stack map frame differs
    exit();
    PutU1(out, kOpAthrow);
  }
  return std::nullopt;
}

// LineNumberTable, LocalVariableTable, LocalVariableTypeTable: offsets move
// with their instructions. A range starting at 0 keeps starting at 0 so the
// parameters stay visible in the entry probe.
std::optional<std::string> MethodRewriter::RemapRanges(Attribute& a, bool local_vars) {
  ByteReader r(a.info);
  uint16_t n = r.U2();
  std::vector<uint8_t> out;
  PutU2(out, n);
  const size_t entry = local_vars ? 10 : 4;
  for (uint16_t i = 0; i < n; ++i) {
    auto e = r.Bytes(entry);
    if (!r.ok()) return "truncated line/variable table";
    uint16_t start = ReadU2(e, 0);
    if (!ValidOffset(start, false)) return "line/variable table offset not on an instruction";
    uint32_t new_start = start == 0 ? 0 : MapTarget(start);
    PutU2(out, static_cast<uint16_t>(new_start));
    if (local_vars) {
      int64_t end = int64_t{start} + ReadU2(e, 2);
      if (!ValidOffset(end, true)) return "variable range end not on an instruction";
      PutU2(out, static_cast<uint16_t>(MapTarget(end) - new_start));
      PutBytes(out, e.subspan(4));
    } else {
      PutBytes(out, e.subspan(2));
    }
  }
  if (r.remaining() != 0) return "bytes after a line/variable table";
  a.info = std::move(out);
  return std::nullopt;
}

// Runtime(In)VisibleTypeAnnotations on Code (JVMS 4.7.20): the targets that
// name bytecode offsets move with their instructions; the rest of each
// annotation is copied. Exception-table indices stay valid (the catch-alls are
// appended after the method's own entries).
std::optional<std::string> MethodRewriter::RemapTypeAnnotations(Attribute& a) {
  ByteReader r(a.info);
  const uint16_t n = r.U2();
  std::vector<uint8_t> out;
  PutU2(out, n);
  auto insn = [&](uint16_t off) -> std::optional<uint16_t> {
    if (!ValidOffset(off, false)) return std::nullopt;
    return static_cast<uint16_t>(at_[static_cast<size_t>(IndexOf(off))]);
  };
  for (uint16_t i = 0; i < n && r.ok(); ++i) {
    const uint8_t target = r.U1();
    PutU1(out, target);
    if (target == 0x40 || target == 0x41) {  // local_variable, resource_variable: localvar_target
      const uint16_t len = r.U2();
      PutU2(out, len);
      for (uint16_t k = 0; k < len && r.ok(); ++k) {
        const uint16_t start = r.U2(), length = r.U2(), index = r.U2();
        if (!ValidOffset(start, false) || !ValidOffset(int64_t{start} + length, true))
          return "type annotation variable range not on instructions";
        const uint32_t new_start = start == 0 ? 0 : MapTarget(start);
        PutU2(out, static_cast<uint16_t>(new_start));
        PutU2(out, static_cast<uint16_t>(MapTarget(int64_t{start} + length) - new_start));
        PutU2(out, index);
      }
    } else if (target == 0x42) {  // exception_parameter: catch_target
      PutU2(out, r.U2());
    } else if (target >= 0x43 && target <= 0x4B) {  // instanceof .. method reference type argument
      const auto off = insn(r.U2());
      if (!off) return "type annotation offset not on an instruction";
      PutU2(out, *off);
      if (target >= 0x47) PutU1(out, r.U1());  // type_argument_index
    } else {
      return "type annotation target " + std::to_string(target) + " does not belong on code";
    }
    const uint8_t path_length = r.U1();  // type_path
    PutU1(out, path_length);
    PutBytes(out, r.Bytes(size_t{path_length} * 2));
    const size_t at = r.pos();  // type_index and the element values, copied as they are
    if (!SkipAnnotation(r, 0)) return "malformed type annotation";
    PutBytes(out, std::span<const uint8_t>(a.info).subspan(at, r.pos() - at));
  }
  if (!r.ok() || r.remaining() != 0) return "malformed type annotation table";
  a.info = std::move(out);
  return std::nullopt;
}

const std::vector<std::optional<SlotState>>& MethodRewriter::States() {
  if (states_.empty()) {
    states_.resize(insns_.size());
    auto keep = [&](size_t k, const SlotState* s) {
      if (s) states_[k] = *s;
    };
    // Without a StackMapTable (a class file before version 50, or a boot
    // class as HotSpot hands it to a retransform) no frame restarts the walk
    // after a jump: the branches' states are carried to their targets.
    if (has_stack_map_table_) {
      SimulateLinear(code_.code, insns_, frames_, initial_locals_, code_.max_locals, cf_.cp, class_name_, keep);
    } else {
      SimulateFlow(code_.code, insns_, initial_locals_, code_.max_locals, cf_.cp, class_name_, keep);
    }
  }
  return states_;
}

std::optional<MethodOutcome> MethodRewriter::ParseAndCheck(const Attribute& code_attr) {
  auto parsed = CodeAttribute::Parse(code_attr.info);
  if (!parsed.ok()) return Skip(SkipReason::kMalformed, parsed.error().ToString());
  code_ = std::move(parsed.value());
  auto decoded = DecodeInstructions(code_.code);
  if (!decoded.ok()) return Skip(SkipReason::kMalformed, decoded.error().ToString());
  insns_ = std::move(decoded.value());
  index_of_.assign(code_.code.size(), -1);
  for (size_t k = 0; k < insns_.size(); ++k) index_of_[insns_[k].offset] = static_cast<int32_t>(k);
  for (const Insn& in : insns_) {
    if (in.op == kOpJsr || in.op == kOpJsrW || in.op == kOpRet || (in.op == kOpWide && in.wide_op == kOpRet))
      return Skip(SkipReason::kMalformed, "jsr/ret subroutine");
    for (int64_t t : BranchTargets(code_.code, in))
      if (!ValidOffset(t, false)) return Skip(SkipReason::kMalformed, "branch target not on an instruction");
  }
  for (const auto& e : code_.exceptions) {
    if (!ValidOffset(e.start_pc, false) || !ValidOffset(e.end_pc, true) || !ValidOffset(e.handler_pc, false) ||
        e.start_pc >= e.end_pc)
      return Skip(SkipReason::kMalformed, "bad exception table entry");
  }
  if (code_.exceptions.size() >= 65535) return Skip(SkipReason::kTooLarge, "exception table full");
  if (code_.max_stack >= 65535) return Skip(SkipReason::kTooLarge, "max_stack");

  auto md = ParseMethodDescriptor(desc_);
  if (!md) return Skip(SkipReason::kMalformed, "bad method descriptor");
  initial_locals_ = InitialLocals(class_name_, name_, *md, (access_ & kAccStatic) != 0);
  size_t smt_count = 0;
  for (const auto& a : code_.attributes) {
    if (cf_.AttributeName(a) != "StackMapTable") continue;
    if (++smt_count > 1) return Skip(SkipReason::kMalformed, "two StackMapTable attributes");
    auto f = DecodeStackMapTable(a.info, cf_.cp, initial_locals_);
    if (!f.ok()) return Skip(SkipReason::kMalformed, f.error().ToString());
    frames_ = std::move(f.value());
  }
  has_stack_map_table_ = smt_count > 0;
  if (smt_count > 0) typed_ = true;
  for (const auto& f : frames_) {
    if (!ValidOffset(f.offset, false)) return Skip(SkipReason::kMalformed, "stack map frame not on an instruction");
    for (const auto* list : {&f.locals, &f.stack})
      for (const auto& v : *list)
        if (v.tag == VType::kUninit && (IndexOf(v.offset) < 0 || code_.code[v.offset] != kOpNew))
          return Skip(SkipReason::kMalformed, "uninitialized type not at a new instruction");
  }

  return std::nullopt;
}

// The states the simulator reports are needed for constructors (where does
// `this` become initialized) and for widened conditional branches.
std::optional<MethodOutcome> MethodRewriter::PlanConstructor() {
  cover_from_ = 0;
  pre_super_ = false;
  const bool ctor = ins_.probes && name_ == "<init>" && class_name_ != "java/lang/Object";
  if (!ctor) return std::nullopt;
  const std::vector<std::optional<SlotState>>& states = States();
  bool found = false;
  for (size_t k = 0; k < insns_.size() && !found; ++k) {
    const Insn& in = insns_[k];
    if (in.op != kOpInvokespecial) continue;
    auto nt = cf_.cp.RefNameAndType(ReadU2(code_.code, in.offset + 1));
    if (!nt || nt->first != "<init>") continue;
    if (!states[k]) return Skip(SkipReason::kMalformed, "constructor: stack state unknown before an <init> call");
    auto d = ParseMethodDescriptor(nt->second);
    if (!d) return Skip(SkipReason::kMalformed, "bad <init> descriptor");
    size_t args = 0;
    for (const auto& p : d->params) args += static_cast<size_t>(SlotSize(p));
    const auto& st = states[k]->stack;
    if (st.size() <= args) return Skip(SkipReason::kMalformed, "constructor: stack underflow");
    if (st[st.size() - 1 - args].tag == VType::kUninitThis) {
      cover_from_ = k + 1;
      found = true;
    }
  }
  if (!found || cover_from_ >= insns_.size())
    return Skip(SkipReason::kMalformed, "constructor: no super()/this() call found");
  // Past that call `this` must stay initialized, or the handler's frame
  // (no uninitializedThis, so no flagThisUninit) would not match.
  for (const auto& f : frames_) {
    if (f.offset < insns_[cover_from_].offset) continue;
    for (const auto* list : {&f.locals, &f.stack})
      for (const auto& v : *list)
        if (v.tag == VType::kUninitThis)
          return Skip(SkipReason::kMalformed, "constructor: uninitializedThis after the super() call");
  }
  // The code before that call gets a catch-all of its own, whose frame
  // holds uninitializedThis in local 0 (and so carries flagThisUninit, as
  // every frame there does), so an exception thrown by the call's
  // arguments records the exit too. The call itself stays uncovered:
  // HotSpot 17 checks a handler over it against the frames before and
  // after it, and no frame matches both an uninitializedThis and an
  // initialized `this` with flagThisUninit. Only when every instruction
  // up to the call is known to keep uninitializedThis in local 0 (javac's
  // code always does).
  pre_super_ = cover_from_ >= 2;
  for (size_t k = 0; k < cover_from_ && pre_super_; ++k)
    pre_super_ = states[k] && !states[k]->locals.empty() && states[k]->locals[0].tag == VType::kUninitThis;
  return std::nullopt;
}

// Frames: the original ones at their new offsets, plus one after each
// widened conditional branch (its fall-through is now a jump target right
// after an unconditional goto_w), plus the catch-all handlers'.
std::optional<MethodOutcome> MethodRewriter::NewFrames(std::vector<Frame>* out) {
  std::vector<Frame>& frames = *out;
  const uint32_t pre_super_handler = end_code_ + HandlerLength();
  std::vector<bool> has_frame(insns_.size(), !typed_);
  for (const auto& f : frames_) has_frame[static_cast<size_t>(IndexOf(f.offset))] = true;
  for (const auto& f : frames_) {
    Frame nf;
    nf.offset = start_[static_cast<size_t>(IndexOf(f.offset))];
    for (const auto& v : f.locals) nf.locals.push_back(MapVType(v));
    for (const auto& v : f.stack) nf.stack.push_back(MapVType(v));
    frames.push_back(std::move(nf));
  }
  for (size_t k = 0; k < insns_.size(); ++k) {
    if (!wide_[k] || !IsConditionalBranch(insns_[k].op)) continue;
    if (k + 1 >= insns_.size()) return Skip(SkipReason::kMalformed, "conditional branch falls off the code");
    if (has_frame[k + 1]) continue;
    const auto& state = States()[k];
    if (!state) return Skip(SkipReason::kMalformed, "state unknown at a branch widened to goto_w");
    SlotState s = *state;
    if (!ApplyInstruction(code_.code, insns_[k], cf_.cp, class_name_, s))
      return Skip(SkipReason::kMalformed, "state unknown at a branch widened to goto_w");
    Frame nf = ToFrame(s, start_[k + 1]);
    for (auto& v : nf.locals) v = MapVType(v);
    for (auto& v : nf.stack) v = MapVType(v);
    frames.push_back(std::move(nf));
  }
  if (ins_.probes && typed_) {
    Frame handler;
    handler.offset = end_code_;
    handler.stack.push_back(VType::Object("java/lang/Throwable"));
    frames.push_back(std::move(handler));
  }
  if (pre_super_ && typed_) {
    Frame h;
    h.offset = pre_super_handler;
    h.locals.push_back(VType::Of(VType::kUninitThis));
    h.stack.push_back(VType::Object("java/lang/Throwable"));
    frames.push_back(std::move(h));
  }
  std::sort(frames.begin(), frames.end(), [](const Frame& a, const Frame& b) { return a.offset < b.offset; });
  // Every frame is past the entry probe, so the decision is an int in each:
  // pad the locals with top up to its index (a long or double takes two).
  if (ins_.probes) {
    for (Frame& f : frames) {
      uint32_t slots = 0;
      for (const VType& v : f.locals) slots += v.wide() ? 2 : 1;
      if (slots > decision_) return Skip(SkipReason::kMalformed, "stack map frame with more locals than max_locals");
      for (; slots < decision_; ++slots) f.locals.push_back(VType::Of(VType::kTop));
      f.locals.push_back(VType::Of(VType::kInteger));
    }
  }
  return std::nullopt;
}

std::optional<MethodOutcome> MethodRewriter::Write(const std::vector<Frame>& frames, MethodOutcome* out) {
  MethodOutcome& o = *out;
  const uint32_t pre_super_handler = end_code_ + HandlerLength();
  CodeAttribute nc;
  // The exit probes push two ints above whatever is there (a return value;
  // in the handler, the Throwable); the entry probe and the prefix run on
  // the empty stack at the start.
  nc.max_stack = std::max<uint16_t>(static_cast<uint16_t>(code_.max_stack + (ins_.probes ? 2 : 0)),
                                    std::max<uint16_t>(ins_.probes ? 3 : 0, ins_.prefix_stack));
  nc.max_locals = static_cast<uint16_t>(code_.max_locals + (ins_.probes ? 1 : 0));
  std::vector<size_t> pushes;
  if (auto err = Emit(nc.code, pushes)) return Skip(SkipReason::kMalformed, *err);
  for (const auto& e : code_.exceptions)
    nc.exceptions.push_back({static_cast<uint16_t>(MapTarget(e.start_pc)), static_cast<uint16_t>(MapTarget(e.end_pc)),
                             static_cast<uint16_t>(MapTarget(e.handler_pc)), e.catch_type});
  if (ins_.probes)
    nc.exceptions.push_back({static_cast<uint16_t>(start_[cover_from_]), static_cast<uint16_t>(end_code_),
                             static_cast<uint16_t>(end_code_), 0});
  if (pre_super_)
    nc.exceptions.push_back({static_cast<uint16_t>(start_[0]), static_cast<uint16_t>(at_[cover_from_ - 1]),
                             static_cast<uint16_t>(pre_super_handler), 0});
  // A frame may need a class constant (the probes' handler catches
  // Throwable): one the pool has no room for is a full pool, not a malformed class.
  auto smt_failed = [&](const Error& err) {
    const bool full = cf_.cp.count() + 2 > 65535;  // a Class needs its Utf8 too
    return Skip(full ? SkipReason::kTooLarge : SkipReason::kMalformed, full ? "constant pool full" : err.ToString());
  };
  bool wrote_smt = false;
  for (const auto& a : code_.attributes) {
    auto name = cf_.AttributeName(a);
    Attribute na = a;
    if (name == "StackMapTable") {
      na.info.clear();
      if (auto err = EncodeStackMapTable(frames, initial_locals_, cf_.cp, na.info)) return smt_failed(*err);
      wrote_smt = true;
    } else if (name == "LineNumberTable" || name == "LocalVariableTable" || name == "LocalVariableTypeTable") {
      if (auto err = RemapRanges(na, name != "LineNumberTable")) return Skip(SkipReason::kMalformed, *err);
    } else if (name == "RuntimeVisibleTypeAnnotations" || name == "RuntimeInvisibleTypeAnnotations") {
      // One that cannot be read is dropped rather than left with stale
      // offsets: only tools (javap, checkers) read these, never the JVM.
      if (RemapTypeAnnotations(na)) continue;
    }
    nc.attributes.push_back(std::move(na));
  }
  if (!wrote_smt && !frames.empty()) {
    Attribute na;
    na.name_index = cf_.cp.AddUtf8("StackMapTable");
    if (!na.name_index) return Skip(SkipReason::kTooLarge, "constant pool full");
    if (auto err = EncodeStackMapTable(frames, initial_locals_, cf_.cp, na.info)) return smt_failed(*err);
    nc.attributes.push_back(std::move(na));
  }
  // Offsets of the pushes inside the Code attribute's info: after max_stack,
  // max_locals and code_length.
  for (size_t p : pushes) o.id_pushes.push_back(8 + p);
  if (auto err = nc.Write(o.code_attribute)) return Skip(SkipReason::kTooLarge, err->ToString());
  return std::nullopt;
}

MethodOutcome MethodRewriter::Run(const Attribute& code_attr) {
  if (auto skip = ParseAndCheck(code_attr)) return *skip;
  if (auto skip = PlanConstructor()) return *skip;
  if (ins_.probes && code_.max_locals == 65535) return Skip(SkipReason::kTooLarge, "no local left for the entry's decision");
  if (ins_.probes && code_.max_stack > 65533) return Skip(SkipReason::kTooLarge, "max_stack would overflow");
  decision_ = code_.max_locals;
  wide_.assign(insns_.size(), false);
  Layout();
  const uint32_t pre_super_handler = end_code_ + HandlerLength();
  const uint64_t new_length =
      ins_.probes ? uint64_t{pre_super_handler} + (pre_super_ ? HandlerLength() : 0) : uint64_t{end_code_};
  if (new_length > 65535) return Skip(SkipReason::kTooLarge, "code would exceed 65535 bytes");

  std::vector<Frame> frames;
  if (auto skip = NewFrames(&frames)) return *skip;
  MethodOutcome o;
  if (auto skip = Write(frames, &o)) return *skip;
  return o;
}

}  // namespace

RewriteResult RewriteClass(const uint8_t* data, size_t size, const RewriteRequest& req) {
  RewriteResult res;
  auto parsed = ClassFile::Parse(std::span<const uint8_t>(data, size));
  if (!parsed.ok()) {
    res.error = parsed.error().ToString();
    return res;
  }
  ClassFile& cf = parsed.value();
  res.class_name = std::string(*cf.cp.ClassName(cf.this_class));
  if (cf.major_version < 45) {
    res.error = "class file version " + std::to_string(cf.major_version) + " < 45";
    return res;
  }
  const bool probe_class = res.class_name == req.probe.owner;
  ProbeRefs probes;
  // want_id_sites: the pushes by method and Code attribute, made absolute once the class is written.
  struct PendingSite {
    const Member* method;
    const Attribute* code;
    uint32_t at;  // in the Code attribute's info
    size_t traced;
  };
  std::vector<PendingSite> pending_sites;
  bool ids_patchable = true;
  for (auto& m : cf.methods) {
    auto name_view = cf.cp.Utf8(m.name_index);
    auto desc_view = cf.cp.Utf8(m.descriptor_index);
    if (!name_view || !desc_view) {
      res.error = "method name or descriptor is not a Utf8 constant";
      return res;
    }
    // Copies: appending to the constant pool may move the strings views point into.
    const std::optional<std::string> name{std::string(*name_view)}, desc{std::string(*desc_view)};
    auto skip = [&](SkipReason r, std::string detail = {}) {
      res.skipped.push_back({std::string(*name), std::string(*desc), r, std::move(detail)});
    };
    if (m.access_flags & kAccNative) {
      skip(SkipReason::kNative);
      continue;
    }
    if (m.access_flags & kAccAbstract) {
      skip(SkipReason::kAbstract);
      continue;
    }
    if (probe_class) {
      skip(SkipReason::kExcluded, "the probe class itself");
      continue;
    }
    if (m.access_flags & kAccBridge) {
      skip(SkipReason::kBridgeOrSynthetic);
      continue;
    }
    if (HasIntrinsicCandidate(cf, m)) {
      skip(SkipReason::kIntrinsicCandidate);
      continue;
    }
    if (*name == "finalize" && *desc == "()V" && !(m.access_flags & kAccStatic) && IsEmptyMethod(cf, m)) {
      // HotSpot registers instances for finalization only when finalize() is
      // not a lone `return` (ClassFileParser's _has_empty_finalizer). A probe
      // in Object.finalize() would make every object in the VM finalizable.
      skip(SkipReason::kExcluded, "empty finalize(): probes would make every instance finalizable");
      continue;
    }
    Attribute* code = nullptr;
    int code_count = 0;
    for (auto& a : m.attributes) {
      if (cf.AttributeName(a) == "Code") {
        code = &a;
        ++code_count;
      }
    }
    if (code_count != 1) {
      skip(SkipReason::kMalformed, "not exactly one Code attribute");
      continue;
    }
    const bool hook = req.rename_hook && res.class_name == kRenameHookClass && *name == kRenameHookMethod &&
                      *desc == kRenameHookDescriptor && !(m.access_flags & kAccStatic);
    // The always-inlined rule, on the original code (probes would make it bigger).
    // (Code's info: max_stack u2, max_locals u2, code_length u4, code...: most methods are
    // too big for it, and are not parsed twice.)
    const std::vector<uint8_t>& info = code->info;
    const bool small = info.size() >= 8 && info[4] == 0 && info[5] == 0 && info[6] == 0 && info[7] <= kMaxInlineSize;
    if (req.skip_inlined && !hook && small) {
      auto c = CodeAttribute::Parse(code->info);
      if (c.ok() && AlwaysInlined(*name, m.access_flags, c.value().code, c.value().exceptions.size(), cf.cp)) {
        if (req.selected && !req.selected(res.class_name, *name)) {
          skip(SkipReason::kExcluded);
        } else {
          skip(SkipReason::kInlined);
        }
        continue;
      }
    }
    // Shed by the overhead budget: no probes and no handler, so the method's
    // calls cost nothing and leave no trace (nesting stays exact: neither an
    // entry nor an exit of it is ever recorded by this version of the class).
    const bool shed = req.shed && req.shed(res.class_name, *name, *desc);
    if (shed && !hook) {
      skip(SkipReason::kShed);
      continue;
    }
    // A hooked method is decided first: it is rewritten for the hook even
    // when it is not traced.
    std::optional<uint32_t> id;
    if (hook && !shed) id = req.assign_id ? req.assign_id(res.class_name, *name, *desc) : std::nullopt;
    Insertion ins;
    ins.probes = !hook || id.has_value();
    if (!probes.enter && ins.probes) {
      probes.enter = cf.cp.AddMethodref(req.probe.owner, req.probe.enter, std::string(kEnterDescriptor));
      probes.exit = cf.cp.AddMethodref(req.probe.owner, req.probe.exit, std::string(kExitDescriptor));
      if (!probes.enter || !probes.exit) {
        res.error = "constant pool full";
        res.traced.clear();
        return res;
      }
    }
    if (hook) {
      const uint16_t renaming = cf.cp.AddMethodref(req.probe.owner, req.probe.renaming, std::string(kRenamingDescriptor));
      if (!renaming) {
        res.error = "constant pool full";
        res.traced.clear();
        return res;
      }
      ins.prefix = {kOpAload0, kOpAload1, kOpInvokestatic, static_cast<uint8_t>(renaming >> 8),
                    static_cast<uint8_t>(renaming), kOpAstore1};
      ins.prefix_stack = 2;
    }
    MethodRewriter mr(cf, res.class_name, *name, *desc, m.access_flags, probes, std::move(ins));
    MethodOutcome o = mr.Run(*code);
    if (o.skip) {
      skip(*o.skip, std::move(o.detail));
      continue;
    }
    if (!hook) id = req.assign_id ? req.assign_id(res.class_name, *name, *desc) : std::nullopt;
    if (!id) {
      skip(shed ? SkipReason::kShed : SkipReason::kExcluded);
      if (!hook) continue;
    } else {
      // sipush takes ids up to 32767; larger ones come from an Integer constant
      // through ldc_w, which is also 3 bytes, so the layout does not change.
      uint8_t push[3];
      if (*id <= 32767) {
        push[0] = kOpSipush;
        push[1] = static_cast<uint8_t>(*id >> 8);
        push[2] = static_cast<uint8_t>(*id);
      } else {
        uint16_t c = cf.cp.AddInteger(static_cast<int32_t>(*id));
        if (!c) {
          res.error = "constant pool full";
          res.traced.clear();
          return res;
        }
        push[0] = kOpLdcW;
        push[1] = static_cast<uint8_t>(c >> 8);
        push[2] = static_cast<uint8_t>(c);
      }
      for (size_t p : o.id_pushes) std::copy(push, push + kPushLength, o.code_attribute.begin() + static_cast<ptrdiff_t>(p));
      if (req.want_id_sites) {
        ids_patchable &= push[0] == kOpSipush;
        for (size_t p : o.id_pushes) pending_sites.push_back({&m, code, static_cast<uint32_t>(p), res.traced.size()});
      }
      res.traced.push_back({std::string(*name), std::string(*desc), *id, m.access_flags});
    }
    code->info = std::move(o.code_attribute);
    res.rename_hooked |= hook;
  }
  if (!res.traced.empty() || res.rename_hooked) {
    if (req.want_id_sites) {
      ClassFile::AttributeOffsets at;
      res.bytes = cf.Write(&at);
      res.ids_patchable = ids_patchable;
      for (const PendingSite& p : pending_sites) {
        const size_t info = at.Of(cf, p.method, p.code);
        if (info == 0) {
          res.ids_patchable = false;
          break;
        }
        res.id_sites.push_back({static_cast<uint32_t>(info + p.at), static_cast<uint32_t>(p.traced)});
      }
      if (!res.ids_patchable) res.id_sites.clear();
    } else {
      res.bytes = cf.Write();
    }
    res.changed = true;
  }
  return res;
}

}  // namespace lookback::jvm
