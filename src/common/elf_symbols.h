// A module's ELF symbol table, read from its file: for the runtime's
// function-name globs (runtime/symbols.cc) and the JVM agent's look-up of
// HotSpot's TSC epoch (frontends/jvm/jfr_clock.cc).
//
// Hand-written over <elf.h> on purpose: both are loaded into arbitrary
// programs (preloaded, linked statically, a JVM's agent) and carry no library
// dependency; the CLI, which symbolizes dumps, uses elfutils. The file is read
// through a private read-only mapping and every offset and size is checked
// against the file's size, so a file truncated or replaced on disk since it
// was loaded is a miss, not a fault (ElfSymbols tests, every truncation of a
// real library).
#pragma once

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace lookback::elf {

// Calls visit(symbol, name) for every symbol of the file's .symtab (or, when it
// has none and `dynsym_fallback`, of its .dynsym) whose name is a string
// inside the table's string section. False when the file cannot be read as a
// 64-bit ELF file with such a table.
template <typename Visit>
__attribute__((no_instrument_function)) bool ForEachSymbol(const char* path, bool dynsym_fallback, Visit&& visit) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return false;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  const auto* base = static_cast<const uint8_t*>(map);
  auto in_file = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  bool read = false;
  Elf64_Ehdr eh;
  memcpy(&eh, base, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      eh.e_shentsize == sizeof(Elf64_Shdr) && in_file(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
    auto section = [&](uint64_t i) {
      Elf64_Shdr s;
      memcpy(&s, base + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof s);
      return s;
    };
    Elf64_Shdr table{};
    bool found = false;
    for (int pass = 0; pass < (dynsym_fallback ? 2 : 1) && !found; ++pass) {
      for (uint64_t i = 0; i < eh.e_shnum && !found; ++i) {
        const Elf64_Shdr s = section(i);
        if (s.sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) table = s, found = true;
      }
    }
    if (found && table.sh_link < eh.e_shnum && in_file(table.sh_offset, table.sh_size)) {
      const Elf64_Shdr strings = section(table.sh_link);
      if (in_file(strings.sh_offset, strings.sh_size)) {
        const char* names = reinterpret_cast<const char*>(base + strings.sh_offset);
        for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= table.sh_size; off += sizeof(Elf64_Sym)) {
          Elf64_Sym s;
          memcpy(&s, base + table.sh_offset + off, sizeof s);
          if (s.st_name >= strings.sh_size) continue;
          const char* name = names + s.st_name;
          if (strnlen(name, strings.sh_size - s.st_name) == strings.sh_size - s.st_name) continue;  // unterminated
          visit(s, name);
        }
        read = true;
      }
    }
  }
  munmap(map, size);
  return read;
}

}  // namespace lookback::elf
