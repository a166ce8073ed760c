package lookback;

/**
 * lookback's Java API (lookback.jar): ask for a dump, mark scopes that a
 * duration objective watches ({@code --slow-scope}), and ask whether the
 * calling thread is being traced.
 *
 * <p>Every call is a cheap no-op when the JVM runs without lookback's agent,
 * so code can keep these calls in production builds: {@link #dump} returns
 * null, {@link #enabled} false, and scopes do nothing. The natives are found
 * in the agent's library (liblookback-jvm.so), which HotSpot searches for
 * natives of every class.
 *
 * <pre>{@code
 * try (Lookback.Scope frame = Lookback.scope("frame")) {
 *   render();
 * }
 * String path = Lookback.dump("user pressed the report button");
 * }</pre>
 */
public final class Lookback {
  private static final boolean AGENT = agentLoaded();

  private Lookback() {}

  private static boolean agentLoaded() {
    try {
      return available0();
    } catch (UnsatisfiedLinkError e) {
      return false;  // no agent: every call is a no-op
    }
  }

  /**
   * Writes a dump of every traced thread now, on the calling thread (which
   * waits for it, typically a few milliseconds per traced thread).
   *
   * @param reason recorded in the dump (shown by {@code lookback info})
   * @return the dump's path, or null without the agent or when the dump was
   *     not written (rate limit, full disk: the agent says why on stderr)
   */
  public static String dump(String reason) {
    return AGENT ? dump0(reason == null ? "java" : reason) : null;
  }

  /** True when lookback's agent is loaded and the calling thread is being traced. */
  public static boolean enabled() {
    return AGENT && enabled0();
  }

  /**
   * Begins a scope: a named span of the calling thread's work (a frame, a
   * request), shown as a call named {@code name} in the trace. With
   * {@code --slow-scope NAME:DURATION} a scope that runs longer triggers a
   * dump; {@code --stall} treats a thread outside every scope as idle. Close
   * it on the same thread, with try-with-resources; scopes nest.
   */
  public static Scope scope(String name) {
    if (name == null) throw new NullPointerException("name");
    return new Scope(name, AGENT && scopeBegin0(name));
  }

  /** A scope begun by {@link #scope}; {@link #close} ends it (once). */
  public static final class Scope implements AutoCloseable {
    private final String name;
    private final Thread owner;
    private boolean open;

    private Scope(String name, boolean open) {
      this.name = name;
      this.owner = Thread.currentThread();
      this.open = open;
    }

    /** Ends the scope; a second call, or a call from another thread, does nothing. */
    @Override
    public void close() {
      if (!open || Thread.currentThread() != owner) return;
      open = false;
      scopeEnd0(name);
    }
  }

  private static native boolean available0();
  private static native String dump0(String reason);
  private static native boolean enabled0();
  private static native boolean scopeBegin0(String name);
  private static native void scopeEnd0(String name);
}
