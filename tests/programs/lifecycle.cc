// One instrumented program, several process-life scenarios:
//   lifecycle short-threads N   N short-lived named threads, one after another
//   lifecycle idle-threads N    N threads at once that each make a few calls and wait; prints
//                               "anon-growth KIB", how much the process's anonymous memory grew
//   lifecycle fork              parent and child both trace after fork()
//   lifecycle fork-storm N      N forks while the control thread writes dumps
//   lifecycle exceptions        C++ exceptions thrown through three frames
//   lifecycle longjmp           longjmp out of three frames
//   lifecycle signals           a 10 kHz timer signal whose handler is traced
//   lifecycle sleep MS          one call that lasts MS milliseconds
//   lifecycle wait SECONDS      calls tick() every 10 ms; prints "ready PID"
//   lifecycle named-workers     threads that rename themselves worker-1, worker-2, other
//   lifecycle exec [HOW]        calls parent_work, then execs itself as `lifecycle short-threads 1`
//                               with HOW: execv (default) | execl | execlp | execle
//   lifecycle vfork-exec        calls parent_work, vfork()s a child that execs /bin/true, waits,
//                               calls parent_work again
//   lifecycle given-names       threads named with lb_thread_set_name (longer than the kernel's 15
//                               bytes), one renamed after it started tracing
#include <pthread.h>

#include "ground_truth.h"
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#define NOINLINE LB_TEST_NOINLINE
#define NOINST __attribute__((no_instrument_function))

thread_local volatile int g_sink;  // per thread: no data race between traced threads
extern "C" {
NOINLINE void leaf_work() { g_sink = g_sink + 1; }
NOINLINE void mid_work() {
  leaf_work();
  leaf_work();
}
NOINLINE void thread_body() { mid_work(); }
NOINLINE void child_work() { mid_work(); }
NOINLINE void parent_work() { mid_work(); }
NOINLINE void thrower(int i) {
  leaf_work();
  if (i >= 0) throw std::runtime_error("boom");
}
NOINLINE void middle(int i) {
  thrower(i);
  leaf_work();
}
NOINLINE void outer(int i) {
  middle(i);
  leaf_work();
}
NOINLINE void after_exceptions() { leaf_work(); }
jmp_buf g_jmp;
NOINLINE void jumper() {
  leaf_work();
  longjmp(g_jmp, 1);
}
NOINLINE void jmid() { jumper(); leaf_work(); }
NOINLINE void jouter() { jmid(); leaf_work(); }
NOINLINE void after_longjmp() { leaf_work(); }
NOINLINE void handler_fn() { g_sink = g_sink + 7; }
NOINLINE void long_call(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}
NOINLINE void after_sleep() { leaf_work(); }
NOINLINE void tick() { leaf_work(); }
NOINLINE void worker_loop() { for (int i = 0; i < 100; ++i) mid_work(); }
}

NOINST static void OnAlarm(int) { handler_fn(); }

NOINST static void NamedThread(const char* name) {
  pthread_setname_np(pthread_self(), name);
  worker_loop();
}

// The runtime's API when it is loaded (preloaded by `lookback record`).
extern "C" int lb_thread_set_name(const char* name) __attribute__((weak));

NOINST static void GivenNameThread(const char* name, const char* later) {
  pthread_setname_np(pthread_self(), "kernel-name");
  if (lb_thread_set_name) lb_thread_set_name(name);
  worker_loop();
  if (later != nullptr && lb_thread_set_name) {
    lb_thread_set_name(later);
    worker_loop();
  }
}

