// A program that shuts down cleanly at its first Ctrl-C and forces its exit
// at the second, as servers and REPLs do. For lifecycle_test.cc: under
// `lookback record` one Ctrl-C must reach it once.
//   sigint-twice    prints "ready", then waits (at most 20 s) for SIGINT;
//                   at the first: "graceful shutdown", a 300 ms shutdown, then
//                   "clean exit", exit 0; a second SIGINT: exit 99 at once
#include <signal.h>
#include <unistd.h>

#include <cstdio>

namespace {

volatile sig_atomic_t g_sigints = 0;

void OnSigint(int) {
  if (++g_sigints >= 2) _exit(99);
}

__attribute__((noinline)) void shut_down() { usleep(300000); }

}  // namespace

int main() {
  struct sigaction sa{};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  printf("ready\n");
  fflush(stdout);
  for (int i = 0; i < 2000 && g_sigints == 0; i++) usleep(10000);
  if (g_sigints == 0) return 2;
  printf("graceful shutdown\n");
  fflush(stdout);
  shut_down();
  printf("clean exit\n");
  return 0;
}
