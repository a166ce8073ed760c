package java.lang;

// Stand-in for the agent's probe class, compiled into java.base
// (--patch-module) for the test that boots a JVM on a rewritten java.base.
// It must not call any other method: every other java.base method now calls
// it. Synchronized so that no increment is lost between threads.
public final class LookbackProbe {
  private static long enters, exits;

  private LookbackProbe() {}

  public static synchronized boolean enter(int id) { enters++; return true; }
  public static synchronized void exit(int id, boolean entered) { if (entered) exits++; }
  // The rename hook in Thread.setName (the agent's is native).
  public static String renaming(Thread t, String name) { return name; }
  // Both counts at one instant: enters - exits is the number of traced frames
  // active on all threads at that moment.
  public static synchronized String counts() { return "probe-enters " + enters + " probe-exits " + exits; }
}
