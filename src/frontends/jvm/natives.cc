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

#include "frontends/jvm/jvm_agent.h"

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

// Thread.setName's rename hook (rewriter.h): rare, so a plain JNI call.
JNIEXPORT jstring JNICALL Java_java_lang_LookbackProbe_renaming(JNIEnv* jni, jclass, jobject thread, jstring name) {
  return lookback::jvm::g_jvmti ? lookback::jvm::OnRename(lookback::jvm::g_jvmti, jni, thread, name) : name;
}

}  // extern "C"

namespace lookback::jvm {

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
  for (const char* name : {"enterNative", "exitNative"}) {
    jmethodID m = jni->GetStaticMethodID(probe, name, "(I)V");
    if (m == nullptr) {
      jni->ExceptionClear();
      return false;
    }
    jni->CallStaticVoidMethod(probe, m, 0);
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
  const uint64_t hooked = classes_rewritten.load() + classes_unchanged.load() + classes_failed.load();
  s += "; class hook: " + std::to_string(hooked) + " classes parsed in " + std::to_string(hook_ns.load() / 1000000) +
       " ms";
  std::lock_guard<std::mutex> lock(error_mutex);
  if (!first_error.empty()) s += "; first error: " + first_error;
  return s;
}

}  // namespace lookback::jvm
