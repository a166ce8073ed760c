package lbtest;

import java.util.*;

// Anonymous and inner classes, varargs, arrays of arrays, instanceof patterns,
// a method that only throws, and an empty loop at offset 0.
final class Misc {
  class Inner {
    int v() { return outerField * 2; }
  }
  int outerField = 21;

  static int sum(int... xs) {
    int s = 0;
    for (int x : xs) s += x;
    return s;
  }
  static Object pick(int i) {
    Object[][] grid = {{"a", 1}, {2L, 3.0}};
    return grid[i / 2][i % 2];
  }
  static String pattern(Object o) {
    if (o instanceof String s && !s.isEmpty()) return "S" + s;
    if (o instanceof Long l) return "L" + (l + 1);
    return "O" + o;
  }
  static void alwaysThrows() { throw new UnsupportedOperationException("never"); }
  static int spin(int n) {
    while (n > 0) n--;  // the loop's target is offset 0
    return n;
  }
  static void run() {
    Misc m = new Misc();
    Comparator<String> byLen = new Comparator<String>() {
      @Override public int compare(String a, String b) { return Integer.compare(a.length(), b.length()); }
    };
    List<String> l = new ArrayList<>(List.of("ccc", "a", "bb"));
    l.sort(byLen);
    String t;
    try {
      alwaysThrows();
      t = "no";
    } catch (UnsupportedOperationException e) {
      t = e.getMessage();
    }
    System.out.println("misc: " + m.new Inner().v() + " " + sum(1, 2, 3) + " " + pattern(pick(0)) + pattern(pick(2))
        + pattern(pick(3)) + " " + l + " " + t + " " + spin(5));
  }
}
