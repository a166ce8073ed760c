// A thread that stops being traced while its probes write from Java: main
// takes a name --threads selects, calls before() in a loop long enough for C2
// to compile it and for the agent's JFR clock to come on (jfr_clock.cc; the
// test sets the start-up window to 0), then takes a name it does not select
// and calls after() the same way. Nothing of after() may be recorded.
//   java Deselects MILLIS
public final class Deselects {
  static int before(int i) { return (i & 7) + 1; }
  static int after(int i) { return (i & 3) + 1; }

  static long loop(boolean first, long millis) {
    long n = 0;
    final long end = System.nanoTime() + millis * 1_000_000L;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 1000; i++) n += first ? before(i) : after(i);
    }
    return n;
  }

  public static void main(String[] args) {
    final long millis = Long.parseLong(args[0]);
    Thread.currentThread().setName("traced-main");
    final long a = loop(true, millis);
    Thread.currentThread().setName("quiet-main");
    final long b = loop(false, millis / 2);
    System.out.println("deselected " + (a > 0 && b > 0));
  }
}
