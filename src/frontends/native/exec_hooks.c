/* exec replaces the process image and with it every ring: when dumps at exit
 * are on (always under `lookback record`), write one first, with reason
 * "exec". The calls that reach the dynamic linker are seen: execve, execv,
 * execvp, execvpe, fexecve, and the execl family (execl, execlp, execle),
 * which glibc implements by calling execve internally (not through the PLT),
 * so they are interposed here too, turning their argument lists into argv.
 *
 * posix_spawn is not: it does not replace the caller's image (the caller
 * runs on and keeps its rings), and the child it creates shares the caller's
 * memory until its exec (CLONE_VM | CLONE_VFORK), where writing a dump would
 * race with the caller. A spawned program under `lookback record` is traced
 * on its own (LD_PRELOAD is inherited) and writes its own dumps. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <unistd.h>

void lb_before_exec(void) __attribute__((no_instrument_function));

#define LB_NOINST __attribute__((no_instrument_function, visibility("default")))

typedef int (*execve_fn)(const char*, char* const[], char* const[]);
typedef int (*execv_fn)(const char*, char* const[]);
typedef int (*execve_fn2)(int, char* const[], char* const[]);

LB_NOINST int execve(const char* path, char* const argv[], char* const envp[]) {
  static execve_fn real;
  if (real == NULL) real = (execve_fn)dlsym(RTLD_NEXT, "execve");
  lb_before_exec();
  return real(path, argv, envp);
}

LB_NOINST int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static execve_fn real;
  if (real == NULL) real = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
  lb_before_exec();
  return real(file, argv, envp);
}

#define LB_EXECV(name)                                           \
  LB_NOINST int name(const char* path, char* const argv[]) {     \
    static execv_fn real;                                        \
    if (real == NULL) real = (execv_fn)dlsym(RTLD_NEXT, #name);  \
    lb_before_exec();                                            \
    return real(path, argv);                                     \
  }

LB_EXECV(execv)
LB_EXECV(execvp)

LB_NOINST int fexecve(int fd, char* const argv[], char* const envp[]) {
  static execve_fn2 real;
  if (real == NULL) real = (execve_fn2)dlsym(RTLD_NEXT, "fexecve");
  lb_before_exec();
  return real(fd, argv, envp);
}

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
