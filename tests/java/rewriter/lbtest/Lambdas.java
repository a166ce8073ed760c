package lbtest;

import java.util.*;
import java.util.function.*;
import java.util.stream.*;

final class Lambdas {
  private final int base;
  Lambdas(int base) { this.base = base; }
  int add(int x) { return x + base; }
  static int square(int x) { return x * x; }

  static void run() {
    Lambdas l = new Lambdas(10);
    IntUnaryOperator captured = x -> l.add(x) * 2;
    Function<Integer, Integer> ref = Lambdas::square;
    IntUnaryOperator bound = l::add;
    Supplier<List<String>> ctorRef = ArrayList::new;
    List<String> list = ctorRef.get();
    list.add("b");
    list.add("a");
    list.sort(Comparator.comparing(s -> s.toUpperCase()));
    int sum = IntStream.range(0, 5).map(x -> captured.applyAsInt(x)).map(bound).sum();
    String joined = Stream.of(3, 1, 2).map(ref).sorted().map(String::valueOf).collect(Collectors.joining(","));
    Runnable r = () -> {
      try {
        Stream.of(1, 2, 0).map(x -> 6 / x).forEach(x -> {});
      } catch (ArithmeticException e) {
        System.out.println("lambda caught " + e.getMessage());
      }
    };
    r.run();
    System.out.println("lambdas: " + sum + " " + joined + " " + list);
  }
}
