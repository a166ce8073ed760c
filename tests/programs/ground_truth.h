// Ground truth for round-trip tests: an instrumented test program logs its
// own calls here, with code the compiler never instruments, and writes them
// out at the end. Tests compare this with what lookback decoded.
#pragma once

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__clang__)
#define LB_TEST_NOINLINE __attribute__((noinline))
#else
#define LB_TEST_NOINLINE __attribute__((noinline, noclone))
#endif

#define GT_NOINST __attribute__((no_instrument_function))
#define GT_NOINLINE LB_TEST_NOINLINE

#define GT_MAX_EVENTS (1 << 22)
#define GT_MAX_THREADS 64

typedef struct {
  long tid;
  unsigned n;
  uintptr_t* ev;  // address, bit 63 set for an exit (addresses may be odd at -O0)
} gt_thread_t;

static gt_thread_t gt_threads[GT_MAX_THREADS];
static unsigned gt_nthreads;
static pthread_mutex_t gt_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread gt_thread_t* gt_self;

GT_NOINST static inline gt_thread_t* gt_me(void) {
  if (!gt_self) {
    pthread_mutex_lock(&gt_mu);
    gt_self = &gt_threads[gt_nthreads++];
    pthread_mutex_unlock(&gt_mu);
    gt_self->tid = syscall(SYS_gettid);
    gt_self->ev = (uintptr_t*)malloc(sizeof(uintptr_t) * GT_MAX_EVENTS);
  }
  return gt_self;
}

GT_NOINST static inline void gt_log(void* fn, int exit) {
  gt_thread_t* t = gt_me();
  if (t->n < GT_MAX_EVENTS) t->ev[t->n++] = (uintptr_t)fn | ((uintptr_t)exit << 63);
}

#define GT_ENTER(f) gt_log((void*)&f, 0)
#define GT_EXIT(f) gt_log((void*)&f, 1)

// One line per event: "<tid> ENTER|EXIT 0x<addr>".
GT_NOINST static inline void gt_write(const char* path) {
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(3);
  }
  for (unsigned i = 0; i < gt_nthreads; ++i) {
    const gt_thread_t* t = &gt_threads[i];
    for (unsigned k = 0; k < t->n; ++k) {
      fprintf(f, "%ld %s 0x%lx\n", t->tid, (t->ev[k] >> 63) ? "EXIT" : "ENTER", (unsigned long)(t->ev[k] & ~((uintptr_t)1 << 63)));
    }
  }
  fclose(f);
}
