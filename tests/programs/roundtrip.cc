// Round-trip program: threads run a seeded pseudo-random call tree over
// eight noinline functions and log the exact sequence they executed.
//   roundtrip THREADS CALLS SEED GROUND_TRUTH_FILE
#include <pthread.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "ground_truth.h"

namespace {

GT_NOINST inline uint32_t Next(uint32_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

volatile int sink;
using Fn = void (*)(int, uint32_t*);
extern Fn const kTable[8];

#define DEFINE_FN(name)                                   \
  GT_NOINLINE void name(int depth, uint32_t* seed) {      \
    GT_ENTER(name);                                       \
    sink = sink + depth;                                  \
    if (depth > 0) {                                      \
      const int kids = static_cast<int>(Next(seed) % 4);  \
      for (int i = 0; i < kids; ++i) {                    \
        kTable[Next(seed) % 8](depth - 1, seed);          \
      }                                                   \
    }                                                     \
    GT_EXIT(name);                                        \
  }

DEFINE_FN(f0)
DEFINE_FN(f1)
DEFINE_FN(f2)
DEFINE_FN(f3)
DEFINE_FN(f4)
DEFINE_FN(f5)
DEFINE_FN(f6)
DEFINE_FN(f7)
Fn const kTable[8] = {f0, f1, f2, f3, f4, f5, f6, f7};

GT_NOINLINE void Worker(int calls, uint32_t seed) {
  gt_me();  // register before the first logged call
  for (int i = 0; i < calls; ++i) kTable[Next(&seed) % 8](5, &seed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: roundtrip THREADS CALLS SEED GROUND_TRUTH_FILE\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  const int calls = atoi(argv[2]);
  const uint32_t seed = static_cast<uint32_t>(strtoul(argv[3], nullptr, 10));
  if (threads <= 1) {
    Worker(calls, seed);
  } else {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(Worker, calls, seed + static_cast<uint32_t>(t) * 7919u);
    for (auto& t : ts) t.join();
  }
  gt_write(argv[4]);
  return 0;
}
