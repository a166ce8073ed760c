// The JVM agent's class hook, offline: what rewriting a class costs, per class
// and per megabyte, on real class files (bench/jvm_rewrite.sh extracts them
// from jars and from the JDK's modules). The hook runs RewriteClass on every
// class a JVM loads, so its cost is start-up time (docs/jvm.md, "Start-up").
//
//   jvm_rewrite_bench [--rounds N] [--out DIR] [--probe-inlined] CLASS_DIR...
//
// Reads every *.class under the directories into memory, then rewrites them
// all N times (default 5) with the agent's default request (every method
// selected, ids from a counter, the rename hook on, always-inlined methods
// left out) and prints the median round: classes, bytes, µs per class, MB/s,
// methods traced. --out writes each rewritten class (or the original, when
// unchanged) under DIR at its relative path, to compare two builds' output
// byte for byte (cmp -r).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontends/jvm/rewriter.h"

namespace {

namespace fs = std::filesystem;
using lookback::jvm::RewriteClass;
using lookback::jvm::RewriteRequest;
using lookback::jvm::RewriteResult;

struct ClassBytes {
  std::string rel;  // path relative to its directory
  std::vector<uint8_t> bytes;
};

std::vector<ClassBytes> ReadClasses(const std::vector<std::string>& dirs) {
  std::vector<ClassBytes> out;
  for (const std::string& d : dirs) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(d, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file() || it->path().extension() != ".class") continue;
      std::ifstream in(it->path(), std::ios::binary);
      ClassBytes c;
      c.rel = fs::relative(it->path(), d).string();
      c.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      out.push_back(std::move(c));
    }
    if (ec) std::fprintf(stderr, "jvm_rewrite_bench: %s: %s\n", d.c_str(), ec.message().c_str());
  }
  std::sort(out.begin(), out.end(), [](const ClassBytes& a, const ClassBytes& b) { return a.rel < b.rel; });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::string out_dir;
  bool probe_inlined = false;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--probe-inlined") {
      probe_inlined = true;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: jvm_rewrite_bench [--rounds N] [--out DIR] [--probe-inlined] CLASS_DIR...\n");
      return 2;
    } else {
      dirs.push_back(a);
    }
  }
  const std::vector<ClassBytes> classes = ReadClasses(dirs);
  if (classes.empty()) {
    std::fprintf(stderr, "jvm_rewrite_bench: no .class files under the directories given\n");
    return 1;
  }
  size_t total_bytes = 0;
  for (const ClassBytes& c : classes) total_bytes += c.bytes.size();

  // The agent's request (agent.cc, RewriteInHook), without its method table.
  uint32_t next_id = 1;
  RewriteRequest req;
  req.rename_hook = true;
  req.skip_inlined = !probe_inlined;
  req.selected = [](std::string_view, std::string_view) { return true; };
  req.assign_id = [&next_id](std::string_view, std::string_view, std::string_view) -> std::optional<uint32_t> {
    return next_id++;
  };

  std::vector<double> ns_per_round;
  size_t traced = 0, changed = 0, errors = 0;
  for (int r = 0; r < rounds; ++r) {
    traced = changed = errors = 0;
    size_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (const ClassBytes& c : classes) {
      RewriteResult res = RewriteClass(c.bytes.data(), c.bytes.size(), req);
      traced += res.traced.size();
      changed += res.changed;
      errors += !res.error.empty();
      sink += res.bytes.size();
    }
    const auto t1 = std::chrono::steady_clock::now();
    ns_per_round.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    if (sink == 1) std::puts("");  // keeps the results alive
  }
  if (!out_dir.empty()) {
    for (const ClassBytes& c : classes) {
      RewriteResult res = RewriteClass(c.bytes.data(), c.bytes.size(), req);
      const fs::path p = fs::path(out_dir) / c.rel;
      fs::create_directories(p.parent_path());
      std::ofstream o(p, std::ios::binary);
      const std::vector<uint8_t>& b = res.changed ? res.bytes : c.bytes;
      o.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    }
  }
  std::vector<double> sorted = ns_per_round;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted[sorted.size() / 2];
  std::printf("classes %zu (%zu rewritten, %zu errors), %.1f MB, %zu methods traced per round\n", classes.size(),
              changed, errors, total_bytes / 1e6, traced);
  std::printf("median of %d rounds: %.1f ms, %.1f us per class, %.1f MB/s (rounds:", rounds, med / 1e6,
              med / 1e3 / static_cast<double>(classes.size()), total_bytes / (med / 1e9) / 1e6);
  for (double v : ns_per_round) std::printf(" %.1f", v / 1e6);
  std::printf(" ms)\n");
  return 0;
}
