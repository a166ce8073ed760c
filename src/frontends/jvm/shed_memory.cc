// The shed memory (docs/jvm.md, "The shed memory"). A method the overhead
// budget sheds is one that costs most for the least information, and on the
// JVM its probes cost even once shed: they are compiled into every method
// that inlines it, with tracing on or off, and the JIT compiles them at every
// tier (the `idle` mode of bench/jvm_workload.sh). A program sheds much the
// same methods each time it runs (Rhino's script shed 537; the next run,
// started without them, shed one more), so the agent remembers them per
// program and gives them no probes
// from the start; the runtime lists them in every dump as shed, by thread 0
// (an earlier run), with the rate and mean duration they had when shed.
//
//   VMInit    OpenShedMemory: the program's identity (its main class or jar,
//             class path, java.home, the method globs and the budget's settings), hashed, names
//             the file; its entries are read once, before any class is rewritten,
//             and never change (the hook reads them without a lock)
//   hook      IsRemembered (the rewrite leaves the method as it is),
//             RememberedOf (the class cache's key), AnnounceRemembered (an id
//             and a name for each, and lb_shed_remembered, once per method)
//   VMDeath   SaveShedMemory: what the budget sheds now (kRememberRuns
//             runs to come) and the entries read (one run fewer, if the
//             budget judged a thread at all: a run too short to measure
//             anything, `app --help`, uses nothing up), to a temporary file
//             renamed over the old one; memories of other programs untouched
//             for 30 days are removed
//
// Only with the budget on: with --budget off every method is traced.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jvmti.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#define XXH_INLINE_ALL  // header only: no symbol of libxxhash's is exported from the agent
#include <xxhash.h>

#include "frontends/jvm/class_cache.h"
#include "frontends/jvm/jvm_agent.h"
#include "frontends/jvm/shed_memory_file.h"

namespace lookback::jvm {
namespace {

struct Memory {
  bool on = false;
  bool asked = false;  // the user named the directory: problems are said
  bool damaged = false;  // the file did not parse: it is written anew at exit, whatever this run sheds
  uint64_t hash = 0;
  std::string dir, path, globs;
  std::vector<RememberedMethod> methods;                        // as read; never changed after OpenShedMemory
  std::unique_ptr<std::atomic<bool>[]> announced;               // per method: named and told to the runtime
  std::map<std::string, std::vector<uint32_t>, std::less<>> by_class;  // class -> indexes into methods
  std::atomic<uint64_t> announced_count{0};
};

Memory& M() {
  static Memory* m = new Memory;  // never destroyed: the hook may run during exit
  return *m;
}

std::string Property(jvmtiEnv* jvmti, const char* name) {
  char* v = nullptr;
  if (jvmti->GetSystemProperty(name, &v) != JVMTI_ERROR_NONE || v == nullptr) return {};
  std::string s(v);
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(v));
  return s;
}

// The class path with every entry made absolute (realpath, else joined to
// the working directory): `-cp .` in two directories is two programs.
std::string AbsoluteClassPath(const std::string& cp) {
  std::string out;
  if (cp.empty()) return out;  // no path at all (an empty entry in one is the working directory)
  char cwd[4096];
  const bool have_cwd = getcwd(cwd, sizeof cwd) != nullptr;
  size_t at = 0;
  while (at <= cp.size()) {
    size_t colon = cp.find(':', at);
    if (colon == std::string::npos) colon = cp.size();
    std::string entry = cp.substr(at, colon - at);
    if (char* real = realpath(entry.empty() ? "." : entry.c_str(), nullptr)) {
      entry = real;
      free(real);
    } else if (have_cwd && (entry.empty() || entry[0] != '/')) {
      entry = std::string(cwd) + "/" + entry;
    }
    out += entry + ':';
    at = colon + 1;
  }
  return out;
}

// What java was asked to run: sun.java.command's first token, made absolute
// when it is a file (a jar: `-jar build/app.jar` and `-jar app.jar` from
// build/ are one program); in source-file mode (`java A.java`, run by the
// javac launcher) the source file too.
std::string Command(const std::string& java_command) {
  auto absolute = [](const std::string& token) {
    if (char* real = realpath(token.c_str(), nullptr)) {
      std::string r(real);
      free(real);
      return r;
    }
    return token;
  };
  const size_t sp = java_command.find(' ');
  std::string first = java_command.substr(0, sp);
  std::string command = absolute(first);
  if (first == "jdk.compiler/com.sun.tools.javac.launcher.Main" && sp != std::string::npos) {
    const std::string rest = java_command.substr(sp + 1);
    command += " " + absolute(rest.substr(0, rest.find(' ')));
  }
  return command;
}

// Other programs' memories untouched for this long go (a launcher that runs
// from a fresh temporary path each time makes a new program each time), and
// temporaries of JVMs that died while writing after an hour.
constexpr time_t kForgetAfterS = 30 * 24 * 3600;
void Prune(const Memory& m) {
  DIR* d = opendir(m.dir.c_str());
  if (d == nullptr) return;
  const time_t now = time(nullptr);
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const bool memory = name.size() == 20 && name.compare(16, 4, ".txt") == 0;
    const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0 && name[0] == '.';
    if (!memory && !tmp) continue;
    const std::string path = m.dir + "/" + name;
    if (path == m.path) continue;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime > (memory ? kForgetAfterS : 3600)) unlink(path.c_str());
  }
  closedir(d);
}

