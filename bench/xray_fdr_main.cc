// main() for a real program built with XRay by bench/compare.sh: the
// program's own main is renamed (-Dmain=bench_program_main on the file that
// defines it). XRay is set up before it runs (bench_xray::Start(), see
// xray_fdr.h) and the FDR log flushed at exit, however the program exits
// (return from main or exit()).
#include <cstdlib>

#include "xray_fdr.h"

extern "C" int bench_program_main(int argc, char** argv);

namespace {
BENCH_XRAY_NEVER void StopAtExit() { bench_xray::Stop(); }
}  // namespace

BENCH_XRAY_NEVER int main(int argc, char** argv) {
  bench_xray::Start();
  if (atexit(StopAtExit) != 0) return 3;
  return bench_program_main(argc, argv);
}
