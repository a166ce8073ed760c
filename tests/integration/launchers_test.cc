// Every JVM that `lookback record` starts, directly or through any chain of
// processes, gets the agent (docs/jvm.md, "Launchers, build tools and child
// JVMs"): a shell script that runs java, a JVM that starts another with
// ProcessBuilder, Debian's groovy, clojure and jruby launchers. Each JVM
// writes its own dump; record lists them all and explains a JVM it could not
// trace instead of blaming the compiler flags; `lookback attach` given a
// script's pid finds the JVM below it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace lookback::testing {
namespace {

bool JvmAvailable() {
  if (LOOKBACK_TEST_SANITIZED) return false;  // as in jvm_test.cc: HotSpot and the sanitizers do not mix
  return std::string(LOOKBACK_TEST_JAVA).size() > 0 &&
         access((std::string(LOOKBACK_TEST_JAVA_CLASSES) + "/SpawnsJvm.class").c_str(), R_OK) == 0;
}

#define REQUIRE_JVM() \
  if (!JvmAvailable()) GTEST_SKIP() << "no JDK (java, javac), no JVM agent built, or a sanitized build"

// The process id in a dump's name (PROGRAM-PID-SEQ.lbk).
long DumpPid(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  const size_t last = name.rfind('-');
  const size_t before = name.rfind('-', last - 1);
  return std::stol(name.substr(before + 1, last - before - 1));
}

// Methods entered in a dump, by their Java names.
std::multiset<std::string> EnteredMethods(const std::string& dump) {
  RunResult ev = RunProgram({Cli(), "events", dump});
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  std::multiset<std::string> out;
  std::istringstream in(ev.out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, '\t');) f.push_back(c);
    if (f.size() >= 5 && f[2] == "ENTER") out.insert(f[4]);
  }
  return out;
}

bool HasMethodContaining(const std::multiset<std::string>& methods, const std::string& part) {
  for (const std::string& m : methods) {
    if (m.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(ChildProcesses, AJvmStartedByProcessBuilderWritesItsOwnDump) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("child-jvm");
  const RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", LOOKBACK_TEST_JAVA, "-cp",
                                  LOOKBACK_TEST_JAVA_CLASSES, "SpawnsJvm", "parent"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("child exited 0"), std::string::npos) << r.out;
  const std::vector<std::string> dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 2u) << r.err;
  std::set<long> pids;
  int parents = 0, children = 0;
  for (const std::string& d : dumps) {
    SCOPED_TRACE(d);
    pids.insert(DumpPid(d));
    EXPECT_EQ(MustOpen(d).process.pid, static_cast<uint32_t>(DumpPid(d)));
    // record lists every dump it saw written, the child's too.
    EXPECT_NE(r.err.find("dump written: " + d), std::string::npos) << r.err;
    const auto methods = EnteredMethods(d);
    const bool parent = methods.count("long SpawnsJvm.parentWork(int)") == 50;
    const bool child = methods.count("long SpawnsJvm.childWork(int)") == 50;
    EXPECT_NE(parent, child) << "each dump holds its own process's methods only";
    parents += parent;
    children += child;
  }
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(parents, 1);
  EXPECT_EQ(children, 1);
  EXPECT_EQ(r.err.find("no dump was written"), std::string::npos) << r.err;
}

TEST(Launchers, AShellScriptThatRunsJavaIsTraced) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("script-jvm");
  const std::string script = dir + "/start.sh";
  // Like an application's bin/start.sh: java found on PATH, run as a child
  // (not exec'd), then the script goes on.
  std::ofstream(script) << "#!/bin/sh\nPATH=\"$(dirname \"$1\"):$PATH\"\njava -cp \"$2\" SpawnsJvm child\necho script done\n";
  chmod(script.c_str(), 0755);
  const RunResult r =
      RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", script, LOOKBACK_TEST_JAVA, LOOKBACK_TEST_JAVA_CLASSES});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("script done"), std::string::npos);
  const std::vector<std::string> dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  EXPECT_EQ(EnteredMethods(dumps[0]).count("long SpawnsJvm.childWork(int)"), 50u);
  EXPECT_EQ(MustOpen(dumps[0]).process.name, "java");
}

