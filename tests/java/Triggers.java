// Detectors on a JVM (jvm_test.cc):
//   java Triggers stall       thread "ui-thread" draws frames, then spins inside stuckInHere() until
//                             main sets `done` after 1 s, calling nothing (no trace point while busy)
//   java Triggers slow-call   main calls parseRequest(i) 200 times; call 100 sleeps 600 ms
//   java Triggers crash       thread "crasher" writes to address 0 inside crashHere() (sun.misc.Unsafe):
//                             the JVM dies of SIGSEGV
//   java Triggers wait DIR    prints "ready <pid>", calls tick() every 10 ms until DIR/stop exists (60 s at most)
public class Triggers {
  static volatile long sink;
  static volatile boolean done, spinning;

  static long frame(int i) { return render(i) + 1; }
  static long render(int i) { return i * 31L; }

  static long stuckInHere() {
    long x = 1;
    spinning = true;
    while (!done) x = x * 6364136223846793005L + 1442695040888963407L;  // no calls: a volatile read
    return x;
  }

  static long runFrames() {
    long s = 0;
    for (int i = 0; i < 200; i++) s += frame(i);
    return s + stuckInHere();
  }

  static int parseRequest(int i) throws InterruptedException {
    if (i == 100) Thread.sleep(600);  // long enough for a control thread starved by a loaded machine
    return i * 2;
  }

  static void crashHere() throws Exception {
    java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
    f.setAccessible(true);
    ((sun.misc.Unsafe) f.get(null)).putAddress(0, 42);
  }

  static int tick(int i) { return i + 1; }

  public static void main(String[] args) throws Exception {
    if (args[0].equals("wait")) {
      System.out.println("ready " + ProcessHandle.current().pid());
      System.out.flush();
      java.io.File stop = new java.io.File(args[1], "stop");
      int s = 0;
      for (int i = 0; i < 6000 && !stop.exists(); i++) {
        s += tick(i);
        Thread.sleep(10);
      }
      sink = s;
      return;
    }
    if (args[0].equals("stall")) {
      Thread ui = new Thread(() -> sink = runFrames(), "ui-thread");
      ui.start();
      while (!spinning) Thread.sleep(1);
      Thread.sleep(1000);
      done = true;
      ui.join();
    } else if (args[0].equals("crash")) {
      Thread t = new Thread(() -> {
        try { crashHere(); } catch (Exception e) { throw new RuntimeException(e); }
      }, "crasher");
      t.start();
      t.join();
    } else {
      long s = 0;
      for (int i = 0; i < 200; i++) s += parseRequest(i);
      sink = s;
    }
  }
}
