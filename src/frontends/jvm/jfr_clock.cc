// HotSpot's own TSC read, for the timed records the Java probe writes itself
// (LookbackProbe.write; docs/jvm.md, "How a probe writes").
//
// The probe may write an exact EVENT only with the TSC the recorder reads
// (hot_path.h, __rdtsc), to the tick: a ring's timestamps must never step back
// between a record written from Java and the next one written by the natives
// (the exact path's epoch test would read a step back as a new epoch). The one
// TSC read compiled Java has without a JNI transition is
// jdk.jfr.internal.JVM.counterTime(): C1 and C2 compile it to a leaf call of
// JfrTime::time_function(), which is Rdtsc::elapsed_counter, os::rdtsc() minus
// an epoch taken at the JVM's start, whenever HotSpot's JFR fast time is on
// (JfrTime::_ft_enabled: HotSpot turns it on by itself on a CPU with an
// invariant TSC, JDK 17 to 25, JFR recording or not). No API gives that epoch;
// HotSpot's symbol table does: libjvm.so keeps its .symtab in Debian's and
// Temurin's builds, with Rdtsc::epoch() in it. So, each step checked:
//   1. libjvm.so's .symtab gives Rdtsc::epoch, Rdtsc::elapsed_counter (local
//      functions in its code) and JfrTime::_ft_enabled (a bool in its data);
//   2. _ft_enabled is set, and elapsed_counter() + epoch() lies between two
//      rdtsc reads around the call, five times out of five;
//   3. java.base reads jdk.jfr and jdk.jfr exports jdk.jfr.internal to it
//      (JVMTI AddModuleReads/AddModuleExports: the probe lives in java.base),
//      and jdk.jfr.internal.JVM is initialised (its initialiser registers the
//      natives the interpreter calls);
//   4. counterTime() called through JNI, plus the epoch, lies between two
//      rdtsc reads around it.
// Then the agent sets the probe's TSC_EPOCH, TIMED and WRITES. Any step
// failing leaves the probe calling the natives for every timed record, as
// before, and the `jvm` note says why.
#include <dlfcn.h>
#include <elf.h>
#include <jni.h>
#include <jvmti.h>
#include <link.h>
#include <x86intrin.h>

#include <cstring>
#include <iterator>
#include <string>
#include <string_view>

#include "common/elf_symbols.h"
#include "frontends/jvm/jvm_agent.h"

namespace lookback::jvm {

namespace {

// libjvm.so as loaded: its file, load bias and loadable segments.
struct LoadedObject {
  std::string path;
  uintptr_t bias = 0;
  bool found = false;
  struct Segment {
    uintptr_t begin, end;
    bool code;
  } segments[16];
  size_t n_segments = 0;

  // Whether [addr, addr + size) lies in one segment (of code, if `code`).
  bool Holds(uintptr_t addr, size_t size, bool code) const {
    for (size_t i = 0; i < n_segments; ++i) {
      const Segment& s = segments[i];
      if (addr >= s.begin && addr + size <= s.end && (!code || s.code)) return true;
    }
    return false;
  }
};

int FindLibjvm(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<LoadedObject*>(data);
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const std::string_view suffix = "/libjvm.so";
  if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) return 0;
  out->path = std::string(name);
  out->bias = info->dlpi_addr;
  out->found = true;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && out->n_segments < std::size(out->segments); ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + p.p_vaddr;
    out->segments[out->n_segments++] = {begin, begin + p.p_memsz, (p.p_flags & PF_X) != 0};
  }
  return 1;
}

// The symbols wanted, by name, with their values once found (used only if
// found exactly once).
struct Wanted {
  const char* name;
  unsigned type;  // STT_FUNC or STT_OBJECT
  uint64_t value = 0;
  int seen = 0;
};

// Reads the file's .symtab (common/elf_symbols.h: a file replaced on disk
// since it was loaded is a miss; its symbols are then also checked against
// what they do, steps 2 and 4).
bool ReadSymtab(const std::string& path, Wanted* wanted, size_t n, std::string* why) {
  const bool read = elf::ForEachSymbol(path.c_str(), /*dynsym_fallback=*/false, [&](const Elf64_Sym& s, const char* name) {
    if (s.st_value == 0) return;
    for (size_t w = 0; w < n; ++w) {
      if (ELF64_ST_TYPE(s.st_info) == wanted[w].type && strcmp(name, wanted[w].name) == 0) {
        wanted[w].value = s.st_value;
        ++wanted[w].seen;
      }
    }
  });
  if (!read) *why = path + " has no symbol table (.symtab: stripped), or cannot be read";
  return read;
}

// Step 4's and step 2's test: `read() + epoch` between two rdtsc reads, every time.
template <typename Read>
bool Brackets(Read read, int64_t epoch, int times) {
  for (int i = 0; i < times; ++i) {
    _mm_lfence();
    const uint64_t before = __rdtsc();
    _mm_lfence();
    const uint64_t at = static_cast<uint64_t>(read() + epoch);
    _mm_lfence();
    const uint64_t after = __rdtsc();
    if (at < before || at > after) return false;
  }
  return true;
}

