// Round-trip program: threads run a seeded pseudo-random call tree over
// eight noinline functions and log the exact sequence they executed.
//   roundtrip THREADS CALLS SEED GROUND_TRUTH_FILE
#include <pthread.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "ground_truth.h"

namespace {

#include "call_tree.h"

GT_NOINLINE void Worker(int calls, uint32_t seed) {
  gt_me();  // register before the first logged call
  for (int i = 0; i < calls; ++i) table[next_rand(&seed) % 8](5, &seed);
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
