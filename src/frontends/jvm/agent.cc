// liblookback-jvm.so: the JVMTI agent of the JVM front-end (docs/jvm.md).
//
//   java -agentpath:/path/liblookback-jvm.so[=mode=inline,include=com.example.*,dir=/tmp/d] ...
//
// Two modes:
//   inline    (default) ClassFileLoadHook hands every class to the C++
//             rewriter (rewriter.h), which compiles an entry probe, an exit
//             probe before every return and a catch-all exit-and-rethrow
//             handler into each method. The probes call
//             java.lang.LookbackProbe (probe_class.h), whose natives
//             (natives.cc) write the thread's lookback ring.
//   listener  JVMTI MethodEntry/MethodExit events into the same rings: the
//             analogue of ART's built-in method tracing, the slow baseline.
//
// The runtime (liblookback.so) is loaded by the agent after it has turned
// its options into LOOKBACK_* variables, so `dir=...`, `threads=...` and
// every other runtime setting can be given as agent options. Under
// `lookback record` the runtime is already loaded (preloaded) and configured
// by record's flags.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <fnmatch.h>
#include <jvmti.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/elf_build_id.h"
#include "frontends/jvm/class_cache.h"
#include "frontends/jvm/jvm_agent.h"
#include "frontends/jvm/method_names.h"
#include "frontends/jvm/probe_class.h"
#include "frontends/jvm/rewriter.h"
#include "runtime/config.h"

namespace lookback::jvm {

RuntimeApi g_runtime;
AgentStats& g_stats = *new AgentStats;
jvmtiEnv* g_jvmti = nullptr;

bool TracingOffAtStart() {
  const char* enabled = getenv("LOOKBACK_ENABLED");
  return enabled != nullptr && strcmp(enabled, "0") == 0;
}

namespace {
jclass g_probe_class = nullptr;  // global reference, once inline mode started
jfieldID g_probe_on = nullptr;
}  // namespace

jclass ProbeClass() { return g_probe_class; }

void EnableProbes(JNIEnv* jni) {
  if (g_probe_class != nullptr && g_probe_on != nullptr) jni->SetStaticBooleanField(g_probe_class, g_probe_on, JNI_TRUE);
}

void Say(const std::string& line) {
  const std::string s = "lookback-jvm: " + line + "\n";
  ssize_t ignored = write(2, s.data(), s.size());
  (void)ignored;
}

namespace {

enum class Mode { kInline, kListener };

// What becomes of the classes loaded before the probe class exists (about
// 260 of java.base's for an empty main; docs/jvm.md, "Start-up").
enum class Startup {
  kDefer,  // defer (default): as skip, and the JDK classes first loaded in the
           // JVM's first second get their probes after it (g_defer)
  kSkip,   // skip: they keep their code and are not traced
  kSync,   // sync: retransformed with probes before main starts
  kAsync,  // async: retransformed with probes on an agent thread while main runs
};

struct Options {
  Mode mode = Mode::kInline;
  std::vector<std::string> include, exclude;  // globs over "pkg.Class.method"
  bool probe_inlined = false;  // inlined=probe: probes in methods C2 always inlines too (AlwaysInlined)
  Startup startup = Startup::kDefer;  // startup=defer|skip|sync|async
  // defer and skip: the classes loaded before tracing starts, and the
  // launcher's, keep their code.
  bool SkipsStartup() const { return startup == Startup::kDefer || startup == Startup::kSkip; }
  // writes=java (default): LookbackProbe writes a fast-clock ring's untimed
  // records itself; writes=native: every record through the natives.
  bool java_writes = true;
  // cache=DIR|off: the cache of rewritten classes (class_cache.h); empty: the
  // default, $XDG_CACHE_HOME/lookback/jvm-classes or ~/.cache/lookback/jvm-classes.
  std::string cache;
  // shed_memory=DIR|off: the shed memory (shed_memory.cc); empty: the
  // default, $XDG_CACHE_HOME/lookback/jvm-shed or ~/.cache/lookback/jvm-shed.
  std::string shed_memory;
  std::vector<std::pair<std::string, std::string>> runtime;  // LOOKBACK_<KEY>, value
  std::string error;
  std::vector<std::string> unknown;  // keys that are neither agent options nor runtime settings
};

// Never destroyed (as every global the agent's callbacks use): JVMTI
// callbacks of daemon threads may run while the JVM runs exit-time
// destructors.
Options& g_options = *new Options;
std::atomic<bool> g_probe_ready{false};  // java.lang.LookbackProbe defined: classes may call it

// The launcher's window (startup=skip): from VMInit until the program's main
// class loads, the JDK's launcher (sun.launcher.LauncherHelper, the class
// path's loaders, permissions, Locale, ...: 31 classes for an empty main,
// 132 for Rhino's jar) loads the classes that find and check the main class.
// They come from the CDS archive unless the hook changes them, so rewriting
// them cost every traced JVM 3-45 ms before main (parsing them instead of mapping
// them, their probes run in the interpreter); they are JDK start-up code as
// much as the classes loaded before VMInit, and are left as they are too.
// The window closes at the first class of another loader than the boot and
// platform loaders (the main class, jdk.compiler's too, and any -jar main),
// or at the class named by sun.java.command (a main on the boot class path).
std::atomic<bool> g_launcher_window{false};
jobject g_platform_loader = nullptr;  // a global ref, set before the window opens
std::string g_main_class;             // "pkg/Main" from sun.java.command, or empty
// The JDK's classes first loaded in the JVM's first second (startup=defer,
// the default): after the launcher's window, start-up goes on in the
// program's own code, which loads JDK classes of its own (Rhino: regular
// expressions, reflection, text; 31 ms of a 240 ms time to first output when
// rewritten, as their CDS copies are lost and their probes run in the
// interpreter). Those of the boot and platform loaders keep their code while
// the window is open; when it closes (LOOKBACK_JVM_STARTUP_WINDOW after
// VMInit, default 1 s) an agent thread retransforms them in one batch, so a
// program that runs longer has their frames (thread pools, I/O wrappers)
// traced from then on. The cost moves out of start-up: one safepoint
// (10.7 ms for 353 classes of a Rhino run) and the rewriting, on the agent
// thread.
//
// The thread waits in a JVMTI raw monitor, where HotSpot counts it as
// blocked: a thread waiting "in native" (a std::condition_variable) when the
// JVM exits makes VM_Exit wait for it in steps of 10 ms, and waking it at
// VMDeath left it in native code while it left (JvmExit.HotSpotDoesNotWait...
// failed 1 run in 3 under load). So VMDeath does not wake it: it sets `stop`
// and writes the note itself; the daemon thread stays blocked until the
// process ends.
struct Deferral {
  std::mutex mutex;                       // all below
  std::unordered_set<std::string> names;  // "java/util/regex/Pattern", deferred by the hook, not yet retransformed
  uint64_t window_ns = 0;
  uint64_t start_ns = 0;  // when tracing started
  uint64_t probed_ns = 0;  // when the last batch got its probes
  size_t deferred = 0;    // how many the hook deferred (once the window closed)
  size_t done = 0, batches = 0;
  bool closed = false;    // the window has closed
  bool ended = false;     // VMDeath came
};
Deferral& g_defer = *new Deferral;
std::atomic<bool> g_defer_open{false};  // deferring now (read without the mutex first)
jrawMonitorID g_defer_monitor = nullptr;  // the thread's waits
// Loaded into a running JVM (`lookback attach`), not at its start.
bool g_live = false;
// Listener mode: the only class rewritten is java.lang.Thread, for its rename hook.
std::atomic<bool> g_rename_hook_only{false};
std::atomic<uint32_t> g_next_id{1};

// A runtime setting (docs/triggers.md), or a variable one of lookback's
// launchers passes on: any other key is a typo (modee=, includes=) that would
// otherwise change nothing without a word.
bool KnownSetting(const std::string& var) {
  for (const char* const* v = rt::kConfigVariables; *v != nullptr; ++v) {
    if (var == *v) return true;
  }
  return var.rfind("LOOKBACK_JVM_", 0) == 0 || var == "LOOKBACK_RECORD_EVENTS" || var == "LOOKBACK_CLI";
}

// "a=b,c=d": agent options. Lists inside a value use ';' (',' separates options).
Options ParseOptions(const char* text) {
  Options o;
  std::string s = text ? text : "";
  size_t at = 0;
  while (at <= s.size() && !s.empty()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "1" : item.substr(eq + 1);
    // key=ON|OFF options: *flag = (value == ON); the error names both.
    auto either = [&](const char* on, const char* off, bool* flag) {
      if (value == on || value == off) {
        *flag = value == on;
      } else {
        o.error = key + " must be " + off + " or " + on + ", not '" + value + "'";
      }
    };
    bool listener = o.mode == Mode::kListener;
    if (key == "mode") {
      either("listener", "inline", &listener);
      o.mode = listener ? Mode::kListener : Mode::kInline;
    } else if (key == "inlined") {
      either("probe", "skip", &o.probe_inlined);
    } else if (key == "startup") {
      if (value == "defer") {
        o.startup = Startup::kDefer;
      } else if (value == "skip") {
        o.startup = Startup::kSkip;
      } else if (value == "sync") {
        o.startup = Startup::kSync;
      } else if (value == "async") {
        o.startup = Startup::kAsync;
      } else {
        o.error = "startup must be defer, skip, sync or async, not '" + value + "'";
      }
    } else if (key == "writes") {
      either("java", "native", &o.java_writes);
    } else if (key == "cache") {
      o.cache = value;
    } else if (key == "shed_memory") {
      o.shed_memory = value;
    } else if (key == "include" || key == "exclude") {
      size_t p = 0;
      while (p <= value.size()) {
        size_t semi = value.find(';', p);
        if (semi == std::string::npos) semi = value.size();
        if (semi > p) (key == "include" ? o.include : o.exclude).push_back(value.substr(p, semi - p));
        p = semi + 1;
      }
    } else {
      std::string var = "LOOKBACK_";
      for (char c : key) var += c == '-' ? '_' : static_cast<char>(toupper(static_cast<unsigned char>(c)));
      for (char& c : value) {
        if (c == ';') c = ',';
      }
      if (!KnownSetting(var)) o.unknown.push_back(key);
      o.runtime.emplace_back(var, value);
    }
    if (comma == s.size()) break;
  }
  return o;
}

bool Selected(const std::string& name) {
  // The globs are UTF-8; the name comes from a classfile or JVMTI.
  const std::string utf8 = HasModifiedUtf8(name) ? Utf8FromModified(name) : std::string();
  const char* java_method = utf8.empty() ? name.c_str() : utf8.c_str();
  for (const std::string& g : g_options.exclude) {
    if (fnmatch(g.c_str(), java_method, 0) == 0) return false;
  }
  if (g_options.include.empty()) return true;
  for (const std::string& g : g_options.include) {
    if (fnmatch(g.c_str(), java_method, 0) == 0) return true;
  }
  return false;
}

// Classes never rewritten (nor traced in listener mode): the probe itself,
// java.lang.Object (every constructor chain ends in it; the VM special-cases
// its <init>), the method-handle machinery that lambdas and string
// concatenation bootstrap through (its frames are the VM's plumbing, not the
// program's), and lookback's Java API (lookback.jar): a scope is a frame of
// its own, begun inside Lookback.scope() and ended inside Scope.close(), so
// frames of those methods around its records would interleave with it.
bool NeverRewritten(std::string_view cls) {
  return cls == kProbeClass || cls == "java/lang/Object" || cls.rfind("java/lang/invoke/", 0) == 0 ||
         cls.rfind("jdk/internal/", 0) == 0 || cls.rfind("sun/invoke/", 0) == 0 || cls == "lookback/Lookback" ||
         cls.rfind("lookback/Lookback$", 0) == 0;
}

// The name the recorder gives method `id`'s key.
void NameMethod(uint32_t id, std::string_view cls, std::string_view name, std::string_view desc) {
  g_runtime.set_key_name(MethodKey(id), PrettyMethod(cls, name, desc).c_str());
}

uint32_t NewMethod(std::string_view cls, std::string_view name, std::string_view desc) {
  const uint32_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  NameMethod(id, cls, name, desc);
  return id;
}

// ---- the cache of rewritten classes (class_cache.h) --------------------------

// The cache's limit on disk: past it the oldest packs go (ClassCache::DropOldest).
constexpr uint64_t kCacheMaxBytes = 256ull << 20;

// The agent's own build id (ELF NT_GNU_BUILD_ID): any other build of the
// rewriter, or of the probes it calls, makes other keys. Empty: no build id,
// no cache (a cached rewrite of another build could call a probe that no
// longer exists).
std::string AgentBuildId() {
  struct Search {
    uintptr_t addr;
    std::string id;
  } s{reinterpret_cast<uintptr_t>(&AgentBuildId), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && s->addr >= info->dlpi_addr + ph.p_vaddr &&
              s->addr < info->dlpi_addr + ph.p_vaddr + ph.p_memsz) {
            s->id = GnuBuildId(info);
            return 1;
          }
        }
        return 0;
      },
      &s);
  return s.id;
}

