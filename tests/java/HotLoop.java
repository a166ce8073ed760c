// The overhead budget on a JVM (budget_test.cc): step() is called a thousand
// times per work() call, far too often to trace within a few percent of the
// thread's CPU time; work() and main() are called rarely. step() has a loop,
// so the always-inlined rule leaves it probed (docs/jvm.md). Runs for about
// SECONDS of wall time, then prints the number of work() calls.
//   java HotLoop SECONDS
public class HotLoop {
  static int step(int x) {
    int s = 0;
    for (int i = 0; i < 3; i++) s += x ^ i;
    return s;
  }

  static long work(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += step(i);
    return s;
  }

  public static void main(String[] args) {
    final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    long sum = 0, calls = 0;
    while (System.nanoTime() < end) {
      sum += work(1000);
      calls++;
    }
    System.out.println("work " + calls + " sum " + sum);
  }
}