// Steps 1 and 2: the epoch, or 0 and why not.
int64_t FindTscEpoch(std::string* why) {
  LoadedObject jvm;
  dl_iterate_phdr(&FindLibjvm, &jvm);
  if (!jvm.found) {
    *why = "no libjvm.so in the process";
    return 0;
  }
  Wanted wanted[] = {{"_ZN5Rdtsc5epochEv", STT_FUNC},
                     {"_ZN5Rdtsc15elapsed_counterEv", STT_FUNC},
                     {"_ZN7JfrTime11_ft_enabledE", STT_OBJECT}};
  if (!ReadSymtab(jvm.path, wanted, 3, why)) return 0;
  for (const Wanted& w : wanted) {
    if (w.seen != 1) {
      *why = std::string(w.seen == 0 ? "no " : "more than one ") + w.name + " in " + jvm.path + "'s symbol table";
      return 0;
    }
  }
  const uintptr_t epoch_fn = jvm.bias + wanted[0].value, counter_fn = jvm.bias + wanted[1].value,
                  ft_enabled = jvm.bias + wanted[2].value;
  if (!jvm.Holds(epoch_fn, 1, true) || !jvm.Holds(counter_fn, 1, true) || !jvm.Holds(ft_enabled, 1, false)) {
    *why = "libjvm.so's symbols do not fall in its loaded segments (the file changed since it was loaded?)";
    return 0;
  }
  if (*reinterpret_cast<const volatile bool*>(ft_enabled) == 0) {
    *why = "HotSpot's JFR fast time is off (no invariant TSC, or -XX:-UseFastUnorderedTimeStamps): counterTime is not the TSC";
    return 0;
  }
  const int64_t epoch = reinterpret_cast<int64_t (*)()>(epoch_fn)();
  auto counter = reinterpret_cast<int64_t (*)()>(counter_fn);
  if (epoch == 0 || !Brackets(counter, epoch, 5)) {
    *why = "HotSpot's elapsed counter plus its epoch is not the TSC read here";
    return 0;
  }
  return epoch;
}

}  // namespace

bool EnableJfrClock(jvmtiEnv* jvmti, JNIEnv* jni, jclass probe, std::string* why) {
  if (!g_java_rings.direct_timed_possible) {
    *why = "the probe cannot write to rings (agent option writes=native, or another runtime)";
    return false;
  }
  // Under -Xint every Unsafe access and counterTime itself is a call into
  // native code: a trace point written from Java cost 390 ns against 180
  // through the natives (a program calling a small method in a loop).
  char* info = nullptr;
  if (jvmti->GetSystemProperty("java.vm.info", &info) == JVMTI_ERROR_NONE && info != nullptr) {
    const bool interpreted = strstr(info, "interpreted mode") != nullptr;
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(info));
    if (interpreted) {
      *why = "the JVM only interprets (-Xint), where the natives cost less";
      return false;
    }
  }
  const int64_t epoch = FindTscEpoch(why);
  if (epoch == 0) return false;
  // Step 3. jdk.jfr is in the boot layer when the program runs from a class
  // path (every system module that exports a package is a root there), not
  // always when it names a main module (java -m).
  jobject base = nullptr, jfr = nullptr;
  if (jvmti->GetNamedModule(nullptr, "java/lang", &base) != JVMTI_ERROR_NONE || base == nullptr ||
      jvmti->GetNamedModule(nullptr, "jdk/jfr/internal", &jfr) != JVMTI_ERROR_NONE || jfr == nullptr) {
    *why = "the module jdk.jfr is not in the boot layer";
    return false;
  }
  if (jvmti->AddModuleReads(base, jfr) != JVMTI_ERROR_NONE ||
      jvmti->AddModuleExports(jfr, "jdk.jfr.internal", base) != JVMTI_ERROR_NONE) {
    *why = "cannot make jdk.jfr.internal readable from java.base";
    return false;
  }
  jclass jvm = jni->FindClass("jdk/jfr/internal/JVM");
  jmethodID counter = jvm != nullptr ? jni->GetStaticMethodID(jvm, "counterTime", "()J") : nullptr;  // initialises it
  if (counter == nullptr || jni->ExceptionCheck()) {
    jni->ExceptionClear();
    *why = "jdk.jfr.internal.JVM.counterTime cannot be called";
    return false;
  }
  // Step 4.
  bool thrown = false;
  auto read = [&]() -> int64_t {
    const jlong t = jni->CallStaticLongMethod(jvm, counter);
    if (jni->ExceptionCheck()) {
      jni->ExceptionClear();
      thrown = true;
    }
    return t;
  };
  if (!Brackets(read, epoch, 5) || thrown) {
    *why = "jdk.jfr.internal.JVM.counterTime plus HotSpot's epoch is not the TSC read here";
    return false;
  }
  jfieldID epoch_field = jni->GetStaticFieldID(probe, "TSC_EPOCH", "J");
  jfieldID timed = epoch_field != nullptr ? jni->GetStaticFieldID(probe, "TIMED", "Z") : nullptr;
  jfieldID writes = timed != nullptr ? jni->GetStaticFieldID(probe, "WRITES", "Z") : nullptr;
  if (writes == nullptr) {
    jni->ExceptionClear();
    *why = "the probe class has no TSC_EPOCH, TIMED or WRITES";
    return false;
  }
  // In this order: a probe that reads WRITES and TIMED set reads the epoch
  // set (x86's stores are seen in program order).
  jni->SetStaticLongField(probe, epoch_field, epoch);
  jni->SetStaticBooleanField(probe, timed, JNI_TRUE);
  jni->SetStaticBooleanField(probe, writes, JNI_TRUE);
  return true;
}

}  // namespace lookback::jvm
