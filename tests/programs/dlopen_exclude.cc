// LOOKBACK_EXCLUDE for a library loaded after start: the program dlopens
// PLUGIN, calls plugin_work, waits long enough for lookback to look at the
// loaded modules again, calls marker_after_wait, then plugin_work again.
//   dlopen_exclude PLUGIN_SO WAIT_MS
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

__attribute__((noinline)) void marker_after_wait() { asm volatile(""); }

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: dlopen_exclude PLUGIN_SO WAIT_MS\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (lib == nullptr) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  auto work = reinterpret_cast<int (*)(int)>(dlsym(lib, "plugin_work"));
  if (work == nullptr) return 4;
  volatile int sink = 0;
  for (int i = 0; i < 10; ++i) sink = sink + work(i);
  usleep(static_cast<useconds_t>(atoi(argv[2])) * 1000);
  marker_after_wait();
  for (int i = 0; i < 10; ++i) sink = sink + work(i);
  printf("done %d\n", sink);
  return 0;
}
