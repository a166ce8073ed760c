// The overhead budget in Java code (docs/jvm.md, "The overhead budget"):
// a method the runtime sheds is filtered in lb_enter/lb_exit, but its probes
// still call into native code (LookbackProbe.enterNative) at every call. So
// the agent retransforms the method's class without that method's probes,
// and with them again when the budget brings it back.
//
//   control thread (runtime)   lb_set_shed_listener -> OnShedChanged: marks a
//                              change pending and wakes the shed thread; nothing else
//                              (it is not attached to the JVM and must return at once)
//   shed thread (JVMTI agent   reads lb_shed_keys, maps each method key to the method's
//   thread, a daemon)          identity (class, name, descriptor), and retransforms the
//                              classes whose set of shed methods changed, at most one
//                              batch per kBatchIntervalNs
//   ClassFileLoadHook (any     NoteTraced: the ids it assigned, and to which method;
//   thread loading or          IsShed: whether to leave a method unprobed
//   retransforming a class)
//
// Identities, not ids: every rewrite of a class gives its methods new ids (a
// retransform too), and a shed method has no id at all while it is
// unprobed, so the runtime's key for it is the one it had when it was shed.
#include <jvmti.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontends/jvm/jvm_agent.h"
#include "runtime/config.h"

namespace lookback::jvm {
namespace {

// At most one retransform batch per this much time: a retransform deoptimises
// the class's compiled code, so a burst of shed decisions becomes one batch.
constexpr uint64_t kBatchIntervalNs = 200'000'000;

// A method loses its probes only once it has stayed shed this long
// (LOOKBACK_JVM_RETRANSFORM_AFTER: a duration, 0 at once, `off` never).
// Measured on javac (docs/jvm.md, "The overhead budget"): a retransform
// throws away the compiled code of every method that inlined the shed one,
// and the JIT's recompiling cost more CPU than the probes' calls into
// lb_enter did over a 10 s run. Until then the method's calls are dropped by
// lb_enter's filter; a long-running program, which the budget is for, pays
// the recompilation once and the probes' calls never again.
constexpr uint64_t kDefaultRetransformAfterNs = 30'000'000'000;
constexpr uint64_t kNever = ~uint64_t{0};

uint64_t RetransformAfterNs() {
  static const uint64_t after = [] {
    const char* v = getenv("LOOKBACK_JVM_RETRANSFORM_AFTER");
    if (v == nullptr || *v == '\0') return kDefaultRetransformAfterNs;
    if (std::string_view(v) == "off") return kNever;
    uint64_t ns = 0;
    if (rt::ParseDuration(v, &ns)) return ns;
    Say(std::string("LOOKBACK_JVM_RETRANSFORM_AFTER='") + v + "' is not a duration or off; using 30s");
    return kDefaultRetransformAfterNs;
  }();
  return after;
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Strings stored once, numbered from 1 (0: none). Entries never move (deque).
class Interned {
 public:
  uint32_t Intern(std::string_view s) {
    if (auto it = index_.find(s); it != index_.end()) return it->second;
    strings_.emplace_back(s);
    const auto n = static_cast<uint32_t>(strings_.size());
    index_.emplace(strings_.back(), n);
    return n;
  }
  uint32_t Find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? 0 : it->second;
  }
  const std::string& At(uint32_t n) const { return strings_[n - 1]; }

 private:
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> index_;
};

// A method across retransforms: class index << 32 | signature index.
using Identity = uint64_t;

// Written by the ClassFileLoadHook (NoteTraced) and the shed thread
// (applied), read by both; everything under `mutex`. About 8 bytes per id
// the agent assigned, plus each class name and method name+descriptor once.
struct MethodTable {
  std::mutex mutex;
  Interned classes;                              // internal names, a/b/C
  Interned signatures;                           // name + descriptor, "step(I)I"
  std::vector<Identity> by_id;                   // method id -> its identity (0: not a traced method)
  std::unordered_map<Identity, uint64_t> shed_since;  // shed by the runtime, since (CLOCK_MONOTONIC)
  std::unordered_set<Identity> applied;          // unprobed now (the hook leaves them so)
  std::unordered_set<uint32_t> applied_classes;  // their classes
  // What NoteTraced was given and Drain has not yet put in the tables above:
  // interning every method's name and descriptor as its class loads was a
  // fifth of the class hook's time, and the tables are read only once the
  // budget sheds something (by the shed thread, and by the hook after that).
  struct Loaded {
    std::string class_name;
    std::vector<TracedMethod> traced;
  };
  std::vector<Loaded> pending;
};

// Puts the pending classes' methods in the tables; under t.mutex.
void Drain(MethodTable& t) {
  std::string sig;
  for (MethodTable::Loaded& l : t.pending) {
    const uint64_t cls = t.classes.Intern(l.class_name);
    for (const TracedMethod& m : l.traced) {
      sig.assign(m.name).append(m.descriptor);
      if (m.id >= t.by_id.size()) t.by_id.resize(std::max<size_t>(m.id + 1, t.by_id.size() * 2));
      t.by_id[m.id] = cls << 32 | t.signatures.Intern(sig);
    }
  }
  t.pending.clear();
}

// The shed thread's wake-up. Never destroyed: the control thread may call the
// listener while the process exits.
struct Wakeup {
  std::mutex mutex;
  std::condition_variable cv;
  bool pending = false;  // the shed set changed since the shed thread last read it
  bool stop = false;     // VMDeath
  bool done = false;     // the shed thread has left its loop (StopShedding waits for it)
  bool drain = false;    // NoteTraced: many classes pending, put them in the tables
};

// Classes pending before NoteTraced asks the shed thread to drain them:
// their lists are not deduplicated, so a JVM that loads classes for hours
// and never sheds must not keep them all.
constexpr size_t kDrainAt = 256;

MethodTable& Table() {
  static MethodTable* t = new MethodTable;
  return *t;
}
Wakeup& Wake() {
  static Wakeup* w = new Wakeup;
  return *w;
}

// The shed thread is running: the hook records ids and asks IsShed.
std::atomic<bool> g_shedding{false};
// Table().applied.size(), read by the hook without the lock: nothing shed, nothing to look up.
std::atomic<size_t> g_applied_count{0};

// Control thread (lb_set_shed_listener): wake the shed thread, nothing more.
void OnShedChanged() {
  Wakeup& w = Wake();
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    w.pending = true;
  }
  w.cv.notify_all();
}

// The runtime's shed keys now (sorted, as lb_shed_keys gives them).
std::vector<uint64_t> ShedKeysNow() {
  std::vector<uint64_t> keys(64);
  for (;;) {
    const size_t n = g_runtime.shed_keys(keys.data(), keys.size());
    if (n <= keys.size()) {
      keys.resize(n);
      return keys;
    }
    keys.resize(n + 16);  // more were shed meanwhile: ask again
  }
}

// LookbackProbe.FOLD, the probe class's @Stable copy of the guards: set for
// the methods shed now, so that C2 compiles their probes to nothing from
// then on, and the guard byte's load and branch go too. A method brought back
// is cleared and its class retransformed in the same batch: code compiled
// while its byte was set took it for a constant, and a retransform throws
// that code away (every compiled method that inlined one of the class's
// methods is deoptimised). Used by the shed thread only.
class Fold {
 public:
  // Sets or clears method `id`'s byte; false if it cannot (JNI failed, the
  // probe class has no FOLD, or `id` is past it).
  bool Set(JNIEnv* jni, uint32_t id, bool shed) {
    if (failed_ || !Ready(jni)) return false;
    const size_t p = id >> kPageBits;
    if (p >= pages_.size()) return false;
    if (pages_[p] == nullptr) {
      if (!shed) return true;
      jbyteArray page = jni->NewByteArray(jsize{1} << kPageBits);
      if (page == nullptr) return Failed(jni);
      jni->SetObjectArrayElement(fold_, static_cast<jsize>(p), page);
      pages_[p] = static_cast<jbyteArray>(jni->NewGlobalRef(page));
      jni->DeleteLocalRef(page);
      if (jni->ExceptionCheck() || pages_[p] == nullptr) return Failed(jni);
    }
    const jbyte v = shed ? 1 : 0;
    jni->SetByteArrayRegion(pages_[p], static_cast<jsize>(id & ((1u << kPageBits) - 1)), 1, &v);
    return !jni->ExceptionCheck() || Failed(jni);
  }
  std::unordered_set<uint32_t> set;  // the ids whose byte is set now

