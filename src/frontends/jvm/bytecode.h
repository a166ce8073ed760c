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

enum Opcode : uint8_t {
  kOpIconst0 = 0x03,
  kOpBipush = 0x10,
  kOpSipush = 0x11,
  kOpLdcW = 0x13,
  kOpAload0 = 0x2a,
  kOpAload1 = 0x2b,
  kOpAstore1 = 0x4c,
  kOpIfeq = 0x99,
  kOpIfAcmpne = 0xa6,
  kOpGoto = 0xa7,
  kOpJsr = 0xa8,
  kOpRet = 0xa9,
  kOpTableswitch = 0xaa,
  kOpLookupswitch = 0xab,
  kOpIreturn = 0xac,
  kOpReturn = 0xb1,
  kOpInvokespecial = 0xb7,
  kOpInvokestatic = 0xb8,
  kOpNew = 0xbb,
  kOpAthrow = 0xbf,
  kOpWide = 0xc4,
  kOpIfnull = 0xc6,
  kOpIfnonnull = 0xc7,
  kOpGotoW = 0xc8,
  kOpJsrW = 0xc9,
};

struct Insn {
  uint32_t offset = 0;
  uint32_t length = 0;
  uint8_t op = 0;
  uint8_t wide_op = 0;  // the modified opcode after `wide`
};

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
// The state after `in` (for the fall-through of a conditional branch: the
// operands popped). Returns false when it cannot be computed.
bool ApplyInstruction(std::span<const uint8_t> code, const Insn& in, const ConstantPool& cp,
                      std::string_view this_class, SlotState& s);

}  // namespace lookback::jvm