// -XX:+CriticalJNINatives exists up to JDK 17; a JVM of 18 or later refuses
// to start with it. record adds it only for a launcher whose JDK's `release`
// file says 17 or older, whether it runs `java` itself or a script does (the
// exec hooks), through symbolic links as Debian's /usr/bin/java is one. The
// launchers here are fake JDKs: a script that writes its arguments down.
TEST(Launchers, CriticalNativesGoOnlyToJdksThatStillHaveThem) {
  const std::string cli = Cli();
  if (access((cli.substr(0, cli.rfind('/') + 1) + "liblookback-jvm.so").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "no JVM agent built";
  }
  const std::string dir = FreshDir("critical-natives");
  struct Jdk {
    const char* name;
    const char* version;
    bool critical;
  };
  for (const Jdk& jdk : {Jdk{"jdk8", "1.8.0_392", true}, Jdk{"jdk17", "17.0.15", true}, Jdk{"jdk21", "21.0.2", false},
                         Jdk{"jdk25", "25", false}, Jdk{"unknown", "", false}}) {
    const std::string home = dir + "/" + jdk.name;
    std::filesystem::create_directories(home + "/bin");
    if (*jdk.version) std::ofstream(home + "/release") << "IMPLEMENTOR=\"test\"\nJAVA_VERSION=\"" << jdk.version << "\"\n";
    const std::string java = home + "/bin/java";
    const std::string args_file = home + "/args";
    std::ofstream(java) << "#!/bin/sh\nfor a; do echo \"$a\"; done >> '" << args_file << "'\n";
    chmod(java.c_str(), 0755);
    // A link to it elsewhere, as /usr/bin/java is.
    std::filesystem::create_directories(dir + "/links/" + jdk.name);
    const std::string link = dir + "/links/" + jdk.name + "/java";
    std::filesystem::create_symlink(java, link);
    // The user's JAVA_TOOL_OPTIONS or JDK_JAVA_OPTIONS (parsed before the
    // flags record inserts) may turn warnings off; record must not turn
    // them back on.
    for (const std::string env : {"", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"}) {
      for (const std::string how : {"direct", "script"}) {
        SCOPED_TRACE(std::string(jdk.name) + " " + how + " " + env);
        std::filesystem::remove(args_file);
        const std::vector<std::string> command =
            how == "direct" ? std::vector<std::string>{link, "-version"}
                            : std::vector<std::string>{"/bin/sh", "-c", "\"$0\" -version", link};
        std::vector<std::string> argv = {cli, "record", "-q", "--dir", dir + "/dumps", "--"};
        argv.insert(argv.end(), command.begin(), command.end());
        std::map<std::string, std::string> vars;
        if (!env.empty()) vars[env] = "-Dx=1 -XX:+PrintWarnings -XX:-PrintWarnings -Xss2m";
        const RunResult r = RunProgram(argv, vars);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::ifstream in(args_file);
        std::stringstream args;
        args << in.rdbuf();
        EXPECT_NE(args.str().find("-agentpath:"), std::string::npos) << args.str();
        // HotSpot warns about a deprecated flag while it parses it, if
        // PrintWarnings is on then: so it is off around the flag, and back
        // on after it unless the user had it off.
        const std::string quiet = "-XX:-PrintWarnings\n-XX:+CriticalJNINatives\n";
        EXPECT_EQ(args.str().find(quiet) != std::string::npos, jdk.critical) << args.str();
        EXPECT_EQ(args.str().find(quiet + "-XX:+PrintWarnings\n") != std::string::npos, jdk.critical && env.empty())
            << args.str();
        EXPECT_EQ(args.str().find("-XX:+CriticalJNINatives") != std::string::npos, jdk.critical) << args.str();
        EXPECT_NE(args.str().find("-version"), std::string::npos) << args.str();
      }
    }
  }
}

// A traced JVM prints what it prints untraced: on JDK 17, record's
// -XX:+CriticalJNINatives must not add HotSpot's deprecation warning to the
// program's stderr, whether record starts java or a script does, and a
// warning the user's own flags cause still shows.
TEST(Launchers, ATracedJvmPrintsNoWarningOfLookbacksFlags) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-warnings");
  for (const std::string how : {"direct", "script"}) {
    SCOPED_TRACE(how);
    const std::vector<std::string> java = {LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "SpawnsJvm", "child"};
    std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir + "/dumps-" + how, "--"};
    if (how == "script") argv.insert(argv.end(), {"/bin/sh", "-c", "exec \"$@\"", "sh"});
    argv.insert(argv.end(), java.begin(), java.end());
    const RunResult traced = RunProgram(argv);
    const RunResult plain = RunProgram(java);
    ASSERT_EQ(traced.exit_code, 0) << traced.err;
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(traced.err, plain.err);
    EXPECT_EQ(traced.out, plain.out);
    EXPECT_EQ(Dumps(dir + "/dumps-" + how).size(), 1u);
  }
  // A deprecated flag of the user's own still warns (PrintWarnings is back on).
  const std::vector<std::string> own = {LOOKBACK_TEST_JAVA, "-XX:+UseBiasedLocking", "-cp", LOOKBACK_TEST_JAVA_CLASSES,
                                        "SpawnsJvm", "child"};
  std::vector<std::string> argv = {Cli(), "record", "-q", "--dir", dir + "/dumps-own", "--"};
  argv.insert(argv.end(), own.begin(), own.end());
  const RunResult traced = RunProgram(argv);
  const RunResult plain = RunProgram(own);
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_NE(plain.err.find("UseBiasedLocking"), std::string::npos) << plain.err;
  EXPECT_EQ(traced.err, plain.err);
}

