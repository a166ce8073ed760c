// Working and waiting (work_wait_test.cc): a worker thread does WORK_MS
// (default 200) of CPU work, measured by its own CPU clock, while two threads
// sleep SLEEP_MS (default 2000). main joins them all. The report must rank
// the worker's method first and set the sleepers aside.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class WorkAndWait {
  static volatile long sink;

  static long mix(long x) {
    for (int i = 0; i < 1000; ++i) x = x * 6364136223846793005L + 1442695040888963407L;
    return x;
  }

  static void crunch(long workMs) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long start = mx.getCurrentThreadCpuTime();
    long x = sink;
    while (mx.getCurrentThreadCpuTime() - start < workMs * 1_000_000L) {
      for (int i = 0; i < 100; ++i) x = mix(x);
    }
    sink = x;
  }

  static void nap(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  public static void main(String[] args) throws Exception {
    final long workMs = args.length > 0 ? Long.parseLong(args[0]) : 200;
    final long sleepMs = args.length > 1 ? Long.parseLong(args[1]) : 2000;
    Thread s1 = new Thread(() -> nap(sleepMs), "sleeper-1");
    Thread s2 = new Thread(() -> nap(sleepMs), "sleeper-2");
    Thread worker = new Thread(() -> crunch(workMs), "worker");
    s1.start();
    s2.start();
    worker.start();
    worker.join();
    s1.join();
    s2.join();
    System.out.println("done " + (sink & 1));
  }
}
