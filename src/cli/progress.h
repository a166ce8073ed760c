// A progress bar on stderr for work that takes more than a second; silent
// when stderr is not a terminal.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace lookback::cli {

class Progress {
 public:
  // `unit`: what `done` counts, shown in millions ("events"; "MB" of dumps for many dumps).
  explicit Progress(const char* what, const char* unit = "events")
      : what_(what), unit_(unit), tty_(isatty(2) != 0), start_(Clock::now()) {}
  ~Progress() { Done(); }

  void Update(uint64_t done, uint64_t total) {
    if (!tty_ || total == 0) return;
    if (!shown_ && Clock::now() - start_ < std::chrono::seconds(1)) return;
    shown_ = true;
    const int width = 30;
    const int filled = static_cast<int>(width * (done > total ? 1.0 : static_cast<double>(done) / total));
    fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.1fM %s", what_, filled, "##############################",
            width - filled, "", static_cast<int>(100.0 * done / total), done / 1e6, unit_);
    fflush(stderr);
  }
  static void Callback(void* self, uint64_t done, uint64_t total) { static_cast<Progress*>(self)->Update(done, total); }
  void Done() {
    if (shown_) fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  const char* what_;
  const char* unit_;
  bool tty_;
  bool shown_ = false;
  Clock::time_point start_;
};

}  // namespace lookback::cli
