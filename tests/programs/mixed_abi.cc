// One program, two objects built by clang pass plugins of two ring ABIs
// (PassAbi.ObjectsOfTwoAbisInOneProgramEachKeepTheirOwnRecorder): this file by
// this build's plugin, mixed_abi_other.cc by the foreign one (ABI 99, another
// Ring layout). Each object holds a linkonce_odr copy of the check shape's
// recorder; had the copies one name, the linker would keep one, and the other
// object's calls would reach code of the other signature and layout.
// Prints what it computed, so the test can tell it ran right.
#include <cstdio>
#include <cstdlib>

int other_work(int n);

__attribute__((noinline)) int own_leaf(int x) { return (x ^ 5) & 3; }

__attribute__((noinline)) int own_work(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += own_leaf(i);
  return s;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 1000;
  const int a = own_work(n);   // this ABI's trace points first
  const int b = other_work(n); // then the foreign object's
  const int c = own_work(n);   // and this ABI's again
  printf("mixed %d %d %d\n", a, b, c);
  return 0;
}
