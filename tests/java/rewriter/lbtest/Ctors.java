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

  static int checked(int x) {
    if (x < 0) throw new IllegalArgumentException("negative");
    return x;
  }

  static class Strict {
    final int v;
    Strict(int v) {
      if (v > 100) throw new IllegalStateException("too big");
      this.v = v;
    }
  }

  // Exceptions that leave a constructor before its super()/this() call has
  // returned, while `this` is still uninitialized.
  static class Picky extends Strict {
    // Thrown by the super(...) arguments.
    Picky(int x) { super(checked(x)); }
    // this(...) to a constructor whose superclass constructor throws: two
    // constructor frames unwound before `this` is initialized.
    Picky(long x) { this((int) x + 1000); }
    // Thrown by a nested `new` inside the arguments.
    Picky(String s) { super(new Strict(Integer.parseInt(s)).v); }
  }

  static String attempt(java.util.function.Supplier<Picky> make) {
    try {
      return "ok" + make.get().v;
    } catch (RuntimeException e) {
      return e.getClass().getSimpleName();
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
    System.out.println("picky: " + attempt(() -> new Picky(7)) + " " + attempt(() -> new Picky(-1)) + " " +
                       attempt(() -> new Picky(500)) + " " + attempt(() -> new Picky(5L)) + " " +
                       attempt(() -> new Picky("3")) + " " + attempt(() -> new Picky("300")) + " " +
                       attempt(() -> new Picky("x")));
  }
}
