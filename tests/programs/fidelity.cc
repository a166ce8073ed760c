// Fidelity program (tests/integration/fidelity_test.cc): threads call their
// own functions, which format results with std::to_string and push them into
// a vector<string>, so the trace points alternate between the executable's
// functions and the libstdc++ copies of header functions, as in issue 14.
// Deterministic: a thread's call sequence depends only on its index.
//   fidelity THREADS ITERATIONS GROUND_TRUTH_FILE
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ground_truth.h"

namespace {

GT_NOINLINE size_t Format(std::vector<std::string>* out, unsigned v) {
  GT_ENTER(Format);
  out->push_back(std::to_string(v) + " X");
  const size_t n = out->back().size();
  GT_EXIT(Format);
  return n;
}

GT_NOINLINE unsigned Step(unsigned x) {
  GT_ENTER(Step);
  x = x * 1103515245u + 12345u;
  GT_EXIT(Step);
  return x;
}

GT_NOINLINE size_t Work(unsigned index, int iterations) {
  GT_ENTER(Work);
  std::vector<std::string> v;
  unsigned x = index * 7919u + 1;
  size_t total = 0;
  for (int i = 0; i < iterations; ++i) {
    x = Step(x);
    if (x % 3 != 0) total += Format(&v, x % 100000);
    if (v.size() > 64) v.clear();
  }
  GT_EXIT(Work);
  return total;
}

void Thread(unsigned index, int iterations, size_t* out) {
  char name[16];
  snprintf(name, sizeof name, "fid-%u", index);
  pthread_setname_np(pthread_self(), name);
  *out = Work(index, iterations);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: fidelity THREADS ITERATIONS GROUND_TRUTH_FILE\n");
    return 2;
  }
  const int threads = atoi(argv[1]), iterations = atoi(argv[2]);
  std::vector<size_t> totals(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(Thread, static_cast<unsigned>(t), iterations, &totals[static_cast<size_t>(t)]);
  for (auto& t : ts) t.join();
  size_t sum = 0;
  for (size_t t : totals) sum += t;
  printf("%zu\n", sum);
  gt_write(argv[3]);
  return 0;
}
