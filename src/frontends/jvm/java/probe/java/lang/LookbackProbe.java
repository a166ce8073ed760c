/*
 * The class every inlined probe calls (docs/jvm.md, "How a probe writes").
 * The JVM agent defines it into java.base (boot loader, package java.lang),
 * so that every class, java.base's own included, can call it; it is never on
 * a class path. The build compiles it with --patch-module java.base and
 * embeds the bytes in the agent (src/frontends/jvm/probe_class.h).
 *
 * C2 inlines enter/exit into every traced method's hot code; C1 calls them.
 * With tracing off a probe costs a static load and a branch. With it on, a
 * thread whose ring reads the clock once per group of records (the fast
 * clock) writes the untimed records between readings here, with plain stores
 * into its ring, as the C++ hot path would (src/runtime/hot_path.h,
 * RecordNow): no call into native code. Where the agent found HotSpot's own
 * TSC read (jfr_clock.cc), the timed records of the exact common case are
 * written here too, stamped by jdk.jfr.internal.JVM.counterTime(), which C1
 * and C2 compile to a leaf call of an rdtsc (no JNI transition). Every other
 * record goes to enterNative/exitNative, the recorder's own hot path.
 */
package java.lang;

import jdk.internal.misc.Unsafe;
import jdk.internal.vm.annotation.Stable;
import jdk.jfr.internal.JVM;

public final class LookbackProbe {
  /** Tracing started: set by the agent. */
  public static boolean on;
  private static final Unsafe U = Unsafe.getUnsafe();

  // The ring's layout and the record's encoding, handed over by the agent
  // that defined this class (natives.cc, ProbeLayout), which reads them from
  // src/runtime/hot_path.h and src/format/format.h: constants to C2.
  private static final long POS = layout(0), LAP = layout(16), CLOCK_MASK = layout(4), FILTERED = layout(6);
  private static final long METHOD_KEY = layout(7);      // LB_METHOD_KEY(0)
  private static final long UNTIMED_ENTRY = layout(8);   // MakeUntimed(false, 0)
  private static final long UNTIMED_EXIT = layout(9);    // MakeUntimed(true, 0)
  // Per Java thread id, 16 bytes: the thread's ring (0 not known yet, -1
  // none to write: the natives record, else its address), then its on-CPU
  // word's address. Native memory of the agent.
  private static final long RINGS = layout(10), RING_COUNT = layout(11);
  // The exact path's fields (hot_path.h, RecordAtPos) and the TSC bits an
  // EVENT keeps (format.h, kTscLowBits).
  private static final long NEXT_SYNC = layout(17), EPOCH_TSC = layout(18), HOT_BASE = layout(19);
  private static final long HOT_TAG = layout(20), SLOTS = layout(21), MASK = layout(22), TSC_LOW_BITS = layout(23);
  private static final long FILTER = layout(12);         // where the filter table is published (exclude.h)
  // A guard byte per method id (jvm_agent.h, JavaGuards): nonzero while the
  // overhead budget sheds the method. 0 guards: the runtime takes none.
  private static final long GUARDS = layout(13), GUARD_COUNT = layout(14);
  // The same guards, as C2 sees them: a shed method's byte here is set by
  // the agent (shed.cc, Fold) once the budget sheds it, and cleared only
  // with a retransform of its class, which throws away the compiled code
  // that may have read it. @Stable (honoured in java.base): a non-zero
  // element read at a constant index is a constant to C2, so a probe
  // compiled after its method was shed is no code at all, where the guard
  // byte above leaves a load, a branch and, in the shared profile of a JVM
  // where other methods record, the call that records (docs/jvm.md, "The
  // overhead budget"). Pages of 4096 ids, allocated by the agent.
  @Stable private static final byte[][] FOLD = new byte[(int) (GUARD_COUNT >>> 12)][];
  // Untimed records are written here: the agent decides before it defines
  // this class (the runtime's clock and ring ABI, lb_thread_fast_ring). A
  // constant, so that with the exact clock neither C1 nor C2 compiles the
  // untimed path into every probe: C1's code for javac grew 2.4-fold when
  // every probe carried it (docs/jvm.md, "Costs").
  private static final boolean DIRECT = layout(15) != 0;
  // Timed records are written here: the agent sets these once it has found
  // HotSpot's TSC epoch (jfr_clock.cc: counterTime() + TSC_EPOCH is the raw
  // TSC the recorder reads, to the tick) and made jdk.jfr.internal.JVM
  // readable and initialised; TSC_EPOCH first. @Stable: 0 and false are read
  // at run time, set values are constants to C2, so code compiled before the
  // switch still sees it.
  @Stable private static long TSC_EPOCH;
  @Stable private static boolean TIMED;
  // DIRECT || TIMED: the one test enter and exit make before write (exit must
  // stay small enough for C1 to inline it).
  @Stable private static boolean WRITES = DIRECT;
  // Thread.tid: read as a field, since a subclass may override getId().
  private static final long TID = tidOffset();

