#include "symbolize/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "format/format.h"

namespace lookback::symbolize {

std::string Demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d != nullptr) {
    std::string s(d);
    free(d);
    return s;
  }
  return name;
}

namespace {
std::string BaseName(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}
char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, dwfl_offline_section_address, &g_debuginfo_path};
}  // namespace

struct Symbolizer::Impl {
  Dwfl* dwfl = nullptr;
  const format::Dump* dump = nullptr;
  struct Mod {
    uint64_t lo, hi, bias;
    std::string name;
    bool usable;
  };
  std::vector<Mod> mods;
  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }
};

namespace {

// The GNU build id of an ELF file ("" if none or unreadable).
std::string FileBuildId(const std::string& path) {
  std::string id;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return id;
  elf_version(EV_CURRENT);
  if (Elf* e = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    const void* bits = nullptr;
    const ssize_t n = dwelf_elf_gnu_build_id(e, &bits);
    if (n > 0) id.assign(static_cast<const char*>(bits), static_cast<size_t>(n));
    elf_end(e);
  }
  close(fd);
  return id;
}

}  // namespace

Symbolizer::Symbolizer(const format::Dump& dump, const std::vector<std::string>& search_paths)
    : impl_(std::make_unique<Impl>()) {
  impl_->dump = &dump;
  impl_->dwfl = dwfl_begin(&kCallbacks);
  if (impl_->dwfl == nullptr) {
    problems_.push_back(std::string("libdwfl: ") + dwfl_errmsg(-1));
    return;
  }
  dwfl_report_begin(impl_->dwfl);
  for (const auto& m : dump.modules) {
    if (m.path.empty() || m.hi <= m.lo || m.path.find("linux-vdso") != std::string::npos) continue;
    Impl::Mod mod{m.lo, m.hi, m.bias, BaseName(m.path), false};
    // Where the traced binary was, then the search paths by name and by build id.
    std::vector<std::string> candidates = {m.path};
    const std::string hex = format::HexBuildId(m.build_id);
    for (const auto& dir : search_paths) {
      candidates.push_back(dir + "/" + mod.name);
      if (hex.size() > 2) {
        candidates.push_back(dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2));
        candidates.push_back(dir + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug");
      }
    }
    std::string chosen;
    bool mismatch = false;
    for (const auto& c : candidates) {
      if (access(c.c_str(), R_OK) != 0) continue;
      if (!m.build_id.empty() && FileBuildId(c) != m.build_id) {
        mismatch = true;
        continue;
      }
      chosen = c;
      break;
    }
    if (chosen.empty()) {
      problems_.push_back(m.path + (mismatch ? ": build id differs from the traced one (rebuilt since?)"
                                             : ": not found here") +
                          "; its functions print as module+offset (--symbols DIR adds places to look)");
      impl_->mods.push_back(mod);
      continue;
    }
    Dwfl_Module* dm = dwfl_report_elf(impl_->dwfl, mod.name.c_str(), chosen.c_str(), -1, m.bias, false);
    if (dm == nullptr) {
      problems_.push_back(chosen + ": " + dwfl_errmsg(-1));
      impl_->mods.push_back(mod);
      continue;
    }
    mod.usable = true;
    impl_->mods.push_back(mod);
  }
  dwfl_report_end(impl_->dwfl, nullptr, nullptr);
}

Symbolizer::~Symbolizer() = default;

const Symbol& Symbolizer::Lookup(uint64_t key) {
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Symbol s;
  char buf[64];
  if (auto n = impl_->dump->names.find(key); n != impl_->dump->names.end()) {
    s.name = n->second;
    s.resolved = true;
  } else if (key & format::kKeyMethodTag) {
    snprintf(buf, sizeof buf, "method#%u", static_cast<unsigned>(key & 0xffffffffu));
    s.name = buf;
  } else {
    const Impl::Mod* mod = nullptr;
    for (const auto& m : impl_->mods) {
      if (key >= m.lo && key < m.hi) {
        mod = &m;
        break;
      }
    }
    if (mod != nullptr) s.module = mod->name;
    if (mod != nullptr && mod->usable && impl_->dwfl != nullptr) {
      Dwfl_Module* dm = dwfl_addrmodule(impl_->dwfl, key);
      GElf_Off off = 0;
      GElf_Sym sym;
      const char* name = dm ? dwfl_module_addrinfo(dm, key, &off, &sym, nullptr, nullptr, nullptr) : nullptr;
      if (name != nullptr) {
        s.name = Demangle(name);
        if (off != 0) {
          snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(off));
          s.name += buf;
        }
        s.resolved = true;
        if (Dwfl_Line* line = dwfl_module_getsrc(dm, key)) {
          int lineno = 0;
          const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
          if (file) s.file = file;
          s.line = lineno;
        }
      }
    }
    if (!s.resolved) {
      if (mod != nullptr) {
        snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(key - mod->bias));
        s.name = mod->name + buf;
      } else {
        snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(key));
        s.name = buf;
      }
    }
  }
  return cache_.emplace(key, std::move(s)).first->second;
}

uint64_t Symbolizer::FunctionStart(uint64_t pc) {
  auto it = starts_.find(pc);
  if (it != starts_.end()) return it->second;
  uint64_t start = 0;
  if (impl_->dwfl != nullptr) {
    for (const auto& m : impl_->mods) {
      if (pc < m.lo || pc >= m.hi) continue;
      if (!m.usable) break;
      Dwfl_Module* dm = dwfl_addrmodule(impl_->dwfl, pc);
      GElf_Off off = 0;
      GElf_Sym sym;
      if (dm && dwfl_module_addrinfo(dm, pc, &off, &sym, nullptr, nullptr, nullptr)) start = pc - off;
      break;
    }
  }
  starts_.emplace(pc, start);
  return start;
}

}  // namespace lookback::symbolize
