// The natives behind java.lang.LookbackProbe (probe_class.h): where an
// inlined Java probe enters the recorder.
//
// HotSpot 17 calls a critical native (JavaCritical_<class>_<method>, looked
// up by name in the library that holds the JNI entry) from
// compiled code without the JNI transition when -XX:+CriticalJNINatives is on
// (`lookback record` adds it; JDK 18 removed the flag): that is the cheapest
// call from Java into C++ the JVM offers, measured in docs/jvm.md. The
// interpreter, and JVMs without the flag, use the plain JNI entry.
#include <dlfcn.h>
#include <jni.h>
#include <sys/mman.h>

#include "format/format.h"
#include "frontends/jvm/jvm_agent.h"
#include "lookback/lookback.h"
#include "runtime/hot_path.h"

using lookback::jvm::g_runtime;
using lookback::jvm::MethodKey;

extern "C" {

JNIEXPORT void JNICALL Java_java_lang_LookbackProbe_enterNative(JNIEnv*, jclass, jint id) {
  if (id != 0) g_runtime.enter(MethodKey(static_cast<uint32_t>(id)));
}

JNIEXPORT void JNICALL Java_java_lang_LookbackProbe_exitNative(JNIEnv*, jclass, jint id) {
  if (id != 0) g_runtime.exit(MethodKey(static_cast<uint32_t>(id)));
}

JNIEXPORT void JNICALL JavaCritical_java_lang_LookbackProbe_enterNative(jint id) {
  if (id != 0) g_runtime.enter(MethodKey(static_cast<uint32_t>(id)));
}

JNIEXPORT void JNICALL JavaCritical_java_lang_LookbackProbe_exitNative(jint id) {
  if (id != 0) g_runtime.exit(MethodKey(static_cast<uint32_t>(id)));
}

// The ring's layout for the probe's direct writes (LookbackProbe.java, its
// static finals, by number; 1, 2, 3 and 5 are no longer used), from the runtime's own headers: the agent
// and liblookback.so agree on it when their ring ABIs do (DirectWrites).
JNIEXPORT jlong JNICALL Java_java_lang_LookbackProbe_layout(JNIEnv*, jclass, jint what) {
  using lookback::rt::Ring;
  const lookback::jvm::JavaRings& rings = lookback::jvm::g_java_rings;
  switch (what) {
    case 0: return __builtin_offsetof(Ring, pos);
    case 4: return __builtin_offsetof(Ring, clock_mask);
    case 6: return __builtin_offsetof(Ring, filtered);
    case 7: return static_cast<jlong>(MethodKey(0));
    case 8: return static_cast<jlong>(lookback::format::MakeUntimed(false, 0));
    case 9: return static_cast<jlong>(lookback::format::MakeUntimed(true, 0));
    case 10: return static_cast<jlong>(reinterpret_cast<uintptr_t>(rings.ring_of));
    case 11: return rings.ring_of != nullptr ? static_cast<jlong>(rings.count) : 0;  // 0: no direct writes
    case 12: return static_cast<jlong>(reinterpret_cast<uintptr_t>(rings.filter_table));
    case 13: return static_cast<jlong>(reinterpret_cast<uintptr_t>(lookback::jvm::g_java_guards.of));
    case 14: return static_cast<jlong>(lookback::jvm::g_java_guards.count);  // 0: no guards
    case 15: return rings.direct ? 1 : 0;
    case 16: return __builtin_offsetof(Ring, lap);
    case 17: return __builtin_offsetof(Ring, next_sync);
    case 18: return __builtin_offsetof(Ring, epoch_tsc);
    case 19: return __builtin_offsetof(Ring, hot_base);
    case 20: return __builtin_offsetof(Ring, hot_tag);
    case 21: return __builtin_offsetof(Ring, slots);
    case 22: return __builtin_offsetof(Ring, mask);
    case 23: return lookback::format::kTscLowBits;
    default: return 0;
  }
}

// The calling thread's ring for the probe's direct writes, by its Java
// thread id: its address, -1 for none (the natives record), or left 0 while
// the thread has no ring yet (its next probe asks again).
JNIEXPORT void JNICALL Java_java_lang_LookbackProbe_bind(JNIEnv*, jclass, jlong tid) {
  lookback::jvm::BindJavaRing(tid);
}

// Thread.setName's rename hook (rewriter.h): rare, so a plain JNI call.
JNIEXPORT jstring JNICALL Java_java_lang_LookbackProbe_renaming(JNIEnv* jni, jclass, jobject thread, jstring name) {
  return lookback::jvm::g_jvmti ? lookback::jvm::OnRename(lookback::jvm::g_jvmti, jni, thread, name) : name;
}

}  // extern "C"

