package lbtest;

class Ctors {
  final int a;
  final String s;

  Ctors(int a, String s) {
    this.a = a;
    this.s = s;
  }

  static int twice(int x) { return 2 * x; }
  static String name(int x) { return "n" + x; }

  static class Sub extends Ctors {
    final long extra;
    // super(...) arguments computed by calls, including a conditional and a nested new.
    Sub(int x) {
      super(x > 3 ? twice(x) : twice(twice(x)), new StringBuilder(name(x)).append('!').toString());
      extra = x * 100L;
    }
    // this(...) delegation.
    Sub() { this(twice(2)); }
    // Throws after super() returns: the catch-all records the exit.
    Sub(String bad) {
      super(1, bad);
      extra = Long.parseLong(bad);
    }
  }

  static void run() {
    Sub a = new Sub(2), b = new Sub(5), c = new Sub();
    String err;
    try {
      new Sub("notanumber");
      err = "none";
    } catch (NumberFormatException e) {
      err = "nfe";
    }
    System.out.println("ctors: " + a.a + a.s + a.extra + " " + b.a + b.s + " " + c.a + c.s + " " + err);
  }
}
