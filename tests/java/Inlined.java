// The always-inlined rule (docs/jvm.md, "Methods the JIT inlines"): getValue and
// leaf are methods C2 always inlines (<= 35 bytecode bytes, no calls, no loops,
// no handlers), so by default they get no probes; looping (a loop), bigLeaf
// (more than 35 bytes), withCall (a call) and work are traced. With
// --jvm-probe-inlined every one of them is. Prints the number of calls of
// getValue and of leaf, and a checksum.
//   java Inlined ROUNDS
public class Inlined {
  private int value;

  int getValue() { return value; }  // a trivial accessor

  static int leaf(int x) { return x < 0 ? -x : x * 3 + 1; }  // a forward branch, no call

  static int looping(int n) {  // tiny, but a loop
    int s = 0;
    for (int i = 0; i < n; i++) s += i;
    return s;
  }

  static int bigLeaf(int x) {  // no call, no loop, more than 35 bytes
    int a = x * 31 + 7, b = a ^ (x >>> 3), c = b * 17 + a, d = c - (b << 2);
    int e = d * 13 + c, f = e ^ (d >>> 5), g = f * 11 + e;
    return g + a + b + c + d + e + f;
  }

  static int withCall(int x) { return Math.abs(x); }  // tiny, but it calls

  static long work(Inlined o, int n) {
    long sum = 0;
    for (int i = 0; i < n; i++) sum += leaf(i) + o.getValue();
    return sum;
  }

  public static void main(String[] args) {
    final int rounds = Integer.parseInt(args[0]);
    final int n = 1000;
    Inlined o = new Inlined();
    o.value = 7;
    long s = 0;
    for (int r = 0; r < rounds; r++) {
      s += work(o, n) + looping(r) + bigLeaf(r) + withCall(-r);
    }
    System.out.println("getValue " + (long) rounds * n + " leaf " + (long) rounds * n + " sum " + s);
  }
}
