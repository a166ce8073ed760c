package lbtest;

final class StaticInit {
  static final class Holder {
    static final int VALUE;
    static {
      int v = 0;
      for (int i = 0; i < 4; i++) v += compute(i);
      VALUE = v;
    }
    static int compute(int i) { return i * 3; }
  }

  static final class Failing {
    static int x = explode();
    static int explode() {
      if (Boolean.parseBoolean("true")) throw new RuntimeException("clinit fails");
      return 1;
    }
  }

  static String tryIt() {
    try {
      return "x=" + Failing2.y;
    } catch (ExceptionInInitializerError e) {
      return "init error " + e.getCause().getMessage();
    }
  }

  static final class Failing2 {
    static int y = Failing.explode();
  }
}