// The real java binary that LOOKBACK_TEST_JAVA leads to (through links).
std::string RealJava() { return std::filesystem::canonical(LOOKBACK_TEST_JAVA).string(); }

TEST(Launchers, AJvmLookbackCannotSeeIsNamedInsteadOfTheCompilerFlags) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("untraced-jvm");
  // A copy of java under another name, with no `java` beside it to compare
  // with (its libraries found through LD_LIBRARY_PATH): record cannot tell
  // it from a JDK tool, which would take the agent's flags as -J<flag> and
  // java would refuse them, so it leaves it alone. The JVM must run as it
  // would have, and record must name it, not ask about -finstrument-functions.
  const std::string java = RealJava();
  const std::string jdk_lib = java.substr(0, java.rfind("/bin/")) + "/lib";
  const std::string launcher = dir + "/myapp";
  std::filesystem::copy_file(java, launcher);
  const RunResult r =
      RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", "/bin/sh", "-c",
                  "LD_LIBRARY_PATH=" + jdk_lib + " " + launcher + " -cp " + LOOKBACK_TEST_JAVA_CLASSES + " SpawnsJvm child"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("Unrecognized option"), std::string::npos) << r.err;
  EXPECT_TRUE(Dumps(dir + "/dumps").empty());
  EXPECT_NE(r.err.find("a JVM ran untraced (pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lookback attach"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("-finstrument-functions"), std::string::npos) << r.err;
}

