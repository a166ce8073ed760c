// Modules the program unloads (dlclose) while traced, named in the dump's
// NOTES ("modules-unloaded"). A dump lists the modules loaded when it is
// written, so the calls into a library closed before it print as addresses,
// or take the names of a library loaded at the same address later: the note
// tells the reader which names to doubt. The runtime interposes dlclose
// (below) and looks, after the real one, whether the library
// is gone: a dlclose that only drops a reference unloads nothing.
#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <string>
#include <vector>

#include "lookback/lookback.h"
#include "runtime/hot_path.h"

namespace lookback::rt {
namespace {

constexpr size_t kNamed = 16;
std::mutex g_mutex;
std::vector<std::string>* g_unloaded = nullptr;  // in the order they went; never freed (read at exit)

struct Find {
  const char* name;
  uintptr_t base;
  bool found;
};

int StillThere(dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<Find*>(data);
  if (info->dlpi_addr == f->base && info->dlpi_name != nullptr && std::string(info->dlpi_name) == f->name) {
    f->found = true;
    return 1;
  }
  return 0;
}

void NoteUnloaded(const std::string& name) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_unloaded == nullptr) g_unloaded = new std::vector<std::string>;
    g_unloaded->push_back(name);
    text = std::to_string(g_unloaded->size()) + " module(s) unloaded (dlclose) before this dump: ";
    for (size_t i = 0; i < g_unloaded->size() && i < kNamed; ++i) text += (i ? ", " : "") + (*g_unloaded)[i];
    if (g_unloaded->size() > kNamed) text += ", ...";
  }
  text += "; calls into them print as addresses, or under the name of a module loaded at the same address later "
          "(a dump written before the dlclose names them)";
  lb_set_note("modules-unloaded", text.c_str());
}

}  // namespace
}  // namespace lookback::rt

extern "C" __attribute__((visibility("default"), no_instrument_function)) int dlclose(void* handle) {
  using Fn = int (*)(void*);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "dlclose"));
  if (real == nullptr) return -1;
  lookback::rt::Ring* saved = lb_tls_ring;
  lb_tls_ring = nullptr;  // what this allocates is not the program's to trace
  std::string name;
  uintptr_t base = 0;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    name = map->l_name;
    base = map->l_addr;
  }
  lb_tls_ring = saved;
  const int rc = real(handle);
  if (rc == 0 && !name.empty()) {
    saved = lb_tls_ring;
    lb_tls_ring = nullptr;
    lookback::rt::Find f{name.c_str(), base, false};
    dl_iterate_phdr(lookback::rt::StillThere, &f);
    if (!f.found) lookback::rt::NoteUnloaded(name);
    lb_tls_ring = saved;
  }
  return rc;
}
