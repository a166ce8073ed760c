/* Which programs are JVM launchers, for the JVM agent's flags (docs/jvm.md,
 * "Which programs get the agent"). `lookback record` puts the flags after
 * the name of a launcher it starts (cli/cmd_record.cc), and the exec hooks
 * (frontends/native/exec_hooks.c) do the same for launchers that anything it
 * runs starts; the runtime picks its dump signal by the same rule
 * (runtime/control.cc).
 *
 * Two kinds:
 *   `java`, which takes JVM flags as they are;
 *   the JDK's tools (javac, jar, jshell, javadoc, keytool, ...), which are
 *   the same launcher (they link libjli.so, the JDK's launcher library) with
 *   the tool's main class built in, and take JVM flags as -J<flag>.
 *
 * C, and vfork-safe: syscalls and stack buffers only, no malloc, since the
 * exec hooks may run in a vfork child. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum lb_launcher_kind {
  LB_NOT_A_LAUNCHER = 0,
  LB_JAVA_LAUNCHER = 1, /* named `java`: flags as they are */
  LB_JDK_TOOL = 2,      /* links libjli.so, another name: flags as -J<flag> */
};

/* The kind of program `path` is. A bare name is looked up in PATH and
 * symbolic links are followed (/usr/bin/javac -> /etc/alternatives/javac ->
 * the JDK's bin/javac). A program named `java`, or a link to one, is java
 * (a wrapper script named java is a launcher too). Any other is a JDK tool
 * if it is an ELF file whose dynamic section needs libjli.so and a `java`
 * with other bytes sits beside it; with java's bytes it is java; without a
 * `java` beside it, it is left alone (flags in the wrong form would keep
 * its JVM from starting). Costs a few syscalls; the exec hooks pay them
 * only under `lookback record` with the JVM agent. */
enum lb_launcher_kind lb_classify_launcher(const char* path) __attribute__((visibility("hidden")));

/* The feature release of the JDK whose launcher `path` is (JAVA_VERSION in
 * the `release` file beside its bin/: "17.0.15" is 17, "1.8.0_392" is 8), or
 * 0 when it cannot tell. Resolves `path` as lb_classify_launcher does. */
int lb_jdk_release(const char* path) __attribute__((visibility("hidden")));

/* The flags that turn on -XX:+CriticalJNINatives (the cheapest call from
 * Java into the recorder; JDK 17 and older) without the deprecation warning
 * JDK 16 and 17 print for it on stderr, which would change what the traced
 * program prints: HotSpot prints that warning while it parses the flag, only
 * if PrintWarnings is on, and parses flags in order, so the flag goes
 * between -XX:-PrintWarnings and -XX:+PrintWarnings. The last is left out
 * when the user turned warnings off before lookback's flags: in
 * JAVA_TOOL_OPTIONS (parsed first) or, for `java`, JDK_JAVA_OPTIONS (which
 * the launcher puts before the command line), as `envp` (NULL: this
 * process's environment) holds them; a setting later on the command line
 * wins anyway. `kind` picks the form (-J<flag> for a JDK tool). Fills `out`
 * with static strings and returns how many (2 or 3). */
size_t lb_critical_natives_flags(enum lb_launcher_kind kind, char* const envp[], const char* out[3])
    __attribute__((visibility("hidden")));

/* Reads up to `len` bytes at `offset` of some file into `buf`; returns how
 * many (0 at the end), or -1. */
typedef long (*lb_read_at_fn)(void* ctx, void* buf, size_t len, uint64_t offset);

/* 1 if the ELF image that `read_at` reads (`size` bytes) is a 64-bit ELF
 * file whose dynamic section lists `library` as DT_NEEDED, 0 if it does not
 * or if it is not such a file. The image is untrusted: every offset and
 * count is checked against `size` and against fixed limits
 * (tests/fuzz/elf_needed_fuzzer.cc). */
int lb_elf_needs(lb_read_at_fn read_at, void* ctx, uint64_t size, const char* library)
    __attribute__((visibility("hidden")));

#ifdef __cplusplus
}
#endif
