package lbtest;

final class Sync {
  private int count;
  synchronized int inc(int by) {
    if (by < 0) throw new IllegalArgumentException("negative");
    return count += by;
  }
  static synchronized String stat(String x) { return x + x; }
  int block(Object lock) {
    synchronized (lock) {
      if (count > 100) return -1;
      count++;
    }
    synchronized (this) {
      try {
        return inc(-1);
      } catch (IllegalArgumentException e) {
        return count;
      }
    }
  }
  static void run() {
    Sync s = new Sync();
    s.inc(3);
    int r = s.block(new Object());
    String e;
    try {
      s.inc(-5);
      e = "none";
    } catch (IllegalArgumentException ex) {
      e = ex.getMessage();
    }
    System.out.println("sync: " + r + " " + stat("ab") + " " + e);
  }
}
