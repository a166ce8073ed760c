/* exec replaces the process image and with it every ring: when dumps at exit
 * are on (always under `lookback record`), write one first, with reason
 * "exec". The calls that reach the dynamic linker are seen: execve, execv,
 * execvp, execvpe, fexecve, and the execl family (execl, execlp, execle),
 * which glibc implements by calling execve internally (not through the PLT),
 * so they are interposed here too, turning their argument lists into argv.
 *
 * posix_spawn writes no dump: it does not replace the caller's image (the
 * caller runs on and keeps its rings), and the child it creates shares the
 * caller's memory until its exec (CLONE_VM | CLONE_VFORK), where writing a
 * dump would race with the caller. A spawned program under `lookback record`
 * is traced on its own (LD_PRELOAD is inherited) and writes its own dumps.
 *
 * JVMs started by anything `lookback record` runs (a launcher script such as
 * groovy or mvn, a JVM's ProcessBuilder through jspawnhelper, a native
 * program) get the JVM agent: when LOOKBACK_JVM_FLAGS is set (by record: the
 * flags to put after the launcher's name, one per line) and the program
 * being started is a JVM launcher (runtime/jvm_launcher.h: `java`, or one
 * of the JDK's tools such as javac, which take them as -J<flag>), every exec
 * and posix_spawn here inserts them after argv[0], unless the command
 * already loads the agent. That is
 * what record does to a `java` command it starts itself, so nothing is
 * printed and the JVM starts as it would have. (Each JVM whose agent starts
 * says so in LOOKBACK_RECORD_EVENTS, the file record reads when the command
 * has ended: src/frontends/jvm/agent.cc.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/jvm_launcher.h"

void lb_before_exec(void) __attribute__((no_instrument_function));

#define LB_NOINST __attribute__((no_instrument_function, visibility("default")))
#define LB_LOCAL static __attribute__((no_instrument_function))

/* At most this many flags are inserted (record passes one, and three more
 * turn on critical natives). */
#define LB_MAX_JVM_FLAGS 8

LB_LOCAL size_t lb_argc(char* const argv[]) {
  size_t n = 0;
  while (argv != NULL && argv[n] != NULL) ++n;
  return n;
}

/* LOOKBACK_JVM_FLAGS when `path` (or, without one, argv[0]) is a JVM
 * launcher (runtime/jvm_launcher.h: `java`, or a JDK tool such as javac)
 * that does not load the agent yet, with its kind in *kind; NULL otherwise. */
LB_LOCAL const char* lb_jvm_flags_for(const char* path, char* const argv[], enum lb_launcher_kind* kind) {
  *kind = LB_NOT_A_LAUNCHER;
  const char* flags = getenv("LOOKBACK_JVM_FLAGS");
  if (flags == NULL || flags[0] == '\0' || argv == NULL || argv[0] == NULL) return NULL;
  *kind = lb_classify_launcher(path != NULL ? path : argv[0]);
  if (*kind == LB_NOT_A_LAUNCHER) return NULL;
  for (size_t i = 1; argv[i] != NULL; ++i) {
    const char* a = argv[i];
    if (strncmp(a, "-J", 2) == 0) a += 2;
    if (strncmp(a, "-agentpath:", 11) == 0 && strstr(a, "liblookback-jvm") != NULL) return NULL;
  }
  return flags;
}

/* -XX:+CriticalJNINatives, the cheapest call from Java into the recorder,
 * exists up to JDK 17; JDK 18 removed it and a JVM refuses to start with a
 * flag it does not know. So record asks for it (LOOKBACK_JVM_CRITICAL=1)
 * and it is added only for a launcher of JDK 17 or older. */
LB_LOCAL int lb_wants_critical(const char* path, char* const argv[]) {
  const char* want = getenv("LOOKBACK_JVM_CRITICAL");
  if (want == NULL || strcmp(want, "1") != 0) return 0;
  const int release = lb_jdk_release(path != NULL ? path : argv[0]);
  return release > 0 && release <= 17;
}

/* Fills `out` (room for argc + LB_MAX_JVM_FLAGS + 1) with argv[0], the flags
 * (the lines of `flags`, each copied into `buf` behind the prefix of `kind`:
 * "" for `java`, "-J" for a JDK tool), the flags that turn on critical
 * natives if `critical` (lb_critical_natives_flags, for the environment
 * `envp` the launcher gets), then argv[1..]. `buf` has room for the flags, a
 * NUL and the prefix per line. */
LB_LOCAL char* const* lb_with_jvm_flags(const char* flags, enum lb_launcher_kind kind, int critical,
                                        char* const envp[], char* buf, char* const argv[], size_t argc,
                                        char** out) {
  size_t n = 0;
  out[n++] = argv[0];
  const char* prefix = kind == LB_JDK_TOOL ? "-J" : "";
  const size_t plen = strlen(prefix);
  char* w = buf;
  /* Room is kept for the three critical-natives flags. */
  for (const char* p = flags; *p != '\0' && n < LB_MAX_JVM_FLAGS - 2;) {
    const char* end = strchr(p, '\n');
    const size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len > 0) {
      out[n++] = w;
      memcpy(w, prefix, plen);
      memcpy(w + plen, p, len);
      w += plen + len;
      *w++ = '\0';
    }
    if (end == NULL) break;
    p = end + 1;
  }
  if (critical) {
    const char* extra[3];
    const size_t count = lb_critical_natives_flags(kind, envp, extra);
    for (size_t i = 0; i < count; ++i) out[n++] = (char*)extra[i];
  }
  for (size_t i = 1; i < argc; ++i) out[n++] = argv[i];
  out[n] = NULL;
  return out;
}

