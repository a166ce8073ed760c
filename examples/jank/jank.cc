// A UI-like event loop that janks now and then: every ~40th frame, render()
// makes an IPC-like call and then sleeps on the UI thread waiting for the
// reply (Hubble's case study 2). A watchdog thread notices a frame that has
// taken more than 100 ms and asks lookback for a dump *while the stall is
// going on*, so the dump shows exactly where the UI thread is stuck.
//
// Built with -finstrument-functions; runs with or without lookback (under
// `lookback record`, lb_dump resolves to the preloaded runtime).
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>

extern "C" int lb_dump(const char* reason) __attribute__((weak));

namespace {

std::atomic<long> g_frame_start_ms{0};
std::atomic<bool> g_done{false};
volatile double g_sink;

long NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) double layout_text(int n) {
  double x = 0;
  for (int i = 0; i < n; ++i) x += std::sqrt(i + 1.0);
  return x;
}
__attribute__((noinline)) double measure_widgets(int frame) {
  double x = 0;
  for (int i = 0; i < 20; ++i) x += layout_text(200 + frame % 7);
  return x;
}
__attribute__((noinline)) void update_model(int frame) { g_sink = measure_widgets(frame); }
__attribute__((noinline)) void rasterize(int frame) { g_sink = g_sink + layout_text(3000 + frame % 11); }
__attribute__((noinline)) void wait_for_reply() { usleep(250 * 1000); }  // the bug: blocking the UI thread
__attribute__((noinline)) void send_binder_transaction() { g_sink = g_sink + layout_text(100); }
__attribute__((noinline)) void fetch_config_over_ipc() {
  send_binder_transaction();
  wait_for_reply();
}
__attribute__((noinline)) void render(int frame) {
  rasterize(frame);
  if (frame % 40 == 39) fetch_config_over_ipc();
}
__attribute__((noinline)) void handle_input(int frame) { g_sink = g_sink + layout_text(50 + frame % 3); }
__attribute__((noinline)) void run_frame(int frame) {
  handle_input(frame);
  update_model(frame);
  render(frame);
}
__attribute__((noinline)) void event_loop(int frames) {
  for (int f = 0; f < frames; ++f) {
    g_frame_start_ms.store(NowMs());
    run_frame(f);
    usleep(4000);  // idle until the next vsync
  }
}

void Watchdog() {
  pthread_setname_np(pthread_self(), "watchdog");
  long reported_frame_start = -1;
  while (!g_done.load()) {
    usleep(20 * 1000);
    const long start = g_frame_start_ms.load();
    if (start != reported_frame_start && NowMs() - start > 100) {
      reported_frame_start = start;
      char reason[64];
      snprintf(reason, sizeof reason, "UI frame stuck for %ld ms", NowMs() - start);
      fprintf(stderr, "jank: %s%s\n", reason, lb_dump ? ", asking lookback for a dump" : "");
      if (lb_dump) lb_dump(reason);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  pthread_setname_np(pthread_self(), "ui");
  const int frames = argc > 1 ? atoi(argv[1]) : 100;
  std::thread watchdog(Watchdog);
  event_loop(frames);
  g_done = true;
  watchdog.join();
  return 0;
}
