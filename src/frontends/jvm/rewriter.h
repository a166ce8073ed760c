// Bytecode rewriter for the JVM front-end: the JVMTI agent's ClassFileLoadHook
// hands it a class file and gets back the class with entry/exit probes.
//
// Every traced method gets
//   - at offset 0:            push <id>; invokestatic probe.owner.enter(I)Z; istore <d>
//   - before every *return:   push <id>; iload <d>; invokestatic probe.owner.exit(IZ)V
//     (the return value stays on the stack underneath)
//   - a catch-all handler appended after the original code, the LAST entry of
//     the exception table so the method's own handlers take precedence:
//                             push <id>; iload <d>; invokestatic probe.owner.exit(IZ)V; athrow
//     so an exception unwinding through the frame still records the exit.
// <d> is a local added for the entry's decision (the old max_locals): enter
// says whether it recorded, and exit records only if it did, so an
// invocation's exits follow its entry's decision even when the overhead
// budget sheds or brings back the method while the frame runs (nesting stays
// exact). Every frame gets <d> as an int.
// Branches, switches, exception tables, LineNumberTable, LocalVariable(Type)Table
// and StackMapTable frames are relocated; frames are re-encoded from the
// original ones, never recomputed (only the catch-all handler and the
// fall-through of a conditional branch widened to goto_w get new frames).
//
// Constructors: code before the super()/this() call runs with an
// uninitialized `this`, which a handler without uninitializedThis in its frame
// may not cover (JVMS 4.10.1.9, flagThisUninit). The catch-all therefore starts
// right after that invokespecial: an exception thrown by the super()/this()
// call or while computing its arguments leaves the constructor's enter without
// an exit. Everything after super() returns is covered.
//
// Thread.setName can also get a rename hook (RewriteRequest::rename_hook),
// traced or not.
//
// Class files older than version 50 (and version 50 methods without a
// StackMapTable) are verified by type inference: they get the same probes and
// handlers, and no frames. Methods with jsr/ret subroutines are skipped
// (kMalformed, "jsr/ret subroutine").
//
// Not rewritten (RewriteResult::error set): malformed class files. Skipped per
// method: see SkipReason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lookback::jvm {

// The probes' descriptors: enter(int id) returns whether it recorded;
// exit(int id, boolean entered) records only if the entry did.
inline constexpr std::string_view kEnterDescriptor = "(I)Z";
inline constexpr std::string_view kExitDescriptor = "(IZ)V";

struct ProbeNames {  // the static methods the probes call (kEnterDescriptor, kExitDescriptor)
  std::string owner = "java/lang/LookbackProbe";
  std::string enter = "enter";
  std::string exit = "exit";
  // The rename hook (RewriteRequest::rename_hook): owner.renaming(Thread, String) returns the
  // name that Thread.setName goes on to set.
  std::string renaming = "renaming";
};

// The method the rename hook goes into, whether or not it is traced.
inline constexpr std::string_view kRenameHookClass = "java/lang/Thread";
inline constexpr std::string_view kRenameHookMethod = "setName";
inline constexpr std::string_view kRenameHookDescriptor = "(Ljava/lang/String;)V";
inline constexpr std::string_view kRenamingDescriptor = "(Ljava/lang/Thread;Ljava/lang/String;)Ljava/lang/String;";

enum class SkipReason {
  kNative,
  kAbstract,
  kIntrinsicCandidate,  // @jdk.internal.vm.annotation.IntrinsicCandidate: the JIT replaces the body
  kTooLarge,            // the rewritten code would exceed 65535 bytes, or max_stack would overflow
  kExcluded,            // assign_id returned nullopt, a method of the probe owner class, or an empty
                        // finalize()V (a probe there would make instances finalizable; see detail)
  kBridgeOrSynthetic,   // ACC_BRIDGE only: it just forwards to the real method, which is traced.
                        // Other synthetic methods (lambda bodies, $values) are traced.
  kMalformed,           // the method's code could not be rewritten safely (see SkippedMethod::detail)
  kInlined,             // RewriteRequest::skip_inlined and AlwaysInlined(): C2 inlines it wherever it is called
  kShed,                // RewriteRequest::shed: the overhead budget shed it (no probe at all, no handler)
};
inline constexpr size_t kSkipReasonCount = static_cast<size_t>(SkipReason::kShed) + 1;

