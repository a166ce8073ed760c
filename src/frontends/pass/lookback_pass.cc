// liblookback-pass: an LLVM pass plugin for clang 14 that inlines the
// recorder's fast path at every function entry and before every return.
//
//   clang -O2 -fpass-plugin=liblookback-pass.so ...
//
// It runs last in the optimisation pipeline, so only functions that survived
// inlining are traced (Hubble's rule), and it clones the trace point from
// bitcode compiled out of runtime/hot_path.h (inline_hooks.cc), so the ABI is
// defined once. See docs/pass.md for options and for what the program links.
//
// Linking contract, chosen so that a program built with the plugin runs with
// or without the runtime:
//   - `lb_tls_ring` (symbol `lb_tls_ring_abi<N>`, ring_abi.h: programs and
//     runtimes of different ring ABIs never share it) becomes a *weak*
//     initial-exec thread-local defined in every
//     instrumented object, initialised to `lb_pass_sentinel_abi<N>`, a hidden
//     all-zero Ring (a sentinel by hot_path.h's rule: slots == nullptr);
//   - the inlined slow-path call goes to `lb_pass_slow` (inline_hooks.cc), a
//     hidden stub that calls `lb_pass_record_slow` (a weak reference) with the
//     ring ABI the program was built for if a runtime is loaded, and
//     otherwise sets the thread's `lb_tls_ring` to nullptr: tracing off, one
//     TLS load and a branch per trace point from then on. A runtime of
//     another ABI turns tracing off instead of handing out a ring.
//   - guards (-lookback-guards, on by default): each module's table of
//     {key, guard byte} in section `lookback_guards` is handed to
//     `lb_pass_register_guards` (a weak reference) by a constructor, and to
//     `lb_pass_unregister_guards` by a destructor (runtime/pass_guards.h).
// With liblookback linked (or preloaded, if the program exports lb_tls_ring)
// the dynamic linker binds the runtime and the program to one `lb_tls_ring`,
// and the sentinel sends each thread's first trace point to the runtime.
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Analysis/CFG.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/PassPlugin.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/GlobPattern.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/ring_abi.h"

using namespace llvm;

// The bitcode of inline_hooks.cc, embedded by hooks_blob.cc.
extern "C" const char lb_pass_bitcode[];
extern "C" const char lb_pass_bitcode_end[];

