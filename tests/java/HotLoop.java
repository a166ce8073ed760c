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
//   java HotLoop fold SECONDS  runs work(1000) until the agent has told C2 that a shed
//                            method's probes are constants (a byte of LookbackProbe.FOLD
//                            set; needs --add-opens java.base/java.lang=ALL-UNNAMED),
//                            then workAgain(1000), a copy of work() that the JIT first
//                            compiles after that, for SECONDS; prints "never folded" and
//                            exits with 2 if nothing was in 60 s
//   java HotLoop fold SECONDS back   then sleeps until the budget has brought everything
//                            back (no byte of FOLD set: the thread idled) and runs the
//                            compiled workAgain(1000) for SECONDS again; "never brought
//                            back" and exit 3 if that took over 60 s
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

  static long workAgain(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += step(i);
    return s;
  }

  static boolean anyFolded() throws ReflectiveOperationException {
    final java.lang.reflect.Field f = Class.forName("java.lang.LookbackProbe").getDeclaredField("FOLD");
    f.setAccessible(true);
    for (byte[] page : (byte[][]) f.get(null)) {
      if (page == null) continue;
      for (byte b : page) {
        if (b != 0) return true;
      }
    }
    return false;
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

  public static void main(String[] args) throws ReflectiveOperationException {
    long sum = 0, calls = 0;
    if (args.length > 1 && args[1].equals("classes")) loadJdkClasses();
    if (args[0].equals("fold")) {
      final long giveUp = System.nanoTime() + 60_000_000_000L;
      while ((calls & 63) != 0 || !anyFolded()) {
        if (System.nanoTime() > giveUp) {
          System.out.println("never folded");
          System.exit(2);
        }
        sum += work(1000);
        calls++;
      }
      final long seconds = (long) (Double.parseDouble(args[1]) * 1e9);
      for (long end = System.nanoTime() + seconds; System.nanoTime() < end; calls++) sum += workAgain(1000);
      if (args.length > 2 && args[2].equals("back")) {
        final long giveUpBack = System.nanoTime() + 60_000_000_000L;
        while (anyFolded()) {
          if (System.nanoTime() > giveUpBack) {
            System.out.println("never brought back");
            System.exit(3);
          }
          try {
            Thread.sleep(50);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        for (long end = System.nanoTime() + seconds; System.nanoTime() < end; calls++) sum += workAgain(1000);
      }
    } else if (args[0].equals("until")) {
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
