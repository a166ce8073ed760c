/* lookback public C API.
 *
 * A program built with -finstrument-functions is traced by liblookback without
 * any call to this API. These functions let a program (or another front-end,
 * such as a JVM agent) record explicitly, ask for dumps, and name thread-local
 * tracing state. All are safe to call from any thread; none throws.
 */
#ifndef LOOKBACK_LOOKBACK_H_
#define LOOKBACK_LOOKBACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOKBACK_NO_INSTRUMENT __attribute__((no_instrument_function))
#define LOOKBACK_API __attribute__((visibility("default"), no_instrument_function))

/* A function key names what was entered: a native code address, or a method
 * id of a managed runtime made with LB_METHOD_KEY. Keys must be < 2^56. */
#define LB_METHOD_KEY(id) ((uint64_t)1 << 55 | (uint64_t)(uint32_t)(id))

/* Record an entry/exit of `key` on the calling thread (the hook front-end's
 * path, for front-ends that are not compiler hooks). */
void lb_enter(uint64_t key) LOOKBACK_API;
void lb_exit(uint64_t key) LOOKBACK_API;

/* Give a non-native key a name for dumps (e.g. "void com.example.A.run()"). */
int lb_set_key_name(uint64_t key, const char* name) LOOKBACK_API;

/* The overhead budget (LOOKBACK_BUDGET, docs/performance.md): the keys of the
 * functions it sheds now, calls of which lb_enter/lb_exit no longer record.
 * Copies at most `max` of them, sorted, into `out` and returns how many are
 * shed (which may be more than `max`). */
size_t lb_shed_keys(uint64_t* out, size_t max) LOOKBACK_API;

/* Called on lookback's control thread after the shed set changed. It must
 * return quickly and may call lb_shed_keys. A front-end that can stop calling
 * lb_enter/lb_exit for a shed key saves what the filter still costs each call
 * (the JVM agent retransforms the method's class without its probes). NULL
 * unsets it. */
void lb_set_shed_listener(void (*listener)(void)) LOOKBACK_API;

/* The JVM agent's shed memory (docs/jvm.md, "The shed memory"): a front-end
 * that remembers, per program, the functions the budget shed in earlier runs
 * may leave them without trace points from the start.
 * lb_budget_on: 1 when the overhead budget is on, else 0 (then nothing may be
 * left out this way).
 * lb_shed_remembered: `key` has no trace points in this run because an earlier
 * run shed it, at the given calls per second of CPU time and mean duration (0:
 * not measured). Dumps list it as shed from now on, by thread 0 (an earlier
 * run); it never comes back during this run. Returns 0, or -1 when the budget
 * is off (the front-end must then trace it).
 * lb_shed_figures: for a key shed now, its rate and mean duration when it was
 * shed, and 0; -1 if it is not shed. */
int lb_budget_on(void) LOOKBACK_API;
/* How many times the budget has judged a thread so far in this process (0: no
 * thread used enough CPU to be judged: the run measured nothing to remember). */
uint64_t lb_budget_judgements(void) LOOKBACK_API;
int lb_shed_remembered(uint64_t key, uint64_t calls_per_s, uint64_t mean_ns) LOOKBACK_API;
int lb_shed_figures(uint64_t key, uint64_t* calls_per_s, uint64_t* mean_ns) LOOKBACK_API;

/* Ask lookback's control thread to write a dump of every ring now. Returns at
 * once: 0 if the request was queued, -1 if lookback is not running or 16
 * requests are already waiting. A request still queued when the process
 * exits (or execs) is written then, before it ends. */
int lb_dump(const char* reason) LOOKBACK_API;

/* Same, but wait until the dump is written (or failed). On success returns 0
 * and copies the dump's path into path_out (if not NULL); on failure returns
 * -1 and copies the error message. Blocks only the calling thread. */
int lb_dump_sync(const char* reason, char* path_out, size_t path_len) LOOKBACK_API;

/* Copies the dump directory (LOOKBACK_DIR, as configured) into OUT. Returns 0,
 * or -1 if it does not fit or lookback is not running. */
int lb_dump_dir(char* out, size_t len) LOOKBACK_API;

/* Turn tracing off/on for the calling thread. Turning it back on records a
 * RESUME marker so decoders do not pair calls across the gap. */
void lb_thread_disable(void) LOOKBACK_API;
void lb_thread_enable(void) LOOKBACK_API;

/* 1 if the calling thread is recording now. */
int lb_thread_is_tracing(void) LOOKBACK_API;

