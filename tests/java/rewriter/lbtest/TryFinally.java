package lbtest;

final class TryFinally {
  static int count;
  static int nested(int x) {
    try {
      try {
        if (x == 1) throw new RuntimeException("inner");
        if (x == 2) return 20;
      } finally {
        count++;
        if (x == 3) throw new IllegalStateException("from finally");
      }
      return 30;
    } catch (RuntimeException e) {
      return e instanceof IllegalStateException ? 40 : 50;
    } finally {
      count += 10;
    }
  }
  static String resources() throws Exception {
    StringBuilder sb = new StringBuilder();
    try (AutoCloseable a = () -> sb.append("closeA "); AutoCloseable b = () -> sb.append("closeB ")) {
      sb.append("body ");
      throw new Exception("boom");
    } catch (Exception e) {
      sb.append(e.getMessage());
    }
    return sb.toString();
  }
  static void run() throws Exception {
    System.out.println("tryfinally: " + nested(0) + " " + nested(1) + " " + nested(2) + " " + nested(3) + " " + count
        + " " + resources());
  }
}
