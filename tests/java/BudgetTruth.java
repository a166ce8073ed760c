// The overhead budget's Java ground truth (tests/integration/budget_test.cc,
// BudgetJvm.TheDecodedCallsAreTheGroundTruthWithTheShedMethodsCallsRemoved):
// outer -> 20 x mid -> 50 x leaf, for SECONDS of the thread's CPU time, each
// method logging its own entry and exit into a ring of the newest calls (the
// logging is not traced: the test traces only leaf, mid and outer). leaf is
// far too frequent to trace within any budget; it has a loop, so the
// always-inlined rule leaves it probed (docs/jvm.md). outer also computes for
// some 20 us itself, so that it stays rare enough to trace once leaf and mid
// are shed and their probes compiled to nothing (without that work it ran
// 2 us a call, and the budget shed it too). At the end the newest
// calls go to TRUTH as "ENTER|EXIT <method>" lines, oldest first.
//   java BudgetTruth SECONDS TRUTH
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public final class BudgetTruth {
  private static final int TRUTH = 1 << 22;
  private static final byte[] truth = new byte[TRUTH];
  private static long n;
  private static final String[] NAMES = {"int BudgetTruth.leaf(int)", "int BudgetTruth.mid(int)", "int BudgetTruth.outer(int)"};
  static volatile int sink;

  private static void log(int method, boolean exit) { truth[(int) (n++ & (TRUTH - 1))] = (byte) (method * 2 + (exit ? 1 : 0)); }

  static int leaf(int x) {
    log(0, false);
    int s = 0;
    for (int i = 0; i < 2; i++) s += x * 3 + i;
    log(0, true);
    return s;
  }

  static int mid(int x) {
    log(1, false);
    int s = 0;
    for (int i = 0; i < 50; i++) s += leaf(x + i);
    log(1, true);
    return s;
  }

  static int outer(int x) {
    log(2, false);
    int s = 0;
    for (int i = 0; i < 20; i++) s += mid(x + i);
    for (int i = 0; i < 20000; i++) s = s * 31 + i;
    log(2, true);
    return s;
  }

  public static void main(String[] args) throws Exception {
    final ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    final long until = cpu.getCurrentThreadCpuTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    int k = 0;
    while (cpu.getCurrentThreadCpuTime() < until) {
      for (int j = 0; j < 64; j++) sink = outer(k++);
    }
    try (PrintWriter w = new PrintWriter(args[1])) {
      final long count = Math.min(n, TRUTH);
      for (long i = n - count; i < n; i++) {
        final int e = truth[(int) (i & (TRUTH - 1))];
        w.println(((e & 1) != 0 ? "EXIT " : "ENTER ") + NAMES[e >> 1]);
      }
    }
  }
}