 private:
  static constexpr unsigned kPageBits = 12;  // LookbackProbe.folded: pages of 4096 ids
  bool Ready(JNIEnv* jni) {
    if (fold_ != nullptr) return true;
    jclass probe = ProbeClass();
    jfieldID f = probe == nullptr ? nullptr : jni->GetStaticFieldID(probe, "FOLD", "[[B");
    jobject a = f == nullptr ? nullptr : jni->GetStaticObjectField(probe, f);
    if (a == nullptr) return Failed(jni);
    fold_ = static_cast<jobjectArray>(jni->NewGlobalRef(a));
    jni->DeleteLocalRef(a);
    if (fold_ == nullptr) return Failed(jni);
    pages_.assign(static_cast<size_t>(jni->GetArrayLength(fold_)), nullptr);
    return true;
  }
  bool Failed(JNIEnv* jni) {
    jni->ExceptionClear();
    failed_ = true;
    return false;
  }
  jobjectArray fold_ = nullptr;      // LookbackProbe.FOLD (a global reference)
  std::vector<jbyteArray> pages_;    // its pages, once allocated (global references)
  bool failed_ = false;
};

Fold& TheFold() {
  static Fold* f = new Fold;
  return *f;
}

// The shed thread's work after a change, or when a method's wait is over:
// the methods shed now for RetransformAfterNs(), by identity, against those
// unprobed now; the classes of the difference are retransformed (the hook
// reads the new set). Returns when to look again for methods still waiting
// (CLOCK_MONOTONIC ns; 0: none).
uint64_t Apply(jvmtiEnv* jvmti, JNIEnv* jni) {
  if (!ProbesReady()) return 0;  // detached: the hook rewrites nothing, so there is nothing to change
  const std::vector<uint64_t> keys = ShedKeysNow();
  const uint64_t after = RetransformAfterNs();
  const uint64_t now_ns = MonotonicNs();
  uint64_t next_ns = 0;
  std::unordered_set<std::string> changed_classes;
  std::vector<uint32_t> unprobed_ids;
  std::vector<uint32_t> fold_ids, unfold_ids;  // LookbackProbe.FOLD's bytes to set and to clear
  Fold& fold = TheFold();
  MethodTable& t = Table();
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    Drain(t);
    std::unordered_set<uint32_t> shed_ids;  // with a byte in LookbackProbe.FOLD
    std::unordered_set<Identity> shed;
    for (uint64_t key : keys) {
      const uint64_t id = key & 0xffffffffu;
      if (key != MethodKey(static_cast<uint32_t>(id))) continue;  // a native function, not a Java method
      if (id < g_java_guards.count && !fold.set.count(static_cast<uint32_t>(id))) fold_ids.push_back(static_cast<uint32_t>(id));
      if (id < g_java_guards.count) shed_ids.insert(static_cast<uint32_t>(id));
      if (id < t.by_id.size() && t.by_id[id] != 0) shed.insert(t.by_id[id]);
    }
    for (uint32_t id : fold.set) {
      if (shed_ids.count(id)) continue;
      unfold_ids.push_back(id);
      if (id < t.by_id.size() && t.by_id[id] != 0) changed_classes.insert(t.classes.At(static_cast<uint32_t>(t.by_id[id] >> 32)));
    }
    for (auto it = t.shed_since.begin(); it != t.shed_since.end();) {
      it = shed.count(it->first) ? std::next(it) : t.shed_since.erase(it);
    }
    std::unordered_set<Identity> now;
    for (Identity m : shed) {
      const uint64_t since = t.shed_since.try_emplace(m, now_ns).first->second;
      if (after == kNever) continue;
      if (now_ns - since >= after) {
        now.insert(m);
      } else if (next_ns == 0 || since + after < next_ns) {
        next_ns = since + after;
      }
    }
    std::set<uint32_t> changed;
    for (Identity m : now) {
      if (!t.applied.count(m)) changed.insert(static_cast<uint32_t>(m >> 32));
    }
    for (Identity m : t.applied) {
      if (!now.count(m)) changed.insert(static_cast<uint32_t>(m >> 32));
    }
    if (!changed.empty()) {
      t.applied = std::move(now);
      t.applied_classes.clear();
      for (Identity m : t.applied) t.applied_classes.insert(static_cast<uint32_t>(m >> 32));
      g_applied_count.store(t.applied.size(), std::memory_order_release);
      for (uint32_t c : changed) changed_classes.insert(t.classes.At(c));
      // The keys whose probes this batch takes out: their guards go once it took.
      for (uint64_t key : keys) {
        const uint64_t id = key & 0xffffffffu;
        if (key != MethodKey(static_cast<uint32_t>(id)) || id >= t.by_id.size() || t.by_id[id] == 0) continue;
        const Identity m = t.by_id[id];
        if (t.applied.count(m) && changed.count(static_cast<uint32_t>(m >> 32))) unprobed_ids.push_back(static_cast<uint32_t>(id));
      }
    }
  }
  // Brought back: cleared before the retransform that throws away the code
  // that took the byte for a constant. Shed: set once the tables know it.
  for (uint32_t id : unfold_ids) {
    if (fold.Set(jni, id, false)) fold.set.erase(id);
  }
  for (uint32_t id : fold_ids) {
    if (fold.Set(jni, id, true)) fold.set.insert(id);
  }
  g_stats.shed_folded.store(fold.set.size(), std::memory_order_relaxed);
  if (changed_classes.empty()) {
    if (!fold_ids.empty() || !unfold_ids.empty()) g_stats.Publish();
    return next_ns;
  }
  // The note first: the VM runs the retransformed code as soon as it has
  // installed it, before RetransformClasses returns, so a dump taken in
  // between showed a method's calls without its probes and a note that did
  // not say why yet (BudgetJvm.AShedMethodLosesItsProbes... under load).
  // Counted as asked, then corrected if the VM took fewer.
  g_stats.shed_unprobed.store(g_applied_count.load());
  g_stats.shed_classes.fetch_add(changed_classes.size(), std::memory_order_relaxed);
  g_stats.shed_batches.fetch_add(1, std::memory_order_relaxed);
  g_stats.Publish();
  std::unordered_set<std::string> to_find = changed_classes;
  const size_t done = RetransformNamed(jvmti, jni, &to_find, &g_stats.shed_failed);
  // Their calls now cost nothing, which the budget learns when their guards
  // go (a frame still running the old code keeps its guard set, and skips
  // them as before). When the VM refused a class, the guards stay: the
  // method may still have its probes, whose guard must stay reachable.
  if (done == changed_classes.size()) {
    for (uint32_t id : unprobed_ids) UnregisterGuard(id);
  }
  if (done < changed_classes.size()) {
    g_stats.shed_classes.fetch_sub(changed_classes.size() - done, std::memory_order_relaxed);
    g_stats.Publish();
  }
  return next_ns;
}

