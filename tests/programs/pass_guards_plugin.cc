// A pass-built shared library for PassGuards.* (pass_test.cc): it registers
// its own guard table when dlopen'ed and unregisters it when dlclose'd.
volatile int g_plugin_sink;

extern "C" __attribute__((noinline)) int plugin_work(int n) {
  g_plugin_sink = g_plugin_sink + n;
  return g_plugin_sink;
}
