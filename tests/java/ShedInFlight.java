// Frames running when the overhead budget sheds their method
// (tests/integration/budget_test.cc,
// BudgetJvm.FramesRunningWhenTheirMethodIsShedKeepTheirExits): depth()
// recurses DEPTH levels with next to no work per level and is called without
// pause, so it is by far the most frequent method (the budget sheds it within
// its first judgements) and at any instant about DEPTH of its frames are on
// the thread's stack. Those frames were entered while depth() was recorded;
// their exits must be recorded too, or the decoder closes them where their
// caller moves on. round() does some work of its own so that it stays cheap
// enough to keep.
//   java ShedInFlight SECONDS
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public final class ShedInFlight {
  private static final int DEPTH = 40;
  static volatile int sink;

  static int depth(int d) {
    if (d == 0) return 1;
    return depth(d - 1) + (d & 3);
  }

  static int round(int k) {
    int s = 0;
    for (int i = 0; i < 50; i++) s += depth(DEPTH);
    for (int i = 0; i < 5000; i++) s = s * 31 + i + k;
    return s;
  }

  public static void main(String[] args) {
    final ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    final long until = cpu.getCurrentThreadCpuTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    int k = 0;
    while (cpu.getCurrentThreadCpuTime() < until) {
      for (int j = 0; j < 16; j++) sink = round(k++);
    }
  }
}
