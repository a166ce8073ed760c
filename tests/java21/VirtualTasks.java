// Virtual threads (JDK 21 and later; compiled by jvm_test.cc with a JDK it
// finds under /usr/lib/jvm, not by the build's javac):
//   java VirtualTasks virtual    runs 20 tasks on virtual threads, each sleeping
//                                between calls (an unmount per sleep)
//   java VirtualTasks platform   the same tasks on a pool of platform threads
// Prints the sum of the tasks' results, the same either way.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public class VirtualTasks {
  static long step(int i) throws InterruptedException {
    long s = 0;
    for (int k = 0; k < 100; k++) s += (long) k * i;
    Thread.sleep(1);
    return s;
  }

  static long task(int t) throws InterruptedException {
    long s = 0;
    for (int i = 0; i < 10; i++) s += step(t + i);
    return s;
  }

  public static void main(String[] args) throws Exception {
    final boolean virtual = args.length > 0 && args[0].equals("virtual");
    long sum = 0;
    try (ExecutorService ex = virtual ? Executors.newVirtualThreadPerTaskExecutor() : Executors.newFixedThreadPool(4)) {
      List<Future<Long>> results = new ArrayList<>();
      for (int t = 0; t < 20; t++) {
        final int id = t;
        results.add(ex.submit(() -> task(id)));
      }
      for (Future<Long> f : results) sum += f.get();
    }
    System.out.println("sum " + sum);
  }
}
