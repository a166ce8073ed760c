// JVM round-trip program: threads run a seeded pseudo-random call tree over
// eight methods that recurse, throw and catch exceptions 1, 2 and 5 frames
// up, and log their own calls (GroundTruth).
//   java CallTree THREADS CALLS SEED GROUND_TRUTH_FILE
public class CallTree {
  static final class Boom extends RuntimeException {
    final int frames;
    Boom(int frames) { super(null, null, false, false); this.frames = frames; }
  }

  static int next(int[] s) {
    s[0] = s[0] * 1103515245 + 12345;
    return (s[0] >>> 16) & 0x7fff;
  }

  static int f0(int d, int[] s) {
    GroundTruth.enter("int CallTree.f0(int, int[])");
    try { return d <= 0 ? 1 : call(d - 1, s) + 1; } finally { GroundTruth.exit("int CallTree.f0(int, int[])"); }
  }

  static int f1(int d, int[] s) {
    GroundTruth.enter("int CallTree.f1(int, int[])");
    try { return d <= 0 ? 2 : call(d - 1, s) + call(d - 1, s); } finally { GroundTruth.exit("int CallTree.f1(int, int[])"); }
  }

  // Recursion: f2 calls itself.
  static int f2(int d, int[] s) {
    GroundTruth.enter("int CallTree.f2(int, int[])");
    try { return d <= 0 ? 3 : f2(d - 1, s) + 1; } finally { GroundTruth.exit("int CallTree.f2(int, int[])"); }
  }

  // Throws through `frames` frames of f3 and is caught by the first caller that is not f3.
  static int f3(int d, int[] s) {
    GroundTruth.enter("int CallTree.f3(int, int[])");
    try {
      int frames = 1 + next(s) % 3;
      frames = frames == 3 ? 5 : frames;  // 1, 2 or 5 frames
      return thrower(frames);
    } catch (Boom b) {
      return b.frames;
    } finally {
      GroundTruth.exit("int CallTree.f3(int, int[])");
    }
  }

  static int thrower(int frames) {
    GroundTruth.enter("int CallTree.thrower(int)");
    try {
      if (frames <= 1) throw new Boom(frames);
      return thrower(frames - 1) + 1;
    } finally {
      GroundTruth.exit("int CallTree.thrower(int)");
    }
  }

  synchronized static int f4(int d, int[] s) {
    GroundTruth.enter("int CallTree.f4(int, int[])");
    try { return d <= 0 ? 4 : call(d - 1, s) * 2; } finally { GroundTruth.exit("int CallTree.f4(int, int[])"); }
  }

  static int f5(int d, int[] s) {
    GroundTruth.enter("int CallTree.f5(int, int[])");
    try {
      switch (next(s) % 4) {  // tableswitch
        case 0: return 5;
        case 1: return d <= 0 ? 6 : call(d - 1, s);
        case 2: return 7;
        default: return 8;
      }
    } finally { GroundTruth.exit("int CallTree.f5(int, int[])"); }
  }

  static int call(int d, int[] s) {
    GroundTruth.enter("int CallTree.call(int, int[])");
    try {
      switch (next(s) % 6) {
        case 0: return f0(d, s);
        case 1: return f1(d, s);
        case 2: return f2(d, s);
        case 3: return f3(d, s);
        case 4: return f4(d, s);
        default: return f5(d, s);
      }
    } finally { GroundTruth.exit("int CallTree.call(int, int[])"); }
  }

  static void work(int calls, int seed) {
    GroundTruth.enter("void CallTree.work(int, int)");
    try {
      int[] s = {seed};
      long sum = 0;
      for (int i = 0; i < calls; i++) sum += call(4, s);
      if (sum == 42) System.out.print("");
    } finally { GroundTruth.exit("void CallTree.work(int, int)"); }
  }

  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]), calls = Integer.parseInt(args[1]), seed = Integer.parseInt(args[2]);
    if (threads <= 1) {
      work(calls, seed);
    } else {
      Thread[] ts = new Thread[threads];
      for (int t = 0; t < threads; t++) {
        final int me = t;
        ts[t] = new Thread(() -> work(calls, seed + me * 7919), "calltree-worker-" + t);
        ts[t].start();
      }
      for (Thread t : ts) t.join();
    }
    GroundTruth.write(args[3]);
  }
}
