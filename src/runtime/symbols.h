// Function names -> addresses inside the traced process, for the detectors
// that take function-name globs (LOOKBACK_SLOW_CALL, LOOKBACK_STALL_IDLE).
//
// Reads .symtab (else .dynsym) of every loaded module's file. Hand-written
// over <elf.h> on purpose: the runtime is preloaded into arbitrary programs
// and linked statically into others, so it carries no library dependency
// (the CLI, which symbolizes dumps, uses elfutils). Runs on the control
// thread only, once at start and again when modules are loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lookback::rt {

struct FunctionMatch {
  uint64_t addr = 0;  // run-time address: the key the hooks record
  uint64_t size = 0;
  std::string name;   // demangled
  size_t pattern = 0; // index of the first glob that matched
};

// Globs match the demangled name, that name without its parameter list, or
// the unqualified name ("parse" matches "ns::Parser::parse(int) const").
std::vector<FunctionMatch> FindFunctions(const std::vector<std::string>& globs) __attribute__((no_instrument_function));
bool FunctionNameMatches(const std::string& glob, const std::string& demangled) __attribute__((no_instrument_function));
// Changes whenever a module is loaded or unloaded.
uint64_t ModulesGeneration() __attribute__((no_instrument_function));

}  // namespace lookback::rt
