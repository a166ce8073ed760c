// Nanoscope's Java control, used as its wiki shows: a thread names itself
// START_TRACING, does the work to trace, then names itself
// STOP_TRACING:<file>; the trace appears at <file> once complete. Two threads
// each trace their own window; work before START and after STOP must not be
// in the files, and neither thread's name changes.
//   java NanoscopeControl MAIN_FILE WORKER_FILE [nowait]
// Prints the threads' names after STOP, then (unless nowait) waits for both
// files (the flush runs in the background) for at most 10 s and prints
// "files ready".
import java.nio.file.Files;
import java.nio.file.Paths;

public final class NanoscopeControl {
  static int depth(int n) { return n <= 0 ? 0 : 1 + depth(n - 1); }
  static void untracedBefore() { depth(2); }
  static void tracedWork(int n) { depth(n); }
  static void untracedAfter() { depth(2); }

  static void traceOnce(String file, int n) {
    untracedBefore();
    Thread.currentThread().setName("START_TRACING");
    tracedWork(n);
    Thread.currentThread().setName("STOP_TRACING:" + file);
    untracedAfter();
  }

  public static void main(String[] args) throws Exception {
    Thread worker = new Thread(() -> traceOnce(args[1], 5), "nanoscope-worker");
    worker.start();
    traceOnce(args[0], 3);
    worker.join();
    System.out.println("names " + Thread.currentThread().getName() + " " + worker.getName());
    if (args.length > 2 && args[2].equals("nowait")) return;
    String dir = System.getenv("LOOKBACK_DIR");
    for (int i = 0; i < 1000; i++) {
      if (Files.exists(Paths.get(dir, args[0])) && Files.exists(Paths.get(dir, args[1]))) break;
      Thread.sleep(10);
    }
    System.out.println("files ready");
  }
}
