// The ELF symbol-table reader the runtime and the JVM agent share
// (common/elf_symbols.h), on real files: the test program's own symbols, and
// every truncation and many corruptions of a real executable, each read
// without a fault (the ASan build checks every access) and never a symbol
// named outside the file.
#include "common/elf_symbols.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../scratch_dir.h"

namespace lookback::testing {
namespace {

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

TEST(ElfSymbols, FindsTheTestProgramsOwnFunctions) {
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  int mains = 0;
  const bool read = elf::ForEachSymbol(self, false, [&](const Elf64_Sym& s, const char* name) {
    if (std::string(name) == "main" && ELF64_ST_TYPE(s.st_info) == STT_FUNC && s.st_value != 0) ++mains;
  });
  EXPECT_TRUE(read);
  EXPECT_EQ(mains, 1);
  EXPECT_FALSE(elf::ForEachSymbol("/nonexistent/lookback", true, [](const Elf64_Sym&, const char*) {}));
  EXPECT_FALSE(elf::ForEachSymbol("/proc/self/status", true, [](const Elf64_Sym&, const char*) {}));  // not ELF
}

TEST(ElfSymbols, EveryTruncationAndCorruptionOfARealFileIsReadWithoutAFault) {
  const std::vector<char> original = ReadFile("/usr/bin/true");
  ASSERT_GT(original.size(), 4096u) << "/usr/bin/true";
  size_t names = 0;
  ASSERT_TRUE(elf::ForEachSymbol("/usr/bin/true", true, [&](const Elf64_Sym&, const char*) { ++names; }));
  ASSERT_GT(names, 0u) << "its .dynsym";
  const std::string path = ScratchDir("elf-symbols") + "/copy";
  auto read_copy = [&](const std::vector<char>& bytes, size_t size) {
    WriteFile(path, bytes.data(), size);
    elf::ForEachSymbol(path.c_str(), true, [&](const Elf64_Sym&, const char* name) {
      // The name lies in the mapping and ends there: reading it is safe.
      volatile size_t n = strlen(name);
      (void)n;
    });
  };
  for (size_t size = 0; size <= original.size(); size += size < 128 ? 1 : 61) read_copy(original, size);
  std::mt19937 random(42);
  for (int round = 0; round < 300; ++round) {
    std::vector<char> bytes = original;
    // The header, the section table and a few places anywhere.
    const size_t header_table = original.size() - std::min<size_t>(original.size(), 64 * 30);
    for (int i = 0; i < 8; ++i) {
      const size_t at = i < 3 ? random() % 64 : i < 6 ? header_table + random() % (original.size() - header_table)
                                                      : random() % original.size();
      bytes[at] = static_cast<char>(random());
    }
    read_copy(bytes, bytes.size());
  }
}

}  // namespace
}  // namespace lookback::testing