/* For a front-end that writes the common record itself instead of calling
 * lb_enter/lb_exit (the JVM agent's Java probe, docs/jvm.md): it must have
 * been built with the same ring ABI (lb_ring_abi, src/runtime/ring_abi.h) and
 * then follows src/runtime/hot_path.h exactly: it writes only what RecordNow
 * writes as an untimed record of a dense fast-clock ring, or as an exact
 * EVENT with nothing to announce (pos < next_sync, in the epoch, the key in the
 * hot slot; only with the TSC the recorder reads, to the tick), and calls
 * lb_enter/lb_exit for everything else.
 * lb_thread_fast_ring: 1 and the calling thread's ring in *ring when it is a
 * fast-clock ring; 0 when the thread has no ring yet (ask again after its first
 * lb_enter); -1 when it has none to write to (exact clock, not traced,
 * disabled). lb_thread_ring: the same for a ring of either clock (Ring::on_cpu
 * is null in an exact one); a runtime that has it also sets next_sync to 0
 * when a thread stops recording, which a writer of exact EVENTs relies on.
 * The ring stays the thread's for its life; whenever it stops recording
 * (disabled, deselected, paused) its next_sync is set to 0 and its on-CPU
 * word cleared, which sends the writer to lb_enter, as the kernel does when
 * it deschedules it.
 * lb_filter_table: where the table of excluded and shed keys is published
 * (src/runtime/exclude.h); calls of those are not recorded. */
uint32_t lb_ring_abi(void) LOOKBACK_API;
/* Records per clock reading as configured (LOOKBACK_CLOCK): 1 for the exact
 * clock, whose rings a front-end never writes to itself. */
uint32_t lb_clock_group(void) LOOKBACK_API;
int lb_thread_fast_ring(void** ring) LOOKBACK_API;
int lb_thread_ring(void** ring) LOOKBACK_API;
const uint64_t* const* lb_filter_table(void) LOOKBACK_API;

/* Per-function guard bytes, for a front-end whose trace points are inlined
 * into the program, where a table lookup would cost too much (the clang pass,
 * src/runtime/pass_guards.h; the JVM agent's Java probes, docs/jvm.md): each
 * guarded function has a byte, 0 recorded, nonzero shed, that its trace
 * points read (relaxed) before anything else; a shed function's trace points
 * then read nothing else and write nothing. The overhead budget sets the
 * guards of the functions it sheds and clears them when it brings them back.
 * lb_pass_register_guards hands the runtime [begin, end) of an array of
 * lb_guard_entry, which must stay valid (and registered) for as long as any
 * of those guards may be read; a table registered after something was shed
 * has its guards set at once. lb_pass_unregister_guards takes a table back. */
typedef struct lb_guard_entry {
  uint64_t key;    /* the key the function's trace points record */
  uint8_t* guard;
} lb_guard_entry;
void lb_pass_register_guards(const void* begin, const void* end) LOOKBACK_API;
void lb_pass_unregister_guards(const void* begin, const void* end) LOOKBACK_API;

/* Names the calling thread for lookback only (dumps, exporters, LOOKBACK_THREADS
 * and stall patterns), instead of its kernel name, which is cut at 15 bytes and
 * which a managed runtime may not keep in step with its own thread names (the
 * JVM agent calls it with the Java name). At most 63 bytes are kept. Calling it
 * again renames; LOOKBACK_THREADS is checked again as for pthread_setname_np.
 * Returns 0, or -1 if NAME is NULL. */
int lb_thread_set_name(const char* name) LOOKBACK_API;

/* Names another thread of this process, by its kernel thread id, for
 * lookback's dumps: for a managed runtime where one thread renames another
 * (Java's Thread.setName). The name shows in dumps from then on (at once, or,
 * while a dump is being written, right after it); LOOKBACK_THREADS is not
 * checked again for that thread. With the calling thread's own id, this is
 * lb_thread_set_name. Never blocks. Returns 0, or -1 if NAME is NULL or
 * lookback is not running. */
int lb_thread_set_name_of(uint32_t tid, const char* name) LOOKBACK_API;

/* A note for the next dumps (their NOTES section, shown by `lookback info`):
 * a front-end's summary such as the JVM agent's count of methods traced and
 * skipped. Setting KEY again replaces its text. Returns 0, or -1 if either
 * is NULL. */
int lb_set_note(const char* key, const char* text) LOOKBACK_API;

/* Scopes: a named span of a thread's work (a frame, a request, one event-loop
 * iteration) that can carry a duration objective. A scope appears in the trace
 * as a call named NAME; with LOOKBACK_SLOW_SCOPE=NAME:DURATION a scope that
 * runs longer triggers a dump, and LOOKBACK_STALL treats a thread that is
 * inside no scope as idle (see docs/triggers.md). Scopes nest (up to 8 deep
 * are watched). Begin and end must be paired on the same thread; end takes the
 * same name. NAME must stay valid for the life of the process (a literal).
 * Cost: about two trace points. */
void lb_scope_begin(const char* name) LOOKBACK_API;
void lb_scope_end(const char* name) LOOKBACK_API;

#ifdef __cplusplus
}
#endif

#endif /* LOOKBACK_LOOKBACK_H_ */