struct CacheState {
  std::unique_ptr<ClassCache> cache;  // null: off; set before the first rewrite, then never changed
  std::string fingerprint;            // the options a rewrite depends on; immutable once set
  std::atomic<bool> off{false};       // a second attach, which may bring other globs, turns it off
  std::atomic<uint64_t> stored{0};
};
CacheState& g_cache = *new CacheState;

// Entries are written by a thread of their own, to this run's pack
// (class_cache.h), so that class loading does not wait for them; VMDeath
// publishes the pack with what is written by then.
struct CacheWriter {
  std::mutex mutex;  // the queue and the flags
  std::condition_variable wake;
  std::deque<std::pair<CacheKey, CacheEntry>> queue;
  size_t queued_bytes = 0;
  bool started = false, finished = false;
};
CacheWriter& g_cache_writer = *new CacheWriter;
constexpr size_t kCacheQueueMaxBytes = 64u << 20;  // beyond it entries are dropped, not queued

void CacheWriterMain() {
  // Only when a CPU is idle: the JVM's own threads (class loading, the JIT)
  // come first; what is still queued at exit is written then, or by a later run.
  const sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  pthread_setname_np(pthread_self(), "lookback-cache");
  CacheWriter& w = g_cache_writer;
  // It looks at the queue every 50 ms rather than being woken per entry:
  // a wake-up per class (a futex call in the class hook) cost H2 23 ms of
  // its start-up.
  //
  // One entry at a time, taken off the queue under its lock and written
  // without it. VMDeath (FinishCacheWrites) never waits for this thread:
  // ClassCache::Finish publishes the pack with the entries written by then
  // and leaves out one this thread is still writing. (Before, VMDeath waited
  // up to 200 ms for this thread's store lock; on a machine whose cores were
  // busy, SCHED_IDLE got no CPU in that time, and no pack was ever published:
  // `lookback record -- javac` parsed every class on every run while CI ran.)
  std::unique_lock<std::mutex> lock(w.mutex);
  for (;;) {
    w.wake.wait_for(lock, std::chrono::milliseconds(50), [&] { return w.finished; });
    if (w.finished) return;
    while (!w.queue.empty() && !w.finished) {
      std::pair<CacheKey, CacheEntry> item = std::move(w.queue.front());
      w.queue.pop_front();
      w.queued_bytes -= item.second.bytes.size();
      lock.unlock();
      if (g_cache.cache->Store(item.first, item.second)) g_cache.stored.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
    }
  }
}

void QueueCacheStore(const CacheKey& key, CacheEntry entry) {
  CacheWriter& w = g_cache_writer;
  std::lock_guard<std::mutex> lock(w.mutex);
  if (w.finished || w.queued_bytes + entry.bytes.size() > kCacheQueueMaxBytes) return;
  if (!w.started) {
    w.started = true;
    std::thread(CacheWriterMain).detach();
  }
  w.queued_bytes += entry.bytes.size();
  w.queue.emplace_back(key, std::move(entry));
}

// At VMDeath: what is still queued, if little, then the pack into place.
void FinishCacheWrites() {
  CacheWriter& w = g_cache_writer;
  std::deque<std::pair<CacheKey, CacheEntry>> rest;
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    if (!w.started || w.finished) return;
    w.finished = true;
    if (w.queued_bytes <= (8u << 20)) rest.swap(w.queue);
    w.wake.notify_one();
  }
  for (const auto& [key, entry] : rest) {
    if (g_cache.cache->Store(key, entry)) g_cache.stored.fetch_add(1, std::memory_order_relaxed);
  }
  if (g_cache.cache->Finish()) g_cache.cache->DropOldest();
}

// Which methods the hook gives probes, besides the budget: the inlining rule
// and the method globs. Part of the class cache's key and of the shed
// memory's program identity.
std::string MethodSelection() {
  std::string s = std::string("inlined=") + (g_options.probe_inlined ? "probe" : "skip") + ";include=";
  for (const std::string& g : g_options.include) s += g + '\n';
  s += ";exclude=";
  for (const std::string& g : g_options.exclude) s += g + '\n';
  return s;
}

