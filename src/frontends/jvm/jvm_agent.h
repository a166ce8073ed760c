// What the JVM agent's files share: the runtime entry points it loaded
// (agent.cc, LoadRuntime), method keys, and the agent's counters.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "frontends/jvm/rewriter.h"
#include "lookback/lookback.h"

namespace lookback::jvm {

// liblookback.so's C API, resolved with dlsym once the agent has loaded it.
struct RuntimeApi {
  void (*enter)(uint64_t key) = nullptr;
  void (*exit)(uint64_t key) = nullptr;
  int (*set_key_name)(uint64_t key, const char* name) = nullptr;
  int (*set_thread_name)(const char* name) = nullptr;
  int (*set_thread_name_of)(uint32_t tid, const char* name) = nullptr;  // optional (older runtimes lack it)
  int (*dump_sync)(const char* reason, char* path_out, size_t path_len) = nullptr;
  int (*dump_dir)(char* out, size_t len) = nullptr;
  int (*is_tracing)() = nullptr;
  void (*thread_enable)() = nullptr;
  void (*thread_disable)() = nullptr;
  void (*scope_begin)(const char* name) = nullptr;
  void (*scope_end)(const char* name) = nullptr;
  int (*set_note)(const char* key, const char* value) = nullptr;
  // The overhead budget's shed set (optional: older runtimes lack them; shed.cc).
  size_t (*shed_keys)(uint64_t* out, size_t max) = nullptr;
  void (*set_shed_listener)(void (*listener)(void)) = nullptr;
  // The shed memory (optional: older runtimes lack them; shed_memory.cc).
  int (*budget_on)() = nullptr;
  int (*shed_remembered)(uint64_t key, uint64_t calls_per_s, uint64_t mean_ns) = nullptr;
  int (*shed_figures)(uint64_t key, uint64_t* calls_per_s, uint64_t* mean_ns) = nullptr;
  uint64_t (*budget_judgements)() = nullptr;
  // For the probe's direct writes (optional: without them every record goes through enter/exit).
  uint32_t (*ring_abi)() = nullptr;
  uint32_t (*clock_group)() = nullptr;
  int (*fast_ring)(void** ring) = nullptr;
  int (*any_ring)(void** ring) = nullptr;  // optional: a runtime without it gets no timed records from Java
  const uint64_t* const* (*filter_table)() = nullptr;
  // Per-method guard bytes the budget sets when it sheds (optional: older runtimes lack it).
  void (*register_guards)(const void* begin, const void* end) = nullptr;
  void (*unregister_guards)(const void* begin, const void* end) = nullptr;
};
extern RuntimeApi g_runtime;

// Each Java thread's ring for LookbackProbe's direct writes (natives.cc),
// indexed by Java thread id (Thread.tid: never reused in a JVM): `ring` 0 not
// known yet, -1 none (the natives record), else the Ring's address, and then
// the address of that ring's on-CPU word (Ring::on_cpu, immutable), which
// saves the probe a dependent load. Threads whose
// id is past kCount always take the natives. A thread keeps its ring for its
// whole life; when the runtime stops it recording, it clears the ring's
// on-CPU word and sets its next_sync to 0, which sends the probe to the
// natives (lb_thread_fast_ring, lb_thread_ring).
struct JavaRingEntry {
  int64_t ring;
  uint64_t on_cpu;
};
static_assert(sizeof(JavaRingEntry) == 16, "LookbackProbe.untimed indexes the table by tid << 4");
struct JavaRings {
  static constexpr uint64_t kCount = uint64_t{1} << 20;  // 16 MiB reserved, touched per page of ids in use
  JavaRingEntry* ring_of = nullptr;
  uint64_t count = 0;
  const uint64_t* const* filter_table = nullptr;
  bool direct = false;  // the probe writes untimed records (LookbackProbe.DIRECT): set before it is defined
  bool direct_timed_possible = false;  // the table is set up: the probe may write timed records too (jfr_clock.cc)
};
extern JavaRings g_java_rings;
// Reserves the table if the runtime allows direct writes (same ring ABI). Before the probe class is defined.
bool SetUpJavaRings();
// Lets the probe write the exact path's timed records itself, stamped with
// HotSpot's own TSC read (jfr_clock.cc); false, and why, when it cannot.
// After the probe class is defined and its natives linked; live phase.
bool EnableJfrClock(jvmtiEnv* jvmti, JNIEnv* jni, jclass probe, std::string* why);
// The calling thread's ring, asked of the runtime (LookbackProbe.bind).
void BindJavaRing(int64_t tid);
// Makes thread `tid` ask again at its next probe (its selection may have changed: a rename, enable).
void ForgetJavaRing(int64_t tid);
void ForgetJavaRingOf(JNIEnv* jni, jobject thread);

// A guard byte per method id, which the probe tests before anything else
// (LookbackProbe.enter/exit): the overhead budget sets a shed method's guard, so
// that its calls cost a byte load instead of a call into the recorder. The
// runtime finds each guard through the table the agent registers with
// lb_pass_register_guards (the clang pass's guard ABI, pass_guards.h), as it
// finds a pass-built function's. Reserved, not committed: a page is touched
// only when a guard in it is set.
struct JavaGuards {
  // Ids at or above this have no guard (the filter sheds them): 4 M methods
  // rewritten (each rewrite of a class gives its methods new ids).
  static constexpr uint64_t kCount = uint64_t{1} << 22;
  uint8_t* of = nullptr;                 // the guard bytes, by id
  lb_guard_entry* entries = nullptr;     // each id's one-entry table, as registered
  uint64_t count = 0;  // 0: no guards (a runtime without lb_pass_register_guards)
};
extern JavaGuards g_java_guards;
// Reserves the guard bytes if the runtime takes guards. Before the probe class is defined.
bool SetUpJavaGuards();
// Registers the guards of the methods a rewrite just gave ids, before the class's code can run.
void RegisterGuards(const std::vector<TracedMethod>& traced);
// Takes back method `id`'s guard once its class runs code without its
// probes: the budget then stops pricing its calls (pass_guards.h).
void UnregisterGuard(uint32_t id);

// LB_METHOD_KEY (lookback.h): method ids live above every native address.
inline uint64_t MethodKey(uint32_t id) { return uint64_t{1} << 55 | id; }

// Thread names (threads.cc): ThreadStart/VMInit on the thread itself, and
// Thread.setName through the rename hook (returns the name to set).
void NameStartingThread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);
jstring OnRename(jvmtiEnv* jvmti, JNIEnv* jni, jobject thread, jstring name);
// Attached to a running JVM: names the threads that already run (no
// ThreadStart came for them) by matching their kernel names.
void NameRunningThreads(jvmtiEnv* jvmti, JNIEnv* jni);
extern jvmtiEnv* g_jvmti;

