// A JVM that starts a second JVM with ProcessBuilder, as build tools and
// servers do (launchers_test.cc):
//   SpawnsJvm parent   calls parentWork(), then runs `java -cp CP SpawnsJvm child`
//                      (java.home's launcher, its own class path) and waits
//   SpawnsJvm child    calls childWork()
// The parent prints "child exited N".
public final class SpawnsJvm {
  static volatile long sink;

  static long parentWork(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += i * 3L;
    return s;
  }

  static long childWork(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += i * 7L;
    return s;
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("child")) {
      for (int i = 0; i < 50; i++) sink += childWork(1000);
      return;
    }
    for (int i = 0; i < 50; i++) sink += parentWork(1000);
    String java = System.getProperty("java.home") + "/bin/java";
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "SpawnsJvm", "child")
                    .inheritIO()
                    .start();
    System.out.println("child exited " + p.waitFor());
  }
}