// Called before tracing starts: at VMInit, and at each attach.
void OpenClassCache() {
  if (g_cache.cache != nullptr || g_stats.cache_state.load() != AgentStats::kCacheUnset) {
    // Attached again: the globs may differ from those of the fingerprint.
    g_cache.off.store(true);
    g_stats.cache_state.store(AgentStats::kCacheOff);
    return;
  }
  std::string dir = g_options.cache;
  if (dir == "off") {
    g_stats.cache_state.store(AgentStats::kCacheOff);
    return;
  }
  if (dir.empty()) dir = UserCacheDir("jvm-classes");
  if (dir.empty()) {
    g_stats.cache_state.store(AgentStats::kCacheOff);
    return;
  }
  // Why it is off is said only when the user named the directory: a
  // read-only home (a container) must not make every JVM print a line.
  const bool asked = !g_options.cache.empty();
  const std::string build = AgentBuildId();
  if (build.empty()) {
    if (asked) Say("the agent has no build id: the class cache is off");
    g_stats.cache_state.store(AgentStats::kCacheOff);
    return;
  }
  auto c = std::make_unique<ClassCache>(dir, kCacheMaxBytes);
  if (!c->ok()) {
    if (asked) Say("the class cache is off: " + c->error());
    g_stats.cache_state.store(AgentStats::kCacheOff);
    return;
  }
  // Everything RewriteInHook's request depends on, besides the class: the
  // build (rewriter and probe class), the probe names, the inlining rule and
  // the method globs. (Shed methods bypass the cache.)
  g_cache.fingerprint = "build=" + build + ";probe=" + std::string(kProbeClass) + ";" + MethodSelection();
  g_cache.cache = std::move(c);
  g_stats.cache_state.store(AgentStats::kCacheOn);
}

// ---- inline mode -----------------------------------------------------------

void RewriteInHook(jvmtiEnv* jvmti, const char* name, jint len, const unsigned char* data, jint* new_len,
                   unsigned char** new_data);

