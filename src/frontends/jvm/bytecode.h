// Bytecode-level pieces of the rewriter: instruction decoding, descriptors,
// verification types, StackMapTable decoding/encoding, and a straight-line
// type simulator (JVMS 4.10.1). All input is untrusted: decoding checks every
// length and index and reports problems as values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/jvm/classfile.h"

namespace lookback::jvm {

// Every opcode of the JVM specification (JVMS 6.5; grouped as in the table of
// JVMS chapter 7), named kOp + the mnemonic in CamelCase without underscores.
// The reserved opcodes (breakpoint, impdep1/2) are left out: they never appear
// in a class file.
// clang-format off
enum Opcode : uint8_t {
  // Constants
  kOpNop = 0x00, kOpAconstNull = 0x01,
  kOpIconstM1 = 0x02, kOpIconst0 = 0x03, kOpIconst1 = 0x04, kOpIconst2 = 0x05,
  kOpIconst3 = 0x06, kOpIconst4 = 0x07, kOpIconst5 = 0x08,
  kOpLconst0 = 0x09, kOpLconst1 = 0x0a, kOpFconst0 = 0x0b, kOpFconst1 = 0x0c, kOpFconst2 = 0x0d,
  kOpDconst0 = 0x0e, kOpDconst1 = 0x0f,
  kOpBipush = 0x10, kOpSipush = 0x11, kOpLdc = 0x12, kOpLdcW = 0x13, kOpLdc2W = 0x14,
  // Loads
  kOpIload = 0x15, kOpLload = 0x16, kOpFload = 0x17, kOpDload = 0x18, kOpAload = 0x19,
  kOpIload0 = 0x1a, kOpIload1 = 0x1b, kOpIload2 = 0x1c, kOpIload3 = 0x1d,
  kOpLload0 = 0x1e, kOpLload1 = 0x1f, kOpLload2 = 0x20, kOpLload3 = 0x21,
  kOpFload0 = 0x22, kOpFload1 = 0x23, kOpFload2 = 0x24, kOpFload3 = 0x25,
  kOpDload0 = 0x26, kOpDload1 = 0x27, kOpDload2 = 0x28, kOpDload3 = 0x29,
  kOpAload0 = 0x2a, kOpAload1 = 0x2b, kOpAload2 = 0x2c, kOpAload3 = 0x2d,
  kOpIaload = 0x2e, kOpLaload = 0x2f, kOpFaload = 0x30, kOpDaload = 0x31,
  kOpAaload = 0x32, kOpBaload = 0x33, kOpCaload = 0x34, kOpSaload = 0x35,
  // Stores
  kOpIstore = 0x36, kOpLstore = 0x37, kOpFstore = 0x38, kOpDstore = 0x39, kOpAstore = 0x3a,
  kOpIstore0 = 0x3b, kOpIstore1 = 0x3c, kOpIstore2 = 0x3d, kOpIstore3 = 0x3e,
  kOpLstore0 = 0x3f, kOpLstore1 = 0x40, kOpLstore2 = 0x41, kOpLstore3 = 0x42,
  kOpFstore0 = 0x43, kOpFstore1 = 0x44, kOpFstore2 = 0x45, kOpFstore3 = 0x46,
  kOpDstore0 = 0x47, kOpDstore1 = 0x48, kOpDstore2 = 0x49, kOpDstore3 = 0x4a,
  kOpAstore0 = 0x4b, kOpAstore1 = 0x4c, kOpAstore2 = 0x4d, kOpAstore3 = 0x4e,
  kOpIastore = 0x4f, kOpLastore = 0x50, kOpFastore = 0x51, kOpDastore = 0x52,
  kOpAastore = 0x53, kOpBastore = 0x54, kOpCastore = 0x55, kOpSastore = 0x56,
  // Stack
  kOpPop = 0x57, kOpPop2 = 0x58, kOpDup = 0x59, kOpDupX1 = 0x5a, kOpDupX2 = 0x5b,
  kOpDup2 = 0x5c, kOpDup2X1 = 0x5d, kOpDup2X2 = 0x5e, kOpSwap = 0x5f,
  // Math
  kOpIadd = 0x60, kOpLadd = 0x61, kOpFadd = 0x62, kOpDadd = 0x63,
  kOpIsub = 0x64, kOpLsub = 0x65, kOpFsub = 0x66, kOpDsub = 0x67,
  kOpImul = 0x68, kOpLmul = 0x69, kOpFmul = 0x6a, kOpDmul = 0x6b,
  kOpIdiv = 0x6c, kOpLdiv = 0x6d, kOpFdiv = 0x6e, kOpDdiv = 0x6f,
  kOpIrem = 0x70, kOpLrem = 0x71, kOpFrem = 0x72, kOpDrem = 0x73,
  kOpIneg = 0x74, kOpLneg = 0x75, kOpFneg = 0x76, kOpDneg = 0x77,
  kOpIshl = 0x78, kOpLshl = 0x79, kOpIshr = 0x7a, kOpLshr = 0x7b, kOpIushr = 0x7c, kOpLushr = 0x7d,
  kOpIand = 0x7e, kOpLand = 0x7f, kOpIor = 0x80, kOpLor = 0x81, kOpIxor = 0x82, kOpLxor = 0x83,
  kOpIinc = 0x84,
  // Conversions
  kOpI2l = 0x85, kOpI2f = 0x86, kOpI2d = 0x87,
  kOpL2i = 0x88, kOpL2f = 0x89, kOpL2d = 0x8a,
  kOpF2i = 0x8b, kOpF2l = 0x8c, kOpF2d = 0x8d,
  kOpD2i = 0x8e, kOpD2l = 0x8f, kOpD2f = 0x90,
  kOpI2b = 0x91, kOpI2c = 0x92, kOpI2s = 0x93,
  // Comparisons
  kOpLcmp = 0x94, kOpFcmpl = 0x95, kOpFcmpg = 0x96, kOpDcmpl = 0x97, kOpDcmpg = 0x98,
  kOpIfeq = 0x99, kOpIfne = 0x9a, kOpIflt = 0x9b, kOpIfge = 0x9c, kOpIfgt = 0x9d, kOpIfle = 0x9e,
  kOpIfIcmpeq = 0x9f, kOpIfIcmpne = 0xa0, kOpIfIcmplt = 0xa1, kOpIfIcmpge = 0xa2,
  kOpIfIcmpgt = 0xa3, kOpIfIcmple = 0xa4, kOpIfAcmpeq = 0xa5, kOpIfAcmpne = 0xa6,
  // Control
  kOpGoto = 0xa7, kOpJsr = 0xa8, kOpRet = 0xa9, kOpTableswitch = 0xaa, kOpLookupswitch = 0xab,
  kOpIreturn = 0xac, kOpLreturn = 0xad, kOpFreturn = 0xae, kOpDreturn = 0xaf, kOpAreturn = 0xb0, kOpReturn = 0xb1,
  // References
  kOpGetstatic = 0xb2, kOpPutstatic = 0xb3, kOpGetfield = 0xb4, kOpPutfield = 0xb5,
  kOpInvokevirtual = 0xb6, kOpInvokespecial = 0xb7, kOpInvokestatic = 0xb8,
  kOpInvokeinterface = 0xb9, kOpInvokedynamic = 0xba,
  kOpNew = 0xbb, kOpNewarray = 0xbc, kOpAnewarray = 0xbd, kOpArraylength = 0xbe, kOpAthrow = 0xbf,
  kOpCheckcast = 0xc0, kOpInstanceof = 0xc1, kOpMonitorenter = 0xc2, kOpMonitorexit = 0xc3,
  // Extended
  kOpWide = 0xc4, kOpMultianewarray = 0xc5, kOpIfnull = 0xc6, kOpIfnonnull = 0xc7, kOpGotoW = 0xc8, kOpJsrW = 0xc9,
};
// clang-format on

struct Insn {
  uint32_t offset = 0;
  uint32_t length = 0;
  uint8_t op = 0;
  uint8_t wide_op = 0;  // the modified opcode after `wide`
};

// The length in bytes (opcode and operands) of an instruction with this
// opcode, 0 for the variable-length ones (tableswitch, lookupswitch, wide) and
// for opcodes that are not instructions.
int FixedLength(uint8_t op);

// Decodes every instruction; an unknown opcode or an instruction running past
// the end of the code is an error.
Result<std::vector<Insn>> DecodeInstructions(std::span<const uint8_t> code);

inline bool IsShortBranch(uint8_t op) {
  return (op >= kOpIfeq && op <= kOpJsr) || op == kOpIfnull || op == kOpIfnonnull;
}
inline bool IsConditionalBranch(uint8_t op) {
  return (op >= kOpIfeq && op <= kOpIfAcmpne) || op == kOpIfnull || op == kOpIfnonnull;
}
inline bool IsReturn(uint8_t op) { return op >= kOpIreturn && op <= kOpReturn; }
// Opcode of the branch taken exactly when `op` is not (ifeq <-> ifne, ...).
uint8_t InvertBranch(uint8_t op);

int32_t ReadS4(std::span<const uint8_t> code, size_t at);  // caller guarantees bounds
int16_t ReadS2(std::span<const uint8_t> code, size_t at);
uint16_t ReadU2(std::span<const uint8_t> code, size_t at);

// The targets (absolute old offsets) of a branch or switch instruction.
std::vector<int64_t> BranchTargets(std::span<const uint8_t> code, const Insn& in);

struct MethodDescriptor {
  std::vector<std::string> params;  // field descriptors
  std::string ret;                  // field descriptor or "V"
};
std::optional<MethodDescriptor> ParseMethodDescriptor(std::string_view d);
int SlotSize(std::string_view field_descriptor);  // 0 for V, 2 for J/D, else 1

struct VType {
  enum Tag : uint8_t { kTop, kInteger, kFloat, kDouble, kLong, kNull, kUninitThis, kObject, kUninit };
  Tag tag = kTop;
  uint32_t offset = 0;  // kUninit: offset of the `new` instruction
  std::string name;     // kObject: internal class name or array descriptor
  bool operator==(const VType&) const = default;
  bool wide() const { return tag == kLong || tag == kDouble; }
  static VType Of(Tag t) { return VType{t, 0, {}}; }
  static VType Object(std::string n) { return VType{kObject, 0, std::move(n)}; }
  static std::optional<VType> FromDescriptor(std::string_view field_descriptor);  // nullopt for V
};

// One stack map frame in "entry form": a long or double is one entry (as in
// the class file), not two slots.
struct Frame {
  uint32_t offset = 0;
  std::vector<VType> locals, stack;
};

// The implicit frame at offset 0 (JVMS 4.10.1.6): `this` (uninitializedThis
// in constructors other than Object's), then the parameters.
std::vector<VType> InitialLocals(std::string_view class_name, std::string_view method_name,
                                 const MethodDescriptor& d, bool is_static);

Result<std::vector<Frame>> DecodeStackMapTable(std::span<const uint8_t> info, const ConstantPool& cp,
                                               const std::vector<VType>& initial_locals);
// Encodes frames (sorted, distinct offsets) with the most compact frame type
// relative to the previous one; Class entries for object types are added to
// the pool as needed.
std::optional<Error> EncodeStackMapTable(const std::vector<Frame>& frames, const std::vector<VType>& initial_locals,
                                         ConstantPool& cp, std::vector<uint8_t>& out);

// Types per slot: a long or double takes two slots, the second one Top.
struct SlotState {
  std::vector<VType> locals, stack;
};
SlotState ToSlots(const Frame& f, size_t max_locals);
Frame ToFrame(const SlotState& s, uint32_t offset);

// Walks the code in order, restarting from the stack map frame wherever there
// is one (the verifier does the same), and reports the state before each
// instruction, or nullptr where it cannot be known (after an unconditional
// jump with no frame, after jsr/ret, after an inconsistency). Straight-line
// code between frames needs no merging, so this is exact for valid code.
void SimulateLinear(std::span<const uint8_t> code, const std::vector<Insn>& insns, const std::vector<Frame>& frames,
                    const std::vector<VType>& initial_locals, size_t max_locals, const ConstantPool& cp,
                    std::string_view this_class,
                    const std::function<void(size_t insn_index, const SlotState* before)>& visit);
// For code with no stack map frames at all (class files before version 50,
// and the bytes HotSpot hands a retransform of a boot class, which it did not
// verify and so kept no StackMapTable of): as SimulateLinear, but the state
// at each branch (its operands popped) is carried to the branch's targets,
// in passes until none learns anything new (at most 16), so code after a goto or a switch
// that some branch reaches is known too (a conditional in a constructor's
// super(...) arguments). The first state to reach an instruction is kept, not
// merged: for valid code every path agrees on the depth and on where the
// uninitialized types are, which is what the rewriter asks; a reference's
// class may be that of one path. Exception handlers' code stays unknown
// unless reached otherwise, and so does all of a method whose instructions
// times locals pass 4 M (the memory the copies would take).
void SimulateFlow(std::span<const uint8_t> code, const std::vector<Insn>& insns, const std::vector<VType>& initial_locals,
                  size_t max_locals, const ConstantPool& cp, std::string_view this_class,
                  const std::function<void(size_t insn_index, const SlotState* before)>& visit);
// The state after `in` (for the fall-through of a conditional branch: the
// operands popped). Returns false when it cannot be computed.
bool ApplyInstruction(std::span<const uint8_t> code, const Insn& in, const ConstantPool& cp,
                      std::string_view this_class, SlotState& s);

}  // namespace lookback::jvm
