// LOOKBACK_EXCLUDE for a library loaded after start: the program dlopens
// PLUGIN, calls plugin_work, waits long enough for lookback to look at the
// loaded modules again, calls marker_after_wait, then plugin_work again.
// With "close", it then dlcloses PLUGIN and waits 200 ms before it exits.
//   dlopen_exclude PLUGIN_SO WAIT_MS [close]
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

__attribute__((noinline)) void marker_after_wait() { asm volatile(""); }

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: dlopen_exclude PLUGIN_SO WAIT_MS [close]\n");
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
  if (argc == 4) {
    dlclose(lib);
    usleep(200000);  // lookback's control thread looks at the modules every 10 ms
  }
  printf("done %d\n", sink);
  return 0;
}
