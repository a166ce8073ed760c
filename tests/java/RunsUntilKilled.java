// A JVM that works a little, says "ready", then sleeps for a minute: for
// tests that kill a traced JVM before it can write its dump
// (launchers_test.cc). It writes no dump of its own.
public final class RunsUntilKilled {
  static volatile long sink;

  static long work(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += i;
    return s;
  }

  public static void main(String[] args) throws Exception {
    for (int i = 0; i < 10; i++) sink += work(1000);
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(60_000);
  }
}
