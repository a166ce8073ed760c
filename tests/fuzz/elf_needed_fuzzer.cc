// libFuzzer target beside the ELF reader that tells JVM launchers apart
// (src/runtime/jvm_launcher.h, lb_elf_needs): any bytes as an executable
// must give an answer without a read outside them. CI seeds it with real
// executables (a JDK tool, /bin/true), whose headers it then mutates.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/jvm_launcher.h"

namespace {

struct Image {
  const uint8_t* data;
  size_t size;
};

long ReadImage(void* ctx, void* buf, size_t len, uint64_t offset) {
  const Image* img = static_cast<const Image*>(ctx);
  if (offset >= img->size) return 0;
  const size_t n = len < img->size - offset ? len : img->size - offset;
  memcpy(buf, img->data + offset, n);
  return static_cast<long>(n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Image img{data, size};
  const int r = lb_elf_needs(ReadImage, &img, size, "libjli.so");
  if (r != 0 && r != 1) __builtin_trap();
  // A size that claims more than there is: reads past the end return short.
  (void)lb_elf_needs(ReadImage, &img, size + 4096, "libc.so.6");
  return 0;
}