  // enter/exit: their size is chosen for the two JITs. enter is larger than
  // C1's inlining limit (C1MaxInlineSize, 35 bytes of bytecode) and not
  // @ForceInline, so C1's code (tiers 2 and 3, with a profile counter at every
  // branch) calls it instead of carrying a copy per probe; both are within
  // C2's limit for hot call sites (FreqInlineSize, 325), where a probe always
  // is in a hot method, so C2 inlines them there. exit, three tests and a
  // call since it reads no guard, is small enough for C1 to inline. With
  // both (guards and all) forced into every site, javac (bench/jvm_workload.sh)
  // ran 1.3x longer, C1's compiled code being twice the size; Listing 1's cost
  // per trace point is the same either way. (ProbeClass.EnterIsInlinedByC2ButCalledByC1
  // checks the sizes.)
  // write (and what it calls) is left to C2 too: forced into every probe of
  // javac it ran 4.8x plain instead of 2.3x, and a call at every site
  // (@DontInline) cost Listing 1 0.9 ns a trace point.
  //
  // The guard byte: a shed method's call costs its load and a branch, where
  // the recorder's filter cost a call into native code (a JNI transition on
  // JDK 18 and later). id is a constant at every probe, so C2 folds the
  // bounds test and the address. Only the entry reads it: enter returns
  // whether it recorded, the rewritten method keeps that in a local of its
  // own, and hands it to each of its exits (rewriter.h), so an invocation's
  // exits follow its entry's decision while the budget sheds or brings back
  // its method (nesting stays exact: an exit read the guard again before
  // 2026-11-28, and a frame running when its method was shed lost its exit,
  // which the decoder closed where its caller moved on, up to milliseconds
  // later). Where C2 folds a shed method's entry to false, the exits fold
  // with it.
  //
  // The interpreter runs every probe of a class's first calls, so the tests
  // are written out here, not in a helper, and read memory through Unsafe's
  // (Object, long) natives, not its address-only wrappers: the interpreter
  // pays a frame for every call, C2 and C1 inline both forms alike. Under
  // -Xint a recorded call cost 461 ns a trace point over plain with a helper
  // for the fold and Unsafe.getByte(long), 260 ns without
  // (docs/jvm.md, "The probe in the interpreter";
  // ProbeClass.EnterAndExitCallNoJavaHelperOnTheirWayToTheNatives checks it).
  public static boolean enter(int id) {
    if (on) {
      final long i = id & 0xffffffffL;
      final byte[] fold;  // FOLD's page of method i: a non-zero byte, a constant to C2, is a shed method
      if (i >= GUARD_COUNT || ((fold = FOLD[(int) (i >>> 12)]) == null || fold[(int) i & 4095] == 0)
                                  && U.getByte(null, GUARDS + i) == 0) {
        if (!(WRITES && write(id, false))) enterNative(id);
        return true;
      }
    }
    return false;
  }

  // `entered`: what this invocation's enter returned. `on` is read again:
  // at the JVM's exit the agent turns it off so that no probe calls into
  // native code during HotSpot's last safepoint (agent.cc, OnVMDeath).
  public static void exit(int id, boolean entered) {
    if (entered && on && !(WRITES && write(id, true))) exitNative(id);
  }

  // Writes the record of method `id` to the calling thread's ring if the C++
  // hot path would write it there now without its slow path: an untimed
  // record (DIRECT), or a timed one of the exact common case (TIMED). False
  // when the natives must record: a reading is due in a dense ring, the
  // thread was descheduled since the last one, a sync or an announcement is
  // due, or the ring is not known yet. Three methods, each under C2's
  // inlining limit for a hot call (FreqInlineSize, 325 bytes of bytecode):
  // one of 468 bytes was called, not inlined, and cost Listing 1 2 ns a
  // trace point (ProbeClass.TheWritePathIsInlinedByC2 checks the sizes).
  private static boolean write(int id, boolean exit) {
    if (TID < 0) return false;
    // The platform thread: on JDKs with virtual threads the agent makes this
    // call Thread.currentCarrierThread() (probe_class.cc), whose ring it is.
    final long tid = U.getLong(Thread.currentThread(), TID);
    if (tid <= 0 || tid >= RING_COUNT) return false;
    // The thread's entry: its ring, and beside it the address of the ring's
    // on-CPU word (immutable), so that word is one load from the entry
    // rather than two from the ring.
    final long entry = RINGS + (tid << 4);
    final long r = U.getLong(null, entry);
    if (r <= 0) {
      if (r == 0) bind(tid);
      return false;
    }
    final long pos = U.getLong(null, r + POS);
    if (pos < U.getLong(null, r + NEXT_SYNC)) return TIMED && timed(r, pos, id, exit);
    return DIRECT && untimed(entry, r, pos, id, exit);
  }

