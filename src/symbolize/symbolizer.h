// Function keys -> names, modules and file:line, using elfutils' libdwfl on
// the module files named in the dump (checked against their build ids).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/reader.h"

namespace lookback::symbolize {

struct Symbol {
  std::string name;    // demangled function name, or module+0xoffset when unresolved
  std::string module;  // file name of the module ("" if none)
  std::string file;    // source file, when debug info has it
  int line = 0;
  bool resolved = false;
};

class Symbolizer {
 public:
  // `search_paths`: extra directories where a module is looked for, by file
  // name and by build id (DIR/.build-id/xx/rest[.debug]), when its recorded
  // path is missing or holds another build.
  explicit Symbolizer(const format::Dump& dump, const std::vector<std::string>& search_paths = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  const Symbol& Lookup(uint64_t key);
  const std::string& Name(uint64_t key) { return Lookup(key).name; }
  // Start address of the function containing `pc` (its native key), 0 if unknown.
  uint64_t FunctionStart(uint64_t pc);
  // Adapter for model::CallMatcher.
  static uint64_t FunctionOf(void* self, uint64_t pc) { return static_cast<Symbolizer*>(self)->FunctionStart(pc); }
  // Modules whose file was missing or had another build id.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unordered_map<uint64_t, Symbol> cache_;
  std::unordered_map<uint64_t, uint64_t> starts_;
  std::vector<std::string> problems_;
};

std::string Demangle(const char* name);

}  // namespace lookback::symbolize
