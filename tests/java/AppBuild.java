// An "app" for the Android fleet test (tests/import/import_test.cc): frames
// that lay out, draw and decode. Build 2 decodes slower (the regression the
// fleet query must rank first).
//   java AppBuild BUILD FRAMES
public class AppBuild {
  static long sink;

  static void layout(int i) {
    for (int k = 0; k < 200; k++) sink += (long) k * i;
  }

  static void draw(int i) {
    for (int k = 0; k < 300; k++) sink ^= (long) k + i;
  }

  // Sleeps, so that the difference between the builds does not depend on
  // how loaded the machine is.
  static void decode(int build) throws InterruptedException {
    Thread.sleep(build == 2 ? 12 : 2);
  }

  static void frame(int build, int i) throws InterruptedException {
    layout(i);
    draw(i);
    decode(build);
  }

  public static void main(String[] args) throws Exception {
    int build = Integer.parseInt(args[0]), frames = Integer.parseInt(args[1]);
    for (int i = 0; i < frames; i++) frame(build, i);
    if (sink == 42) System.out.print("");
  }
}
