// Interposer: a program that defines, instrumented, a function lookback's
// runtime calls itself (clock_gettime: the fast clock's off-CPU accounting
// and its sparse/dense switch read CLOCK_MONOTONIC and the thread's CPU time
// from inside the slow path). Built with -rdynamic, so the runtime's calls
// bind to this definition, as they would to any program's wrapper of a libc
// function (a time mocker, a profiler shim). Otherwise as roundtrip.cc:
// threads run the seeded call tree and log what they executed; each thread
// also sleeps now and then, so it is descheduled inside untimed stretches.
//   interposer THREADS CALLS SEED GROUND_TRUTH_FILE
// The program never calls clock_gettime itself: every call of it comes from
// lookback, which must neither trace it nor let it tear a record it is writing.
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "ground_truth.h"

extern "C" LB_TEST_NOINLINE int clock_gettime(clockid_t clock, struct timespec* ts) {
  return static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
}

namespace {

#include "call_tree.h"

GT_NOINLINE void Worker(int calls, uint32_t seed) {
  gt_me();  // register before the first logged call
  for (int i = 0; i < calls; ++i) {
    table[next_rand(&seed) % 8](5, &seed);
    if (i % 50 == 49) usleep(300);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: interposer THREADS CALLS SEED GROUND_TRUTH_FILE\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  const int calls = atoi(argv[2]);
  const uint32_t seed = static_cast<uint32_t>(strtoul(argv[3], nullptr, 10));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(Worker, calls, seed + static_cast<uint32_t>(t) * 7919u);
  for (auto& t : ts) t.join();
  gt_write(argv[4]);
  return 0;
}
