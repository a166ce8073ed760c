// File descriptors the runtime keeps open in the program's process (the
// control thread's wake pipe and socket, the crash handler's pipe), checked
// before each use. A program may close every descriptor it did not open (a
// daemon closing 0..1023, closefrom(), close_range()) and get the same number
// back from its next open(): writing to, or reading from, a number the
// runtime no longer owns would write into the program's file or eat its
// input, and polling a closed one spins. An OwnedFd is the number, the file
// type and the inode it was opened on, in one word so that a signal handler
// reads them together; Get() checks them with fstat (async-signal-safe).
// Pipes and sockets have an inode each (an eventfd shares one with every
// other eventfd), so the runtime's long-lived descriptors are pipes and
// sockets.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace lookback::rt {

class OwnedFd {
 public:
  // Takes fd (-1: none). Not async-signal-safe callers only: Set runs on the
  // runtime's own threads.
  void Set(int fd) __attribute__((no_instrument_function)) {
    uint64_t word = kNone;
    struct stat st;
    if (fd >= 0 && fd < (1 << kFdBits) && fstat(fd, &st) == 0) word = Pack(fd, st);
    word_.store(word, std::memory_order_release);
  }
  // The descriptor, if it is still the one Set took; else -1.
  int Get() const __attribute__((no_instrument_function)) {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (w == kNone) return -1;
    const int fd = static_cast<int>(w & ((1u << kFdBits) - 1));
    struct stat st;
    return fstat(fd, &st) == 0 && Pack(fd, st) == w ? fd : -1;
  }
  // Closes the descriptor if it is still ours (a number the program took
  // back is left alone), and forgets it.
  void Close() __attribute__((no_instrument_function)) {
    if (const int fd = Get(); fd >= 0) close(fd);
    word_.store(kNone, std::memory_order_release);
  }

 private:
  static constexpr int kFdBits = 24;  // above the kernel's nr_open (2^20)
  static constexpr uint64_t kNone = ~0ull;
  static uint64_t Pack(int fd, const struct stat& st) __attribute__((no_instrument_function)) {
    const uint64_t type = (st.st_mode >> 12) & 0xF;
    const uint64_t ino = static_cast<uint64_t>(st.st_ino) & ((1ull << 36) - 1);
    return (ino << 28) | (type << kFdBits) | static_cast<uint64_t>(fd);
  }
  std::atomic<uint64_t> word_{kNone};
};

}  // namespace lookback::rt
