/* exec replaces the process image and with it every ring: when dumps at exit
 * are on (always under `lookback record`), write one first, with reason
 * "exec". Only the exec calls that reach the dynamic linker are seen (execve,
 * execv, execvp, execvpe); glibc's execl* family calls execve internally. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <unistd.h>

void lb_before_exec(void) __attribute__((no_instrument_function));

#define LB_NOINST __attribute__((no_instrument_function, visibility("default")))

typedef int (*execve_fn)(const char*, char* const[], char* const[]);
typedef int (*execv_fn)(const char*, char* const[]);

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
