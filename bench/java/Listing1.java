// Hubble's Listing 1 in Java (bench/listing1.cc is the native one): a call
// chain of depth 10 whose leaf does `work` iterations of a loop, called many
// times. Run by bench/jvm_listing1_driver.cc under each tracing mode.
//   java Listing1 WORK CALLS WARMUP
// Prints: listing1 work=W calls=N warmup=M elapsed_ns=T sink=S
public final class Listing1 {
  static long sinkField;

  static long leaf(int work) {
    long acc = work;
    for (int i = 0; i < work; i++) acc = acc * 31 + i;  // a use the JIT cannot fold away
    return acc;
  }
  static long l1(int w) { return leaf(w) + 1; }
  static long l2(int w) { return l1(w) + 2; }
  static long l3(int w) { return l2(w) + 3; }
  static long l4(int w) { return l3(w) + 4; }
  static long l5(int w) { return l4(w) + 5; }
  static long l6(int w) { return l5(w) + 6; }
  static long l7(int w) { return l6(w) + 7; }
  static long l8(int w) { return l7(w) + 8; }
  static long l9(int w) { return l8(w) + 9; }

  public static void main(String[] args) {
    final int work = Integer.parseInt(args[0]);
    final long calls = Long.parseLong(args[1]), warmup = Long.parseLong(args[2]);
    long sink = 0;
    for (long i = 0; i < warmup; i++) sink += l9(work);
    final long t0 = System.nanoTime();
    for (long i = 0; i < calls; i++) sink += l9(work);
    final long t1 = System.nanoTime();
    sinkField = sink;
    System.out.println("listing1 work=" + work + " calls=" + calls + " warmup=" + warmup + " elapsed_ns=" + (t1 - t0)
                       + " sink=" + sink);
  }
}
