// Names with characters past U+FFFF, for jvm_test.cc. The JVM hands them to
// the agent in modified UTF-8 (each such character as two 3-byte surrogate
// halves); dumps, exports and globs must have plain UTF-8. Written with
// unicode escapes, so javac reads this file the same in any locale.
//   java -cp .:lookback.jar NamesBeyondTheBmp
import lookback.Lookback;

public final class NamesBeyondTheBmp {
  // A method named U+1D465 (MATHEMATICAL ITALIC SMALL X), a Java letter.
  static int \uD835\uDC65(int n) { return n <= 0 ? 0 : 1 + \uD835\uDC65(n - 1); }

  public static void main(String[] args) throws Exception {
    // A thread named at start "w", U+1F680 (ROCKET), "rocket"; it renames
    // itself "r", U+1F680, "renamed" halfway.
    Thread t = new Thread(() -> {
      \uD835\uDC65(2);
      Thread.currentThread().setName("r\uD83D\uDE80renamed");
      try (Lookback.Scope s = Lookback.scope("scope-\uD83D\uDE80")) {
        \uD835\uDC65(1);
      }
    }, "w\uD83D\uDE80rocket");
    t.start();
    t.join();
    System.out.println("names done");
  }
}
