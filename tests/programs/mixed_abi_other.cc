// The foreign-ABI object of mixed_abi.cc's program (built by the ABI test's
// plugin, ring ABI 99).
__attribute__((noinline)) int other_leaf(int x) { return (x * 3 + 1) % 7; }

__attribute__((noinline)) int other_work(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += other_leaf(i);
  return s;
}