namespace lookback::jvm {

JavaRings g_java_rings;

bool SetUpJavaRings() {
  if (g_java_rings.ring_of != nullptr) return true;  // (attached again after a detach)
  if (g_runtime.ring_abi == nullptr || g_runtime.fast_ring == nullptr || g_runtime.filter_table == nullptr ||
      g_runtime.clock_group == nullptr || g_runtime.ring_abi() != rt::kRingAbi) {
    return false;  // another runtime: every record goes through lb_enter/lb_exit
  }
  // With the exact clock too: the probe writes timed records itself once the
  // agent has found HotSpot's TSC read (jfr_clock.cc); until then, or if it
  // finds none, `direct` is false and the probe calls the natives at once.
  // Reserved, not committed: a page is touched only once a thread of ids in it binds.
  void* p = mmap(nullptr, JavaRings::kCount * sizeof(JavaRingEntry), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  g_java_rings.filter_table = g_runtime.filter_table();
  g_java_rings.count = JavaRings::kCount;
  g_java_rings.ring_of = static_cast<JavaRingEntry*>(p);
  return true;
}

JavaGuards g_java_guards;

bool SetUpJavaGuards() {
  if (g_java_guards.of != nullptr) return true;  // (attached again after a detach)
  if (g_runtime.register_guards == nullptr || g_runtime.unregister_guards == nullptr) return false;
  const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* guards = mmap(nullptr, JavaGuards::kCount, prot, flags, -1, 0);
  if (guards == MAP_FAILED) return false;
  void* entries = mmap(nullptr, JavaGuards::kCount * sizeof(lb_guard_entry), prot, flags, -1, 0);
  if (entries == MAP_FAILED) {
    munmap(guards, JavaGuards::kCount);
    return false;
  }
  g_java_guards.of = static_cast<uint8_t*>(guards);
  g_java_guards.entries = static_cast<lb_guard_entry*>(entries);
  g_java_guards.count = JavaGuards::kCount;
  return true;
}

// Each method's guard is a table of its own, so that the shed thread can
// take back the one of a method it retransformed without probes
// (UnregisterGuard). Ids are never reused, so neither is an entry.
void RegisterGuards(const std::vector<TracedMethod>& traced) {
  const JavaGuards& guards = g_java_guards;
  if (guards.of == nullptr) return;
  size_t n = 0;
  for (const TracedMethod& m : traced) {
    if (m.id == 0 || m.id >= guards.count) continue;
    lb_guard_entry* e = &guards.entries[m.id];
    *e = lb_guard_entry{MethodKey(m.id), guards.of + m.id};
    g_runtime.register_guards(e, e + 1);
    ++n;
  }
  g_stats.guarded_methods.fetch_add(n, std::memory_order_relaxed);
}

void UnregisterGuard(uint32_t id) {
  const JavaGuards& guards = g_java_guards;
  if (guards.of == nullptr || id == 0 || id >= guards.count || guards.entries[id].guard == nullptr) return;
  g_runtime.unregister_guards(&guards.entries[id], &guards.entries[id] + 1);
}

void BindJavaRing(int64_t tid) {
  JavaRings& rings = g_java_rings;
  if (rings.ring_of == nullptr || tid <= 0 || static_cast<uint64_t>(tid) >= rings.count) return;
  void* ring = nullptr;
  // Any ring once timed records may be written from Java (the runtime then
  // stops a cached exact ring through its next_sync); else fast-clock ones.
  const int got = rings.direct_timed_possible ? g_runtime.any_ring(&ring) : g_runtime.fast_ring(&ring);
  if (got == 0) return;  // no ring yet: set up by the record the probe makes next
  // Only the thread itself reads its entry before this store (bind is its
  // own call), so the on-CPU address goes first and the ring after it.
  // An exact ring has no on-CPU word; the probe reads it only at a dense
  // ring's untimed positions, but a word that says "descheduled" is safer
  // than none.
  static const uint64_t kNeverOnCpu = 0;
  if (got > 0) {
    const volatile uint64_t* word = static_cast<const rt::Ring*>(ring)->on_cpu;
    rings.ring_of[tid].on_cpu = static_cast<uint64_t>(
        reinterpret_cast<uintptr_t>(word != nullptr ? const_cast<const uint64_t*>(word) : &kNeverOnCpu));
  }
  __atomic_store_n(&rings.ring_of[tid].ring, got > 0 ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(ring)) : -1,
                   __ATOMIC_RELAXED);
  if (got > 0) {
    g_stats.java_writing_threads.fetch_add(1, std::memory_order_relaxed);
    g_stats.Publish();
  }
}

void ForgetJavaRing(int64_t tid) {
  JavaRings& rings = g_java_rings;
  if (rings.ring_of == nullptr || tid <= 0 || static_cast<uint64_t>(tid) >= rings.count) return;
  __atomic_store_n(&rings.ring_of[tid].ring, 0, __ATOMIC_RELAXED);
}

void ForgetJavaRingOf(JNIEnv* jni, jobject thread) {
  if (g_java_rings.ring_of == nullptr) return;
  // Thread.tid, as the probe reads it (getId() may be overridden).
  static jfieldID tid = [jni] {
    jclass c = jni->FindClass("java/lang/Thread");
    jfieldID f = c != nullptr ? jni->GetFieldID(c, "tid", "J") : nullptr;
    jni->ExceptionClear();
    return f;
  }();
  if (tid != nullptr) ForgetJavaRing(jni->GetLongField(thread, tid));
}

// HotSpot finds a boot class's natives in the JVMTI agents' libraries by
// their JNI names (then the critical entry in the same library), so nothing
// is registered: RegisterNatives on a java.base class makes JDK 17 warn. The
// lookup happens at the first call; make that call now, with id 0 (never a
// method: ids start at 1, and the natives ignore it), so a failure is seen
// here rather than as an UnsatisfiedLinkError in every traced method.
// An agent loaded into a running JVM (`lookback attach`) is not among the
// libraries HotSpot searches for natives, so there this library is also
// loaded for the boot loader, with System.load called from native code (no
// Java caller: the library is recorded as the boot loader's), whose lookup
// then finds the natives by name. (RegisterNatives would work too, but JDK 17
// prints a warning on the program's stdout for natives of a java.base class.)
bool LoadForBootLoader(JNIEnv* jni) {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&LoadForBootLoader), &self) || self.dli_fname == nullptr) return false;
  jclass system = jni->FindClass("java/lang/System");
  jmethodID load = system ? jni->GetStaticMethodID(system, "load", "(Ljava/lang/String;)V") : nullptr;
  jstring path = load ? jni->NewStringUTF(self.dli_fname) : nullptr;
  if (path != nullptr) jni->CallStaticVoidMethod(system, load, path);
  if (jni->ExceptionCheck() || path == nullptr) {
    jni->ExceptionClear();
    return false;
  }
  return true;
}

