// Which programs get the JVM agent's flags, and in which form
// (runtime/jvm_launcher.h): `java` as they are, the JDK's tools as -J<flag>,
// anything else not at all. A wrong answer either leaves a JVM untraced or,
// worse, keeps it from starting (`java -J-agentpath:...` is an unknown
// option), so the cases that could be confused are each checked on real
// JDK binaries, copied and linked the ways users have them.
#include "runtime/jvm_launcher.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The JDK's bin/ directory (of the javac on PATH), or "" without a JDK.
std::string JdkBin() {
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t p = 0; p <= dirs.size();) {
    size_t colon = dirs.find(':', p);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string candidate = dirs.substr(p, colon - p) + "/javac";
    if (colon > p && access(candidate.c_str(), X_OK) == 0) {
      const std::string real = fs::canonical(candidate).string();
      return real.substr(0, real.rfind('/'));
    }
    p = colon + 1;
  }
  return "";
}

#define REQUIRE_JDK(bin) \
  const std::string bin = JdkBin(); \
  if (bin.empty()) GTEST_SKIP() << "no JDK (javac on PATH)"

std::string FreshDir(const std::string& name) {
  const std::string dir = std::string(LOOKBACK_TEST_TMP) + "/jvm-launcher-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Image {
  const std::vector<uint8_t>* bytes;
};

long ReadImage(void* ctx, void* buf, size_t len, uint64_t offset) {
  const auto& b = *static_cast<Image*>(ctx)->bytes;
  if (offset >= b.size()) return 0;
  const size_t n = std::min<uint64_t>(len, b.size() - offset);
  memcpy(buf, b.data() + offset, n);
  return static_cast<long>(n);
}

int Needs(const std::vector<uint8_t>& bytes, const char* library) {
  Image img{&bytes};
  return lb_elf_needs(ReadImage, &img, bytes.size(), library);
}

TEST(JvmLauncher, JavaByNameOrLinkTakesTheFlagsAsTheyAre) {
  EXPECT_EQ(lb_classify_launcher("java"), LB_JAVA_LAUNCHER);
  EXPECT_EQ(lb_classify_launcher("/no/such/dir/java"), LB_JAVA_LAUNCHER);  // a wrapper script may be named java
  REQUIRE_JDK(bin);
  EXPECT_EQ(lb_classify_launcher((bin + "/java").c_str()), LB_JAVA_LAUNCHER);
  const std::string dir = FreshDir("link");
  fs::create_symlink(bin + "/java", dir + "/myapp");
  EXPECT_EQ(lb_classify_launcher((dir + "/myapp").c_str()), LB_JAVA_LAUNCHER);
}

TEST(JvmLauncher, TheJdksToolsTakeJFlagsByPathByNameAndThroughLinks) {
  REQUIRE_JDK(bin);
  for (const char* tool : {"javac", "jar", "jshell", "javadoc", "keytool"}) {
    SCOPED_TRACE(tool);
    const std::string path = bin + "/" + tool;
    if (access(path.c_str(), X_OK) != 0) continue;
    EXPECT_EQ(lb_classify_launcher(path.c_str()), LB_JDK_TOOL);
  }
  EXPECT_EQ(lb_classify_launcher("javac"), LB_JDK_TOOL);  // found on PATH
  const std::string dir = FreshDir("tool-link");
  fs::create_symlink(bin + "/javac", dir + "/javac-17");  // as /etc/alternatives has
  EXPECT_EQ(lb_classify_launcher((dir + "/javac-17").c_str()), LB_JDK_TOOL);
  EXPECT_GT(lb_jdk_release((dir + "/javac-17").c_str()), 0);
  EXPECT_EQ(lb_jdk_release((dir + "/javac-17").c_str()), lb_jdk_release((bin + "/java").c_str()));
}

TEST(JvmLauncher, ACopyOfJavaIsNeverTakenForATool) {
  REQUIRE_JDK(bin);
  // Alone, it cannot be told from a tool: left alone.
  const std::string alone = FreshDir("copy-alone");
  fs::copy_file(bin + "/java", alone + "/myapp");
  EXPECT_EQ(lb_classify_launcher((alone + "/myapp").c_str()), LB_NOT_A_LAUNCHER);
  // Beside a java with the same bytes, it is java; a tool beside it is a tool.
  const std::string image = FreshDir("copy-image");
  fs::copy_file(bin + "/java", image + "/java");
  fs::copy_file(bin + "/java", image + "/myapp");
  fs::copy_file(bin + "/javac", image + "/javac");
  EXPECT_EQ(lb_classify_launcher((image + "/myapp").c_str()), LB_JAVA_LAUNCHER);
  EXPECT_EQ(lb_classify_launcher((image + "/javac").c_str()), LB_JDK_TOOL);
}

TEST(JvmLauncher, OtherProgramsAreLeftAlone) {
  for (const char* p : {"/bin/sh", "/bin/true", "sh", "/no/such/program", "no-such-program-anywhere", "/", ""}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(lb_classify_launcher(p), LB_NOT_A_LAUNCHER);
  }
  EXPECT_EQ(lb_classify_launcher(nullptr), LB_NOT_A_LAUNCHER);
  const std::string dir = FreshDir("others");
  const std::string script = dir + "/javac-wrapper";
  std::ofstream(script) << "#!/bin/sh\nexec javac \"$@\"\n";
  chmod(script.c_str(), 0755);
  EXPECT_EQ(lb_classify_launcher(script.c_str()), LB_NOT_A_LAUNCHER);  // its exec of javac is seen on its own
}

