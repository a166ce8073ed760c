package lbold;

// A program of the kind old class files hold, for the rewriter's test of
// class files older than version 50 (rewriter_test.cc): compiled with
// --release 8, then turned into version 49 (Java 5) by dropping every
// StackMapTable, so HotSpot verifies it by type inference. No lambdas or
// invokedynamic (not allowed before version 51). Loops, a switch, exceptions
// caught one and three frames up, a constructor whose super() argument is
// computed by a call, synchronized, recursion.
public class Old {
  static class Base {
    final int v;
    Base(int v) { this.v = v; }
  }

  static class Derived extends Base {
    Derived(int x) { super(twice(x)); }
  }

  static int twice(int x) {
    if (x < 0) throw new IllegalArgumentException("negative");
    return 2 * x;
  }

  static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

  static int classify(int k) {
    switch (k % 4) {
      case 0: return 10;
      case 1: return 20;
      case 2: return 30;
      default: return 40;
    }
  }

  static void deep(int n) {
    if (n == 0) throw new IllegalStateException("bottom");
    deep(n - 1);
  }

  static synchronized int locked(int x) { return x + 1; }

  public static void main(String[] args) {
    long sum = 0;
    for (int i = 0; i < 50; i++) sum += classify(i) + locked(i);
    sum += fib(12);
    sum += new Derived(21).v;
    try {
      new Derived(-1);
    } catch (IllegalArgumentException e) {
      sum += 1000;
    }
    try {
      deep(3);
    } catch (IllegalStateException e) {
      sum += 2000;
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 3; i++) sb.append(i).append(',');
    System.out.println("old sum " + sum + " " + sb);
  }
}
