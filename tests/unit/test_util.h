// Helpers for unit tests that drive the real recorder on fresh threads.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include "format/reader.h"
#include "lookback/lookback.h"
#include "model/decoder.h"
#include "runtime/hot_path.h"

namespace lookback::testing {

struct Ev {
  bool exit;
  uint64_t key;
  uint64_t tsc;
  bool operator==(const Ev&) const = default;
};

// Runs `body` on a new thread, which gets a new ring; returns its tid.
inline uint32_t OnFreshThread(const std::function<void()>& body) {
  uint32_t tid = 0;
  std::thread t([&] {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    body();
  });
  t.join();
  return tid;
}

// Records through the real fast path with caller-chosen timestamps.
inline void Emit(const Ev& e) {
  rt::Ring* r = lb_tls_ring;
  if (r != nullptr) rt::RecordReading(r, e.exit, e.key, e.tsc);
}

inline std::string DumpNow() {
  char path[4096];
  if (lb_dump_sync("unit test", path, sizeof path) != 0) return std::string("ERROR: ") + path;
  return path;
}

// Decoded events of thread `tid` in dump `path`.
inline std::vector<Ev> DecodedEvents(const std::string& path, uint32_t tid, model::DecodeStats* stats = nullptr) {
  std::vector<Ev> out;
  auto d = format::Dump::Open(path);
  if (!d.ok()) return out;
  for (const auto& t : d.value().threads) {
    if (t.tid != tid) continue;
    auto st = model::DecodeThread(d.value(), t, [&](const model::Event& e) {
      if (e.kind != model::EventKind::kResume) out.push_back({e.kind == model::EventKind::kExit, e.key, e.tsc});
    });
    if (stats) *stats = st;
  }
  return out;
}

}  // namespace lookback::testing
