/*
 * byoc_kernels_threads.h — how a kernel splits its work across the OpenMP team:
 * BYOC_SPLIT_ (fixed shares) and BYOC_STEAL_ (fixed shares that idle threads steal from).
 * Part of byoc_kernels.h; byoc_qkernels.h splits with BYOC_SPLIT_ too.
 */
#ifndef BYOC_KERNELS_THREADS_H_
#define BYOC_KERNELS_THREADS_H_

#include "byoc_runtime.h"

/*
 * Run CALL for t in [0, nt) across nt threads; with nt <= 1 run it once (t = 0) on the
 * caller, entering no OpenMP region at all (even an `if(0)` region costs a team setup per
 * call: docs/threads.md).
 */
#define BYOC_SPLIT_(nt, t, CALL)                                   \
  do {                                                            \
    if ((nt) > 1) {                                               \
      BYOC_PARALLEL_FOR(nt)                                       \
      for (int32_t t = 0; t < (nt); ++t) CALL;                    \
    } else {                                                      \
      const int32_t t = 0;                                        \
      (void)t;                                                    \
      CALL;                                                       \
    }                                                             \
  } while (0)

/*
 * Work stealing from the back of fixed shares (BYOC_STEAL_). Each thread owns the share
 * BYOC_SPLIT_ would give it, items [n * t / nt, n * (t + 1) / nt), and takes it from the
 * front in claims of about `grain` items; a thread whose share is done moves the back half
 * of another's remainder (all of it when less than two claims are left) into its own range
 * and goes on. With every thread running, each does its own share in order, as a fixed
 * split would: consecutive layers find their data in the cache of the core that wrote it
 * (runs handed out round-robin from one counter would lose that). When the machine takes a
 * core from one thread for a while, the others take its remainder, so a region waits for
 * that thread's current claim only, not for the rest of its share.
 *
 * A range is (next, end) in one 64-bit word, changed by compare-and-swap, one cache line a
 * share so an owner's claims stay in its own cache. Boundaries a claim or a steal makes fall
 * on multiples of `align` when possible (a whole tile's units: no tile is cut by a claim).
 */
typedef struct {
  _Alignas(64) uint64_t v;
} byoc_range_;

static inline uint64_t byoc_range_pack_(int64_t next, int64_t end) {
  return (uint64_t)next << 32 | (uint64_t)(uint32_t)end;
}

/* The owner: claim [*lo, *hi) from the front of r, about `grain` items; 0 when r is empty. */
static inline int byoc_range_front_(byoc_range_* r, int64_t grain, int64_t align, int64_t* lo,
                                    int64_t* hi) {
  uint64_t v = __atomic_load_n(&r->v, __ATOMIC_ACQUIRE);
  for (;;) {
    const int64_t n = (int64_t)(v >> 32), e = (int64_t)(uint32_t)v;
    if (n >= e) return 0;
    int64_t h = n + grain;
    if (align > 1 && h / align * align > n) h = h / align * align;
    if (h > e) h = e;
    if (__atomic_compare_exchange_n(&r->v, &v, byoc_range_pack_(h, e), 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      *lo = n, *hi = h;
      return 1;
    }
  }
}

/* A thief: take [*lo, *hi), the back half of what r has left (all of it below two claims). */
static inline int byoc_range_back_(byoc_range_* r, int64_t grain, int64_t align, int64_t* lo,
                                   int64_t* hi) {
  uint64_t v = __atomic_load_n(&r->v, __ATOMIC_ACQUIRE);
  for (;;) {
    const int64_t n = (int64_t)(v >> 32), e = (int64_t)(uint32_t)v;
    if (n >= e) return 0;
    int64_t m = e - n < 2 * grain ? n : e - (e - n) / 2;
    if (align > 1 && m > n) {
      m = (m + align - 1) / align * align;
      if (m >= e) m = n;
    }
    if (__atomic_compare_exchange_n(&r->v, &v, byoc_range_pack_(n, m), 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      *lo = m, *hi = e;
      return 1;
    }
  }
}

/* -DBYOC_STEAL=0: fixed shares, nothing stolen (the baseline tests compare stealing with;
 * docs/threads.md, "Developer knobs"). */
#ifndef BYOC_STEAL
#define BYOC_STEAL 1
#endif

/* Share t's claims, then the others' remainders: CALL for each [lo, hi) this thread takes. */
#define BYOC_STEAL_BODY_(r_, s_, t_, grain, align, lo, hi, CALL)                            \
  do {                                                                                     \
    int64_t lo, hi;                                                                        \
    for (;;) {                                                                             \
      while (byoc_range_front_(&(r_)[t_], (grain), (align), &lo, &hi)) CALL;               \
      int took_ = 0;                                                                       \
      for (int32_t k_ = 1; k_ < (s_) && !took_; ++k_)                                      \
        if (byoc_range_back_(&(r_)[((t_) + k_) % (s_)], (grain), (align), &lo, &hi)) {     \
          __atomic_store_n(&(r_)[t_].v, byoc_range_pack_(lo, hi), __ATOMIC_RELEASE);        \
          took_ = 1;                                                                       \
        }                                                                                  \
      if (!took_) break;                                                                   \
    }                                                                                      \
  } while (0)

/*
 * Run CALL over [0, n) on nt threads: fixed shares with stealing (above), claims of about
 * `grain` items. With nt <= 1, CALL once over [0, n) on the caller (no region). Only for
 * work whose claims write disjoint outputs and whose results do not depend on where the
 * items are cut or which thread computes them.
 */
#define BYOC_STEAL_(nt, n, grain, align, lo, hi, CALL)                                      \
  do {                                                                                     \
    const int64_t n_ = (n);                                                                \
    const int32_t s_ = (nt);                                                               \
    if (s_ > 1 && BYOC_STEAL && n_ < ((int64_t)1 << 31)) {                                 \
      const int64_t g_ = (grain) > 0 ? (grain) : 1, a_ = (align);                          \
      byoc_range_ r_[s_];                                                                  \
      for (int32_t t_ = 0; t_ < s_; ++t_)                                                  \
        r_[t_].v = byoc_range_pack_(n_ * t_ / s_, n_ * (t_ + 1) / s_);                     \
      BYOC_PARALLEL_FOR(s_)                                                                \
      for (int32_t t_ = 0; t_ < s_; ++t_) BYOC_STEAL_BODY_(r_, s_, t_, g_, a_, lo, hi, CALL); \
    } else if (s_ > 1) {                                                                   \
      BYOC_PARALLEL_FOR(s_)                                                                \
      for (int32_t t_ = 0; t_ < s_; ++t_) {                                                \
        const int64_t lo = n_ * t_ / s_;                                                   \
        const int64_t hi = n_ * (t_ + 1) / s_;                                             \
        CALL;                                                                              \
      }                                                                                    \
    } else {                                                                               \
      const int64_t lo = 0, hi = n_;                                                       \
      CALL;                                                                                \
    }                                                                                      \
  } while (0)

/* The claim size of a split of `n` items over nt threads: about a quarter of a share
 * (BYOC_STEAL_CLAIMS claims a share), at least `least` items. */
#ifndef BYOC_STEAL_CLAIMS
#define BYOC_STEAL_CLAIMS 4
#endif
static inline int64_t byoc_steal_grain_(int32_t nt, int64_t n, int64_t least) {
  const int64_t g = (n + (int64_t)nt * BYOC_STEAL_CLAIMS - 1) / ((int64_t)nt * BYOC_STEAL_CLAIMS);
  return g > least ? g : (least > 0 ? least : 1);
}

#endif /* BYOC_KERNELS_THREADS_H_ */
