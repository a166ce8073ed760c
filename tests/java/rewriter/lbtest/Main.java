package lbtest;

// Runs every scenario; its stdout must be the same with and without probes.
public final class Main {
  public static void main(String[] args) throws Exception {
    Exceptions.run();
    Recursion.run();
    Lambdas.run();
    System.out.println("static init: " + StaticInit.Holder.VALUE + " " + StaticInit.tryIt());
    Ctors.run();
    Sync.run();
    Switches.run();
    TryFinally.run();
    Loops.run();
    Defaults.run();
    System.out.println("big: " + BigMethod.big(3, 10) + " " + BigMethod.big(2499, 1) + " " + BigMethod.huge(5) + " " + BigMethod.fat(3) + " " + BigMethod.many(3) + " " + BigMethod.many(-1));
    Misc.run();
    GT.write();
  }
}
