// A program that uses a JDK class (java.util.BitSet) that no JVM loads
// before main, from its first moments until it has run for args[0]
// milliseconds: with startup=defer its calls in the JVM's first second (or
// the LOOKBACK_JVM_STARTUP_WINDOW the test sets) are not recorded, later
// ones are. Prints how many calls it made.
import java.util.BitSet;

public final class DeferredJdk {
  static long step(BitSet b, int i) {
    b.set(i & 1023);
    return b.cardinality();
  }

  public static void main(String[] args) throws Exception {
    final long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
    final BitSet b = new BitSet();
    long sink = 0;
    int calls = 0;
    do {
      sink += step(b, calls++);
      Thread.sleep(2);
    } while (System.nanoTime() < end);
    System.out.println("calls " + calls + " sink " + (sink & 1));
  }
}