void ShedLoop(jvmtiEnv* jvmti, JNIEnv* jni, Wakeup& w, std::unique_lock<std::mutex>& lock) {
  uint64_t last_batch_ns = 0;
  uint64_t next_ns = 0;  // a shed method's wait ends then (0: none waiting)
  const auto woken = [&] { return w.pending || w.stop || w.drain; };
  for (;;) {
    if (next_ns == 0) {
      w.cv.wait(lock, woken);
    } else {
      const uint64_t now = MonotonicNs();
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(next_ns > now ? next_ns - now : 0);
      w.cv.wait_until(lock, until, woken);
    }
    if (w.stop) return;
    if (w.drain) {
      w.drain = false;
      lock.unlock();
      {
        MethodTable& t = Table();
        std::lock_guard<std::mutex> tables(t.mutex);
        Drain(t);
      }
      lock.lock();
      // Only a drain: back to waiting (a method whose wait is over goes on below).
      if (!w.pending && (next_ns == 0 || MonotonicNs() < next_ns)) continue;
    }
    // Debounce: changes that come within kBatchIntervalNs of the last batch
    // wait for its end and then go together.
    const uint64_t now = MonotonicNs();
    if (last_batch_ns != 0 && now < last_batch_ns + kBatchIntervalNs) {
      const auto until =
          std::chrono::steady_clock::now() + std::chrono::nanoseconds(last_batch_ns + kBatchIntervalNs - now);
      w.cv.wait_until(lock, until, [&] { return w.stop; });
      if (w.stop) return;
    }
    w.pending = false;
    lock.unlock();
    next_ns = Apply(jvmti, jni);
    last_batch_ns = MonotonicNs();
    lock.lock();
  }
}