bool LinkProbeNatives(JNIEnv* jni, jclass probe, bool attached) {
  if (attached && !LoadForBootLoader(jni)) return false;
  // Every native the probes call, while they are still off: linking a boot
  // class's native runs ClassLoader.findNative, whose own probes would call
  // the native being linked (bind: a StackOverflowError once on, found with
  // LOOKBACK_ENABLED=0 and START_TRACING). layout was linked by the class's
  // initialiser, which GetStaticMethodID ran.
  struct Native {
    const char* name;
    const char* signature;
  };
  for (const Native& n : {Native{"enterNative", "(I)V"}, Native{"exitNative", "(I)V"}, Native{"bind", "(J)V"}}) {
    jmethodID m = jni->GetStaticMethodID(probe, n.name, n.signature);
    if (m == nullptr) {
      jni->ExceptionClear();
      return false;
    }
    jvalue zero;
    zero.j = 0;  // id 0, thread id 0: never a method or a thread; ignored
    jni->CallStaticVoidMethodA(probe, m, &zero);
    if (jni->ExceptionCheck()) {
      jni->ExceptionClear();
      return false;
    }
  }
  return true;
}

void AgentStats::Count(const RewriteResult& r) {
  if (!r.error.empty()) {
    classes_failed.fetch_add(1, std::memory_order_relaxed);
  } else if (r.changed) {
    classes_rewritten.fetch_add(1, std::memory_order_relaxed);
  } else {
    classes_unchanged.fetch_add(1, std::memory_order_relaxed);
  }
  methods_traced.fetch_add(r.traced.size(), std::memory_order_relaxed);
  for (const SkippedMethod& s : r.skipped) {
    const size_t i = static_cast<size_t>(s.reason);
    if (i < sizeof skipped / sizeof skipped[0]) skipped[i].fetch_add(1, std::memory_order_relaxed);
  }
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  const uint64_t now = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  uint64_t last = published_ns.load(std::memory_order_relaxed);
  if (now - last >= 2000000 && published_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) Publish();
}

void AgentStats::Publish() {
  if (g_runtime.set_note != nullptr) g_runtime.set_note("jvm", Summary().c_str());
}

void AgentStats::NoteError(const char* cls, const std::string& error) {
  std::lock_guard<std::mutex> lock(error_mutex);
  if (first_error.empty()) first_error = std::string(cls) + ": " + error;
}