/* Declares `lb_av`: argv, or argv with the JVM flags inserted, in arrays on
 * this stack frame (an exec may run in a vfork child: no malloc). */
#define LB_JVM_ARGV(path, argv, envp)                                                                       \
  enum lb_launcher_kind lb_kind;                                                                            \
  const char* lb_flags = lb_jvm_flags_for((path), (argv), &lb_kind);                                        \
  const int lb_critical = lb_flags != NULL && lb_wants_critical((path), (argv));                            \
  const size_t lb_n = lb_argc(argv);                                                                        \
  char lb_buf[lb_flags != NULL ? strlen(lb_flags) + 1 + 2 * LB_MAX_JVM_FLAGS : 1];                          \
  char* lb_out[lb_flags != NULL ? lb_n + LB_MAX_JVM_FLAGS + 1 : 1];                                         \
  char* const* lb_av = lb_flags != NULL                                                                     \
                           ? lb_with_jvm_flags(lb_flags, lb_kind, lb_critical, (envp), lb_buf, (argv), lb_n, \
                                               lb_out)                                                      \
                           : (argv)

typedef int (*execve_fn)(const char*, char* const[], char* const[]);
typedef int (*execv_fn)(const char*, char* const[]);
typedef int (*execve_fn2)(int, char* const[], char* const[]);

LB_NOINST int execve(const char* path, char* const argv[], char* const envp[]) {
  static execve_fn real;
  if (real == NULL) real = (execve_fn)dlsym(RTLD_NEXT, "execve");
  lb_before_exec();
  LB_JVM_ARGV(path, argv, envp);
  return real(path, lb_av, envp);
}

LB_NOINST int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static execve_fn real;
  if (real == NULL) real = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
  lb_before_exec();
  LB_JVM_ARGV(file, argv, envp);
  return real(file, lb_av, envp);
}

#define LB_EXECV(name)                                           \
  LB_NOINST int name(const char* path, char* const argv[]) {     \
    static execv_fn real;                                        \
    if (real == NULL) real = (execv_fn)dlsym(RTLD_NEXT, #name);  \
    lb_before_exec();                                            \
    LB_JVM_ARGV(path, argv, NULL);                               \
    return real(path, lb_av);                                    \
  }

LB_EXECV(execv)
LB_EXECV(execvp)

LB_NOINST int fexecve(int fd, char* const argv[], char* const envp[]) {
  static execve_fn2 real;
  if (real == NULL) real = (execve_fn2)dlsym(RTLD_NEXT, "fexecve");
  lb_before_exec();
  LB_JVM_ARGV(NULL, argv, envp);
  return real(fd, lb_av, envp);
}

/* posix_spawn and posix_spawnp: the JVM flags only (no dump, see above). */
typedef int (*spawn_fn)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                        char* const[], char* const[]);

#define LB_SPAWN(name)                                                                                    \
  LB_NOINST int name(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,             \
                     const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {             \
    static spawn_fn real;                                                                                 \
    if (real == NULL) real = (spawn_fn)dlsym(RTLD_NEXT, #name);                                           \
    LB_JVM_ARGV(path, argv, envp);                                                                        \
    return real(pid, path, actions, attr, lb_av, envp);                                                   \
  }

LB_SPAWN(posix_spawn)
LB_SPAWN(posix_spawnp)

/* The execl family: at most LB_EXECL_MAX arguments (more is E2BIG, as a
 * kernel with a small ARG_MAX would say). Collects the argument list after
 * `first` into argv (NULL-terminated); returns 0, or -1 with errno set. */
#define LB_EXECL_MAX 4096

static int lb_collect_args(const char* first, va_list* ap, char** argv) __attribute__((no_instrument_function));
static int lb_collect_args(const char* first, va_list* ap, char** argv) {
  int n = 0;
  argv[n++] = (char*)first;
  while (n < LB_EXECL_MAX && (argv[n] = va_arg(*ap, char*)) != NULL) ++n;
  if (n == LB_EXECL_MAX) {
    errno = E2BIG;
    return -1;
  }
  return 0;
}

LB_NOINST int execl(const char* path, const char* arg, ...) {
  char* argv[LB_EXECL_MAX + 1];
  va_list ap;
  va_start(ap, arg);
  const int ok = lb_collect_args(arg, &ap, argv);
  va_end(ap);
  return ok == 0 ? execv(path, argv) : -1;
}

LB_NOINST int execlp(const char* file, const char* arg, ...) {
  char* argv[LB_EXECL_MAX + 1];
  va_list ap;
  va_start(ap, arg);
  const int ok = lb_collect_args(arg, &ap, argv);
  va_end(ap);
  return ok == 0 ? execvp(file, argv) : -1;
}

LB_NOINST int execle(const char* path, const char* arg, ...) {
  char* argv[LB_EXECL_MAX + 1];
  va_list ap;
  va_start(ap, arg);
  const int ok = lb_collect_args(arg, &ap, argv);
  char* const* envp = ok == 0 ? va_arg(ap, char* const*) : NULL;
  va_end(ap);
  return ok == 0 ? execve(path, argv, envp) : -1;
}