namespace {

cl::list<std::string> ExcludeFunctions("lookback-exclude", cl::CommaSeparated,
                                       cl::desc("lookback: do not trace functions matching these globs (mangled "
                                                "name, demangled name, or demangled "
                                                "name without parameters; 'ns::*' excludes a namespace)"));
cl::list<std::string> ExcludeFiles("lookback-exclude-file", cl::CommaSeparated,
                                   cl::desc("lookback: do not trace functions defined in files "
                                            "matching these globs"));
enum class Shape { kCheck, kFull };
cl::opt<Shape> InlineShape(
    "lookback-inline", cl::init(Shape::kCheck), cl::desc("lookback: what each trace point inlines (docs/pass.md)"),
    cl::values(clEnumValN(Shape::kCheck, "check",
                          "the tracing-off test only; the record is a call (smallest code, cheapest while off)"),
               clEnumValN(Shape::kFull, "full", "the whole fast path: timestamp, store and ring advance")));
cl::opt<unsigned> MinInstructions("lookback-min-instructions", cl::init(0),
                                  cl::desc("lookback: skip functions without loops that have "
                                           "fewer IR instructions than this (XRay's rule; 0: "
                                           "trace every function)"));

cl::opt<bool> Guards("lookback-guards", cl::init(true),
                     cl::desc("lookback: give every traced function a guard byte the runtime sets to stop "
                              "recording its calls (docs/pass.md, \"Shedding a function\")"));

// The hooks of inline_hooks.cc, by shape and by whether the function is guarded.
const char* EnterHook() {
  if (Guards) return InlineShape == Shape::kFull ? "lb_pass_enter_guarded" : "lb_pass_enter_check_guarded";
  return InlineShape == Shape::kFull ? "lb_pass_enter" : "lb_pass_enter_check";
}
const char* ExitHook() {
  if (Guards) return InlineShape == Shape::kFull ? "lb_pass_exit_guarded" : "lb_pass_exit_check_guarded";
  return InlineShape == Shape::kFull ? "lb_pass_exit" : "lb_pass_exit_check";
}
constexpr const char* kAllHooks[] = {
    "lb_pass_enter",         "lb_pass_exit",         "lb_pass_enter_check",         "lb_pass_exit_check",
    "lb_pass_enter_guarded", "lb_pass_exit_guarded", "lb_pass_enter_check_guarded", "lb_pass_exit_check_guarded"};
// The section of the guard tables (docs/pass.md): {i64 key, i8* guard} per
// guarded function, one table per module, each registered by its module.
constexpr const char* kGuardSection = "lookback_guards";
// Called by the check shape: one copy per program (linkonce_odr), named with
// the ring ABI (inline_hooks.cc), so that objects built by passes of two ABIs
// never share one copy with the other's signature.
constexpr const char* kOutlined[] = {LOOKBACK_PASS_SYMBOL("lb_pass_enter_on"), LOOKBACK_PASS_SYMBOL("lb_pass_exit_on")};

struct Patterns {
  std::vector<GlobPattern> functions, files;
  bool bad = false;
};

std::vector<GlobPattern> Compile(const cl::list<std::string>& list, bool* bad) {
  std::vector<GlobPattern> out;
  for (const std::string& s : list) {
    Expected<GlobPattern> g = GlobPattern::create(s);
    if (!g) {
      errs() << "lookback-pass: bad pattern '" << s << "': " << toString(g.takeError()) << "\n";
      *bad = true;
      continue;
    }
    out.push_back(std::move(*g));
  }
  return out;
}

bool AnyMatch(const std::vector<GlobPattern>& pats, StringRef s) {
  for (const GlobPattern& p : pats) {
    if (p.match(s)) return true;
  }
  return false;
}

// "ns::Class::method(int) const" -> "ns::Class::method": the part before the
// parameter list, ignoring parentheses inside template arguments.
std::string WithoutParameters(const std::string& d) {
  int angle = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == '<') ++angle;
    if (d[i] == '>' && angle > 0) --angle;
    if (d[i] == '(' && angle == 0 && i > 0) return d.substr(0, i);
  }
  return d;
}

bool HasLoop(const Function& F) {
  SmallVector<std::pair<const BasicBlock*, const BasicBlock*>, 8> edges;
  FindFunctionBackedges(F, edges);
  return !edges.empty();
}

std::string SourceFile(const Function& F) {
  if (const DISubprogram* sp = F.getSubprogram()) {
    std::string dir = sp->getDirectory().str();
    std::string file = sp->getFilename().str();
    if (!file.empty() && file[0] != '/' && !dir.empty()) return dir + "/" + file;
    return file;
  }
  return F.getParent()->getSourceFileName();
}

bool ShouldInstrument(const Function& F, const Patterns& p) {
  if (F.isDeclaration() || F.hasAvailableExternallyLinkage()) return false;
  if (F.hasFnAttribute(Attribute::Naked) || F.hasFnAttribute("lookback-skip")) return false;
  const StringRef name = F.getName();
  if (name.startswith("lb_") || name.startswith("__cyg_profile_func_") || name.startswith("llvm.")) return false;
  if (MinInstructions > 0 && F.getInstructionCount() < MinInstructions && !HasLoop(F)) return false;
  if (!p.files.empty() && AnyMatch(p.files, SourceFile(F))) return false;
  if (!p.functions.empty()) {
    if (AnyMatch(p.functions, name)) return false;
    const std::string demangled = demangle(name.str());
    if (AnyMatch(p.functions, demangled) || AnyMatch(p.functions, WithoutParameters(demangled))) return false;
  }
  return true;
}

// Where an exit trace point goes in a returning block: before the return, or
// before a musttail call, which must stay immediately before it.
Instruction* ExitPoint(ReturnInst* ret) {
  Instruction* at = ret;
  for (Instruction* prev = ret->getPrevNode(); prev != nullptr; prev = prev->getPrevNode()) {
    if (isa<DbgInfoIntrinsic>(prev) || isa<BitCastInst>(prev)) continue;
    if (auto* call = dyn_cast<CallInst>(prev); call && call->isMustTailCall()) at = call;
    break;
  }
  return at;
}