// True while a class loading now is JDK launcher code, which keeps its code
// (g_launcher_window); closes the window at the first class that is not.
bool InLauncherWindow(JNIEnv* jni, jclass redefined, jobject loader, const char* name) {
  if (!g_launcher_window.load(std::memory_order_relaxed) || redefined != nullptr) return false;
  if ((loader == nullptr || jni->IsSameObject(loader, g_platform_loader)) && g_main_class != name) {
    g_stats.launcher_skipped.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  g_launcher_window.store(false, std::memory_order_relaxed);
  return false;
}

// True when a class loading now is a JDK class whose probes wait until the
// start-up window closes (g_defer); it is then noted for that retransform.
// Under the mutex the thread closes the window with, so every class deferred
// is either in the set it takes or loaded after it closed (and rewritten).
// Only the runtime image's classes: the boot loader also loads a program's
// own classes from -Xbootclasspath/a, which the hook cannot tell apart by
// loader, so a class is the JDK's by its package too (java.base's and the
// other modules' of OpenJDK 17; a program's com.sun.* class on the boot
// class path would be taken for one).
bool InJdkPackage(std::string_view name) {
  for (std::string_view p : {"java/", "javax/", "jdk/", "sun/", "com/sun/", "org/xml/", "org/w3c/", "org/ietf/"}) {
    if (name.substr(0, p.size()) == p) return true;
  }
  return false;
}

// The class hook's work on this thread: StartMode's note counts only its own
// thread's (the retransform it runs), not what agent threads it started
// (startup=async) or the program's threads rewrite meanwhile.
struct HookedHere {
  uint64_t classes = 0;
  uint64_t ns = 0;
};
thread_local HookedHere tls_hooked;

bool Deferred(JNIEnv* jni, jclass redefined, jobject loader, const char* name) {
  if (!g_defer_open.load(std::memory_order_relaxed) || redefined != nullptr || !InJdkPackage(name)) return false;
  if (loader != nullptr && !jni->IsSameObject(loader, g_platform_loader)) return false;
  std::lock_guard<std::mutex> lock(g_defer.mutex);
  if (!g_defer_open.load(std::memory_order_relaxed)) return false;
  g_defer.names.insert(name);
  g_stats.startup_deferred.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void JNICALL OnClassFileLoad(jvmtiEnv* jvmti, JNIEnv* jni, jclass redefined, jobject loader, const char* name, jobject,
                             jint len, const unsigned char* data, jint* new_len, unsigned char** new_data) {
  if (name != nullptr && strcmp(name, "java/lang/VirtualThread$VThreadContinuation") == 0 &&
      !g_stats.virtual_threads.exchange(true)) {
    g_stats.Publish();
  }
  if (!g_probe_ready.load(std::memory_order_acquire) || name == nullptr || NeverRewritten(name)) return;
  if (InLauncherWindow(jni, redefined, loader, name) || Deferred(jni, redefined, loader, name)) return;
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  RewriteInHook(jvmti, name, len, data, new_len, new_data);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const uint64_t ns = static_cast<uint64_t>((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
  g_stats.hook_ns.fetch_add(ns, std::memory_order_relaxed);
  ++tls_hooked.classes;
  tls_hooked.ns += ns;
}

void RewriteInHook(jvmtiEnv* jvmti, const char* name, jint len, const unsigned char* data, jint* new_len,
                   unsigned char** new_data) {
  const bool hook_only = g_rename_hook_only.load(std::memory_order_relaxed);
  if (hook_only && name != kRenameHookClass) return;
  RewriteRequest req;
  req.rename_hook = true;
  // Methods C2 always inlines get no probes unless inlined=probe (docs/jvm.md).
  req.skip_inlined = !hook_only && !g_options.probe_inlined;
  // Without globs every method is selected: no name is built to match (twice
  // per method, in a hook that runs for every class the JVM loads).
  // (Read per class: a second attach may bring other globs.)
  const bool every_method = g_options.include.empty() && g_options.exclude.empty();
  req.selected = [every_method](std::string_view cls, std::string_view method) {
    return every_method || Selected(JavaClassName(cls) + "." + std::string(method));
  };
  req.assign_id = [hook_only, every_method](std::string_view cls, std::string_view method,
                              std::string_view desc) -> std::optional<uint32_t> {
    if (hook_only || !(every_method || Selected(JavaClassName(cls) + "." + std::string(method)))) return std::nullopt;
    return NewMethod(cls, method, desc);
  };
  // Methods the overhead budget shed get no probes (shed.cc), nor those it
  // shed in earlier runs of the program (shed_memory.cc): the rewriter asks
  // only about methods it would otherwise probe, so those it is told to leave
  // for the memory are the ones to name as shed.
  std::vector<std::pair<std::string, std::string>> remembered_hits;  // name, descriptor
  if (!hook_only) {
    req.shed = [&remembered_hits](std::string_view cls, std::string_view method, std::string_view desc) {
      if (IsShed(cls, method, desc)) return true;
      if (!IsRemembered(cls, method, desc)) return false;
      remembered_hits.emplace_back(method, desc);
      return true;
    };
  }
  // The cache, for a class none of whose methods is shed (its rewrite then
  // depends on the budget's state, not only on the class and the options).
  ClassCache* cache = hook_only || g_cache.off.load(std::memory_order_relaxed) || ClassHasShed(name)
                          ? nullptr
                          : g_cache.cache.get();
  CacheKey key;
  std::optional<RewriteResult> replayed;
  if (cache != nullptr) {
    // A class with remembered methods is rewritten without their probes:
    // their names are part of its key.
    const std::string remembered = RememberedOf(name);
    key = ClassCacheKey(remembered.empty() ? g_cache.fingerprint : g_cache.fingerprint + ";remembered=" + remembered,
                        std::span<const uint8_t>(data, static_cast<size_t>(len)));
    if (std::optional<CacheEntry> e = cache->Load(key)) {
      // Ids for its methods, as NewMethod would give them; if they no longer
      // fit the cached sipush sites, the reserved ids stay unused.
      const uint32_t first = e->changed && !e->traced.empty()
                                 ? g_next_id.fetch_add(static_cast<uint32_t>(e->traced.size()), std::memory_order_relaxed)
                                 : 1;
      replayed = Replay(std::move(*e), first);
      if (replayed) {
        for (const TracedMethod& m : replayed->traced) NameMethod(m.id, replayed->class_name, m.name, m.descriptor);
        g_stats.cache_hits.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  req.want_id_sites = cache != nullptr && !replayed;
  RewriteResult r = replayed ? std::move(*replayed) : RewriteClass(data, static_cast<size_t>(len), req);
  if (cache != nullptr && !replayed) {
    if (std::optional<CacheEntry> e = EntryOf(r)) QueueCacheStore(key, std::move(*e));
  }
  g_stats.Count(r);
  if (!r.error.empty()) {
    g_stats.NoteError(name, r.error);
    return;
  }
  // Named as shed whether or not the class changed: a class whose only
  // probed method the memory holds is left as it is. A class replayed from
  // the cache was rewritten with the same remembered methods (its key holds
  // them): all of them were left out then.
  if (!hook_only) AnnounceRemembered(name, replayed ? nullptr : &remembered_hits, &NewMethod);
  if (!r.changed) return;
  if (!hook_only) {
    RegisterGuards(r.traced);
    NoteTraced(std::move(r.class_name), std::move(r.traced));  // (r's bytes are all that is used below)
  }
  unsigned char* out = nullptr;
  if (jvmti->Allocate(static_cast<jlong>(r.bytes.size()), &out) != JVMTI_ERROR_NONE) return;
  memcpy(out, r.bytes.data(), r.bytes.size());
  *new_len = static_cast<jint>(r.bytes.size());
  *new_data = out;
}

// The loaded classes that RetransformClasses may change, as local
// references of the calling thread, whose capacity is declared (under
// -Xcheck:jni HotSpot warns on stdout at the next JNI call of a thread that
// holds more local references than it declared: a traced JVM printed
// "WARNING: JNI local refs: 471, exceeds capacity: 32" at start).
std::vector<jclass> ModifiableClasses(jvmtiEnv* jvmti, JNIEnv* jni) {
  jint count = 0;
  jclass* classes = nullptr;
  std::vector<jclass> out;
  if (jvmti->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return out;
  if (jni != nullptr && jni->EnsureLocalCapacity(count + 64) != JNI_OK) jni->ExceptionClear();
  for (jint i = 0; i < count; ++i) {
    jboolean modifiable = JNI_FALSE;
    if (jvmti->IsModifiableClass(classes[i], &modifiable) == JVMTI_ERROR_NONE && modifiable) out.push_back(classes[i]);
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(classes));
  return out;
}

// Whether a loaded class has a method (of those it declares, by the name the
// hook matches: "pkg.Class.method") that --jvm-exclude leaves and that
// --jvm-include or a --slow-call glob names (`globs`).
bool HasNamedMethod(jvmtiEnv* jvmti, jclass c, const std::vector<std::string>& globs) {
  char* signature = nullptr;
  if (jvmti->GetClassSignature(c, &signature, nullptr) != JVMTI_ERROR_NONE || signature == nullptr) return false;
  std::string name(signature);
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(signature));
  if (name.size() < 3 || name.front() != 'L' || name.back() != ';') return false;
  name = name.substr(1, name.size() - 2);
  for (char& ch : name) {
    if (ch == '/') ch = '.';
  }
  jint count = 0;
  jmethodID* methods = nullptr;
  if (jvmti->GetClassMethods(c, &count, &methods) != JVMTI_ERROR_NONE) return false;
  bool selected = false;
  for (jint i = 0; i < count && !selected; ++i) {
    char* method = nullptr;
    if (jvmti->GetMethodName(methods[i], &method, nullptr, nullptr) != JVMTI_ERROR_NONE || method == nullptr) continue;
    const std::string java_method = name + "." + method;
    if (Selected(java_method)) {
      for (const std::string& g : globs) selected = selected || fnmatch(g.c_str(), java_method.c_str(), 0) == 0;
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(method));
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(methods));
  return selected;
}

// Hands every loaded class that may change to the ClassFileLoadHook again:
// after the probe class exists (rewrite them), and at detach (the hook then
// changes nothing, so each class is back to its original bytes). Returns
// how many were retransformed.
size_t RetransformLoadedClasses(jvmtiEnv* jvmti, JNIEnv* jni) {
  std::vector<jclass> todo = ModifiableClasses(jvmti, jni);
  // All at once (one safepoint and one deoptimisation pass, not one per
  // class); if the VM refuses one (rare), one at a time, so that it does
  // not stop the others.
  size_t done = todo.size();
  if (!todo.empty() && jvmti->RetransformClasses(static_cast<jint>(todo.size()), todo.data()) != JVMTI_ERROR_NONE) {
    done = 0;
    for (jclass c : todo) {
      if (jvmti->RetransformClasses(1, &c) != JVMTI_ERROR_NONE) {
        g_stats.retransform_failed.fetch_add(1);
      } else {
        ++done;
      }
    }
  }
  return done;
}

// Whether the JVM has virtual threads: then the probe finds the platform
// thread that owns a ring with Thread.currentCarrierThread() (probe_class.h).
bool HasCarrierThreads(JNIEnv* jni) {
  jclass thread = jni->FindClass("java/lang/Thread");
  const bool has = thread != nullptr &&
                   jni->GetStaticMethodID(thread, "currentCarrierThread", "()Ljava/lang/Thread;") != nullptr;
  jni->ExceptionClear();
  return has;
}

// Defines java.lang.LookbackProbe into java.base and binds its natives.
jclass DefineProbe(JNIEnv* jni) {
  // The table of Java threads' rings comes first: the class's initialiser reads its address.
  const bool rings = g_options.java_writes && SetUpJavaRings();
  // Untimed records are the fast clock's; timed ones wait for the JFR clock (StartInline).
  const bool java_writes = rings && g_runtime.clock_group() > 1;
  g_java_rings.direct = java_writes;  // read by the class's initialiser (LookbackProbe.DIRECT)
  g_java_rings.direct_timed_possible = rings && g_runtime.any_ring != nullptr;
  SetUpJavaGuards();  // the initialiser reads their address too
  const std::vector<uint8_t> bytes = ProbeClassBytes(HasCarrierThreads(jni));
  if (bytes.empty()) {
    Say("the probe class has no call of Thread.currentThread to turn into currentCarrierThread: inline mode and "
        "thread renames are off");
    return nullptr;
  }
  jclass probe = jni->DefineClass(kProbeClass, nullptr, reinterpret_cast<const jbyte*>(bytes.data()),
                                  static_cast<jsize>(bytes.size()));
  if (probe == nullptr) {
    jni->ExceptionDescribe();
    jni->ExceptionClear();
    Say("cannot define java.lang.LookbackProbe: inline mode and thread renames are off");
    return nullptr;
  }
  if (!LinkProbeNatives(jni, probe, g_live)) {
    Say("cannot bind java.lang.LookbackProbe's natives: inline mode and thread renames are off");
    return nullptr;
  }
  g_stats.java_writes.store(java_writes);
  return probe;
}

// Listener mode: the probe class exists for Thread.setName's rename hook only.
void StartRenameHook(jvmtiEnv* jvmti, JNIEnv* jni) {
  if (DefineProbe(jni) == nullptr) return;
  g_rename_hook_only.store(true, std::memory_order_relaxed);
  g_probe_ready.store(true, std::memory_order_release);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
  jclass thread = jni->FindClass("java/lang/Thread");
  if (thread == nullptr || jvmti->RetransformClasses(1, &thread) != JVMTI_ERROR_NONE) {
    jni->ExceptionClear();
    g_stats.retransform_failed.fetch_add(1);
  }
}

// Defines the probe class; then classes loaded from now on are rewritten, and
// those loaded before (most of java.base's start-up classes) are retransformed.
uint64_t NowNs();

// The start-up retransform's agent thread (startup=async). Its note says
// when the classes loaded before main had their probes.
void JNICALL StartupRetransformThread(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  const uint64_t t0 = NowNs();
  const size_t n = RetransformLoadedClasses(jvmti, jni);
  if (g_runtime.set_note != nullptr) {
    g_runtime.set_note("jvm-startup", ("the " + std::to_string(n) + " classes loaded before main got their probes " +
                                       std::to_string((NowNs() - t0) / 1000000) + " ms after it started (startup=async; " +
                                       "startup=sync waits for them)")
                                          .c_str());
  }
}

}  // namespace

size_t RetransformNamed(jvmtiEnv* jvmti, JNIEnv* jni, std::unordered_set<std::string>* names,
                        std::atomic<uint64_t>* refused) {
  if (jni->PushLocalFrame(16) != JNI_OK) {
    jni->ExceptionClear();
    return 0;
  }
  std::vector<jclass> todo;
  for (jclass c : ModifiableClasses(jvmti, jni)) {
    char* signature = nullptr;
    if (jvmti->GetClassSignature(c, &signature, nullptr) != JVMTI_ERROR_NONE || signature == nullptr) continue;
    const std::string_view sig(signature);
    if (sig.size() > 2 && sig.front() == 'L' && sig.back() == ';' &&
        names->erase(std::string(sig.substr(1, sig.size() - 2))) != 0) {
      todo.push_back(c);
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(signature));
  }
  size_t done = todo.size();
  if (!todo.empty() && jvmti->RetransformClasses(static_cast<jint>(todo.size()), todo.data()) != JVMTI_ERROR_NONE) {
    done = 0;
    for (jclass c : todo) {
      if (jvmti->RetransformClasses(1, &c) == JVMTI_ERROR_NONE) {
        ++done;
      } else {
        refused->fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  jni->ExceptionClear();
  jni->PopLocalFrame(nullptr);
  return done;
}

bool StartAgentThread(jvmtiEnv* jvmti, JNIEnv* jni, const char* name, jvmtiStartFunction run, jint priority) {
  jclass thread_class = jni->FindClass("java/lang/Thread");
  jmethodID init = thread_class ? jni->GetMethodID(thread_class, "<init>", "(Ljava/lang/String;)V") : nullptr;
  jstring jname = init ? jni->NewStringUTF(name) : nullptr;
  jobject thread = jname ? jni->NewObject(thread_class, init, jname) : nullptr;
  if (thread == nullptr) {
    jni->ExceptionClear();
    return false;
  }
  return jvmti->RunAgentThread(thread, run, nullptr, priority) == JVMTI_ERROR_NONE;
}

namespace {

// Opens the launcher's window (g_launcher_window) at VMInit; leaves it shut
// when the platform loader cannot be had.
void OpenLauncherWindow(jvmtiEnv* jvmti, JNIEnv* jni) {
  jclass loader_class = jni->FindClass("java/lang/ClassLoader");
  jmethodID get = loader_class != nullptr
                      ? jni->GetStaticMethodID(loader_class, "getPlatformClassLoader", "()Ljava/lang/ClassLoader;")
                      : nullptr;
  jobject platform = get != nullptr ? jni->CallStaticObjectMethod(loader_class, get) : nullptr;
  if (jni->ExceptionCheck() || platform == nullptr) {
    jni->ExceptionClear();
    return;
  }
  g_platform_loader = jni->NewGlobalRef(platform);
  // "pkg.Main args", "module/pkg.Main args" (-m) or "app.jar args" (-jar,
  // whose main class the application loader loads).
  char* command = nullptr;
  if (jvmti->GetSystemProperty("sun.java.command", &command) == JVMTI_ERROR_NONE && command != nullptr) {
    std::string main(command, strcspn(command, " "));
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(command));
    if (const size_t slash = main.find('/'); slash != std::string::npos) main = main.substr(slash + 1);
    for (char& c : main) c = c == '.' ? '/' : c;
    if (main.size() < 4 || main.compare(main.size() - 4, 4, "/jar") != 0) g_main_class = std::move(main);
  }
  g_launcher_window.store(g_platform_loader != nullptr, std::memory_order_relaxed);
}

uint64_t StartupWindowNs() {
  const char* v = getenv("LOOKBACK_JVM_STARTUP_WINDOW");
  uint64_t ns = 1'000'000'000;
  if (v != nullptr && *v != '\0' && !rt::ParseDuration(v, &ns)) {
    Say(std::string("LOOKBACK_JVM_STARTUP_WINDOW='") + v + "' is not a duration; using 1s");
    ns = 1'000'000'000;
  }
  return ns;
}

// The jvm-deferred note, from the counts as they are (under g_defer.mutex).
void NoteDeferredLocked() {
  if (g_runtime.set_note == nullptr) return;
  const Deferral& d = g_defer;
  const size_t deferred = d.closed ? d.deferred : d.names.size();
  if (deferred == 0) return;
  std::string text = "the " + std::to_string(deferred) + " JDK classes first loaded in the JVM's first " +
                     std::to_string(d.window_ns / 1000000) + " ms kept their code until then (startup=defer); ";
  if (d.done != 0) {
    text += std::to_string(d.done) + " got their probes " + std::to_string((d.probed_ns - d.start_ns) / 1000000) +
            " ms after tracing started (retransform batches: " + std::to_string(d.batches) + ")";
    if (d.done < deferred) {
      text += "; " + std::to_string(deferred - d.done) + (d.ended ? " never" : " not yet") + " found loaded";
    }
  } else {
    text += d.ended ? "the JVM ended first, and none got probes" : "none has its probes yet";
  }
  g_runtime.set_note("jvm-deferred", text.c_str());
}

// Waits in the raw monitor for `ms`, or less once VMDeath came; false then.
bool DeferralWait(jvmtiEnv* jvmti, uint64_t ms) {
  const uint64_t until = NowNs() + ms * 1000000;
  if (jvmti->RawMonitorEnter(g_defer_monitor) != JVMTI_ERROR_NONE) return false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(g_defer.mutex);
      if (g_defer.ended) break;
    }
    const uint64_t now = NowNs();
    if (now >= until) break;
    if (jvmti->RawMonitorWait(g_defer_monitor, static_cast<jlong>((until - now + 999999) / 1000000)) !=
        JVMTI_ERROR_NONE) {
      break;
    }
  }
  jvmti->RawMonitorExit(g_defer_monitor);
  std::lock_guard<std::mutex> lock(g_defer.mutex);
  return !g_defer.ended;
}

// startup=defer's agent thread: when the window closes, retransforms the JDK
// classes the hook deferred, in one batch. A class whose loading was still
// under way then (its hook has run, it is not defined yet: its supertypes
// loading, its thread preempted) is looked for again after 50 ms, then at
// doubling intervals up to 5 s, until none is left or the JVM ends (a class
// whose loading failed is looked for until then, a millisecond's work each
// time). Once VMDeath has come it parks for good (above).
void EnableJfrClockNow(jvmtiEnv* jvmti, JNIEnv* jni);
std::atomic<bool> g_clock_by_deferral{false};  // the deferred thread sets up the JFR clock (StartJfrClock)

void JNICALL DeferredRetransformThread(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  // Not a thread of the program: nothing it runs is recorded.
  g_runtime.thread_disable();
  uint64_t window_ns;
  {
    std::lock_guard<std::mutex> lock(g_defer.mutex);
    window_ns = g_defer.window_ns;
  }
  bool running = DeferralWait(jvmti, (window_ns + 999999) / 1000000);
  // The JFR clock comes with the window's end too (StartJfrClock): one agent
  // thread fewer, whose start and wait a JVM that ends sooner pays for.
  if (running && g_clock_by_deferral.load()) EnableJfrClockNow(jvmti, jni);
  std::unordered_set<std::string> names;
  {
    std::lock_guard<std::mutex> lock(g_defer.mutex);
    g_defer_open.store(false, std::memory_order_relaxed);
    g_defer.closed = true;
    g_defer.deferred = g_defer.names.size();
    names = g_defer.names;
  }
  for (uint64_t wait_ms = 50; running && !names.empty(); wait_ms = std::min<uint64_t>(wait_ms * 2, 5000)) {
    const size_t before = names.size();
    const size_t done = RetransformNamed(jvmti, jni, &names, &g_stats.retransform_failed);
    {
      std::lock_guard<std::mutex> lock(g_defer.mutex);
      g_defer.done += done;
      if (names.size() < before) ++g_defer.batches;
      if (done != 0) g_defer.probed_ns = NowNs();
      for (auto it = g_defer.names.begin(); it != g_defer.names.end();) {
        it = names.count(*it) ? std::next(it) : g_defer.names.erase(it);
      }
      if (g_defer.ended) {
        running = false;
        break;
      }
      NoteDeferredLocked();
    }
    if (!names.empty()) running = DeferralWait(jvmti, wait_ms);
  }
  if (running) return;
  // VMDeath came: parked, blocked (nothing notifies the monitor), until the
  // process ends.
  if (jvmti->RawMonitorEnter(g_defer_monitor) != JVMTI_ERROR_NONE) return;
  while (jvmti->RawMonitorWait(g_defer_monitor, 0) == JVMTI_ERROR_NONE) {
  }
  jvmti->RawMonitorExit(g_defer_monitor);
}

// Opens startup=defer's window, with the agent thread that closes it; stays
// shut if the thread cannot start (classes are then rewritten as they load).
void OpenStartupWindow(jvmtiEnv* jvmti, JNIEnv* jni) {
  const uint64_t window_ns = StartupWindowNs();
  if (window_ns == 0 || jvmti->CreateRawMonitor("lookback-deferred", &g_defer_monitor) != JVMTI_ERROR_NONE) return;
  {
    std::lock_guard<std::mutex> lock(g_defer.mutex);
    g_defer.window_ns = window_ns;
    g_defer.start_ns = NowNs();
    g_defer_open.store(true, std::memory_order_relaxed);
  }
  if (!StartAgentThread(jvmti, jni, "lookback-deferred", &DeferredRetransformThread, JVMTI_THREAD_MIN_PRIORITY)) {
    std::lock_guard<std::mutex> lock(g_defer.mutex);
    g_defer_open.store(false, std::memory_order_relaxed);
    g_defer.window_ns = 0;
    g_defer.names.clear();
  }
}

// At VMDeath: no class is deferred from now on, the note says what became
// of those that were, and the thread is left blocked where it waits (it is
// not woken: see Deferral).
void CloseStartupWindow() {
  std::lock_guard<std::mutex> lock(g_defer.mutex);
  if (g_defer.window_ns == 0) return;
  g_defer_open.store(false, std::memory_order_relaxed);
  g_defer.ended = true;
  NoteDeferredLocked();
}

// Timed records from Java (jfr_clock.cc), on an agent thread once the
// start-up window has passed (LOOKBACK_JVM_STARTUP_WINDOW, 1 s; at once when
// attached): initialising jdk.jfr.internal.JVM runs JFR's first lambda, and
// with it the JVM's method-handle machinery when the program has not yet:
// 20 ms of CPU on an empty main, on a 2-core machine as much as the rest of
// the agent's start (docs/performance.md). Until then timed records go
// through the natives, as they did before.
constexpr std::string_view kJfrClockNotYet =
    "the JFR clock was not set up yet when this dump was written (an agent thread sets it up once the start-up window "
    "has passed, LOOKBACK_JVM_STARTUP_WINDOW)";

struct JfrClockStart {
  jrawMonitorID monitor = nullptr;  // the thread's wait; nothing notifies it (StopJfrClockStart)
  std::atomic<bool> vm_dead{false};
  uint64_t delay_ns = 0;
} g_jfr_clock;

void EnableJfrClockNow(jvmtiEnv* jvmti, JNIEnv* jni) {
  std::string why;
  const bool on = EnableJfrClock(jvmti, jni, g_probe_class, &why);
  g_stats.java_timed.store(on);
  {
    std::lock_guard<std::mutex> lock(g_stats.error_mutex);
    g_stats.jfr_clock_off = on ? "" : why;
  }
  g_stats.Publish();
}

void JNICALL JfrClockThread(jvmtiEnv* jvmti, JNIEnv* jni, void*) {
  g_runtime.thread_disable();  // not a thread of the program
  const uint64_t until = NowNs() + g_jfr_clock.delay_ns;
  if (jvmti->RawMonitorEnter(g_jfr_clock.monitor) != JVMTI_ERROR_NONE) return;
  while (!g_jfr_clock.vm_dead) {
    const uint64_t now = NowNs();
    if (now >= until) break;
    if (jvmti->RawMonitorWait(g_jfr_clock.monitor, static_cast<jlong>((until - now + 999999) / 1000000)) !=
        JVMTI_ERROR_NONE) {
      break;
    }
  }
  if (!g_jfr_clock.vm_dead) {
    jvmti->RawMonitorExit(g_jfr_clock.monitor);
    EnableJfrClockNow(jvmti, jni);
    return;
  }
  // VMDeath came first: parked, blocked (nothing notifies the monitor), until
  // the process ends; no JNI call while the VM goes down.
  while (jvmti->RawMonitorWait(g_jfr_clock.monitor, 0) == JVMTI_ERROR_NONE) {
  }
  jvmti->RawMonitorExit(g_jfr_clock.monitor);
}

void StartJfrClock(jvmtiEnv* jvmti, JNIEnv* jni) {
  if (g_stats.java_timed.load() || g_jfr_clock.monitor != nullptr) return;  // (attached again after a detach)
  if (!g_java_rings.direct_timed_possible) return;                         // writes=native: nothing to say
  {
    // What a dump written before the clock is set up says (EnableJfrClockNow
    // replaces it): the timed records so far went through the natives.
    std::lock_guard<std::mutex> lock(g_stats.error_mutex);
    g_stats.jfr_clock_off = std::string(kJfrClockNotYet);
  }
  {
    // startup=defer's thread, when it runs, closes the window at the same
    // moment and sets the clock up then: no second thread.
    std::lock_guard<std::mutex> lock(g_defer.mutex);
    if (g_defer.window_ns != 0) {
      g_clock_by_deferral.store(true);
      return;
    }
  }
  g_jfr_clock.delay_ns = g_live ? 0 : StartupWindowNs();
  if (jvmti->CreateRawMonitor("lookback-clock", &g_jfr_clock.monitor) != JVMTI_ERROR_NONE ||
      !StartAgentThread(jvmti, jni, "lookback-clock", &JfrClockThread, JVMTI_THREAD_MIN_PRIORITY)) {
    std::lock_guard<std::mutex> lock(g_stats.error_mutex);
    g_stats.jfr_clock_off = "cannot start the agent thread that sets it up";
  }
}

// At VMDeath. The thread is not woken: woken, it would run in native code
// for a moment while HotSpot's last safepoint begins, which then waits 10 ms
// for it (JvmExit.HotSpotDoesNotWaitForTheAgentAtTheLastSafepoint); still
// waiting, it is blocked, and it parks for good if its wait ends before the
// process does.
void StopJfrClockStart() { g_jfr_clock.vm_dead.store(true); }

bool StartInline(jvmtiEnv* jvmti, JNIEnv* jni) {
  OpenClassCache();
  if (g_probe_class == nullptr) {  // (attached again after a detach: it exists)
    jclass probe = DefineProbe(jni);
    if (probe == nullptr) return false;
    g_probe_on = jni->GetStaticFieldID(probe, kProbeOnField, "Z");
    if (g_probe_on == nullptr) {
      jni->ExceptionClear();
      return false;
    }
    g_probe_class = static_cast<jclass>(jni->NewGlobalRef(probe));
  }
  jclass probe = g_probe_class;
  jfieldID on = g_probe_on;
  // LOOKBACK_ENABLED=0: the probes stay compiled in but test a false flag
  // and call nothing (the cost of tracing off, docs/jvm.md), until a thread
  // asks for tracing (START_TRACING).
  jni->SetStaticBooleanField(probe, on, TracingOffAtStart() ? JNI_FALSE : JNI_TRUE);
  // What the user names is traced from its first call, launcher class or not.
  std::vector<std::string> named_globs = g_options.include;
  if (const char* v = getenv("LOOKBACK_SLOW_CALL"); v != nullptr && *v != '\0') {
    std::vector<rt::Watch> watches;
    std::string why;
    if (rt::ParseWatches(v, &watches, &why)) {
      for (const rt::Watch& w : watches) named_globs.push_back(w.pattern);
    }
  }
  // A --stall-idle glob must see the waits it names from the start too (a
  // thread waiting in a JDK queue's take() would look stalled in its caller).
  const char* stall_idle = getenv("LOOKBACK_STALL_IDLE");
  if (g_options.SkipsStartup() && !g_live && named_globs.empty()) {
    OpenLauncherWindow(jvmti, jni);
    if (g_options.startup == Startup::kDefer && g_launcher_window.load() && (stall_idle == nullptr || *stall_idle == '\0')) {
      OpenStartupWindow(jvmti, jni);
    }
  }
  g_probe_ready.store(true, std::memory_order_release);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
  StartJfrClock(jvmti, jni);

  // The classes loaded before the probe existed: java.base's start-up
  // classes, about 260 for an empty main (String, HashMap, ArrayList, ...).
  // Retransforming them took 80-130 ms, most of a traced JVM's start-up, and
  // their methods are the ones the JIT inlines most and the budget sheds
  // first, so their probes cost the most compiled code for the least
  // information. By default (startup=skip) they keep their code and are not
  // traced. startup=sync gives them probes before main starts; startup=async
  // on an agent thread while main runs, as `lookback attach` gives a running
  // JVM its probes (their first calls, and a short program's housekeeping
  // threads, then go untraced). java.lang.Thread is retransformed at once
  // whatever the choice, for its rename hook (START_TRACING and thread names
  // must work from main's first line). An attached agent (g_live) has every
  // class to retransform.
  if (g_options.startup == Startup::kSync || g_live) {
    RetransformLoadedClasses(jvmti, jni);
    return true;
  }
  jclass thread = jni->FindClass("java/lang/Thread");
  if (thread != nullptr) {
    if (jvmti->RetransformClasses(1, &thread) != JVMTI_ERROR_NONE) g_stats.retransform_failed.fetch_add(1);
  } else {
    jni->ExceptionClear();
  }
  if (g_options.SkipsStartup()) {
    // Except what the user names: --jvm-include java.util.* means HashMap
    // too, start-up class or not, and a --slow-call glob must see the calls
    // it watches (the budget never sheds them either). Those few are
    // retransformed now.
    uint64_t kept = 0;
    std::vector<jclass> named;
    for (jclass c : ModifiableClasses(jvmti, jni)) {
      if (jni->IsSameObject(c, thread) || jni->IsSameObject(c, g_probe_class)) continue;
      if (!named_globs.empty() && HasNamedMethod(jvmti, c, named_globs)) {
        named.push_back(c);
      } else {
        ++kept;
      }
    }
    if (!named.empty() &&
        jvmti->RetransformClasses(static_cast<jint>(named.size()), named.data()) != JVMTI_ERROR_NONE) {
      for (jclass c : named) {
        if (jvmti->RetransformClasses(1, &c) != JVMTI_ERROR_NONE) g_stats.retransform_failed.fetch_add(1);
      }
    }
    g_stats.startup_skipped.store(kept);
    return true;
  }
  // Said first, so that a dump written before the agent thread is done (a
  // short program's exit, an early trigger) says its start-up classes were
  // not all traced yet; the thread replaces it when it is done.
  if (g_runtime.set_note != nullptr) {
    g_runtime.set_note("jvm-startup",
                       "the classes loaded before main were still getting their probes on the agent thread "
                       "lookback-startup when this dump was written: their calls are not in it "
                       "(startup=async; startup=sync waits for them)");
  }
  if (!StartAgentThread(jvmti, jni, "lookback-startup", &StartupRetransformThread, JVMTI_THREAD_NORM_PRIORITY)) {
    RetransformLoadedClasses(jvmti, jni);
  }
  return true;
}

// ---- listener mode ---------------------------------------------------------

std::shared_mutex g_listener_mutex;
std::unordered_map<jmethodID, uint32_t>& g_listener_ids = *new std::unordered_map<jmethodID, uint32_t>;  // 0: not traced; never destroyed

uint32_t ListenerId(jvmtiEnv* jvmti, jmethodID m) {
  {
    std::shared_lock<std::shared_mutex> lock(g_listener_mutex);
    auto it = g_listener_ids.find(m);
    if (it != g_listener_ids.end()) return it->second;
  }
  char *name = nullptr, *sig = nullptr, *csig = nullptr;
  jclass cls = nullptr;
  uint32_t id = 0;
  if (jvmti->GetMethodName(m, &name, &sig, nullptr) == JVMTI_ERROR_NONE &&
      jvmti->GetMethodDeclaringClass(m, &cls) == JVMTI_ERROR_NONE &&
      jvmti->GetClassSignature(cls, &csig, nullptr) == JVMTI_ERROR_NONE) {
    std::string_view c(csig);
    if (c.size() > 2 && c.front() == 'L') c = c.substr(1, c.size() - 2);  // "Lpkg/C;" -> "pkg/C"
    std::string_view method_name(name);
    std::lock_guard<std::shared_mutex> lock(g_listener_mutex);
    auto [it, fresh] = g_listener_ids.emplace(m, 0);
    if (fresh && !NeverRewritten(c) && Selected(JavaClassName(c) + "." + std::string(method_name))) {
      it->second = NewMethod(c, method_name, sig);
    }
    id = it->second;
  }
  if (name) jvmti->Deallocate(reinterpret_cast<unsigned char*>(name));
  if (sig) jvmti->Deallocate(reinterpret_cast<unsigned char*>(sig));
  if (csig) jvmti->Deallocate(reinterpret_cast<unsigned char*>(csig));
  return id;
}

void JNICALL OnMethodEntry(jvmtiEnv* jvmti, JNIEnv*, jthread, jmethodID m) {
  if (const uint32_t id = ListenerId(jvmti, m)) g_runtime.enter(MethodKey(id));
}

void JNICALL OnMethodExit(jvmtiEnv* jvmti, JNIEnv*, jthread, jmethodID m, jboolean, jvalue) {
  if (const uint32_t id = ListenerId(jvmti, m)) g_runtime.exit(MethodKey(id));
}

// ---- threads (threads.cc) -------------------------------------------------

void JNICALL OnThreadStart(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) { NameStartingThread(jvmti, jni, thread); }

// The JVM is going: shutdown hooks have run, and what Java code remains is
// daemon threads until the VM's last safepoint and the JVM's own threads
// leaving (the Signal Dispatcher runs Thread.exit). The probes stop calling
// into native code first: at its last safepoint HotSpot waits in steps of
// 10 ms for any thread that is in native code (VM_Exit), and a probe's JNI
// call there cost every traced JVM 10 ms at exit (an empty main: 70 ms
// against 60). What is lost is what daemon threads would have recorded in
// the last moments before the VM stops them.
void JNICALL OnVMDeath(jvmtiEnv*, JNIEnv* jni) {
  if (g_probe_class != nullptr && g_probe_on != nullptr) jni->SetStaticBooleanField(g_probe_class, g_probe_on, JNI_FALSE);
  CloseStartupWindow();  // first: a retransform under way changes the counts
  StopJfrClockStart();
  g_stats.Publish();     // the exit dump's counts, exact
  StopShedding();
  SaveShedMemory();
  WaitForNanoscopeFlushes();
  FinishCacheWrites();
}

uint64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Tracing starts: at VMInit, or when attached to a running JVM.
void StartMode(jvmtiEnv* jvmti, JNIEnv* jni) {
  const uint64_t t0 = NowNs();
  const HookedHere hooked0 = tls_hooked;
  if (g_options.mode == Mode::kInline) {
    // Before any class is rewritten: the shed thread must know every id (its
    // Thread object is made while Thread's code has no probes yet).
    StartShedding(jvmti, jni);
    // The method selection is part of the program's identity: a remembered
    // method must be one this run would trace.
    OpenShedMemory(jvmti, g_options.shed_memory, MethodSelection());
    StartInline(jvmti, jni);
  } else {
    if (g_probe_class == nullptr) StartRenameHook(jvmti, jni);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, nullptr);
    jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, nullptr);
  }
  g_stats.Publish();
  if (g_runtime.set_note != nullptr) {
    const uint64_t seen = tls_hooked.classes - hooked0.classes;
    // The rest of the time is HotSpot's: the classes' original bytes read
    // again, the rewritten ones parsed and swapped in (RetransformClasses).
    std::string note = "tracing started in " + std::to_string((NowNs() - t0) / 1000000) + " ms, " +
                       std::to_string(seen) + " loaded classes retransformed (" +
                       std::to_string((tls_hooked.ns - hooked0.ns) / 1000000) +
                       " ms of it in the class hook, parsing and rewriting)";
    if (const uint64_t skipped = g_stats.startup_skipped.load(); skipped != 0) {
      note += "; the " + std::to_string(skipped) +
              " classes loaded before tracing started keep their code and are not traced "
              "(startup=" + std::string(g_options.startup == Startup::kDefer ? "defer" : "skip") +
              "; --jvm-startup sync traces them)";
    }
    g_runtime.set_note("jvm-start", note.c_str());
  }
}

void JNICALL OnVMInit(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  NameStartingThread(jvmti, jni, thread);
  // HotSpot's own threads (Reference Handler, Finalizer, Signal Dispatcher,
  // Common-Cleaner) start before the live phase, so no ThreadStart names
  // them: without this they keep the kernel's 15 bytes ("Reference Handl").
  NameRunningThreads(jvmti, jni);
  StartMode(jvmti, jni);
}

// Loads liblookback.so from beside this library (or the one already loaded),
// after exporting the runtime options as LOOKBACK_* variables.
bool LoadRuntime() {
  Dl_info self{};
  std::string dir;
  if (dladdr(reinterpret_cast<void*>(&LoadRuntime), &self) && self.dli_fname) {
    dir = self.dli_fname;
    dir = dir.substr(0, dir.rfind('/') + 1);
  }
  const std::string path = dir + "liblookback.so";
  void* loaded = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (loaded == nullptr) loaded = dlopen("liblookback.so", RTLD_NOW | RTLD_NOLOAD);
  if (loaded != nullptr && !g_options.runtime.empty()) {
    Say("the lookback runtime was loaded before the agent (lookback record or LD_PRELOAD), so its settings come "
        "from LOOKBACK_* variables; agent options other than mode/include/exclude/inlined are ignored");
  }
  if (loaded == nullptr) {
    for (const auto& [var, value] : g_options.runtime) setenv(var.c_str(), value.c_str(), 1);
    loaded = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (loaded == nullptr) loaded = dlopen("liblookback.so", RTLD_NOW | RTLD_GLOBAL);
  }
  if (loaded == nullptr) {
    Say(std::string("cannot load liblookback.so (") + dlerror() + "): the JVM runs untraced");
    return false;
  }
  g_runtime.enter = reinterpret_cast<void (*)(uint64_t)>(dlsym(loaded, "lb_enter"));
  g_runtime.exit = reinterpret_cast<void (*)(uint64_t)>(dlsym(loaded, "lb_exit"));
  g_runtime.set_key_name = reinterpret_cast<int (*)(uint64_t, const char*)>(dlsym(loaded, "lb_set_key_name"));
  g_runtime.set_thread_name = reinterpret_cast<int (*)(const char*)>(dlsym(loaded, "lb_thread_set_name"));
  g_runtime.set_note = reinterpret_cast<int (*)(const char*, const char*)>(dlsym(loaded, "lb_set_note"));
  g_runtime.set_thread_name_of =
      reinterpret_cast<int (*)(uint32_t, const char*)>(dlsym(loaded, "lb_thread_set_name_of"));
  g_runtime.dump_sync = reinterpret_cast<int (*)(const char*, char*, size_t)>(dlsym(loaded, "lb_dump_sync"));
  g_runtime.dump_dir = reinterpret_cast<int (*)(char*, size_t)>(dlsym(loaded, "lb_dump_dir"));
  g_runtime.is_tracing = reinterpret_cast<int (*)()>(dlsym(loaded, "lb_thread_is_tracing"));
  g_runtime.thread_enable = reinterpret_cast<void (*)()>(dlsym(loaded, "lb_thread_enable"));
  g_runtime.thread_disable = reinterpret_cast<void (*)()>(dlsym(loaded, "lb_thread_disable"));
  g_runtime.scope_begin = reinterpret_cast<void (*)(const char*)>(dlsym(loaded, "lb_scope_begin"));
  g_runtime.scope_end = reinterpret_cast<void (*)(const char*)>(dlsym(loaded, "lb_scope_end"));
  // Optional (older runtimes have no budget): without them shed methods keep their probes.
  g_runtime.shed_keys = reinterpret_cast<size_t (*)(uint64_t*, size_t)>(dlsym(loaded, "lb_shed_keys"));
  g_runtime.set_shed_listener = reinterpret_cast<void (*)(void (*)())>(dlsym(loaded, "lb_set_shed_listener"));
  g_runtime.budget_on = reinterpret_cast<int (*)()>(dlsym(loaded, "lb_budget_on"));
  g_runtime.shed_remembered = reinterpret_cast<int (*)(uint64_t, uint64_t, uint64_t)>(dlsym(loaded, "lb_shed_remembered"));
  g_runtime.shed_figures = reinterpret_cast<int (*)(uint64_t, uint64_t*, uint64_t*)>(dlsym(loaded, "lb_shed_figures"));
  g_runtime.budget_judgements = reinterpret_cast<uint64_t (*)()>(dlsym(loaded, "lb_budget_judgements"));
  // Optional (older runtimes): without them the probe calls the natives for every record.
  g_runtime.ring_abi = reinterpret_cast<uint32_t (*)()>(dlsym(loaded, "lb_ring_abi"));
  g_runtime.clock_group = reinterpret_cast<uint32_t (*)()>(dlsym(loaded, "lb_clock_group"));
  g_runtime.fast_ring = reinterpret_cast<int (*)(void**)>(dlsym(loaded, "lb_thread_fast_ring"));
  g_runtime.any_ring = reinterpret_cast<int (*)(void**)>(dlsym(loaded, "lb_thread_ring"));
  g_runtime.filter_table = reinterpret_cast<const uint64_t* const* (*)()>(dlsym(loaded, "lb_filter_table"));
  g_runtime.register_guards = reinterpret_cast<void (*)(const void*, const void*)>(dlsym(loaded, "lb_pass_register_guards"));
  g_runtime.unregister_guards =
      reinterpret_cast<void (*)(const void*, const void*)>(dlsym(loaded, "lb_pass_unregister_guards"));
  if (!g_runtime.enter || !g_runtime.exit || !g_runtime.set_key_name || !g_runtime.set_thread_name ||
      !g_runtime.set_thread_name_of || !g_runtime.dump_sync || !g_runtime.dump_dir || !g_runtime.is_tracing ||
      !g_runtime.thread_enable || !g_runtime.thread_disable || !g_runtime.scope_begin || !g_runtime.scope_end) {
    Say("liblookback.so is from another lookback version (missing lb_dump_dir): the JVM runs untraced");
    return false;
  }
  return true;
}

bool Check(jvmtiError e, const char* what) {
  if (e == JVMTI_ERROR_NONE) return true;
  Say(std::string(what) + " failed (JVMTI error " + std::to_string(e) + "): the JVM runs untraced");
  return false;
}

}  // namespace

bool ProbesReady() { return g_probe_ready.load(std::memory_order_acquire); }

}  // namespace lookback::jvm

using namespace lookback::jvm;

namespace lookback::jvm {
namespace {

// Agent_OnAttach's return values, which `lookback attach` turns into messages.
enum AttachResult : jint {
  kAttachOk = 0,
  kAttachBadOptions = 2,
  kAttachNoRuntime = 3,
  kAttachNoJvmti = 4,
  kAttachNotAttached = 5,  // detach, with nothing to detach
};

// Both ways in: at JVM start (-agentpath, live = false) and into a running
// JVM (`lookback attach`, live = true).
// Under `lookback record` (LOOKBACK_RECORD_EVENTS names a file it reads when
// the command has ended): this JVM has the agent, so record can tell a JVM
// that wrote no dump from one that was never traced (cmd_record.cc). One
// line appended; nothing happens without the variable.
void NoteStartedUnderRecord() {
  const char* events = getenv("LOOKBACK_RECORD_EVENTS");
  if (events == nullptr || events[0] == '\0') return;
  char exe[4096] = "?";
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 1] = '\0';
  const std::string line = "jvm-started " + std::to_string(getpid()) + " " + exe + "\n";
  const int fd = open(events, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, line.data(), line.size()) < 0) {
    // record then only misses which JVM this was
  }
  close(fd);
}

jint Start(JavaVM* vm, char* options, bool live) {
  g_options = ParseOptions(options);
  if (!g_options.error.empty()) {
    Say("bad option: " + g_options.error);
    return live ? kAttachBadOptions : JNI_ERR;  // at start: "agent library failed to init", as a wrong flag
  }
  for (const std::string& key : g_options.unknown) {
    Say("unknown option '" + key + "', ignored: neither an agent option (mode, inlined, startup, writes, cache, "
        "shed_memory, include, exclude) nor a runtime setting (docs/jvm.md, docs/triggers.md)");
  }
  g_live = live;
  if (g_options.mode == Mode::kInline) {
    g_stats.inlined_policy.store(g_options.probe_inlined ? AgentStats::kInlinedProbed : AgentStats::kInlinedSkipped);
  }
  if (live) {
    // The JVM's own signal handlers are in place already (crash.cc adopts
    // them), and it owns SIGUSR2: the dump signal is SIGPWR, as under record.
    bool signal_given = false;
    for (const auto& [var, value] : g_options.runtime) signal_given |= var == "LOOKBACK_DUMP_SIGNAL";
    if (!signal_given) g_options.runtime.emplace_back("LOOKBACK_DUMP_SIGNAL", "PWR");
    g_options.runtime.emplace_back("LOOKBACK_ATTACHED", "1");
  }
  if (!LoadRuntime()) return live ? kAttachNoRuntime : JNI_OK;
  if (vm->GetEnv(reinterpret_cast<void**>(&g_jvmti), JVMTI_VERSION_11) != JNI_OK || g_jvmti == nullptr) {
    Say("no JVMTI 11 environment: the JVM runs untraced");
    return live ? kAttachNoJvmti : JNI_OK;
  }
  jvmtiCapabilities caps{};
  caps.can_retransform_classes = 1;  // inline: every class; listener: java.lang.Thread, for the rename hook
  if (g_options.mode == Mode::kInline) {
    caps.can_generate_all_class_hook_events = 1;
  } else {
    caps.can_generate_method_entry_events = 1;
    caps.can_generate_method_exit_events = 1;
  }
  if (!Check(g_jvmti->AddCapabilities(&caps), "AddCapabilities")) return live ? kAttachNoJvmti : JNI_OK;
  jvmtiEventCallbacks cb{};
  cb.VMInit = &OnVMInit;
  cb.VMDeath = &OnVMDeath;
  cb.ThreadStart = &OnThreadStart;
  cb.ClassFileLoadHook = &OnClassFileLoad;
  cb.MethodEntry = &OnMethodEntry;
  cb.MethodExit = &OnMethodExit;
  if (!Check(g_jvmti->SetEventCallbacks(&cb, sizeof cb), "SetEventCallbacks")) return live ? kAttachNoJvmti : JNI_OK;
  if (!live) g_jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
  g_jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
  g_jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_THREAD_START, nullptr);
  // Inline mode's ClassFileLoadHook is enabled when the probe class exists
  // (StartInline), not here: before that the hook rewrites nothing, and with
  // the event on HotSpot reads every class it maps from the CDS archive back
  // out of the runtime image to post it (KlassFactory's shared-class hook),
  // about 360 classes before main for nothing.
  if (live) {
    JNIEnv* jni = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_8) != JNI_OK || jni == nullptr) return kAttachNoJvmti;
    NameRunningThreads(g_jvmti, jni);
    StartMode(g_jvmti, jni);
    EnableJavaApi(g_jvmti, jni);
  } else {
    NoteStartedUnderRecord();
  }
  return live ? kAttachOk : JNI_OK;
}