// Nanoscope's Java control (nanoscope_control.cc): true when `name` is
// START_TRACING or STOP_TRACING:<file> (handled; the thread keeps its name).
bool OnControlName(JNIEnv* jni, const std::string& name);
void WaitForNanoscopeFlushes();  // at VMDeath

// LOOKBACK_ENABLED=0: no thread traces until it asks (lb_thread_enable).
bool TracingOffAtStart();
// Sets java.lang.LookbackProbe.on (inline mode): the probes call the recorder
// again, which records for the threads that are tracing.
void EnableProbes(JNIEnv* jni);

// One line on stderr, "lookback-jvm: ...".
void Say(const std::string& line);

// A JVMTI agent thread (a daemon: it never keeps the JVM from exiting) named
// `name`, running `run` at `priority`. False if it could not be made.
bool StartAgentThread(jvmtiEnv* jvmti, JNIEnv* jni, const char* name, jvmtiStartFunction run, jint priority);

// Retransforms the loaded classes whose names (internal form,
// "java/util/BitSet") are in *names: in one call when the VM takes them all
// (one safepoint, one deoptimisation pass), else one by one, counting each it
// refuses in *refused. The classes found leave *names. Returns how many the
// VM retransformed. (GetLoadedClasses hands out a local reference per loaded
// class, thousands; they go with a local frame of their own, whose capacity
// is declared, since under -Xcheck:jni HotSpot warns on stdout when a thread
// holds more than it declared.)
size_t RetransformNamed(jvmtiEnv* jvmti, JNIEnv* jni, std::unordered_set<std::string>* names,
                        std::atomic<uint64_t>* refused);

// Links java.lang.LookbackProbe.enterNative/exitNative (natives.cc).
// attached: the agent was loaded into a running JVM (`lookback attach`).
bool LinkProbeNatives(JNIEnv* jni, jclass probe, bool attached);

// `lookback attach`: tells every initialised lookback.Lookback class (the
// Java API, lookback.jar) that the agent is here now; one initialised
// before found no natives and made every call a no-op (java_api.cc).
void EnableJavaApi(jvmtiEnv* jvmti, JNIEnv* jni);

// Inline mode under the overhead budget (shed.cc): methods the budget shed
// lose their probes. The ClassFileLoadHook tells which methods it traced
// (NoteTraced) and asks which to leave unprobed (IsShed); StartShedding (at
// VMInit or attach, once) registers the runtime's shed listener and starts
// the JVMTI agent thread that retransforms the classes whose shed methods
// changed; StopShedding at VMDeath.
void NoteTraced(std::string class_name, std::vector<TracedMethod> traced);  // taken, not copied
bool IsShed(std::string_view class_name, std::string_view method_name, std::string_view descriptor);
// Whether IsShed may be true for a method of this class (a rewrite of it then depends on the budget).
bool ClassHasShed(std::string_view class_name);
void StartShedding(jvmtiEnv* jvmti, JNIEnv* jni);
void StopShedding();
// The Java methods shed now, by identity (for the shed memory at exit).
struct ShedMethodNow {
  uint64_t key;
  std::string cls, name, descriptor;
};
std::vector<ShedMethodNow> ShedMethodsNow();