// The first instruction after the entry block's leading allocas: inlining
// splits the block there, and allocas left below the split would become
// dynamic stack allocations.
Instruction* EntryPoint(Function& F) {
  BasicBlock& entry = F.getEntryBlock();
  auto it = entry.getFirstInsertionPt();
  while (it != entry.end() && (isa<AllocaInst>(*it) || isa<DbgInfoIntrinsic>(*it))) ++it;
  return &*it;
}

// Brings lb_pass_enter/lb_pass_exit (and the declarations they use) into M.
bool LinkHooks(Module& M) {
  const size_t size = static_cast<size_t>(lb_pass_bitcode_end - lb_pass_bitcode);
  std::unique_ptr<MemoryBuffer> buf =
      MemoryBuffer::getMemBufferCopy(StringRef(lb_pass_bitcode, size), "lookback-inline-hooks");
  Expected<std::unique_ptr<Module>> hooks = parseBitcodeFile(buf->getMemBufferRef(), M.getContext());
  if (!hooks) {
    errs() << "lookback-pass: cannot read the embedded hot path: " << toString(hooks.takeError()) << "\n";
    return false;
  }
  (*hooks)->setTargetTriple(M.getTargetTriple());
  (*hooks)->setDataLayout(M.getDataLayout());
  if (Linker::linkModules(M, std::move(*hooks))) {
    errs() << "lookback-pass: cannot link the embedded hot path into " << M.getName() << "\n";
    return false;
  }
  return true;
}

// The slow path's return-address argument is computed at the top of the
// inlined hook; move it next to its only use, the cold call, so the traced
// function does not pay for it on every entry.
void SinkReturnAddress(Function& F) {
  SmallVector<IntrinsicInst*, 4> moves;
  for (BasicBlock& bb : F) {
    for (Instruction& i : bb) {
      auto* ra = dyn_cast<IntrinsicInst>(&i);
      if (ra && ra->getIntrinsicID() == Intrinsic::returnaddress && ra->hasMetadata("lookback.ra")) moves.push_back(ra);
    }
  }
  for (IntrinsicInst* ra : moves) {
    if (!ra->hasOneUse()) continue;
    auto* cast = dyn_cast<PtrToIntInst>(*ra->user_begin());
    if (cast == nullptr || !cast->hasOneUse()) continue;
    auto* use = dyn_cast<Instruction>(*cast->user_begin());
    if (use == nullptr || use->getParent() == ra->getParent()) continue;
    ra->moveBefore(use);
    cast->moveBefore(use);
  }
}

