// Java and native code in one thread, for jvm_test.cc: Java calls a native
// method (tests/programs/jni_mixed.c, built with lookback's hooks), which
// calls native functions, which call back into Java.
//   java -Dmixed.lib=PATH MixedJni mixed   three rounds of javaOuter -> native -> callback -> javaLeaf
//   java -Dmixed.lib=PATH MixedJni crash   thread "jni-crasher": javaCrashOuter -> native -> SIGSEGV
public final class MixedJni {
  static {
    System.load(System.getProperty("mixed.lib"));
  }

  static native int nativeWork(int n);
  static native void crashNative();

  static int javaLeaf(int n) { return 2 * n; }
  static int callback(int n) { return javaLeaf(n) + 1; }
  static int javaOuter(int n) { return nativeWork(n); }
  static void javaCrashOuter() { crashNative(); }

  public static void main(String[] args) throws Exception {
    if (args[0].equals("mixed")) {
      int sum = 0;
      for (int i = 0; i < 3; i++) sum += javaOuter(i);
      System.out.println("mixed " + sum);
    } else {
      Thread t = new Thread(MixedJni::javaCrashOuter, "jni-crasher");
      t.start();
      t.join();
    }
  }
}
