// A recursion thousands of frames deep, as a runaway recursion or a parser of
// deeply nested input makes: dive(n) calls a helper and then itself until n
// is 0, where it spins a little. For the readers' bounds on deep stacks
// (tests/exporters/deep_stacks_test.cc).
//   deep-recursion [DEPTH]   (default 5000)
#include <cstdio>
#include <cstdlib>

static volatile unsigned long sink;

__attribute__((noinline)) static void helper(int n) { sink += (unsigned long)n; }

__attribute__((noinline)) static void bottom(void) {
  for (int i = 0; i < 200000; i++) sink += (unsigned long)i;
}

__attribute__((noinline)) static int dive(int n) {
  helper(n);
  if (n == 0) {
    bottom();
    return 0;
  }
  return 1 + dive(n - 1);
}

int main(int argc, char** argv) {
  const int depth = argc > 1 ? atoi(argv[1]) : 5000;
  printf("depth %d\n", dive(depth));
  return 0;
}
