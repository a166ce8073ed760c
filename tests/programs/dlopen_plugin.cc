// A library loaded with dlopen by dlopen_exclude.cc, built with the hooks.
extern "C" __attribute__((noinline)) int plugin_work(int x) { return x * 7 + 1; }
