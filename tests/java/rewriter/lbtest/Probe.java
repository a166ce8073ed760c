package lbtest;

import java.io.*;
import java.nio.file.*;
import java.util.*;

// The probe the rewritten test classes call. Besides logging each event, it
// checks every event against the real stack (StackWalker): the probe's shadow
// stack must equal the traced frames the JVM actually has, so a missed or
// extra enter/exit (for example an exception leaving a frame without its exit)
// shows up at the very next event.
public final class Probe {
  private static final Map<Integer, String> NAMES = new HashMap<>();
  private static final Set<String> TRACED = new HashSet<>();
  private static final ThreadLocal<ArrayDeque<Integer>> SHADOW = ThreadLocal.withInitial(ArrayDeque::new);
  private static final PrintStream LOG;
  private static int errors, events;
  private static final int DECLINE = Integer.getInteger("lbtest.decline", 0);  // see enter
  private static int declined;

  static {
    try {
      for (String line : Files.readAllLines(Paths.get(System.getProperty("lbtest.ids")))) {
        String[] f = line.split(" ");
        String key = f[1] + "." + f[2] + f[3];
        NAMES.put(Integer.parseInt(f[0]), key);
        TRACED.add(key);
      }
      LOG = new PrintStream(new FileOutputStream(System.getProperty("lbtest.log")), true);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      synchronized (Probe.class) {
        LOG.println("declined " + declined);
        LOG.println("events " + events + " errors " + errors);
      }
    }));
  }

  private Probe() {}

  private static List<String> realStack() {
    return StackWalker.getInstance().walk(s -> s
        .map(f -> f.getClassName().replace('.', '/') + "." + f.getMethodName() + f.getDescriptor())
        .filter(TRACED::contains)
        .collect(java.util.stream.Collectors.toList()));
  }

  // The one documented gap: an exception thrown inside a constructor's
  // super()/this() call leaves that constructor without its exit (no handler
  // can cover the call, see docs/jvm.md). Like lookback's decoder, drop such
  // frames once the real stack shows they are gone, and log each one, so the
  // test can check that this is the only way frames go missing.
  private static void dropUnwoundConstructors(List<String> real) {
    List<Integer> bottomFirst = new ArrayList<>(SHADOW.get());
    Collections.reverse(bottomFirst);
    List<String> realBottomFirst = new ArrayList<>(real);
    Collections.reverse(realBottomFirst);
    int depth = 0;
    for (Iterator<Integer> it = bottomFirst.iterator(); it.hasNext();) {
      final int id = it.next();
      String name = NAMES.get(id < 0 ? ~id : id);
      if (depth < realBottomFirst.size() && realBottomFirst.get(depth).equals(name)) {
        depth++;
      } else if (name.contains(".<init>(")) {
        it.remove();
        LOG.println("UNWOUND " + name);
      } else {
        return;  // a real mismatch: leave it to check()
      }
    }
    ArrayDeque<Integer> d = SHADOW.get();
    d.clear();
    for (int id : bottomFirst) d.push(id);
  }

  private static void check(String what) {
    List<String> real = realStack();
    dropUnwoundConstructors(real);
    List<String> shadow = new ArrayList<>();
    for (int id : SHADOW.get()) shadow.add(NAMES.get(id < 0 ? ~id : id));  // ArrayDeque iterates top first
    if (!shadow.equals(real)) {
      errors++;
      if (errors < 20) LOG.println("MISMATCH at " + what + "\n  probe " + shadow + "\n  real  " + real);
    }
  }

  // -Dlbtest.decline=N: enter declines one call in N (says it did not
  // record), as lookback's probe does for a method the overhead budget sheds,
  // and the decisions change from call to call, so they change while frames
  // run. The rewritten method must hand each exit its own entry's decision:
  // the shadow stack keeps declined frames too (as ~id), and an exit whose
  // `entered` differs from its frame's decision is a mismatch.
  public static synchronized boolean enter(int id) {
    events++;
    final boolean record = DECLINE == 0 || events % DECLINE != 0;
    SHADOW.get().push(record ? id : ~id);
    if (record) {
      LOG.println("> " + NAMES.get(id));
    } else {
      declined++;
    }
    check("enter " + NAMES.get(id));
    return record;
  }

  public static synchronized void exit(int id, boolean entered) {
    events++;
    check("exit " + NAMES.get(id));
    ArrayDeque<Integer> s = SHADOW.get();
    final int want = entered ? id : ~id;
    if (s.isEmpty() || s.peek() != want) {
      errors++;
      LOG.println("MISMATCH exit " + NAMES.get(id) + (entered ? "" : " (declined)") + " top " +
                  (s.isEmpty() ? "none" : (s.peek() < 0 ? "declined " + NAMES.get(~s.peek()) : NAMES.get(s.peek()))));
    } else {
      s.pop();
    }
    if (entered) LOG.println("< " + NAMES.get(id));
  }
}