struct LookbackPass : PassInfoMixin<LookbackPass> {
  PreservedAnalyses run(Module& M, ModuleAnalysisManager&) {
    // Never instrument the runtime itself.
    if (Function* f = M.getFunction("lb_ring_slow"); f && !f->isDeclaration()) return PreservedAnalyses::all();
    Patterns p;
    p.functions = Compile(ExcludeFunctions, &p.bad);
    p.files = Compile(ExcludeFiles, &p.bad);
    if (p.bad) report_fatal_error("lookback-pass: bad -lookback-exclude pattern", false);

    std::vector<Function*> targets;
    for (Function& F : M) {
      if (ShouldInstrument(F, p)) targets.push_back(&F);
    }
    if (targets.empty()) return PreservedAnalyses::all();
    if (!LinkHooks(M)) report_fatal_error("lookback-pass: giving up", false);

    SmallVector<Function*, 4> hooks;
    for (const char* name : kAllHooks) {
      Function* hook = M.getFunction(name);
      if (hook == nullptr) report_fatal_error("lookback-pass: embedded hot path lacks its hooks", false);
      hook->setLinkage(GlobalValue::InternalLinkage);
      for (Instruction& i : instructions(*hook)) {
        if (auto* ra = dyn_cast<IntrinsicInst>(&i); ra && ra->getIntrinsicID() == Intrinsic::returnaddress) {
          ra->setMetadata("lookback.ra", MDNode::get(M.getContext(), {}));
        }
      }
      hooks.push_back(hook);
    }
    for (const char* name : kOutlined) {
      if (Function* f = M.getFunction(name)) {
        f->setLinkage(GlobalValue::LinkOnceODRLinkage);
        f->setVisibility(GlobalValue::HiddenVisibility);
      }
    }
    Function* enter = M.getFunction(EnterHook());
    Function* exit = M.getFunction(ExitHook());
    BindToRuntime(M);

    Type* i64 = Type::getInt64Ty(M.getContext());
    Type* i8 = Type::getInt8Ty(M.getContext());
    std::vector<std::pair<Constant*, GlobalVariable*>> guards;
    for (Function* F : targets) {
      Constant* key = ConstantExpr::getPtrToInt(F, i64);
      // The function's guard: 0 recorded, nonzero shed (the runtime's
      // SetPassGuard). Its own byte, not a bit of a shared word, so that the
      // runtime stores to it without a read-modify-write.
      GlobalVariable* guard = nullptr;
      if (Guards) {
        guard =
            new GlobalVariable(M, i8, false, GlobalValue::PrivateLinkage, ConstantInt::get(i8, 0), "lookback.guard");
        guard->setAlignment(Align(1));
        guards.emplace_back(key, guard);
      }
      SmallVector<CallInst*, 8> calls;
      DISubprogram* sp = F->getSubprogram();
      // Guarded, the entry hook returns whether this invocation is recorded
      // and every exit hook takes that value: the decision is made once per
      // invocation, so its exits follow its entry even when the guard flips
      // while it runs. The entry block dominates every return, so the value
      // (a phi once the entry hook is inlined) reaches them all.
      CallInst* recorded = nullptr;
      auto at = [&](Instruction* where, Function* hook, DebugLoc loc) {
        IRBuilder<> b(where);
        SmallVector<Value*, 2> args = {key};
        if (guard != nullptr) args.push_back(recorded == nullptr ? static_cast<Value*>(guard) : recorded);
        CallInst* c = b.CreateCall(hook, args);
        // A call inlined into a function with debug info needs a location.
        if (sp != nullptr) c->setDebugLoc(loc ? loc : DebugLoc(DILocation::get(M.getContext(), sp->getLine(), 0, sp)));
        calls.push_back(c);
      };
      SmallVector<ReturnInst*, 8> rets;
      for (BasicBlock& bb : *F) {
        if (auto* r = dyn_cast<ReturnInst>(bb.getTerminator())) rets.push_back(r);
      }
      at(EntryPoint(*F), enter, DebugLoc());
      if (guard != nullptr) recorded = calls.front();
      for (ReturnInst* r : rets) {
        Instruction* where = ExitPoint(r);
        at(where, exit, r->getDebugLoc());
      }
      for (CallInst* c : calls) {
        InlineFunctionInfo info;
        InlineResult res = InlineFunction(*c, info);
        if (!res.isSuccess()) {
          report_fatal_error(Twine("lookback-pass: cannot inline the trace point into ") + F->getName() + ": " +
                                 res.getFailureReason(),
                             false);
        }
      }
      SinkReturnAddress(*F);
    }
    if (!guards.empty()) RegisterGuards(M, guards);
    for (Function* hook : hooks) {
      if (hook->use_empty()) hook->eraseFromParent();
    }
    for (const char* name : kOutlined) {
      if (Function* f = M.getFunction(name); f && f->use_empty()) f->eraseFromParent();
    }
    return PreservedAnalyses::none();
  }

