// The overhead budget on a JVM (budget_test.cc): step() is called a thousand
// times per work() call, far too often to trace within a few percent of the
// thread's CPU time; work() and main() are called rarely. step() has a loop,
// so the always-inlined rule leaves it probed (docs/jvm.md). Prints the
// number of work() calls and the sum of their results (each work(1000)
// returns the same value, so the sum checks that the code still computes
// what it should, whatever was retransformed underneath).
//   java HotLoop SECONDS     runs work(1000) for about SECONDS of wall time
//   java HotLoop until DIR   prints "ready PID", then runs work(30000) until DIR/stop
//                            exists: once step() is out of the trace, work() is
//                            then called rarely enough to stay in it (work(1000)
//                            is shed in turn), and the thread's cost is low enough
//                            for the budget to call it calm and bring step() back
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

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
    long sum = 0, calls = 0;
    if (args[0].equals("until")) {
      final Path stop = Paths.get(args[1], "stop");
      System.out.println("ready " + ProcessHandle.current().pid());
      System.out.flush();
      // The file is looked for every 64 calls (a few ms): the loop is work()'s.
      while ((calls & 63) != 0 || !Files.exists(stop)) {
        sum += work(30000);
        calls++;
      }
    } else {
      final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
      while (System.nanoTime() < end) {
        sum += work(1000);
        calls++;
      }
    }
    System.out.println("work " + calls + " sum " + sum);
  }
}
