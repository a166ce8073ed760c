// Unit tests link the recorder itself, which reads its LOOKBACK_* settings
// when the program loads: so main sets them and re-executes itself once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (getenv("LOOKBACK_UNIT_ENV") == nullptr) {
    setenv("LOOKBACK_UNIT_ENV", "1", 1);
    setenv("LOOKBACK_DIR", LOOKBACK_TEST_TMP "/unit-dumps", 1);
    setenv("LOOKBACK_BUFFER_SIZE", "4096", 1);  // 512 slots: tests that wrap the ring rely on it
    setenv("LOOKBACK_DUMP_SIGNAL", "0", 1);
    setenv("LOOKBACK_QUIET", "1", 1);
    execv("/proc/self/exe", argv);
    perror("re-exec");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