void JNICALL ShedThread(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  // Not a thread of the program: nothing it runs (Thread.exit at its end) is recorded.
  g_runtime.thread_disable();
  Wakeup& w = Wake();
  std::unique_lock<std::mutex> lock(w.mutex);
  ShedLoop(jvmti, jni, w, lock);
  w.done = true;
  w.cv.notify_all();
}

}  // namespace

void NoteTraced(std::string class_name, std::vector<TracedMethod> traced) {
  if (!g_shedding.load(std::memory_order_acquire) || traced.empty()) return;
  MethodTable& t = Table();
  bool drain = false;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    t.pending.push_back({std::move(class_name), std::move(traced)});
    drain = t.pending.size() >= kDrainAt;
  }
  if (drain) {  // (the tables' lock is not held while the wake-up's is taken)
    Wakeup& w = Wake();
    {
      std::lock_guard<std::mutex> lock(w.mutex);
      w.drain = true;
    }
    w.cv.notify_all();
  }
}

bool IsShed(std::string_view class_name, std::string_view method_name, std::string_view descriptor) {
  if (g_applied_count.load(std::memory_order_acquire) == 0) return false;
  MethodTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  Drain(t);
  const uint64_t cls = t.classes.Find(class_name);
  if (cls == 0 || !t.applied_classes.count(static_cast<uint32_t>(cls))) return false;
  std::string sig(method_name);
  sig.append(descriptor);
  const uint32_t s = t.signatures.Find(sig);
  return s != 0 && t.applied.count(cls << 32 | s);
}