// The shed memory (shed_memory.cc, docs/jvm.md "The shed memory"): the
// methods the budget shed in earlier runs of this program get no probes
// from the start. OpenShedMemory at VMInit (inline mode), before the hook
// rewrites a class; IsRemembered for the hook's rewrite; RememberedOf for
// the class cache's key (the class's remembered methods, "" for none);
// AnnounceRemembered names each of the class's remembered methods once
// and tells the runtime they are shed (lb_shed_remembered); SaveShedMemory
// at VMDeath, once the shed thread has stopped. A later attach with other
// globs turns the memory off (it was read for the first ones).
void OpenShedMemory(jvmtiEnv* jvmti, const std::string& option, const std::string& globs);
bool IsRemembered(std::string_view cls, std::string_view name, std::string_view descriptor);
std::string RememberedOf(std::string_view cls);
// `only`: the (name, descriptor) pairs the rewrite left out for the memory
// (nullptr: all of the class's).
void AnnounceRemembered(std::string_view cls, const std::vector<std::pair<std::string, std::string>>* only,
                        uint32_t (*new_method)(std::string_view cls, std::string_view name, std::string_view desc));
void SaveShedMemory();
// The hook may rewrite classes (detach clears it: retransforms then restore).
bool ProbesReady();
// java.lang.LookbackProbe (a global reference), once inline mode started; else null.
jclass ProbeClass();

// What the rewriter did, for the dump's "jvm" note (`lookback info`).
struct AgentStats {
  std::atomic<uint64_t> classes_rewritten{0}, classes_unchanged{0}, classes_failed{0}, methods_traced{0},
      retransform_failed{0};
  // Time in the class hook (parsing, rewriting, copying out): where a traced
  // JVM's start-up goes, next to what HotSpot does with the bytes.
  std::atomic<uint64_t> hook_ns{0};
  // startup=skip: the classes loaded before the probe class that keep their
  // code (all but java.lang.Thread).
  std::atomic<uint64_t> startup_skipped{0};
  // startup=skip: the JDK classes the launcher loaded after VMInit, before
  // the main class, that keep their code (agent.cc, g_launcher_window).
  std::atomic<uint64_t> launcher_skipped{0};
  // startup=defer: the JDK classes loaded in the start-up window that kept
  // their code until it closed (agent.cc, g_defer).
  std::atomic<uint64_t> startup_deferred{0};
  std::atomic<uint64_t> guarded_methods{0};       // methods given a guard byte (RegisterGuards)
  std::atomic<uint64_t> java_writing_threads{0};  // threads bound to their fast-clock ring (BindJavaRing)
  std::atomic<bool> java_timed{false};  // LookbackProbe writes the exact path's timed records too (jfr_clock.cc)
  std::string jfr_clock_off;             // why not, under error_mutex (empty: not tried, or on)
  std::atomic<bool> java_writes{false};  // LookbackProbe writes untimed records itself (writes=java and the runtime allows it)
  // The program ran a virtual thread (JDK 21 and later): the JDK loads
  // java.lang.VirtualThread$VThreadContinuation for the first one it starts
  // (java.lang.VirtualThread itself is loaded at every start). Its calls are
  // recorded in its carrier threads' rings (docs/jvm.md, "Virtual threads").
  std::atomic<bool> virtual_threads{false};
  std::atomic<uint64_t> skipped[kSkipReasonCount] = {};  // by SkipReason
  // The overhead budget (shed.cc): methods without probes now because it shed
  // them, classes retransformed to take probes out or put them back, in how
  // many batches, and retransforms the VM refused.
  std::atomic<uint64_t> shed_unprobed{0}, shed_classes{0}, shed_batches{0}, shed_failed{0};
  // Shed methods whose probes C2 compiles to nothing now (LookbackProbe.FOLD).
  std::atomic<uint64_t> shed_folded{0};
  // Inline mode's rule for methods C2 always inlines (the agent's inlined= option).
  enum InlinedPolicy { kInlinedNotApplicable, kInlinedSkipped, kInlinedProbed };
  std::atomic<int> inlined_policy{kInlinedNotApplicable};
  std::mutex error_mutex;
  std::string first_error;  // "<class>: <error>"

  // The class cache (class_cache.h): its state, and classes found in it.
  enum CacheStateValue : uint32_t { kCacheUnset = 0, kCacheOn, kCacheOff };
  std::atomic<uint32_t> cache_state{kCacheUnset};
  std::atomic<uint64_t> cache_hits{0};
  // Counts a class the hook saw; publishes the `jvm` note at most every 2 ms
  // of class loading (building it for every class was a tenth of the hook's
  // time on a cache hit). Publish() now: at the end of tracing's start, at
  // VMDeath and before a dump the agent itself asks for, so those see exact
  // counts; a dump a detector takes may miss the classes of the last 2 ms.
  void Count(const RewriteResult& r);
  void Publish();
  std::atomic<uint64_t> published_ns{0};
  void NoteError(const char* cls, const std::string& error);
  std::string Summary();
};
extern AgentStats& g_stats;  // never destroyed: callbacks may run during exit

}  // namespace lookback::jvm
