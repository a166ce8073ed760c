package lbtest;

final class Loops {
  static double mix(long n, double scale) {
    long acc = 1;
    double d = 0.5;
    for (long i = 0; i < n; i++) {
      acc = acc * 31 + i;
      d = d * scale + (acc & 7);
      if (d > 1e6) d /= 3;
      float f = (float) d;
      if (f < 0) continue;
    }
    int k = 0;
    do {
      k += 2;
    } while (k < 10);
    while (true) {
      if (--k < 3) break;
    }
    return d + acc % 1000 + k;
  }
  static long nestedLoops(int n) {
    long total = 0;
    outer:
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (j > i) continue outer;
        if (i * j > 40) break outer;
        total += (long) i * j;
      }
    }
    return total;
  }
  static void run() {
    System.out.println("loops: " + mix(50, 1.5) + " " + nestedLoops(12));
  }
}
