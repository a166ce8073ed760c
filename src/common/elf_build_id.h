// The GNU build id of a loaded ELF object, read from its mapped PT_NOTE
// segments (no file access): the runtime records each module's in a dump
// (runtime/dump_writer.cc), and the JVM agent keys its class cache with its
// own (frontends/jvm/agent.cc).
#pragma once

#include <elf.h>
#include <link.h>

#include <cstring>
#include <string>

namespace lookback {

// The raw bytes of the object's NT_GNU_BUILD_ID note; empty when it has none.
inline std::string GnuBuildId(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        return std::string(desc, nh->n_descsz);
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return {};
}

}  // namespace lookback
