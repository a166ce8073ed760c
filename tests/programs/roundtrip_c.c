/* Round-trip program in C: the same seeded call tree as roundtrip.cc, for the
 * front-ends that must handle C as well as C++ (the clang pass).
 *   roundtrip_c THREADS CALLS SEED GROUND_TRUTH_FILE */
#include <pthread.h>
#include <stdlib.h>

#include "ground_truth.h"

#include "call_tree.h"

struct job {
  int calls;
  uint32_t seed;
};

GT_NOINLINE static void* worker(void* arg) {
  struct job* j = (struct job*)arg;
  uint32_t seed = j->seed;
  gt_me(); /* register before the first logged call */
  for (int i = 0; i < j->calls; ++i) table[next_rand(&seed) % 8](5, &seed);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: roundtrip_c THREADS CALLS SEED GROUND_TRUTH_FILE\n");
    return 2;
  }
  const int threads = atoi(argv[1]);
  struct job jobs[16];
  pthread_t ts[16];
  const int n = threads < 1 ? 1 : (threads > 16 ? 16 : threads);
  for (int t = 0; t < n; ++t) {
    jobs[t].calls = atoi(argv[2]);
    jobs[t].seed = (uint32_t)strtoul(argv[3], NULL, 10) + (uint32_t)t * 7919u;
  }
  if (threads <= 1) {
    worker(&jobs[0]);
  } else {
    for (int t = 0; t < n; ++t) pthread_create(&ts[t], NULL, worker, &jobs[t]);
    for (int t = 0; t < n; ++t) pthread_join(ts[t], NULL);
  }
  gt_write(argv[4]);
  return 0;
}
