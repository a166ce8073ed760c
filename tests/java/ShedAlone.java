// The shed memory and a class that only holds what it remembers
// (budget_test.cc, BudgetJvm.AClassWhoseOnlyProbedMethodIsRememberedNamesItAsShed):
// Alone.step() is the one method of its type that gets probes (it has a
// loop; an interface has no constructor), and it is called far too often to
// trace within any budget. Traced with --jvm-include 'ShedAlone*' (main() too), a
// later run leaves the class exactly as it is, and must still name step()
// as shed. Prints the sum, the same in every run.
//   java ShedAlone SECONDS
public final class ShedAlone {
  interface Alone {
    static int step(int x) {
      int s = 0;
      for (int i = 0; i < 4; i++) s += x * 3 + i;
      return s;
    }
  }

  public static void main(String[] args) {
    final long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
    long sum = 0, calls = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 1000; i++) sum += Alone.step(i);
      calls += 1000;
    }
    System.out.println("per call " + (sum / calls > 0 ? "positive" : "not positive"));
  }
}
