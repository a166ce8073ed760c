/* Non-local exits leave instrumented frames without exit hooks: clang calls
 * no exit hook while unwinding an exception, and no compiler does on longjmp.
 * These interposers (preloaded or linked ahead of libc/libstdc++) tell the
 * recorder, which then records the call site of the thread's next entry so
 * decoders know exactly which frames are gone (ControlKind::kUnwindTo). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stddef.h>

void lb_note_nonlocal_exit(void) __attribute__((no_instrument_function));

#define LB_NOINST __attribute__((no_instrument_function, visibility("default")))

typedef void* (*begin_catch_fn)(void*);
typedef void (*longjmp_fn)(struct __jmp_buf_tag*, int) __attribute__((noreturn));

static void* next_symbol(const char* name) __attribute__((no_instrument_function));
static void* next_symbol(const char* name) { return dlsym(RTLD_NEXT, name); }

LB_NOINST void* __cxa_begin_catch(void* exception) {
  static begin_catch_fn real;
  if (real == NULL) real = (begin_catch_fn)next_symbol("__cxa_begin_catch");
  lb_note_nonlocal_exit();
  return real(exception);
}

#define LB_LONGJMP(name)                                       \
  LB_NOINST void name(struct __jmp_buf_tag env[1], int val) {  \
    static longjmp_fn real;                                    \
    if (real == NULL) real = (longjmp_fn)next_symbol(#name);   \
    lb_note_nonlocal_exit();                                   \
    real(env, val);                                            \
  }

LB_LONGJMP(longjmp)
LB_LONGJMP(_longjmp)
LB_LONGJMP(siglongjmp)
LB_LONGJMP(__longjmp_chk)