TEST(JvmLauncher, TheElfReaderFindsNeededLibrariesAndOnlyThose) {
  REQUIRE_JDK(bin);
  const std::vector<uint8_t> javac = ReadAll(bin + "/javac");
  ASSERT_FALSE(javac.empty());
  EXPECT_EQ(Needs(javac, "libjli.so"), 1);
  EXPECT_EQ(Needs(javac, "libc.so.6"), 1);
  EXPECT_EQ(Needs(javac, "libjli.s"), 0);
  EXPECT_EQ(Needs(javac, "libjli.so.1"), 0);
  EXPECT_EQ(Needs(ReadAll("/bin/true"), "libjli.so"), 0);
}

// An executable is untrusted input: every truncation and random damage of a
// real one gives an answer, never a read outside it (ASan in CI), and
// tests/fuzz/elf_needed_fuzzer.cc goes further.
TEST(JvmLauncher, TheElfReaderSurvivesEveryTruncationAndRandomDamage) {
  REQUIRE_JDK(bin);
  const std::vector<uint8_t> javac = ReadAll(bin + "/javac");
  for (size_t n = 0; n < javac.size(); n += n < 4096 ? 1 : 61) {
    std::vector<uint8_t> cut(javac.begin(), javac.begin() + static_cast<std::ptrdiff_t>(n));
    const int r = Needs(cut, "libjli.so");
    EXPECT_TRUE(r == 0 || r == 1);
  }
  std::mt19937 rng(42);
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = javac;
    for (int k = 0; k < 4; ++k) {
      // Mostly the headers and the dynamic section, where the offsets are.
      const size_t at = rng() % (round % 2 ? bad.size() : std::min<size_t>(bad.size(), 4096));
      bad[at] = static_cast<uint8_t>(rng());
    }
    const int r = Needs(bad, "libjli.so");
    EXPECT_TRUE(r == 0 || r == 1);
  }
}

}  // namespace

namespace {

// The flags around -XX:+CriticalJNINatives, for the environment a launcher
// gets: warnings back on after it unless the user's options that come
// first had them off, judged by whole words only.
std::vector<std::string> CriticalFlags(lb_launcher_kind kind, std::vector<std::string> env) {
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* out[3];
  const size_t n = lb_critical_natives_flags(kind, envp.data(), out);
  return std::vector<std::string>(out, out + n);
}

}  // namespace

TEST(JvmLauncher, CriticalNativesGoBetweenWarningsOffAndTheUsersOwnSetting) {
  const std::vector<std::string> restored = {"-XX:-PrintWarnings", "-XX:+CriticalJNINatives", "-XX:+PrintWarnings"};
  const std::vector<std::string> kept_off = {"-XX:-PrintWarnings", "-XX:+CriticalJNINatives"};
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {}), restored);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"PATH=/bin", "JAVA_TOOL_OPTIONS=-XX:-PrintWarnings"}), kept_off);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"JAVA_TOOL_OPTIONS=-Xss1m\t-XX:-PrintWarnings -Dx=y"}), kept_off);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"JAVA_TOOL_OPTIONS=-XX:-PrintWarnings -XX:+PrintWarnings"}), restored);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"JDK_JAVA_OPTIONS=-XX:-PrintWarnings"}), kept_off);
  // JDK_JAVA_OPTIONS comes after JAVA_TOOL_OPTIONS.
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER,
                          {"JDK_JAVA_OPTIONS=-XX:+PrintWarnings", "JAVA_TOOL_OPTIONS=-XX:-PrintWarnings"}),
            restored);
  // Not the flag: other names that contain it, a property's value, a prefix.
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"JAVA_TOOL_OPTIONS=-XX:-PrintWarningsSoon"}), restored);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"JAVA_TOOL_OPTIONS=-Dnote=-XX:-PrintWarnings"}), restored);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"JAVA_TOOL_OPTIONS=PrintWarnings -PrintWarnings"}), restored);
  EXPECT_EQ(CriticalFlags(LB_JAVA_LAUNCHER, {"MY_JAVA_TOOL_OPTIONS=-XX:-PrintWarnings"}), restored);
  // The JDK's tools take the flags as -J<flag>, and JDK_JAVA_OPTIONS is java's alone.
  EXPECT_EQ(CriticalFlags(LB_JDK_TOOL, {"JDK_JAVA_OPTIONS=-XX:-PrintWarnings"}),
            (std::vector<std::string>{"-J-XX:-PrintWarnings", "-J-XX:+CriticalJNINatives", "-J-XX:+PrintWarnings"}));
  EXPECT_EQ(CriticalFlags(LB_JDK_TOOL, {"JAVA_TOOL_OPTIONS=-XX:-PrintWarnings"}),
            (std::vector<std::string>{"-J-XX:-PrintWarnings", "-J-XX:+CriticalJNINatives"}));
}
