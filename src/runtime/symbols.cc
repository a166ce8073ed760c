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
  const int fd = open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  const auto* base = static_cast<const uint8_t*>(map);
  auto in_file = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  Elf64_Ehdr eh;
  memcpy(&eh, base, sizeof eh);
  const bool elf64 = memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
                     eh.e_shentsize == sizeof(Elf64_Shdr) && in_file(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr));
  if (elf64) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh.e_shoff);
    const Elf64_Shdr* symtab = nullptr;
    for (int pass = 0; pass < 2 && symtab == nullptr; ++pass) {
      for (unsigned i = 0; i < eh.e_shnum; ++i) {
        if (sh[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) symtab = &sh[i];
      }
    }
    if (symtab != nullptr && symtab->sh_link < eh.e_shnum && in_file(symtab->sh_offset, symtab->sh_size) &&
        in_file(sh[symtab->sh_link].sh_offset, sh[symtab->sh_link].sh_size)) {
      const Elf64_Shdr& strtab = sh[symtab->sh_link];
      const char* strings = reinterpret_cast<const char*>(base + strtab.sh_offset);
      const size_t nsyms = symtab->sh_size / sizeof(Elf64_Sym);
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + symtab->sh_offset);
      for (size_t i = 0; i < nsyms; ++i) {
        const Elf64_Sym& s = syms[i];
        const int type = ELF64_ST_TYPE(s.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || s.st_value == 0 ||
            s.st_name >= strtab.sh_size)
          continue;
        const char* mangled = strings + s.st_name;
        if (strnlen(mangled, strtab.sh_size - s.st_name) == strtab.sh_size - s.st_name) continue;  // unterminated
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
      }
    }
  }
  munmap(map, size);
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