  // RecordAtPos, exact: the TSC's offset into the announced epoch is both the
  // epoch test (below 2^28, unsigned) and the record's timestamp bits; a key
  // in the hot base slot gives the record's low half. The runtime sets
  // next_sync to 0 when it stops the thread recording, so a cached ring never
  // records past that.
  private static boolean timed(long r, long pos, int id, boolean exit) {
    final long key = METHOD_KEY | id;
    final long offset = JVM.counterTime() + TSC_EPOCH - U.getLong(null, r + EPOCH_TSC);
    final long low = key ^ U.getLong(null, r + HOT_BASE);
    if ((offset >>> TSC_LOW_BITS) != 0 || (low >>> 32) != 0) return false;
    if ((id & 0xffffffffL) >= GUARD_COUNT && excluded(r, key)) return true;
    // Publish: the slot, then pos, each a release store (plain movs on x86-64).
    U.putLongRelease(null, U.getLong(null, r + SLOTS) + ((pos & U.getLong(null, r + MASK)) << 3),
                     U.getLong(null, r + HOT_TAG + (exit ? 8 : 0)) | (offset << 32) | low);
    U.putLongRelease(null, r + POS, pos + 1);
    return true;
  }

  // RecordNow's untimed position: not a reading position of a dense ring (an
  // exact ring's clock_mask is 0), and the thread on CPU since the last
  // reading (the kernel clears the word when it deschedules the thread, the
  // runtime when it stops it recording).
  private static boolean untimed(long entry, long r, long pos, int id, boolean exit) {
    if ((pos & (U.getInt(null, r + CLOCK_MASK) & 0xffffffffL)) == 0 || U.getLongAcquire(null, U.getLong(null, entry + 8)) == 0) {
      return false;
    }
    final long key = METHOD_KEY | id;
    if ((id & 0xffffffffL) >= GUARD_COUNT && excluded(r, key)) return true;
    // The slot is at the lap's base + 8 * pos (hot_path.h, Ring::lap).
    U.putLongRelease(null, U.getLong(null, r + LAP) + (pos << 3), (exit ? UNTIMED_EXIT : UNTIMED_ENTRY) | key);
    U.putLongRelease(null, r + POS, pos + 1);
    return true;
  }

  // The filter table holds shed and excluded keys; true, counted in the
  // ring's `filtered` as the natives count it, when `key` is there. A method
  // with a guard is shed by its guard, tested before this (enter/exit), so
  // only one without (ids past the guards' end) is looked up: with the
  // budget on the table is rarely empty, and the lookup was a load, a
  // multiply and a probe of the table at every record.
  private static boolean excluded(long r, long key) {
    final long table = U.getLongAcquire(null, FILTER);
    if (table == 0 || !filtered(table, key)) return false;
    U.putLong(null, r + FILTERED, U.getLong(null, r + FILTERED) + 1);  // CountFiltered
    return true;
  }

  // exclude.h, Excluded: table[0] the slot mask, then the keys, 0 empty.
  private static boolean filtered(long table, long key) {
    final long mask = U.getLong(null, table);
    for (long i = (key * 0x9E3779B97F4A7C15L) >>> 40;; ++i) {
      final long k = U.getLong(null, table + 8 + ((i & mask) << 3));
      if (k == key) return true;
      if (k == 0) return false;
    }
  }

  private static long tidOffset() {
    try {
      return U.objectFieldOffset(Thread.class, "tid");
    } catch (Throwable e) {
      return -1;  // a JDK without the field: every record goes to the natives
    }
  }

  private static native void enterNative(int id);   // natives.cc: the recorder's hot path
  private static native void exitNative(int id);
  private static native long layout(int what);      // natives.cc
  private static native void bind(long tid);        // natives.cc: fills RINGS[tid]

  /**
   * Thread.setName's first call (the rename hook, rewriter.h): returns the
   * name to set, and tells lookback the thread's new name.
   */
  public static native String renaming(Thread t, String name);

  private LookbackProbe() {}
}