std::string ReadFile(const std::string& path, bool* too_big) {
  std::string s;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    if (s.size() > kShedMemoryMaxBytes) {
      *too_big = true;
      break;
    }
  }
  close(fd);
  return s;
}

std::string Note() {
  Memory& m = M();
  return std::to_string(m.methods.size()) + " methods the overhead budget shed in earlier runs of this program have no "
         "probes from the start (" + std::to_string(m.announced_count.load()) +
         " in classes loaded so far; listed as shed by thread 0); each is measured again after " +
         std::to_string(kRememberRuns) + " runs; --jvm-shed-memory off (agent option shed_memory=off) traces them; " +
         m.path;
}

}  // namespace

void OpenShedMemory(jvmtiEnv* jvmti, const std::string& agent_option, const std::string& globs) {
  // At VMInit, or at each attach (StartMode runs on one thread at a time).
  static bool opened = false;
  Memory& m = M();
  if (opened) {
    // Attached again: with other globs, what this run sheds is not what the
    // memory read at first is about (the class cache turns off likewise).
    if (m.on && globs != m.globs) {
      m.on = false;
      Say("attached with other method globs: the shed memory is off for the rest of this JVM");
    }
    return;
  }
  opened = true;
  m.globs = globs;
  // The agent option, else LOOKBACK_JVM_SHED_MEMORY (the test suite turns it
  // off: its programs run again and again, each test expecting a first run).
  std::string option = agent_option;
  if (const char* v = getenv("LOOKBACK_JVM_SHED_MEMORY"); option.empty() && v != nullptr) option = v;
  if (option == "off") return;
  if (g_runtime.budget_on == nullptr || g_runtime.shed_remembered == nullptr || g_runtime.shed_figures == nullptr ||
      g_runtime.budget_on() == 0) {
    return;  // an older runtime, or --budget off: every method is traced
  }
  m.asked = !option.empty();
  m.dir = option;
  if (m.dir.empty()) m.dir = UserCacheDir("jvm-shed");
  if (m.dir.empty()) return;
  // Its files decide what is traced: the class cache's rules (class_cache.h).
  if (const std::string why = PrivateDir(m.dir); !why.empty()) {
    if (m.asked) Say("the shed memory is off: " + why);
    return;
  }
  // The program: what java was asked to run (its main class, module/class or
  // jar, without the arguments), where its classes come from, which JDK, and
  // what decides what the budget sheds.
  const std::string command = Command(Property(jvmti, "sun.java.command"));
  std::string id = "command=" + command + "\nclasspath=" + AbsoluteClassPath(Property(jvmti, "java.class.path")) +
                   "\nmodulepath=" + AbsoluteClassPath(Property(jvmti, "jdk.module.path")) +
                   "\njava.home=" + Property(jvmti, "java.home") + "\n" + globs;
  for (const char* var : {"LOOKBACK_BUDGET", "LOOKBACK_HISTORY", "LOOKBACK_CLOCK", "LOOKBACK_SLOW_CALL",
                          "LOOKBACK_CONFIG", "LOOKBACK_BUFFER_SIZE"}) {
    const char* v = getenv(var);
    id += std::string("\n") + var + "=" + (v != nullptr ? v : "");
  }
  m.hash = XXH3_64bits(id.data(), id.size());
  char name[32];
  snprintf(name, sizeof name, "/%016" PRIx64 ".txt", m.hash);
  m.path = m.dir + name;
  bool too_big = false;
  const std::string text = ReadFile(m.path, &too_big);
  if (!text.empty() || too_big) {
    std::string error;
    std::optional<std::vector<RememberedMethod>> read =
        too_big ? std::nullopt : ParseShedMemory(text, m.hash, &error);
    if (too_big) error = "larger than 16 MiB";
    if (read) {
      std::set<std::string> seen;  // a line twice is one method
      for (RememberedMethod& r : *read) {
        if (seen.insert(r.cls + ';' + r.name + ';' + r.descriptor).second) m.methods.push_back(std::move(r));
      }
    } else {
      m.damaged = true;
      Say("the shed memory " + m.path + " is not usable (" + error + "): starting without it; it is written anew at exit");
    }
  }
  m.announced = std::make_unique<std::atomic<bool>[]>(m.methods.size());
  for (size_t i = 0; i < m.methods.size(); ++i) m.by_class[m.methods[i].cls].push_back(static_cast<uint32_t>(i));
  m.on = true;
  if (!m.methods.empty() && g_runtime.set_note != nullptr) g_runtime.set_note("jvm-shed-memory", Note().c_str());
}

