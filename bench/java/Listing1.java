// Hubble's Listing 1 in Java, as the paper prints it (OSDI'22, §8.1): a
// method that does `work` iterations of a loop with a multiply and a divide,
// then calls itself until `depth` reaches 1 (depth 10 here), so one
// top-level call is 10 calls and 20 trace points, and every frame does the
// work, not only the last. `sum` is carried across calls so the JIT cannot
// delete the loop. Run by bench/jvm_listing1_driver.cc under each tracing
// mode.
//   java Listing1 WORK CALLS WARMUP
// Prints: listing1 work=W calls=N warmup=M elapsed_ns=T sink=S
public final class Listing1 {
  static final int DEPTH = 10;
  static long sinkField;

  public long test(int depth, int work, long sum) {
    for (int i = 0; i < work; i++) {
      sum *= i - 1;
      sum /= i + 2;
    }
    if (depth > 1) return test(depth - 1, work, sum);
    return sum;
  }

  public static void main(String[] args) {
    final int work = Integer.parseInt(args[0]);
    final long calls = Long.parseLong(args[1]), warmup = Long.parseLong(args[2]);
    final Listing1 l = new Listing1();
    long sink = 0;
    for (long i = 0; i < warmup; i++) sink += l.test(DEPTH, work, i);
    final long t0 = System.nanoTime();
    for (long i = 0; i < calls; i++) sink += l.test(DEPTH, work, i);
    final long t1 = System.nanoTime();
    sinkField = sink;
    System.out.println("listing1 work=" + work + " calls=" + calls + " warmup=" + warmup + " elapsed_ns=" + (t1 - t0)
                       + " sink=" + sink);
  }
}
