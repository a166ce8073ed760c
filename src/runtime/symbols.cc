#include "runtime/symbols.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/elf_symbols.h"

namespace lookback::rt {
namespace {

struct Module {
  uint64_t bias;
  std::string path;
};

int CollectModule(dl_phdr_info* info, size_t, void* arg) {
  auto* mods = static_cast<std::vector<Module>*>(arg);
  std::string path = info->dlpi_name ? info->dlpi_name : "";
  if (path.empty()) {
    if (!mods->empty()) return 0;  // the vDSO has no file
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return 0;
    path.assign(buf, static_cast<size_t>(n));
  }
  mods->push_back({info->dlpi_addr, path});
  return 0;
}

int CountModules(dl_phdr_info* info, size_t, void* arg) {
  *static_cast<uint64_t*>(arg) = info->dlpi_adds * 1000003ull + info->dlpi_subs;
  return 1;  // the counters are the same in every entry
}

// Letters, digits and '_' of the longest identifier-like run of a glob: any
// name that matches contains it, mangled or not. Cheap filter before demangling.
std::string LiteralCore(const std::string& glob) {
  std::string best, cur;
  for (char c : glob + "*") {
    if (isalnum(static_cast<unsigned char>(c)) || c == '_') {
      cur += c;
    } else {
      if (cur.size() > best.size()) best = cur;
      cur.clear();
    }
  }
  return best;
}

std::string WithoutParameters(const std::string& s) {
  size_t end = s.size();
  if (end >= 6 && s.compare(end - 6, 6, " const") == 0) end -= 6;
  if (end == 0 || s[end - 1] != ')') return s.substr(0, end);
  int depth = 0;
  for (size_t i = end; i-- > 0;) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) return s.substr(0, i);
  }
  return s;
}

std::string Unqualified(const std::string& s) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '(') ++depth;
    if ((c == '>' || c == ')') && depth > 0) --depth;
    if (depth == 0 && c == ':' && s[i + 1] == ':') start = i + 2;
  }
  return s.substr(start);
}

void ScanModule(const Module& m, const std::vector<std::string>& globs, const std::vector<std::string>& cores,
                std::vector<FunctionMatch>* out) {
  elf::ForEachSymbol(m.path.c_str(), /*dynsym_fallback=*/true, [&](const Elf64_Sym& s, const char* mangled) {
    const int type = ELF64_ST_TYPE(s.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_value == 0) return;
    std::string demangled;
    for (size_t g = 0; g < globs.size(); ++g) {
      if (!cores[g].empty() && strstr(mangled, cores[g].c_str()) == nullptr) continue;
      if (demangled.empty()) {
        int status = 0;
        char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
        demangled = status == 0 && d != nullptr ? d : mangled;
        free(d);
      }
      if (FunctionNameMatches(globs[g], demangled) || fnmatch(globs[g].c_str(), mangled, 0) == 0) {
        out->push_back({m.bias + s.st_value, s.st_size, demangled, g});
        break;
      }
    }
  });
}

}  // namespace

bool FunctionNameMatches(const std::string& glob, const std::string& demangled) {
  const std::string bare = WithoutParameters(demangled);
  return fnmatch(glob.c_str(), demangled.c_str(), 0) == 0 || fnmatch(glob.c_str(), bare.c_str(), 0) == 0 ||
         fnmatch(glob.c_str(), Unqualified(bare).c_str(), 0) == 0;
}

std::vector<FunctionMatch> FindFunctions(const std::vector<std::string>& globs) {
  std::vector<FunctionMatch> out;
  if (globs.empty()) return out;
  std::vector<Module> mods;
  dl_iterate_phdr(CollectModule, &mods);
  std::vector<std::string> cores;
  for (const auto& g : globs) cores.push_back(LiteralCore(g));
  for (const Module& m : mods) ScanModule(m, globs, cores, &out);
  return out;
}

uint64_t ModulesGeneration() {
  uint64_t g = 0;
  dl_iterate_phdr(CountModules, &g);
  return g;
}

}  // namespace lookback::rt