  // The module's guard table and the constructor that hands it to the
  // runtime. One table per module, registered by the module itself (not
  // __start_/__stop_ of the linked section): every object file of a program,
  // and every DSO, registers exactly its own entries, whatever the linker
  // merged. lb_pass_register_guards is a weak reference, so a program run
  // without the runtime skips the call; the destructor unregisters the table
  // before a dlclose unmaps the guards.
  static void RegisterGuards(Module& M, const std::vector<std::pair<Constant*, GlobalVariable*>>& guards) {
    LLVMContext& ctx = M.getContext();
    Type* i64 = Type::getInt64Ty(ctx);
    Type* i8p = Type::getInt8PtrTy(ctx);
    StructType* entry_ty = StructType::get(ctx, {i64, i8p});
    std::vector<Constant*> entries;
    entries.reserve(guards.size());
    for (const auto& [key, guard] : guards) entries.push_back(ConstantStruct::get(entry_ty, {key, guard}));
    ArrayType* table_ty = ArrayType::get(entry_ty, entries.size());
    auto* table = new GlobalVariable(M, table_ty, true, GlobalValue::InternalLinkage,
                                     ConstantArray::get(table_ty, entries), "lookback.guards");
    table->setSection(kGuardSection);
    table->setAlignment(Align(8));
    Constant* begin = ConstantExpr::getBitCast(table, i8p);
    Constant* end =
        ConstantExpr::getBitCast(ConstantExpr::getGetElementPtr(table_ty, table, ConstantInt::get(i64, 1)), i8p);
    appendToCompilerUsed(M, {table});

    FunctionType* reg_ty = FunctionType::get(Type::getVoidTy(ctx), {i8p, i8p}, false);
    auto make = [&](const char* callee_name, const char* name) {
      FunctionCallee callee = M.getOrInsertFunction(callee_name, reg_ty);
      auto* callee_fn = dyn_cast<Function>(callee.getCallee());
      if (callee_fn == nullptr) report_fatal_error(Twine("lookback-pass: ") + callee_name + " has another type", false);
      if (callee_fn->isDeclaration()) callee_fn->setLinkage(GlobalValue::ExternalWeakLinkage);
      Function* f =
          Function::Create(FunctionType::get(Type::getVoidTy(ctx), false), GlobalValue::InternalLinkage, name, M);
      f->addFnAttr("lookback-skip");
      f->addFnAttr(Attribute::NoUnwind);
      BasicBlock* head = BasicBlock::Create(ctx, "", f);
      BasicBlock* call = BasicBlock::Create(ctx, "", f);
      BasicBlock* done = BasicBlock::Create(ctx, "", f);
      IRBuilder<> b(head);
      b.CreateCondBr(b.CreateIsNotNull(callee_fn), call, done);
      b.SetInsertPoint(call);
      b.CreateCall(callee, {begin, end});
      b.CreateBr(done);
      b.SetInsertPoint(done);
      b.CreateRetVoid();
      return f;
    };
    appendToGlobalCtors(M, make("lb_pass_register_guards", "lb_pass_guards_ctor"), 65535);
    appendToGlobalDtors(M, make("lb_pass_unregister_guards", "lb_pass_guards_dtor"), 65535);
  }

  // See the linking contract at the top of this file.
  static void BindToRuntime(Module& M) {
    GlobalVariable* ring = M.getGlobalVariable(LOOKBACK_RING_TLS_SYMBOL);
    Function* slow = M.getFunction("lb_ring_slow");
    Function* stub = M.getFunction(LOOKBACK_PASS_SYMBOL("lb_pass_slow"));
    if (ring == nullptr || slow == nullptr || stub == nullptr || stub->isDeclaration())
      report_fatal_error("lookback-pass: embedded hot path is not the recorder's", false);
    auto* ring_ptr = cast<PointerType>(ring->getValueType());
    Type* ring_ty = ring_ptr->getPointerElementType();

    // The program's own sentinel: all zero, so slots == nullptr (a sentinel by
    // the ABI) and pos == next_sync (the first trace point takes the slow
    // path).
    GlobalVariable* sentinel = M.getGlobalVariable(LOOKBACK_PASS_SYMBOL("lb_pass_sentinel"));
    if (sentinel == nullptr) {
      sentinel = new GlobalVariable(M, ring_ty, false, GlobalValue::LinkOnceODRLinkage, Constant::getNullValue(ring_ty),
                                    LOOKBACK_PASS_SYMBOL("lb_pass_sentinel"));
      sentinel->setVisibility(GlobalValue::HiddenVisibility);
      sentinel->setAlignment(Align(64));
    }
    if (ring->isDeclaration()) {
      ring->setLinkage(GlobalValue::WeakAnyLinkage);
      ring->setInitializer(sentinel);
      ring->setVisibility(GlobalValue::DefaultVisibility);
      ring->setDSOLocal(false);
    }

    // lb_pass_slow (inline_hooks.cc): one hidden copy per program; the hot
    // path's slow-path calls go to it, never to the runtime's internal one.
    stub->setLinkage(GlobalValue::LinkOnceODRLinkage);
    stub->setVisibility(GlobalValue::HiddenVisibility);
    if (Function* checked = M.getFunction("lb_pass_record_slow")) checked->setLinkage(GlobalValue::ExternalWeakLinkage);
    slow->replaceAllUsesWith(stub);
    slow->eraseFromParent();
  }

  static bool isRequired() { return true; }
};

}  // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "lookback", "1", [](PassBuilder& pb) {
            pb.registerOptimizerLastEPCallback(
                [](ModulePassManager& mpm, OptimizationLevel) { mpm.addPass(LookbackPass()); });
          }};
}