bool IsRemembered(std::string_view cls, std::string_view name, std::string_view descriptor) {
  Memory& m = M();
  if (!m.on || m.methods.empty()) return false;
  auto it = m.by_class.find(cls);
  if (it == m.by_class.end()) return false;
  for (uint32_t i : it->second) {
    if (m.methods[i].name == name && m.methods[i].descriptor == descriptor) return true;
  }
  return false;
}

std::string RememberedOf(std::string_view cls) {
  Memory& m = M();
  std::string s;
  if (!m.on || m.methods.empty()) return s;
  auto it = m.by_class.find(cls);
  if (it == m.by_class.end()) return s;
  std::set<std::string> sigs;
  for (uint32_t i : it->second) sigs.insert(m.methods[i].name + m.methods[i].descriptor);
  for (const std::string& sig : sigs) s += sig + '\n';
  return s;
}

void AnnounceRemembered(std::string_view cls, const std::vector<std::pair<std::string, std::string>>* only,
                        uint32_t (*new_method)(std::string_view cls, std::string_view name, std::string_view desc)) {
  Memory& m = M();
  if (!m.on || m.methods.empty() || (only != nullptr && only->empty())) return;
  auto it = m.by_class.find(cls);
  if (it == m.by_class.end()) return;
  bool any = false;
  for (uint32_t i : it->second) {
    const RememberedMethod& r = m.methods[i];
    if (only != nullptr &&
        std::find(only->begin(), only->end(), std::pair<std::string, std::string>(r.name, r.descriptor)) == only->end()) {
      continue;  // not in this version of the class, or not one it would probe
    }
    if (m.announced[i].exchange(true)) continue;
    const uint32_t id = new_method(r.cls, r.name, r.descriptor);
    g_runtime.shed_remembered(MethodKey(id), r.calls_per_s, r.mean_ns);
    m.announced_count.fetch_add(1, std::memory_order_relaxed);
    any = true;
  }
  if (any && g_runtime.set_note != nullptr) g_runtime.set_note("jvm-shed-memory", Note().c_str());
}

void SaveShedMemory() {
  Memory& m = M();
  if (!m.on) return;
  if (g_runtime.set_note != nullptr && !m.methods.empty()) g_runtime.set_note("jvm-shed-memory", Note().c_str());
  // Shed in this run: remembered for kRememberRuns runs; the rest one run
  // fewer, if this run measured anything.
  const bool measured = g_runtime.budget_judgements == nullptr || g_runtime.budget_judgements() != 0;
  std::vector<RememberedMethod> next;
  std::set<std::string> seen;
  for (const ShedMethodNow& s : ShedMethodsNow()) {
    RememberedMethod r;
    r.cls = s.cls;
    r.name = s.name;
    r.descriptor = s.descriptor;
    r.runs_left = kRememberRuns;
    g_runtime.shed_figures(s.key, &r.calls_per_s, &r.mean_ns);
    if (seen.insert(r.cls + ';' + r.name + ';' + r.descriptor).second) next.push_back(std::move(r));
  }
  for (const RememberedMethod& old : m.methods) {
    if ((measured && old.runs_left <= 1) || !seen.insert(old.cls + ';' + old.name + ';' + old.descriptor).second) continue;
    RememberedMethod r = old;
    if (measured) --r.runs_left;
    next.push_back(std::move(r));
  }
  Prune(m);
  // Nothing to remember and no file to update, or nothing changed.
  if (!m.damaged && (next.empty() ? m.methods.empty() : !measured && next.size() == m.methods.size())) return;
  const std::string text = FormatShedMemory(m.hash, next);
  // A temporary of our own (mkstemp: JVMs of one program in containers that
  // share a home may share a pid), then renamed over the memory.
  std::string tmp = m.dir + "/." + m.path.substr(m.dir.size() + 1) + ".XXXXXX.tmp";
  const int fd = mkstemps(tmp.data(), 4);
  int error = fd < 0 ? errno : 0;
  for (size_t at = 0; error == 0 && at < text.size();) {
    const ssize_t n = write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = n < 0 ? errno : EIO;
    if (n > 0) at += static_cast<size_t>(n);
  }
  if (fd >= 0 && close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && rename(tmp.c_str(), m.path.c_str()) != 0) error = errno;
  if (error != 0) {
    if (fd >= 0) unlink(tmp.c_str());
    // The old file stays as it was: the next run applies it again.
    if (m.asked) Say("cannot write the shed memory " + m.path + ": " + strerror(error));
  }
}

}  // namespace lookback::jvm
