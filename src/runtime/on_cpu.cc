#include "runtime/on_cpu.h"

#include <sys/rseq.h>

namespace lookback::rt {

const uint64_t kAlwaysOnCpu = 1;

namespace {
// The kernel validates the descriptor when it finds the word armed: start and
// abort below the user-space limit, abort outside [start, start + length),
// and the registered signature in the four bytes before abort. An empty
// section at address 0 is never "inside", so the kernel always clears.
// abort_ip is filled in before any thread arms (an address is not a constant
// initialiser, and a dynamic one might run after the first trace point).
alignas(8) const uint32_t kSignature[2] = {RSEQ_SIG, 0};
struct alignas(32) Descriptor {
  uint32_t version, flags;
  uint64_t start_ip, post_commit_offset, abort_ip;
};
Descriptor g_empty_section;  // zero-initialised
}  // namespace

OnCpuWatch ThisThreadOnCpuWatch() {
  if (__rseq_size == 0) return {};
  char* tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp));  // the thread control block's self pointer
  auto* area = reinterpret_cast<struct rseq*>(tp + __rseq_offset);
  if (static_cast<int32_t>(__atomic_load_n(&area->cpu_id, __ATOMIC_RELAXED)) < 0) return {};  // not registered
  // Every thread stores the same value.
  __atomic_store_n(&g_empty_section.abort_ip, reinterpret_cast<uint64_t>(&kSignature[1]), __ATOMIC_RELAXED);
  return {reinterpret_cast<const volatile uint64_t*>(&area->rseq_cs)};
}

void ArmOnCpu(const volatile uint64_t* word) {
  __atomic_store_n(const_cast<uint64_t*>(word), reinterpret_cast<uint64_t>(&g_empty_section), __ATOMIC_RELAXED);
}

}  // namespace lookback::rt
