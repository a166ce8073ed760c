// Calls that the interpreter runs (bench/jvm_interpreter.sh runs it with
// -Xint): the probes of code not yet compiled, which is most of a JVM's
// start-up. main calls f, f calls g twice, so one top-level call is three
// traced calls and six trace points; f and g have loops, so the agent probes
// them (a method C2 always inlines gets no probes, docs/jvm.md).
//   java -Xint Interpreted CALLS
// Prints: interpreted calls=N elapsed_ns=T sink=S
public final class Interpreted {
  static int g(int x) {
    int s = 0;
    for (int i = 0; i < 2; i++) s += x ^ i;
    return s;
  }

  static int f(int x) {
    int s = 0;
    for (int i = 0; i < 2; i++) s += g(x + i);
    return s;
  }

  public static void main(String[] args) {
    final int calls = Integer.parseInt(args[0]);
    int sink = 0;
    for (int i = 0; i < calls / 10; i++) sink += f(i);  // the classes' first calls, outside the timing
    final long t0 = System.nanoTime();
    for (int i = 0; i < calls; i++) sink += f(i);
    final long t1 = System.nanoTime();
    System.out.println("interpreted calls=" + calls + " elapsed_ns=" + (t1 - t0) + " sink=" + sink);
  }
}
