// The overhead budget on a JVM (budget_test.cc): step() is called a thousand
// times per work() call, far too often to trace within a few percent of the
// thread's CPU time; work() and main() are called rarely. step() has a loop,
// so the always-inlined rule leaves it probed (docs/jvm.md). Prints the
// number of work() calls and the sum of their results (each work(1000)
// returns the same value, so the sum checks that the code still computes
// what it should, whatever was retransformed underneath).
//   java HotLoop SECONDS     runs work(1000) for about SECONDS of wall time
//   java HotLoop SECONDS classes   first loads the JDK's classes named in its
//                            lib/classlist (about a thousand not loaded yet), as a
//                            large program loads its own before its hot loop
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

  static void loadJdkClasses() {
    final Path list = Paths.get(System.getProperty("java.home"), "lib", "classlist");
    try {
      for (String line : Files.readAllLines(list)) {
        if (line.isEmpty() || line.startsWith("#") || line.startsWith("@")) continue;
        try {
          Class.forName(line.split(" ")[0].replace('/', '.'), false, null);
        } catch (ClassNotFoundException | LinkageError e) {
          // (a JDK without it: not the point)
        }
      }
    } catch (java.io.IOException e) {
      throw new RuntimeException(e);
    }
  }

  public static void main(String[] args) {
    long sum = 0, calls = 0;
    if (args.length > 1 && args[1].equals("classes")) loadJdkClasses();
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