// A link to java under another name (as an application's bin/ may have) is
// java: it gets the agent's flags as they are, directly and from a script.
TEST(Launchers, ALinkToJavaUnderAnotherNameIsTraced) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("java-link");
  const std::string launcher = dir + "/myapp";
  ASSERT_EQ(symlink(LOOKBACK_TEST_JAVA, launcher.c_str()), 0);
  for (const std::string how : {"direct", "script"}) {
    SCOPED_TRACE(how);
    const std::string dumps = dir + "/dumps-" + how;
    const std::vector<std::string> command =
        how == "direct" ? std::vector<std::string>{launcher, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "SpawnsJvm", "child"}
                        : std::vector<std::string>{"/bin/sh", "-c", launcher + " -cp " + LOOKBACK_TEST_JAVA_CLASSES +
                                                                        " SpawnsJvm child"};
    std::vector<std::string> argv = {Cli(), "record", "--dir", dumps, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    const RunResult r = RunProgram(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> written = Dumps(dumps);
    ASSERT_EQ(written.size(), 1u) << r.err;
    EXPECT_EQ(EnteredMethods(written[0]).count("long SpawnsJvm.childWork(int)"), 50u);
  }
}

// The JDK's tools (javac, jar, jshell, ...) are the `java` launcher with a
// main class built in; they take JVM flags as -J<flag>. `record -- javac`
// traces the compiler, as does a build script that runs javac; what javac
// compiles is unchanged. (Before, only programs named `java` got the agent
// and javac ran untraced.)
TEST(Launchers, TheJdksToolsGetTheAgentAsJFlags) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jdk-tools");
  const std::string java = RealJava();
  const std::string javac = java.substr(0, java.rfind('/')) + "/javac";
  std::filesystem::create_directories(dir + "/src");
  std::ofstream(dir + "/src/Greeter.java")
      << "public class Greeter {\n  public static void main(String[] a) { System.out.println(greet(\"tools\")); }\n"
         "  static String greet(String s) { return \"hello \" + s; }\n}\n";
  for (const std::string how : {"direct", "script"}) {
    SCOPED_TRACE(how);
    const std::string out = dir + "/classes-" + how, dumps = dir + "/dumps-" + how;
    const std::vector<std::string> command =
        how == "direct" ? std::vector<std::string>{javac, "-d", out, dir + "/src/Greeter.java"}
                        // A build step: javac found on PATH by a shell.
                        : std::vector<std::string>{"/bin/sh", "-c", "PATH=\"$0:$PATH\" javac -d \"$1\" \"$2\"",
                                                   javac.substr(0, javac.rfind('/')), out, dir + "/src/Greeter.java"};
    std::vector<std::string> argv = {Cli(), "record", "--dir", dumps, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    const RunResult r = RunProgram(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("ran untraced"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("Unrecognized option"), std::string::npos) << r.err;
    // javac did its work: the class runs.
    const RunResult run = RunProgram({LOOKBACK_TEST_JAVA, "-cp", out, "Greeter"});
    EXPECT_EQ(run.out, "hello tools\n") << run.err;
    const std::vector<std::string> written = Dumps(dumps);
    ASSERT_EQ(written.size(), 1u) << r.err;
    const format::Dump d = MustOpen(written[0]);
    EXPECT_EQ(d.process.name, "javac");
    EXPECT_EQ(d.process.pid, static_cast<uint32_t>(DumpPid(written[0])));
    RunResult info = RunProgram({Cli(), "info", written[0]});
    EXPECT_NE(info.out.find("-J-agentpath:"), std::string::npos) << info.out;
    EXPECT_TRUE(HasMethodContaining(EnteredMethods(written[0]), "com.sun.tools.javac.main.")) << written[0];
  }
}

// A JVM that was traced but wrote no dump is named, unless no dump was asked
// for (--no-exit-dump); neither case is blamed on the compiler flags.
TEST(Launchers, ATracedJvmWithoutADumpIsNamedOnlyWhenADumpWasExpected) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-no-dump");
  const RunResult quiet = RunProgram({Cli(), "record", "--no-exit-dump", "--dir", dir + "/dumps", "--",
                                      LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "SpawnsJvm", "child"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_TRUE(Dumps(dir + "/dumps").empty());
  EXPECT_EQ(quiet.err.find("wrote no dump"), std::string::npos) << quiet.err;
  EXPECT_EQ(quiet.err.find("-finstrument-functions"), std::string::npos) << quiet.err;
  // Killed before it could write one (it sleeps a minute once it has said
  // "ready", and writes no dump of its own): named, with its pid.
  const std::string script = std::string(LOOKBACK_TEST_JAVA) + " -cp " + LOOKBACK_TEST_JAVA_CLASSES +
                             " RunsUntilKilled > " + dir + "/out.txt & pid=$!; i=0; while ! grep -q ready " + dir +
                             "/out.txt 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
                             "kill -9 $pid; wait; true";
  const RunResult killed = RunProgram({Cli(), "record", "--dir", dir + "/dumps2", "--", "/bin/sh", "-c", script});
  ASSERT_EQ(killed.exit_code, 0) << killed.err;
  EXPECT_TRUE(Dumps(dir + "/dumps2").empty());
  EXPECT_NE(killed.err.find("was traced but wrote no dump"), std::string::npos) << killed.err;
  EXPECT_EQ(killed.err.find("-finstrument-functions"), std::string::npos) << killed.err;
}

// A traced JVM none of whose threads recorded a call (method globs that
// match nothing, a typo in a package name) writes no dump: record says why,
// instead of "killed, or crashed".
TEST(Launchers, ATracedJvmThatRecordedNoCallIsToldSoNotCalledCrashed) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("jvm-nothing-recorded");
  const RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--jvm-include", "com.nosuchcompany.*", "--",
                                  LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "SpawnsJvm", "child"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Dumps(dir + "/dumps").empty());
  EXPECT_NE(r.err.find("recorded no call, so it wrote no dump"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--jvm-include"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("crashed"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("-finstrument-functions"), std::string::npos) << r.err;
}

// The same for a native program: it is instrumented, but --threads selected
// none of its threads; the compiler flags are not to blame.
TEST(Launchers, AProgramWhoseThreadsAreAllLeftOutByThreadsIsToldSo) {
  const std::string dir = FreshDir("no-thread-selected");
  const RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--threads", "no-such-thread", "--",
                                  Program("budget"), "hot", "0.05", dir + "/truth.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Dumps(dir + "/dumps").empty());
  EXPECT_NE(r.err.find("recorded no call, so it wrote no dump: --threads selected none of its threads"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("-finstrument-functions"), std::string::npos) << r.err;
}

TEST(Launchers, ANativeProgramWithoutHooksStillGetsTheCompilerHint) {
  const std::string dir = FreshDir("no-hooks");
  const RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", "/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("-finstrument-functions"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("JVM ran"), std::string::npos) << r.err;
}

// Debian's launchers for JVM languages: each script's own methods are in the
// dump, in the language's compiled form; and Ant, a build tool, whose build
// JVM runs the task. Skipped where a launcher is not
// installed (scripts/install-deps.sh installs them).
struct LanguageCase {
  const char* launcher;
  const char* file;
  const char* source;
  const char* method;  // part of a method name the language compiles the script's greet into
  const char* option = nullptr;  // put before the file (ant -f build.xml)
  // Ant's task is not its JVM's last work: an 8 MiB ring (1 M records) holds
  // only the JVM's shutdown, so its case records into a ring that holds the run.
  const char* buffer_size = "8M";
};

class LanguageLaunchers : public ::testing::TestWithParam<LanguageCase> {};

TEST_P(LanguageLaunchers, TheScriptsOwnMethodsAreInTheDump) {
  REQUIRE_JVM();
  const LanguageCase& c = GetParam();
  const std::string path = "/usr/bin/" + std::string(c.launcher);
  if (access(path.c_str(), X_OK) != 0) GTEST_SKIP() << path << " is not installed";
  const std::string dir = FreshDir(std::string("launcher-") + c.launcher);
  std::ofstream(dir + "/" + c.file) << c.source;
  std::vector<std::string> argv = {Cli(), "record", "--buffer-size", c.buffer_size, "--dir", dir + "/dumps", "--", c.launcher};
  if (c.option != nullptr) argv.push_back(c.option);
  argv.push_back(c.file);
  const RunResult r = RunProgram(argv, {}, dir, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hi lookback"), std::string::npos) << r.out;
  const std::vector<std::string> dumps = Dumps(dir + "/dumps");
  ASSERT_FALSE(dumps.empty()) << r.err;
  bool found = false;
  for (const std::string& d : dumps) found = found || HasMethodContaining(EnteredMethods(d), c.method);
  EXPECT_TRUE(found) << "no method containing '" << c.method << "' in " << dumps.size() << " dump(s)";
  EXPECT_EQ(r.err.find("no dump was written"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Debian, LanguageLaunchers,
    ::testing::Values(
        LanguageCase{"groovy", "hello.groovy", "def greet(n) { 'hi ' + n }\nprintln greet('lookback')\n", "hello.greet("},
        LanguageCase{"clojure", "hello.clj", "(defn greet [n] (str \"hi \" n))\n(println (greet \"lookback\"))\n",
                     "user$greet.invoke"},
        LanguageCase{"jruby", "hello.rb", "def greet(n)\n  'hi ' + n\nend\nputs greet('lookback')\n",
                     "RUBY$method$greet"},
        // A build tool, offline: the build's own JVM runs the task.
        LanguageCase{"ant", "build.xml",
                     "<project name=\"p\" default=\"hello\"><target name=\"hello\">"
                     "<echo message=\"hi lookback\"/></target></project>\n",
                     "org.apache.tools.ant.taskdefs.Echo.execute()", "-f", "32M"}),
    [](const ::testing::TestParamInfo<LanguageCase>& i) { return std::string(i.param.launcher); });

TEST(Launchers, AttachGivenAScriptsPidFindsTheJvmBelowIt) {
  REQUIRE_JVM();
  const std::string dir = FreshDir("attach-script");
  const RunResult none = RunProgram({Cli(), "attach", std::to_string(getpid())});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find("is not a JVM and runs none"), std::string::npos) << none.err;
  // A script whose JVM (AttachTarget, a child of the shell) runs until DIR/stop exists.
  const std::string cp = std::string(LOOKBACK_TEST_JAVA_CLASSES) + ":" + LOOKBACK_TEST_JAVA_API;
  const pid_t sh = fork();
  ASSERT_GE(sh, 0);
  if (sh == 0) {
    const std::string cmd = std::string(LOOKBACK_TEST_JAVA) + " -cp " + cp + " AttachTarget " + dir + " > " + dir +
                            "/out.txt; echo script done >> " + dir + "/out.txt";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  struct Reaper {
    std::string stop;
    pid_t pid;
    ~Reaper() {
      std::ofstream(stop.substr(0, stop.rfind('/')) + "/detached") << "1";
      std::ofstream(stop) << "1";
      int status = 0;
      for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(10000);
      if (waitpid(pid, &status, WNOHANG) == 0) kill(pid, SIGKILL), waitpid(pid, &status, 0);
    }
  } reaper{dir + "/stop", sh};
  // Wait until the JVM has said "ready".
  std::string out;
  for (int i = 0; i < 3000 && out.find("phase 1") == std::string::npos; ++i) {
    usleep(10000);
    std::ifstream f(dir + "/out.txt");
    out.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_NE(out.find("phase 1"), std::string::npos) << out;
  int jvm = 0;
  ASSERT_EQ(sscanf(out.c_str(), "ready %d", &jvm), 1) << out;
  const RunResult a = RunProgram({Cli(), "attach", std::to_string(sh), "--dir", dir + "/dumps", "--jvm-include",
                                  "AttachTarget.*"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.err.find("attaching to the JVM it runs, pid " + std::to_string(jvm)), std::string::npos) << a.err;
  std::ofstream(dir + "/attached") << "1";
  for (int i = 0; i < 3000 && out.find("phase 2") == std::string::npos; ++i) {  // 20 calls while attached
    usleep(10000);
    std::ifstream f(dir + "/out.txt");
    out.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_NE(out.find("phase 2"), std::string::npos) << out;
  const RunResult d = RunProgram({Cli(), "dump", std::to_string(jvm), "--reason", "attached-through-script"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  const std::vector<std::string> dumps = Dumps(dir + "/dumps");
  ASSERT_FALSE(dumps.empty());
  bool traced = false;
  for (const std::string& p : dumps) traced = traced || EnteredMethods(p).count("long AttachTarget.whileAttached(int)") > 0;
  EXPECT_TRUE(traced);
}

}  // namespace
}  // namespace lookback::testing
