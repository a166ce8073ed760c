// Always-on tracing in a program that links the runtime: it asks for a dump
// of the last moments itself, with the C++ API.
#include <lookback/lookback.hpp>

#include <cstdio>

__attribute__((noinline)) int not_worth_tracing(int x) { return x + 1; }
__attribute__((noinline)) int work(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s = not_worth_tracing(s);
  return s;
}
__attribute__((noinline)) int request(int n) { return work(n); }

int main() {
  int total = 0;
  for (int i = 0; i < 100; ++i) total += request(i);
  std::string error;
  const std::string path = lookback::dump_sync("example: done", &error);
  if (path.empty()) {
    fprintf(stderr, "no dump: %s\n", error.c_str());
    return 1;
  }
  printf("%d %s\n", total, path.c_str());
  return 0;
}
