// Thread renames after start, for jvm_test.cc: a thread renaming itself, and
// one thread renaming another that is already running. Every traced method
// says where it ran in its name; the test checks the names in the dump and,
// with --threads, that a thread is picked up once it takes a matching name.
//   java Renames
public final class Renames {
  static volatile boolean renamed;

  static int beforeRename(int n) { return n <= 0 ? 0 : 1 + beforeRename(n - 1); }
  static int afterRename(int n) { return n <= 0 ? 0 : 1 + afterRename(n - 1); }
  static int renamedByOther(int n) { return n <= 0 ? 0 : 1 + renamedByOther(n - 1); }

  public static void main(String[] args) throws Exception {
    Thread.currentThread().setName("main-renamed-by-itself");
    Thread self = new Thread(() -> {
      beforeRename(3);
      Thread.currentThread().setName("self-renamed-worker-thread");
      afterRename(4);
    }, "worker-original");
    self.start();
    self.join();
    Thread other = new Thread(() -> {
      beforeRename(2);
      while (!renamed) Thread.onSpinWait();
      renamedByOther(5);
    }, "other-original");
    other.start();
    Thread.sleep(20);  // (only so that the rename usually finds the thread running: either way is correct)
    other.setName("other-renamed-by-main");
    renamed = true;
    other.join();
    System.out.println("renames done");
  }
}