// The always-inlined rule (docs/jvm.md, "Methods the JIT inlines"): a method HotSpot's C2
// inlines into every compiled caller, so that a probe in it would be paid at each call
// without telling anything about time. True when, measured on the original bytecode
// (before any probe), the method
//   - is not native, abstract or synchronized, and is not <init> or <clinit>;
//   - has at most kMaxInlineSize bytes of bytecode (HotSpot's -XX:MaxInlineSize default:
//     C2 inlines a callee this small at any call site, hot or not);
//   - has no exception handlers;
//   - contains no invoke* (it is a leaf: nothing traced can run under it), no jsr/ret,
//     no ldc of a dynamic constant (a bootstrap method call);
//   - has no backward branch (no loop: it runs at most kMaxInlineSize instructions);
//   - has no monitorenter/monitorexit and no athrow (it neither blocks nor throws by design).
// Getters, setters and other trivial accessors are special cases. Malformed code is never
// "always inlined" (the rewriter then decides as usual).
inline constexpr size_t kMaxInlineSize = 35;
class ConstantPool;
bool AlwaysInlined(std::string_view method_name, uint16_t access_flags, std::span<const uint8_t> code,
                   size_t exception_table_length, const ConstantPool& cp);

struct TracedMethod {
  std::string name, descriptor;
  uint32_t id;
  uint16_t access_flags;
};

struct SkippedMethod {
  std::string name, descriptor;
  SkipReason reason;
  std::string detail;  // kMalformed: why
};

struct RewriteRequest {
  ProbeNames probe;
  // Called once per method that can be traced, in classfile order; returns the method id to
  // bake in (a dense 32-bit id the agent allocates), or std::nullopt to leave the method alone
  // (counted kExcluded).
  std::function<std::optional<uint32_t>(std::string_view class_name, std::string_view method_name,
                                        std::string_view descriptor)>
      assign_id;
  // Thread.setName(String) starts with
  //   aload_0; aload_1; invokestatic probe.owner.renaming(Thread, String)String; astore_1
  // (after the entry probe when it is traced), so the agent sees every rename, of the calling
  // thread or another, and can substitute the name that is set (Nanoscope's control names).
  bool rename_hook = false;
  // Leave methods that C2 always inlines (AlwaysInlined) without probes, counted kInlined.
  // The agent sets it unless given inlined=probe; the rewriter's own default is to probe them.
  bool skip_inlined = false;
  // With skip_inlined: whether a method would be traced at all (the agent's include/exclude
  // globs), so that an always-inlined method outside the globs is counted kExcluded, not
  // kInlined. Unset: every method would be.
  std::function<bool(std::string_view class_name, std::string_view method_name)> selected;
  // Methods the overhead budget shed (the agent's shed.cc): true leaves the method exactly as
  // it is in the class file, without entry probe, exit probes or catch-all handler, counted
  // kShed; assign_id is not called for it. Asked after the reasons above (a native or
  // always-inlined method never had an id, so it is never shed). Thread.setName still gets the
  // rename hook, without probes. Unset: nothing is shed.
  std::function<bool(std::string_view class_name, std::string_view method_name, std::string_view descriptor)> shed;
  // Fill RewriteResult::id_sites (the agent's class cache, class_cache.h).
  bool want_id_sites = false;
};

// Where a traced method's id sits in the rewritten class: a `sipush <id>`
// at byte `offset` of RewriteResult::bytes, for traced[method]. Ids over
// 32767 come from an Integer constant instead (ldc_w), which has no site.
struct IdSite {
  uint32_t offset;
  uint32_t method;
};

struct RewriteResult {
  bool changed = false;        // false: use the original bytes
  std::vector<uint8_t> bytes;  // the new classfile when changed
  std::string class_name;      // internal form, a/b/C
  std::vector<TracedMethod> traced;
  std::vector<SkippedMethod> skipped;
  bool rename_hooked = false;  // the rename hook went in
  // With RewriteRequest::want_id_sites: every id push of every traced method,
  // when all of them are sipush (ids_patchable); another run may then give
  // the same class other ids by patching these sites alone.
  std::vector<IdSite> id_sites;
  bool ids_patchable = false;
  std::string error;  // non-empty: the class could not be rewritten (malformed/unsupported); leave it unmodified
};

RewriteResult RewriteClass(const uint8_t* data, size_t size, const RewriteRequest& req);
const char* SkipReasonName(SkipReason);

}  // namespace lookback::jvm
