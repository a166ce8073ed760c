package lbtest;

// Exceptions thrown and caught 1, 2 and 5 frames up; ground truth by hand.
final class Exceptions {
  static int level(int depth, int throwAt) {
    GT.in("lbtest/Exceptions.level(II)I");
    try {
      if (depth == throwAt) throw new IllegalStateException("at " + depth);
      if (depth == 0) return 1;
      return level(depth - 1, throwAt) + 1;
    } finally {
      GT.out("lbtest/Exceptions.level(II)I");
    }
  }

  static int catchAt(int frames) {
    GT.in("lbtest/Exceptions.catchAt(I)I");
    try {
      return level(frames, 0);
    } catch (IllegalStateException e) {
      return -frames;
    } finally {
      GT.out("lbtest/Exceptions.catchAt(I)I");
    }
  }

  static void thrower() {
    GT.in("lbtest/Exceptions.thrower()V");
    try {
      Object o = null;
      o.hashCode();  // NullPointerException from the JVM itself
    } finally {
      GT.out("lbtest/Exceptions.thrower()V");
    }
  }

  static long rethrows(long x) throws Exception {
    GT.in("lbtest/Exceptions.rethrows(J)J");
    try {
      try {
        thrower();
      } catch (NullPointerException e) {
        throw new Exception("wrapped", e);
      }
      return x;
    } finally {
      GT.out("lbtest/Exceptions.rethrows(J)J");
    }
  }

  static void run() {
    StringBuilder sb = new StringBuilder("exceptions:");
    for (int frames : new int[] {1, 2, 5}) sb.append(' ').append(catchAt(frames));
    sb.append(' ').append(level(3, -1));
    try {
      rethrows(7);
    } catch (Exception e) {
      sb.append(' ').append(e.getMessage()).append('/').append(e.getCause().getClass().getSimpleName());
    }
    try {
      level(4, 2);
    } catch (IllegalStateException e) {
      sb.append(' ').append(e.getMessage());
    }
    System.out.println(sb);
  }
}
