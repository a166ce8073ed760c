// A JVM started without lookback, for `lookback attach` / `detach`
// (jvm_test.cc). A worker thread with a long name calls one method per phase;
// the test moves it on by creating files in DIR:
//   beforeAttach()  until DIR/attached exists
//   whileAttached() until DIR/detached exists
//   afterDetach()   until DIR/stop exists
// Prints "ready PID" before the worker starts, "phase N after C" once a phase
// has made 20 calls (C: the calls of the phase before), and at the end what
// lookback.jar's API answered in phase 1 (before the attach: its class is
// initialised then, with no agent) and in phase 2 (attached), then "done":
//   api before ENABLED/DUMP while ENABLED/DUMP     (DUMP: "dump" or "null")
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import lookback.Lookback;

public final class AttachTarget {
  static volatile long sink;
  static String apiBefore = "-", apiWhile = "-";

  static String askApi(String reason) {
    return Lookback.enabled() + "/" + (Lookback.dump(reason) != null ? "dump" : "null");
  }

  static long beforeAttach(int n) { long s = 0; for (int i = 0; i < n; i++) s += i; return s; }
  static long whileAttached(int n) { long s = 1; for (int i = 0; i < n; i++) s += i; return s; }
  static long afterDetach(int n) { long s = 2; for (int i = 0; i < n; i++) s += i; return s; }

  // Returns how many calls it made.
  static long phase(Path dir, String until, int which, long before) throws InterruptedException {
    long calls = 0;
    for (; calls < 20 || !Files.exists(dir.resolve(until)); calls++) {
      sink += which == 1 ? beforeAttach(100) : which == 2 ? whileAttached(100) : afterDetach(100);
      if (calls == 20) {
        if (which == 1) apiBefore = askApi("api-before-attach");
        if (which == 2) {
          // The attach is over (the test said "attached" after it returned).
          for (int i = 0; i < 500 && !Lookback.enabled(); i++) Thread.sleep(10);
          apiWhile = askApi("api-while-attached");
        }
        System.out.println("phase " + which + " after " + before);
        System.out.flush();
      }
      Thread.sleep(1);
    }
    return calls;
  }

  public static void main(String[] args) throws Exception {
    final Path dir = Paths.get(args[0]);
    Thread worker = new Thread(() -> {
      try {
        long n = phase(dir, "attached", 1, 0);
        n = phase(dir, "detached", 2, n);
        phase(dir, "stop", 3, n);
      } catch (InterruptedException e) {
        throw new RuntimeException(e);
      }
    }, "attach-worker-with-a-long-name");
    System.out.println("ready " + ProcessHandle.current().pid());
    System.out.flush();
    worker.start();
    worker.join();
    System.out.println("api before " + apiBefore + " while " + apiWhile);
    System.out.println("done");
  }
}