// `lookback detach`: every class back to its original bytes (the hook now
// changes nothing), probes and events off. The runtime stays loaded: rings
// already recorded can still be dumped.
jint Detach(JNIEnv* jni) {
  if (g_jvmti == nullptr || !g_probe_ready.load()) return kAttachNotAttached;
  const uint64_t t0 = NowNs();
  g_probe_ready.store(false, std::memory_order_release);
  if (g_probe_class != nullptr) jni->SetStaticBooleanField(g_probe_class, g_probe_on, JNI_FALSE);
  if (g_options.mode == Mode::kListener) {
    g_jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_METHOD_ENTRY, nullptr);
    g_jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_METHOD_EXIT, nullptr);
  }
  const size_t n = RetransformLoadedClasses(g_jvmti, jni);
  g_jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
  if (g_runtime.set_note != nullptr) {
    g_runtime.set_note("jvm-detach", ("detached: " + std::to_string(n) + " classes restored in " +
                                      std::to_string((NowNs() - t0) / 1000000) + " ms").c_str());
  }
  return kAttachOk;
}

}  // namespace
}  // namespace lookback::jvm

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) { return Start(vm, options, false); }

extern "C" JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void*) {
  JNIEnv* jni = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_8) != JNI_OK || jni == nullptr) return kAttachNoJvmti;
  if (options != nullptr && strcmp(options, "detach") == 0) return Detach(jni);
  if (g_jvmti != nullptr) {
    // Attached before (and perhaps detached): trace again with the new
    // method globs; the runtime keeps the settings it started with.
    Options o = ParseOptions(options);
    if (!o.error.empty()) return kAttachBadOptions;
    g_options.include = o.include;
    g_options.exclude = o.exclude;
    g_options.probe_inlined = o.probe_inlined;
    g_stats.inlined_policy.store(o.probe_inlined ? AgentStats::kInlinedProbed : AgentStats::kInlinedSkipped);
    if (g_options.mode == Mode::kInline) {
      g_jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
    }
    StartMode(g_jvmti, jni);
    EnableJavaApi(g_jvmti, jni);
    return kAttachOk;
  }
  return Start(vm, options, true);
}