bool ClassHasShed(std::string_view class_name) {
  if (g_applied_count.load(std::memory_order_acquire) == 0) return false;
  MethodTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  Drain(t);
  const uint64_t cls = t.classes.Find(class_name);
  return cls != 0 && t.applied_classes.count(static_cast<uint32_t>(cls));
}

std::vector<ShedMethodNow> ShedMethodsNow() {
  std::vector<ShedMethodNow> out;
  if (!g_shedding.load(std::memory_order_acquire)) return out;
  const std::vector<uint64_t> keys = ShedKeysNow();
  MethodTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mutex);
  Drain(t);
  for (uint64_t key : keys) {
    const uint64_t id = key & 0xffffffffu;
    if (key != MethodKey(static_cast<uint32_t>(id)) || id >= t.by_id.size() || t.by_id[id] == 0) continue;
    const Identity m = t.by_id[id];
    const std::string& sig = t.signatures.At(static_cast<uint32_t>(m));
    const size_t paren = sig.find('(');
    if (paren == std::string::npos) continue;
    out.push_back({key, t.classes.At(static_cast<uint32_t>(m >> 32)), sig.substr(0, paren), sig.substr(paren)});
  }
  return out;
}

void StartShedding(jvmtiEnv* jvmti, JNIEnv* jni) {
  static bool started = false;  // VMInit or the first attach; a later attach finds it running
  if (started) {
    // Attached again after a detach, during which the shed thread changed
    // nothing: it compares the shed set with what is unprobed again.
    OnShedChanged();
    return;
  }
  if (g_runtime.shed_keys == nullptr || g_runtime.set_shed_listener == nullptr) return;  // an older runtime
  g_shedding.store(true, std::memory_order_release);  // from now on the hook records its ids
  if (!StartAgentThread(jvmti, jni, "lookback-shed", &ShedThread, JVMTI_THREAD_MIN_PRIORITY)) {
    g_shedding.store(false, std::memory_order_release);
    Say("cannot start the budget's agent thread: shed Java methods keep their probes (their calls are still dropped)");
    return;
  }
  started = true;
  g_runtime.set_shed_listener(&OnShedChanged);
}

// At VMDeath. Waits (up to half a second) for the shed thread to leave: a
// thread that is still in native code when the VM exits makes HotSpot's VM
// thread wait for it in steps of 10 ms (VM_Exit's wait for threads in
// native), and waiting in a std::condition_variable is "in native" (the
// other such thread at exit was a probe's JNI call: OnVMDeath turns the
// probes off; JvmExit.HotSpotDoesNotWaitForTheAgentAtTheLastSafepoint).
void StopShedding() {
  if (!g_shedding.load()) return;
  if (g_runtime.set_shed_listener != nullptr) g_runtime.set_shed_listener(nullptr);
  Wakeup& w = Wake();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.stop = true;
  w.cv.notify_all();
  w.cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return w.done; });
}

}  // namespace lookback::jvm
