// Ground truth for the JVM tests: the program logs its own calls (entry and
// exit, in ART PrettyMethod style) per thread and writes them at the end as
// "<java thread name>\tENTER|EXIT\t<method>" lines. The tests compare this
// with what lookback recorded for the methods of the logging class.
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

public final class GroundTruth {
  private static final List<List<String>> all = new ArrayList<>();
  private static final ThreadLocal<List<String>> mine = ThreadLocal.withInitial(() -> {
    List<String> l = new ArrayList<>();
    l.add(Thread.currentThread().getName());
    synchronized (all) { all.add(l); }
    return l;
  });

  public static void enter(String method) { mine.get().add("ENTER\t" + method); }
  public static void exit(String method) { mine.get().add("EXIT\t" + method); }

  public static void write(String path) throws Exception {
    try (PrintWriter w = new PrintWriter(path)) {
      synchronized (all) {
        for (List<String> l : all) {
          for (int i = 1; i < l.size(); i++) w.println(l.get(0) + "\t" + l.get(i));
        }
      }
    }
  }
}
