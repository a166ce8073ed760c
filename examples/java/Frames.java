// lookback's Java API in a program: each frame of a render loop is a scope,
// so `--slow-scope frame:50ms` dumps when one frame takes too long, and the
// program asks for a dump of its own at the end. Runs the same without the
// agent (every call is then a no-op).
//
//   javac -cp /usr/share/lookback/lookback.jar -d out examples/java/Frames.java
//   lookback record --slow-scope frame:50ms -- java -cp out:/usr/share/lookback/lookback.jar Frames
//   java -cp out:/usr/share/lookback/lookback.jar Frames        (no agent: no dumps)
import lookback.Lookback;

public final class Frames {
  static long layout(int i) {
    long h = i;
    for (int k = 0; k < 2000; k++) h = h * 31 + k;
    return h;
  }

  static void waitForReply(int frame) throws InterruptedException {
    if (frame == 12) Thread.sleep(120);  // the one slow frame: an IPC reply that came late
  }

  static long render(int frame) throws InterruptedException {
    long h = 0;
    for (int i = 0; i < 20; i++) h += layout(i);
    waitForReply(frame);
    return h;
  }

  public static void main(String[] args) throws Exception {
    System.out.println("lookback agent: " + (Lookback.enabled() ? "tracing this thread" : "not tracing"));
    long sink = 0;
    for (int frame = 0; frame < 20; frame++) {
      try (Lookback.Scope s = Lookback.scope("frame")) {
        sink += render(frame);
      }
      Thread.sleep(5);  // idle between frames, outside any scope
    }
    String path = Lookback.dump("frames done");
    System.out.println("dump: " + path + " (sink " + (sink & 1) + ")");
  }
}
