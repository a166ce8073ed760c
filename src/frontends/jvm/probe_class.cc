#include "frontends/jvm/probe_class.h"

#include <string>

#include "frontends/jvm/bytecode.h"
#include "frontends/jvm/rewriter.h"

namespace lookback::jvm {
namespace {

class Writer {
 public:
  void U1(uint8_t v) { out_.push_back(v); }
  void U2(uint16_t v) {
    U1(static_cast<uint8_t>(v >> 8));
    U1(static_cast<uint8_t>(v));
  }
  void U4(uint32_t v) {
    U2(static_cast<uint16_t>(v >> 16));
    U2(static_cast<uint16_t>(v));
  }
  void Utf8(const std::string& s) {
    U1(1);
    U2(static_cast<uint16_t>(s.size()));
    for (char c : s) U1(static_cast<uint8_t>(c));
  }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Constant pool indices (see ProbeClassBytes).
enum : uint16_t {
  kThisName = 1, kThis, kObjectName, kObject, kOnName, kBoolDesc, kOnNat, kOnField, kEnterNativeName, kIntVoid,
  kEnterNativeNat, kEnterNativeRef, kExitNativeName, kExitNativeNat, kExitNativeRef, kEnterName, kExitName, kCodeName,
  kRenamingName, kRenamingDesc, kPoolCount
};

constexpr uint16_t kPublic = 0x0001, kPrivate = 0x0002, kStatic = 0x0008, kFinal = 0x0010, kSuper = 0x0020,
                   kNative = 0x0100;

// `if (on) <native>(id); return;`
void ProbeMethod(Writer* w, uint16_t name, uint16_t native_ref) {
  w->U2(kPublic | kStatic);
  w->U2(name);
  w->U2(kIntVoid);
  w->U2(1);  // attributes: Code
  const uint8_t code[] = {
      kOpGetstatic, static_cast<uint8_t>(kOnField >> 8), static_cast<uint8_t>(kOnField),  // 0: getstatic on
      kOpIfeq, 0x00, 0x07,                                                                // 3: ifeq 10
      kOpIload0,                                                                          // 6: iload_0
      kOpInvokestatic, static_cast<uint8_t>(native_ref >> 8), static_cast<uint8_t>(native_ref),  // 7: invokestatic
      kOpReturn,                                                                          // 10: return
  };
  w->U2(kCodeName);
  w->U4(2 + 2 + 4 + sizeof code + 2 + 2);
  w->U2(1);  // max_stack
  w->U2(1);  // max_locals
  w->U4(sizeof code);
  for (uint8_t b : code) w->U1(b);
  w->U2(0);  // exception table
  w->U2(0);  // attributes
}

void NativeMethod(Writer* w, uint16_t access, uint16_t name, uint16_t desc) {
  w->U2(access | kStatic | kNative);
  w->U2(name);
  w->U2(desc);
  w->U2(0);
}

}  // namespace

std::vector<uint8_t> ProbeClassBytes() {
  Writer w;
  w.U4(0xCAFEBABE);
  w.U2(0);   // minor
  w.U2(49);  // major: Java 5, verified without a StackMapTable
  w.U2(kPoolCount);
  w.Utf8(kProbeClass);                       // 1
  w.U1(7), w.U2(kThisName);                  // 2 Class
  w.Utf8("java/lang/Object");                // 3
  w.U1(7), w.U2(kObjectName);                // 4 Class
  w.Utf8(kProbeOnField);                     // 5
  w.Utf8("Z");                               // 6
  w.U1(12), w.U2(kOnName), w.U2(kBoolDesc);  // 7 NameAndType
  w.U1(9), w.U2(kThis), w.U2(kOnNat);        // 8 Fieldref
  w.Utf8("enterNative");                     // 9
  w.Utf8("(I)V");                            // 10
  w.U1(12), w.U2(kEnterNativeName), w.U2(kIntVoid);  // 11
  w.U1(10), w.U2(kThis), w.U2(kEnterNativeNat);      // 12 Methodref
  w.Utf8("exitNative");                              // 13
  w.U1(12), w.U2(kExitNativeName), w.U2(kIntVoid);   // 14
  w.U1(10), w.U2(kThis), w.U2(kExitNativeNat);       // 15
  w.Utf8("enter");                                   // 16
  w.Utf8("exit");                                    // 17
  w.Utf8("Code");                                    // 18
  w.Utf8("renaming");                                // 19
  w.Utf8(std::string(kRenamingDescriptor));          // 20
  w.U2(kPublic | kFinal | kSuper);
  w.U2(kThis);
  w.U2(kObject);
  w.U2(0);  // interfaces
  w.U2(1);  // fields: public static boolean on
  w.U2(kPublic | kStatic);
  w.U2(kOnName);
  w.U2(kBoolDesc);
  w.U2(0);
  w.U2(5);  // methods
  ProbeMethod(&w, kEnterName, kEnterNativeRef);
  ProbeMethod(&w, kExitName, kExitNativeRef);
  NativeMethod(&w, kPrivate, kEnterNativeName, kIntVoid);
  NativeMethod(&w, kPrivate, kExitNativeName, kIntVoid);
  NativeMethod(&w, kPublic, kRenamingName, kRenamingDesc);
  w.U2(0);  // class attributes
  return w.Take();
}

}  // namespace lookback::jvm
