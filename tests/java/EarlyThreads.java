// Makes HotSpot's Reference Handler thread (started before any JVMTI
// ThreadStart event) run Java code: a weakly reachable object is collected
// and its reference enqueued, which that thread does (jvm_test.cc).
// Prints "enqueued" once the reference came through the queue.
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;

public final class EarlyThreads {
  public static void main(String[] args) throws Exception {
    ReferenceQueue<Object> queue = new ReferenceQueue<>();
    WeakReference<Object> ref = new WeakReference<>(new Object(), queue);
    for (int i = 0; i < 50 && queue.poll() == null; i++) {
      System.gc();
      if (queue.remove(100) != null) {
        System.out.println("enqueued");
        return;
      }
    }
    System.out.println(ref.get() == null ? "enqueued" : "not collected");
  }
}