std::string AgentStats::Summary() {
  std::string s = "inline: " + std::to_string(methods_traced.load()) + " methods traced in " +
                  std::to_string(classes_rewritten.load()) + " classes; " + std::to_string(classes_unchanged.load()) +
                  " classes unchanged, " + std::to_string(classes_failed.load()) + " left unmodified after a rewrite error";
  std::string skips;
  for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; ++i) {
    // Said on their own below (shed: counted per rewrite, so a class retransformed twice counts twice).
    if (static_cast<SkipReason>(i) == SkipReason::kInlined || static_cast<SkipReason>(i) == SkipReason::kShed) continue;
    if (const uint64_t n = skipped[i].load()) {
      skips += (skips.empty() ? "" : ", ") + std::to_string(n) + " " + SkipReasonName(static_cast<SkipReason>(i));
    }
  }
  if (!skips.empty()) s += "; methods skipped: " + skips;
  // The always-inlined rule (rewriter.h AlwaysInlined, docs/jvm.md): say what is missing and how to get it.
  const uint64_t inlined = skipped[static_cast<size_t>(SkipReason::kInlined)].load();
  if (inlined != 0 || inlined_policy.load() == kInlinedSkipped) {
    s += "; " + std::to_string(inlined) + " methods left unprobed: C2 always inlines them (<= " +
         std::to_string(kMaxInlineSize) +
         " bytecode bytes, no calls, no loops); --jvm-probe-inlined (agent option inlined=probe) traces them";
  } else if (inlined_policy.load() == kInlinedProbed) {
    s += "; methods C2 always inlines are traced too (--jvm-probe-inlined, inlined=probe)";
  }
  // The overhead budget (shed.cc): what it took out of the Java code, once it did.
  if (const uint64_t batches = shed_batches.load()) {
    s += "; overhead budget: " + std::to_string(shed_unprobed.load()) +
         " methods left unprobed because it shed them, " + std::to_string(shed_classes.load()) +
         " classes retransformed for it (" + std::to_string(batches) + " batches)";
    if (const uint64_t failed = shed_failed.load()) s += ", " + std::to_string(failed) + " retransforms refused";
  }
  // How the probes write (LookbackProbe.java): what a user comparing costs needs to know.
  std::string clock_off;
  {
    std::lock_guard<std::mutex> lock(error_mutex);
    clock_off = jfr_clock_off;
  }
  if (java_writes.load() || java_timed.load()) {
    const char* what = java_writes.load() && java_timed.load() ? "the untimed records of fast-clock rings and timed records"
                       : java_timed.load()                     ? "timed records"
                                                               : "the untimed records of fast-clock rings";
    s += std::string("; probes write ") + what + " from Java (" + std::to_string(java_writing_threads.load()) +
         " threads; agent option writes=native: all through JNI)";
  } else {
    s += "; probes record through JNI";
  }
  if (java_timed.load()) {
    s += "; timed records from Java read the TSC with jdk.jfr.internal.JVM.counterTime (HotSpot's epoch from libjvm.so)";
  } else if (!clock_off.empty()) {
    s += "; timed records go through JNI: " + clock_off;
  }
  // Guards (LookbackProbe.enter/exit): what a shed method's calls still cost.
  if (const uint64_t guarded = guarded_methods.load()) {
    s += "; " + std::to_string(guarded) + " methods have a guard byte that skips their probes while the budget sheds them";
  }
  if (const uint64_t folded = shed_folded.load()) {
    s += "; " + std::to_string(folded) + " shed methods' probes are compiled to nothing by C2 from now on";
  }
  if (const uint64_t launcher = launcher_skipped.load()) {
    s += "; " + std::to_string(launcher) +
         " JDK classes the launcher loaded before the main class keep their code and are not traced (startup=defer or skip)";
  }
  if (const uint64_t deferred = startup_deferred.load()) {
    s += "; " + std::to_string(deferred) +
         " JDK classes loaded in the start-up window get their probes when it closes (startup=defer; jvm-deferred says when)";
  }
  if (virtual_threads.load()) {
    s += "; virtual threads ran: each one's calls are recorded in the rings of the carrier threads it ran on, so a "
         "frame across an unmount (a park, a sleep, blocking I/O) ends on another carrier or closes another virtual "
         "thread's frame of the same method there, and its time is not exact (docs/jvm.md, \"Virtual threads\")";
  }
  const uint64_t hooked = classes_rewritten.load() + classes_unchanged.load() + classes_failed.load();
  const uint64_t hits = cache_hits.load();
  s += "; class hook: " + std::to_string(hooked) + " classes in " + std::to_string(hook_ns.load() / 1000000) + " ms, " +
       std::to_string(hooked - std::min(hits, hooked)) + " parsed and " + std::to_string(hits) + " from the class cache";
  if (cache_state.load() == kCacheOff) s += " (off)";
  std::lock_guard<std::mutex> lock(error_mutex);
  if (!first_error.empty()) s += "; first error: " + first_error;
  return s;
}

}  // namespace lookback::jvm
