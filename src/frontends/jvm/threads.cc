// Java thread names for lookback: every traced thread carries its Java name
// (whole, not the kernel's 15 bytes) in dumps, exporters and LOOKBACK_THREADS
// globs, and keeps it through Thread.setName.
//
// Two ways a name arrives:
//   - JVMTI ThreadStart (and VMInit for the main thread) runs on the new
//     thread before its first Java frame: the name it has then.
//   - Thread.setName(String), whose first call is the rename hook
//     (rewriter.h) -> java.lang.LookbackProbe.renaming -> OnRename, in both
//     modes. A thread renaming itself names its own ring; one thread renaming
//     another goes through lb_thread_set_name_of with the target's kernel tid,
//     which ThreadStart stored in the target's JVMTI thread-local storage.
//
// The race between the two: setName on a thread that is alive but has not
// reached ThreadStart yet finds no tid and its new name is not yet in the
// Thread object (the hook runs first). Such renames wait in g_pending, which
// ThreadStart reads after it has stored the tid and read the name; both sides
// hold g_mutex, so one of them always sees the other.
#include <jni.h>
#include <jvmti.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include <mutex>
#include <string>
#include <vector>

#include "frontends/jvm/jvm_agent.h"
#include "frontends/jvm/method_names.h"

namespace lookback::jvm {
namespace {

std::mutex g_mutex;
struct Pending {
  jobject thread;  // global reference
  std::string name;
};
std::vector<Pending>& g_pending = *new std::vector<Pending>;  // bounded: the oldest gives way; never destroyed (callbacks at exit)
constexpr size_t kMaxPending = 64;

// The launcher's main thread detaches when main returns and attaches again
// as "DestroyJavaVM" to wait for the other threads: it keeps its first name.
thread_local bool t_named = false;

uint32_t Gettid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

}  // namespace

void NameStartingThread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  if (t_named) return;
  t_named = true;
  std::lock_guard<std::mutex> lock(g_mutex);
  jvmti->SetThreadLocalStorage(thread, reinterpret_cast<const void*>(static_cast<uintptr_t>(Gettid())));
  jvmtiThreadInfo info{};
  if (jvmti->GetThreadInfo(thread, &info) == JVMTI_ERROR_NONE && info.name != nullptr) {
    g_runtime.set_thread_name(Utf8FromModified(info.name).c_str());
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(info.name));
  }
  for (size_t i = 0; i < g_pending.size(); ++i) {
    if (!jni->IsSameObject(g_pending[i].thread, thread)) continue;
    g_runtime.set_thread_name(g_pending[i].name.c_str());
    jni->DeleteGlobalRef(g_pending[i].thread);
    g_pending.erase(g_pending.begin() + static_cast<ptrdiff_t>(i));
    break;
  }
}

void NameRunningThreads(jvmtiEnv* jvmti, JNIEnv* jni) {
  // A Java thread's kernel name is its Java name cut at 15 bytes (HotSpot
  // sets it when the thread starts); the main thread's is the launcher's,
  // "java", on a thread other than the process's first. Only a name that
  // matches one thread is used; the others keep their kernel names.
  std::map<std::string, std::vector<uint32_t>> by_comm;
  const uint32_t pid = static_cast<uint32_t>(getpid());
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      const uint32_t tid = static_cast<uint32_t>(strtoul(e->d_name, nullptr, 10));
      if (tid == 0 || tid == pid) continue;
      char path[64], comm[32] = {};
      snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
      if (FILE* f = fopen(path, "re")) {
        if (fgets(comm, sizeof comm, f) != nullptr) {
          std::string c(comm);
          while (!c.empty() && c.back() == '\n') c.pop_back();
          by_comm[c].push_back(tid);
        }
        fclose(f);
      }
    }
    closedir(d);
  }
  jint count = 0;
  jthread* threads = nullptr;
  if (jvmti->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (jint i = 0; i < count; ++i) {
    jvmtiThreadInfo info{};
    if (jvmti->GetThreadInfo(threads[i], &info) == JVMTI_ERROR_NONE && info.name != nullptr) {
      const std::string name(info.name);
      const std::string comm = name == "main" ? "java" : name.substr(0, 15);
      auto it = by_comm.find(comm);
      if (it != by_comm.end() && it->second.size() == 1) {
        const uint32_t tid = it->second[0];
        jvmti->SetThreadLocalStorage(threads[i], reinterpret_cast<const void*>(static_cast<uintptr_t>(tid)));
        if (g_runtime.set_thread_name_of != nullptr) g_runtime.set_thread_name_of(tid, Utf8FromModified(name).c_str());
      }
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(info.name));
    }
    jni->DeleteLocalRef(threads[i]);
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(threads));
}

namespace {
jstring Renamed(jvmtiEnv* jvmti, JNIEnv* jni, jobject thread, jstring name) {
  if (thread == nullptr || name == nullptr) return name;  // setName(null) throws after us
  const char* utf = jni->GetStringUTFChars(name, nullptr);
  if (utf == nullptr) {
    jni->ExceptionClear();
    return name;
  }
  const std::string text = Utf8FromModified(utf);
  jni->ReleaseStringUTFChars(name, utf);

  // Nanoscope's control names: handled, and the thread keeps its name.
  jthread me = nullptr;
  const bool is_self = jvmti->GetCurrentThread(&me) == JVMTI_ERROR_NONE && jni->IsSameObject(thread, me);
  if (me != nullptr) jni->DeleteLocalRef(me);
  if (is_self && OnControlName(jni, text)) {
    jvmtiThreadInfo info{};
    jstring kept = nullptr;
    if (jvmti->GetThreadInfo(thread, &info) == JVMTI_ERROR_NONE && info.name != nullptr) {
      kept = jni->NewStringUTF(info.name);
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(info.name));
    }
    return kept != nullptr ? kept : name;
  }

  if (is_self) {
    g_runtime.set_thread_name(text.c_str());
    return name;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  void* stored = nullptr;
  const jvmtiError e = jvmti->GetThreadLocalStorage(thread, &stored);
  if (e == JVMTI_ERROR_THREAD_NOT_ALIVE) return name;  // not started (ThreadStart reads the name) or ended
  if (e == JVMTI_ERROR_NONE && stored != nullptr) {
    if (g_runtime.set_thread_name_of != nullptr) {
      g_runtime.set_thread_name_of(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(stored)), text.c_str());
    }
    return name;
  }
  if (e != JVMTI_ERROR_NONE) return name;
  for (Pending& p : g_pending) {
    if (jni->IsSameObject(p.thread, thread)) {
      p.name = text;
      return name;
    }
  }
  if (g_pending.size() >= kMaxPending) {
    jni->DeleteGlobalRef(g_pending.front().thread);
    g_pending.erase(g_pending.begin());
  }
  if (jobject ref = jni->NewGlobalRef(thread)) g_pending.push_back({ref, text});
  return name;
}

}  // namespace

jstring OnRename(jvmtiEnv* jvmti, JNIEnv* jni, jobject thread, jstring name) {
  jstring result = Renamed(jvmti, jni, thread, name);
  // The rename may have selected the thread or turned it on (START_TRACING):
  // its next probe asks the runtime for its ring again.
  if (thread != nullptr) ForgetJavaRingOf(jni, thread);
  return result;
}

}  // namespace lookback::jvm
