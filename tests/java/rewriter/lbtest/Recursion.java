package lbtest;

final class Recursion {
  static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
  static boolean isEven(int n) { return n == 0 || isOdd(n - 1); }
  static boolean isOdd(int n) { return n != 0 && isEven(n - 1); }
  static int ackermannish(int m, int n) {
    if (m == 0) return n + 1;
    if (n == 0) return ackermannish(m - 1, 1);
    return ackermannish(m - 1, ackermannish(m, n - 1));
  }
  static void run() {
    System.out.println("recursion: " + fib(12) + " " + isEven(21) + " " + ackermannish(2, 2));
  }
}
