// The shed memory's file (docs/jvm.md, "The shed memory"): per program, the
// Java methods the overhead budget shed in its earlier runs, which the agent
// then leaves without probes from the start. Pure C++ (no JNI): the agent
// (shed_memory.cc) reads and writes it, tests/fuzz/shed_memory_fuzzer.cc
// feeds it anything.
//
// Text, one file per program (its name is the program's hash):
//
//   lookback-shed-memory 1 <PROGRAM_HASH hex>
//   <RUNS_LEFT> <CALLS_PER_S> <MEAN_NS> <class>;<name>;<descriptor>
//   ...
//
// class is the internal name (a/b/C), name and descriptor as in the class
// file; a JVM name may hold a space but never ';' (JVMS 4.2), a descriptor
// comes last, so ';' separates them. A name with a newline is not stored.
// RUNS_LEFT counts the later runs that still apply the entry (kRememberRuns
// when the budget last shed it): a method is measured again, probes and all,
// once its entry runs out, so a program whose hot spots moved is not left
// without probes for good.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lookback::jvm {

inline constexpr uint32_t kRememberRuns = 16;
// A file larger than this is not read (a program's shed set is thousands of
// lines at most: javac's is 2,700).
inline constexpr size_t kShedMemoryMaxBytes = 16u << 20;

struct RememberedMethod {
  std::string cls;  // internal name, a/b/C
  std::string name;
  std::string descriptor;
  uint64_t calls_per_s = 0;  // when the budget shed it, per second of the thread's CPU time
  uint64_t mean_ns = 0;      // the mean duration of its calls then (0: not measured)
  uint32_t runs_left = 0;    // later runs that apply it, this one included
};

// The entries of a memory file written for `program_hash`. nullopt, and why
// in *error, when it is not such a file (damaged, foreign, another program's):
// the caller then starts with an empty memory and writes a new file.
std::optional<std::vector<RememberedMethod>> ParseShedMemory(std::string_view text, uint64_t program_hash,
                                                             std::string* error);
// The file's text; entries whose names cannot be stored are left out.
std::string FormatShedMemory(uint64_t program_hash, const std::vector<RememberedMethod>& methods);

}  // namespace lookback::jvm
