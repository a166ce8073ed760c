// The natives of lookback.jar's lookback.Lookback (src/frontends/jvm/java/):
// HotSpot looks for a class's natives in the JVMTI agents' libraries too, so
// the API binds to this library whenever the agent is loaded, and is a no-op
// (UnsatisfiedLinkError, caught in Java) when it is not. An agent attached
// later turns a class that found no natives back on (EnableJavaApi).
#include <jni.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "frontends/jvm/jvm_agent.h"
#include "frontends/jvm/method_names.h"

namespace lookback::jvm {
namespace {

// lb_scope_begin keeps the name pointer for the life of the process: scope
// names are interned, never freed, and bounded.
constexpr size_t kMaxScopeNames = 4096;
std::mutex g_scope_mutex;
std::unordered_set<std::string>* g_scope_names = nullptr;  // never freed: scopes may be open at exit

const char* InternScopeName(JNIEnv* jni, jstring name) {
  if (name == nullptr) return nullptr;
  const char* utf = jni->GetStringUTFChars(name, nullptr);
  if (utf == nullptr) {
    jni->ExceptionClear();
    return nullptr;
  }
  std::string text = Utf8FromModified(utf);
  jni->ReleaseStringUTFChars(name, utf);
  std::lock_guard<std::mutex> lock(g_scope_mutex);
  if (g_scope_names == nullptr) g_scope_names = new std::unordered_set<std::string>;
  auto it = g_scope_names->find(text);
  if (it != g_scope_names->end()) return it->c_str();
  if (g_scope_names->size() >= kMaxScopeNames) {
    static bool said = false;
    if (!said) Say("Lookback.scope: more than 4096 distinct scope names; further names are not recorded");
    said = true;
    return nullptr;
  }
  return g_scope_names->insert(std::move(text)).first->c_str();
}

}  // namespace
void EnableJavaApi(jvmtiEnv* jvmti, JNIEnv* jni) {
  jint n = 0;
  jclass* classes = nullptr;
  if (jvmti->GetLoadedClasses(&n, &classes) != JVMTI_ERROR_NONE) return;
  // A local reference per loaded class: declared, or -Xcheck:jni warns on
  // stdout at the next JNI call (agent.cc, ModifiableClasses).
  if (jni->EnsureLocalCapacity(n + 64) != JNI_OK) jni->ExceptionClear();
  for (jint i = 0; i < n; ++i) {
    char* sig = nullptr;
    jint status = 0;
    // One per class loader that loaded lookback.jar. A class not initialised
    // yet asks its natives when it is, and finds them.
    if (jvmti->GetClassSignature(classes[i], &sig, nullptr) == JVMTI_ERROR_NONE && sig != nullptr &&
        strcmp(sig, "Llookback/Lookback;") == 0 && jvmti->GetClassStatus(classes[i], &status) == JVMTI_ERROR_NONE &&
        (status & JVMTI_CLASS_STATUS_INITIALIZED) != 0) {
      if (jfieldID agent = jni->GetStaticFieldID(classes[i], "agent", "Z")) {
        jni->SetStaticBooleanField(classes[i], agent, JNI_TRUE);
      } else {
        jni->ExceptionClear();  // a lookback.jar of another version: leave it alone
      }
    }
    if (sig != nullptr) jvmti->Deallocate(reinterpret_cast<unsigned char*>(sig));
    jni->DeleteLocalRef(classes[i]);
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(classes));
}

}  // namespace lookback::jvm

using lookback::jvm::g_runtime;

extern "C" {

JNIEXPORT jboolean JNICALL Java_lookback_Lookback_available0(JNIEnv*, jclass) {
  return g_runtime.dump_sync != nullptr ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jstring JNICALL Java_lookback_Lookback_dump0(JNIEnv* jni, jclass, jstring reason) {
  if (g_runtime.dump_sync == nullptr) return nullptr;
  std::string why = "java";
  if (reason != nullptr) {
    if (const char* utf = jni->GetStringUTFChars(reason, nullptr)) {
      why = lookback::jvm::Utf8FromModified(utf);
      jni->ReleaseStringUTFChars(reason, utf);
    } else {
      jni->ExceptionClear();
    }
  }
  char path[4096];
  lookback::jvm::g_stats.Publish();  // the dump's `jvm` note with every class counted
  if (g_runtime.dump_sync(why.c_str(), path, sizeof path) != 0) {
    lookback::jvm::Say(std::string("Lookback.dump(\"") + why + "\"): no dump: " + path);
    return nullptr;
  }
  return jni->NewStringUTF(path);
}

JNIEXPORT jboolean JNICALL Java_lookback_Lookback_enabled0(JNIEnv*, jclass) {
  return g_runtime.is_tracing != nullptr && g_runtime.is_tracing() != 0 ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jboolean JNICALL Java_lookback_Lookback_scopeBegin0(JNIEnv* jni, jclass, jstring name) {
  const char* interned = lookback::jvm::InternScopeName(jni, name);
  if (interned == nullptr || g_runtime.scope_begin == nullptr) return JNI_FALSE;
  g_runtime.scope_begin(interned);
  return JNI_TRUE;
}

JNIEXPORT void JNICALL Java_lookback_Lookback_scopeEnd0(JNIEnv* jni, jclass, jstring name) {
  const char* interned = lookback::jvm::InternScopeName(jni, name);
  if (interned != nullptr && g_runtime.scope_end != nullptr) g_runtime.scope_end(interned);
}

}  // extern "C"
