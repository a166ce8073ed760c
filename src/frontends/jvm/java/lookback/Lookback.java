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
 * natives of every class. An agent attached later ({@code lookback attach})
 * tells this class so, and the calls work from then on.
 *
 * <pre>{@code
 * try (Lookback.Scope frame = Lookback.scope("frame")) {
 *   render();
 * }
 * String path = Lookback.dump("user pressed the report button");
 * }</pre>
 */
public final class Lookback {
  // Whether the agent's natives link. Not final: `lookback attach` sets it
  // when it loads the agent into a JVM where this class said no (agent.cc,
  // EnableJavaApi). A native call can still fail while that attach is under
  // way (HotSpot lists an attached agent's library once Agent_OnAttach
  // returned): each call then falls back to the no-op.
  private static volatile boolean agent = agentLoaded();

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
    if (!agent) return null;
    try {
      return dump0(reason == null ? "java" : reason);
    } catch (UnsatisfiedLinkError e) {
      return null;
    }
  }

  /** True when lookback's agent is loaded and the calling thread is being traced. */
  public static boolean enabled() {
    if (!agent) return false;
    try {
      return enabled0();
    } catch (UnsatisfiedLinkError e) {
      return false;
    }
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
    boolean open = false;
    if (agent) {
      try {
        open = scopeBegin0(name);
      } catch (UnsatisfiedLinkError e) {
        open = false;
      }
    }
    return new Scope(name, open);
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