// The process's anonymous resident memory (RssAnon in /proc/self/status), in KiB; -1 unknown.
NOINST long AnonKiB() {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != nullptr) {
    if (strncmp(line, "RssAnon:", 8) == 0) kib = strtol(line + 8, nullptr, 10);
  }
  fclose(f);
  return kib;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: lifecycle MODE [ARG]\n");
    return 2;
  }
  // No std::string here: clang 14 with libstdc++ 12 fails to link its
  // instrumented inline members.
  const char* m = argv[1];
  auto mode_is = [m](const char* x) { return strcmp(m, x) == 0; };
  const int arg = argc > 2 ? atoi(argv[2]) : 0;
  if (mode_is("short-threads")) {
    for (int i = 0; i < arg; ++i) {
      std::thread t([i] {
        char name[16];
        snprintf(name, sizeof name, "short-%d", i);
        pthread_setname_np(pthread_self(), name);
        thread_body();
      });
      t.join();
    }
  } else if (mode_is("fork")) {
    parent_work();
    pid_t pid = fork();
    if (pid == 0) {
      child_work();
      printf("child %d\n", getpid());
      return 0;  // a normal exit: the child's own exit dump
    }
    int status = 0;
    waitpid(pid, &status, 0);
    parent_work();
    printf("parent %d child %d status %d\n", getpid(), pid, status);
  } else if (mode_is("fork-storm")) {
    // ARG forks while the control thread is kept busy writing dumps (the dump
    // signal, once per fork): every child must get going, allocate and exit.
    for (int i = 0; i < arg; ++i) {
      parent_work();
      kill(getpid(), SIGUSR2);
      pid_t pid = fork();
      if (pid == 0) {
        for (size_t size = 8; size <= 4096; size += 8) {  // every small size class of any allocator
          void* volatile p = malloc(size);
          free(p);
        }
        child_work();
        _exit(0);
      }
      int status = -1;
      for (int waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; ++waited_ms) {
        if (waited_ms == 10000) {
          kill(pid, SIGKILL);
          fprintf(stderr, "fork-storm: child %d of %d hung\n", i, arg);
          return 3;
        }
        usleep(1000);
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork-storm: child %d of %d failed (status %d)\n", i, arg, status);
        return 4;
      }
    }
    printf("fork-storm %d children\n", arg);
  } else if (mode_is("exceptions")) {
    for (int i = 0; i < 3; ++i) {
      try {
        outer(i);
      } catch (const std::exception&) {
      }
    }
    after_exceptions();
  } else if (mode_is("longjmp")) {
    for (int i = 0; i < 3; ++i) {
      if (setjmp(g_jmp) == 0) jouter();
    }
    after_longjmp();
  } else if (mode_is("signals")) {
    signal(SIGALRM, OnAlarm);
    itimerval it{{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, nullptr);
    timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
      for (int i = 0; i < 1000; ++i) mid_work();
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < 300);
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
  } else if (mode_is("sleep")) {
    long_call(arg);
    after_sleep();
  } else if (mode_is("wait")) {
    printf("ready %d\n", getpid());
    fflush(stdout);
    for (int i = 0; i < arg * 100; ++i) {
      tick();
      usleep(10000);
      if (access("stop", F_OK) == 0) break;
    }
  } else if (mode_is("exec")) {
    parent_work();
    char* args[] = {argv[0], const_cast<char*>("short-threads"), const_cast<char*>("1"), nullptr};
    const char* how = argc > 2 ? argv[2] : "execv";
    if (strcmp(how, "execl") == 0) {
      execl("/proc/self/exe", argv[0], "short-threads", "1", (char*)nullptr);
    } else if (strcmp(how, "execlp") == 0) {
      execlp("/proc/self/exe", argv[0], "short-threads", "1", (char*)nullptr);
    } else if (strcmp(how, "execle") == 0) {
      execle("/proc/self/exe", argv[0], "short-threads", "1", (char*)nullptr, environ);
    } else {
      execv("/proc/self/exe", args);
    }
    perror(how);
    return 1;
  } else if (mode_is("vfork-exec")) {
    parent_work();
    const pid_t pid = vfork();
    if (pid == 0) {
      execl("/bin/true", "true", (char*)nullptr);
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "vfork child failed\n");
      return 1;
    }
    parent_work();
  } else if (mode_is("given-names")) {
    std::thread a(GivenNameThread, "pool-1-thread-1-with-a-long-name", nullptr),
        b(GivenNameThread, "pool-1-thread-2-with-a-long-name", "renamed-after-start-and-long"),
        c(GivenNameThread, "other-long-named-thread", nullptr);
    a.join();
    b.join();
    c.join();
  } else if (mode_is("named-workers")) {
    std::thread a(NamedThread, "worker-1"), b(NamedThread, "worker-2"), c(NamedThread, "other");
    a.join();
    b.join();
    c.join();
  } else if (mode_is("idle-threads")) {
    // (Last in this chain: every mode_is before a mode is a traced call in its
    // recording, which the exporters' golden files hold.)
    // A pool's workers that record little: every thread has a ring, and holds
    // it while main measures (RssAnon: the rings, the threads' stacks, malloc).
    const long before = AnonKiB();
    pthread_barrier_t recorded, measured;
    pthread_barrier_init(&recorded, nullptr, static_cast<unsigned>(arg) + 1);
    pthread_barrier_init(&measured, nullptr, static_cast<unsigned>(arg) + 1);
    std::vector<std::thread> pool;
    for (int i = 0; i < arg; ++i) {
      pool.emplace_back([&recorded, &measured] {
        for (int k = 0; k < 10; ++k) thread_body();
        pthread_barrier_wait(&recorded);
        pthread_barrier_wait(&measured);
      });
    }
    pthread_barrier_wait(&recorded);
    const long after = AnonKiB();
    pthread_barrier_wait(&measured);
    for (auto& t : pool) t.join();
    printf("anon-growth %ld\n", after - before);
  } else {
    fprintf(stderr, "unknown mode %s\n", m);
    return 2;
  }
  return 0;
}
