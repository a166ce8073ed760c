package lbtest;

final class Defaults {
  interface Shape {
    double area();
    default String describe() { return name() + " " + helper(area()); }
    private String helper(double a) { return String.format("%.1f", a); }
    static Shape unit() {
      return new Shape() {
        public double area() { return 1.0; }
        public String name() { return "unit"; }
      };
    }
    String name();
  }
  record Square(double side) implements Shape {
    public double area() { return side * side; }
    public String name() { return "square"; }
  }
  static final class Named implements Shape, Comparable<Named> {
    public double area() { return 2; }
    public String name() { return "named"; }
    @Override public String describe() { return "custom " + Shape.super.describe(); }
    public int compareTo(Named o) { return 0; }  // and a bridge compareTo(Object)
  }
  static void run() {
    Shape u = Shape.unit();
    Comparable<Named> c = new Named();
    System.out.println("defaults: " + new Square(3).describe() + " / " + new Named().describe() + " / "
        + (u.area() + 1) + " " + c.compareTo(new Named()) + " " + new Square(2));
  }
}
