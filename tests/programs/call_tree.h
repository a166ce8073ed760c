/* The seeded call tree shared by roundtrip.cc (C++) and roundtrip_c.c (C):
 * eight noinline functions that log their own entries and exits and call a
 * pseudo-random number of each other. C++ includes it inside an anonymous
 * namespace. Needs ground_truth.h first. */
GT_NOINST static inline uint32_t next_rand(uint32_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static volatile int sink;
typedef void (*fn_t)(int, uint32_t*);
extern fn_t const table[8];

#define DEFINE_FN(name)                                       \
  GT_NOINLINE void name(int depth, uint32_t* seed) {          \
    GT_ENTER(name);                                           \
    sink = sink + depth;                                      \
    if (depth > 0) {                                          \
      const int kids = (int)(next_rand(seed) % 4);            \
      for (int i = 0; i < kids; ++i) {                        \
        table[next_rand(seed) % 8](depth - 1, seed);          \
      }                                                       \
    }                                                         \
    GT_EXIT(name);                                            \
  }

DEFINE_FN(f0)
DEFINE_FN(f1)
DEFINE_FN(f2)
DEFINE_FN(f3)
DEFINE_FN(f4)
DEFINE_FN(f5)
DEFINE_FN(f6)
DEFINE_FN(f7)
fn_t const table[8] = {f0, f1, f2, f3, f4, f5, f6, f7};
