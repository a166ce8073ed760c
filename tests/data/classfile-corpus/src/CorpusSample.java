// Source of the seed corpus (javac 17 -g; see README): native, abstract and
// bridge methods, a constructor with computed super() arguments, switches,
// try/catch/finally, a lambda, long/double locals.
import java.util.function.IntSupplier;

abstract class CorpusBase implements Comparable<CorpusBase> {
  final int v;
  CorpusBase(int v) { this.v = v; }
  abstract int kind();
  native long nativeTime();
  public int compareTo(CorpusBase o) { return Integer.compare(v, o.v); }
}

public final class CorpusSample extends CorpusBase {
  static final int[] TABLE;
  static { TABLE = new int[] {1, 2, 3}; }

  CorpusSample(int x) { super(x > 0 ? square(x) : -x); }
  static int square(int x) { return x * x; }
  int kind() { return 1; }

  static int sw(int x) {
    switch (x) {
      case 1: return 10;
      case 2: return 20;
      case 3: return 30;
      case 100: return 1;
      default: return 0;
    }
  }
  static double mix(long a, double b) {
    double r = 0;
    for (long i = 0; i < a; i++) {
      try {
        r += b / (i - 3);
        if (r > 100) throw new IllegalStateException();
      } catch (IllegalStateException e) {
        r = 0;
      } finally {
        r += 1;
      }
    }
    return r;
  }
  synchronized int locked(Object o) {
    synchronized (o) { return v + TABLE[0]; }
  }
  public static void main(String[] args) {
    IntSupplier s = () -> sw(2);
    System.out.println(s.getAsInt() + mix(5, 2.0) + new CorpusSample(3).locked(new Object()));
  }
}

interface CorpusShape {
  double area();
  default String describe() { return "area " + area(); }
  static CorpusShape unit() { return () -> 1.0; }
}

enum CorpusColor {
  RED, GREEN;
  int weight() { return switch (this) { case RED -> 1; case GREEN -> 2; }; }
}
