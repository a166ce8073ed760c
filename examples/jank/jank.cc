// A UI-like event loop that janks now and then: every ~40th frame, render()
// makes an IPC-like call and then sleeps on the UI thread waiting for the
// reply (Hubble's case study 2: a sleep on the UI thread after a binder call).
//
// Each frame is a lookback scope named "frame", so lookback can hold frames to
// an objective without any watchdog of our own:
//   lookback record --slow-scope frame:50ms --post-trigger 300ms -- jank 100
// writes a dump when a frame has taken more than 50 ms (three vsyncs), 300 ms
// later, so the dump holds the whole janky frame and what followed.
// (--stall ui:100ms would instead dump while the UI thread is still stuck.)
//
// Built with -finstrument-functions and linked with liblookback, as a
// production binary would be; tracing is on only when asked for.
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "lookback/lookback.hpp"

namespace {

volatile double g_sink;

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
  LOOKBACK_SCOPE("frame");
  handle_input(frame);
  update_model(frame);
  render(frame);
}
__attribute__((noinline)) void event_loop(int frames) {
  for (int f = 0; f < frames; ++f) {
    run_frame(f);
    usleep(4000);  // idle until the next vsync: outside the frame scope
  }
}

}  // namespace

int main(int argc, char** argv) {
  pthread_setname_np(pthread_self(), "ui");
  const int frames = argc > 1 ? atoi(argv[1]) : 100;
  event_loop(frames);
  return 0;
}
