/*
 * byoc_kernels.h — the kernels `lower-to-c` calls for ops that are not
 * elementwise (elementwise chains are generated as fused loops instead).
 *
 * Every kernel is `static inline` (one translation unit, no unused-function
 * warnings), takes compact row-major buffers through `restrict` pointers and
 * its sizes as int64_t. Layouts follow the nn dialect: NCHW data, OIHW
 * weights, padding given as (top, left[, bottom, right]). Semantics match the
 * numpy reference kernels in byoc/kernels.py; float sums of pooling and
 * reductions accumulate in double, as the reference does.
 */
#ifndef BYOC_KERNELS_H_
#define BYOC_KERNELS_H_

#include "byoc_runtime.h"

#define BYOC_MAX_RANK 16

/*
 * Run CALL for t in [0, nt) across nt threads; with nt <= 1 run it once (t = 0) on the
 * caller, entering no OpenMP region at all (even an `if(0)` region costs a team setup per
 * call, which added up to 4-5 ms per shufflenet inference at 1 thread).
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
 * (a counter handing out runs round-robin lost that, session 6). When the machine takes a
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

/* -DBYOC_STEAL=0: fixed shares, nothing stolen (the split before session 7, for A/B runs). */
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

/* NaN-propagating maximum (numpy.maximum). */
static inline float byoc_maxf_(float a, float b) { return (a >= b || a != a) ? a : b; }

/* ---- copies ---------------------------------------------------------------- */

/* Bytes a thread copies at least: below 2 x this a copy stays on the calling thread. */
#define BYOC_COPY_GRAIN ((int64_t)1 << 18)

/* Bytes [lo, hi) of a copy of n bytes split into nt pieces, piece t, 64-byte aligned. */
static inline void byoc_copy_piece_(int64_t n, int32_t nt, int32_t t, int64_t* lo, int64_t* hi) {
  const int64_t lines = (n + 63) / 64;
  *lo = 64 * (lines * t / nt);
  *hi = t == nt - 1 ? n : 64 * (lines * (t + 1) / nt);
}

static inline void byoc_copy_part_(const char* restrict s, char* restrict d, int64_t n, int32_t nt,
                                   int32_t t) {
  int64_t lo, hi;
  byoc_copy_piece_(n, nt, t, &lo, &hi);
  if (hi > lo) memcpy(d + lo, s + lo, (size_t)(hi - lo));
}

/* A copy of nbytes; a big one (a concatenation's input, a reshape's copy) is split across
 * the threads (a copy is the same bytes however it is split). */
static inline void byoc_copy(const void* restrict src, void* restrict dst, int64_t nbytes) {
  if (nbytes <= 0) return;
  const int32_t nt = byoc_threads_for(nbytes, BYOC_COPY_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_copy_part_((const char*)src, (char*)dst, nbytes, nt, t));
}

static inline void byoc_copy_blocks_part_(const char* restrict s, char* restrict d,
                                          int64_t block, int64_t dst_stride, int64_t b0,
                                          int64_t b1) {
  for (int64_t i = b0; i < b1; ++i) memcpy(d + i * dst_stride, s + i * block, (size_t)block);
}

/* `nblocks` blocks of `block` bytes, read contiguously, written every `dst_stride` bytes;
 * split across the threads by blocks, or (one block) by bytes. */
static inline void byoc_copy_blocks(const void* restrict src, void* restrict dst, int64_t nblocks,
                                    int64_t block, int64_t dst_stride) {
  const char* s = (const char*)src;
  char* d = (char*)dst;
  if (nblocks <= 0 || block <= 0) return;
  if (nblocks == 1) {
    byoc_copy(s, d, block);
    return;
  }
  const int32_t nt0 = byoc_threads_for(nblocks * block, BYOC_COPY_GRAIN);
  const int32_t nt = nt0 < nblocks ? nt0 : (int32_t)nblocks;
  BYOC_SPLIT_(nt, t, byoc_copy_blocks_part_(s, d, block, dst_stride, nblocks * t / nt,
                                            nblocks * (t + 1) / nt));
}

/* ---- epilogues ----------------------------------------------------------------- */

/*
 * What a conv2d or dense kernel applies to its results before storing them
 * (the elementwise ops lower-to-c fuses into the producing kernel): a bias per
 * channel, then a scale and shift per channel (an inference batch_norm with
 * constant statistics), then an activation. Each step is computed exactly as
 * the fused loop would (`scalar_op` in byoc/lowering/nn_to_c/emission.py), so
 * fusing changes no result.
 */
enum {
  BYOC_ACT_NONE = 0,
  BYOC_ACT_RELU = 1,
  BYOC_ACT_CLIP = 2,         /* alpha = min, beta = max; a NaN bound makes every result NaN */
  BYOC_ACT_LEAKY_RELU = 3,   /* alpha */
  BYOC_ACT_SIGMOID = 4,
  BYOC_ACT_HARD_SWISH = 5,
  BYOC_ACT_HARD_SIGMOID = 6, /* alpha, beta */
  BYOC_ACT_TANH = 7
};

/* `parts` of a kernel's epilogue arguments: which per-channel arrays are real. */
enum { BYOC_EP_BIAS = 1, BYOC_EP_SCALE_SHIFT = 2 };

typedef struct {
  const float* bias;  /* NULL: none */
  const float* scale; /* with shift; NULL: none */
  const float* shift;
  int32_t act;
  float alpha, beta;
} byoc_epilogue_;

static inline byoc_epilogue_ byoc_epilogue_of_(int32_t parts, const float* bias, const float* scale,
                                               const float* shift, int32_t act, float alpha,
                                               float beta) {
  byoc_epilogue_ ep = {(parts & BYOC_EP_BIAS) ? bias : NULL,
                       (parts & BYOC_EP_SCALE_SHIFT) ? scale : NULL,
                       (parts & BYOC_EP_SCALE_SHIFT) ? shift : NULL, act, alpha, beta};
  return ep;
}

/*
 * `for (i = 0; i < n; ++i) STMT` in blocks of 8 with a constant trip count, then the rest:
 * gcc -O2 vectorizes only loops whose trip count is a known multiple of the vector length
 * (its "very cheap" cost model), and leaves a loop of run-time length scalar, with a branch
 * per element for a select such as relu's (mispredicted half the time on real data). STMT
 * must touch element i only; the results are those of the plain loop.
 */
#define BYOC_EACH8_(n, i, STMT)                                         \
  do {                                                                 \
    const int64_t byoc_n8_ = (n) - (n) % 8;                            \
    for (int64_t byoc_b_ = 0; byoc_b_ < byoc_n8_; byoc_b_ += 8) {      \
      for (int64_t byoc_j_ = 0; byoc_j_ < 8; ++byoc_j_) {              \
        const int64_t i = byoc_b_ + byoc_j_;                           \
        STMT;                                                          \
      }                                                                \
    }                                                                  \
    for (int64_t i = byoc_n8_; i < (n); ++i) {                         \
      STMT;                                                            \
    }                                                                  \
  } while (0)

/* The activation on v[0..n). */
static inline void byoc_act_run_(int32_t act, float a, float b, float* restrict v, int64_t n) {
  switch (act) {
    case BYOC_ACT_RELU:
      BYOC_EACH8_(n, i, v[i] = v[i] < 0.0f ? 0.0f : v[i]);
      break;
    case BYOC_ACT_CLIP:
      if (a != a || b != b) {
        BYOC_EACH8_(n, i, v[i] = v[i] + NAN);
      } else {
        BYOC_EACH8_(n, i, {
          const float t = v[i] < a ? a : v[i];
          v[i] = t > b ? b : t;
        });
      }
      break;
    case BYOC_ACT_LEAKY_RELU:
      BYOC_EACH8_(n, i, v[i] = v[i] >= 0.0f ? v[i] : v[i] * a);
      break;
    case BYOC_ACT_SIGMOID:
      for (int64_t i = 0; i < n; ++i) v[i] = 1.0f / (1.0f + expf(-v[i]));
      break;
    case BYOC_ACT_HARD_SWISH:
      BYOC_EACH8_(n, i, {
        float c = v[i] + 3.0f;
        c = c < 0.0f ? 0.0f : c;
        c = c > 6.0f ? 6.0f : c;
        v[i] = (v[i] * c) / 6.0f;
      });
      break;
    case BYOC_ACT_HARD_SIGMOID:
      BYOC_EACH8_(n, i, {
        float t = v[i] * a + b;
        t = t < 0.0f ? 0.0f : t;
        v[i] = t > 1.0f ? 1.0f : t;
      });
      break;
    case BYOC_ACT_TANH:
      for (int64_t i = 0; i < n; ++i) v[i] = tanhf(v[i]);
      break;
    default:
      break;
  }
}

/* The epilogue on v[0..n), all of channel `ch`. */
static inline void byoc_epilogue_run_(const byoc_epilogue_* ep, int64_t ch, float* restrict v,
                                      int64_t n) {
  if (ep->bias != NULL) {
    const float b = ep->bias[ch];
    BYOC_EACH8_(n, i, v[i] = v[i] + b);
  }
  if (ep->scale != NULL) {
    const float s = ep->scale[ch], t = ep->shift[ch];
    BYOC_EACH8_(n, i, v[i] = v[i] * s + t);
  }
  byoc_act_run_(ep->act, ep->alpha, ep->beta, v, n);
}

/* The epilogue on a row v[0..n) whose element j is of channel ch0 + j (dense). */
static inline void byoc_epilogue_row_(const byoc_epilogue_* ep, int64_t ch0, float* restrict v,
                                      int64_t n) {
  if (ep->bias != NULL) {
    const float* restrict bias = ep->bias + ch0;
    BYOC_EACH8_(n, i, v[i] = v[i] + bias[i]);
  }
  if (ep->scale != NULL) {
    const float* restrict scale = ep->scale + ch0;
    const float* restrict shift = ep->shift + ch0;
    BYOC_EACH8_(n, i, v[i] = v[i] * scale[i] + shift[i]);
  }
  byoc_act_run_(ep->act, ep->alpha, ep->beta, v, n);
}

/* ---- conv2d ---------------------------------------------------------------- */

/*
 * GNU C vectors of 8 floats: two SSE registers on baseline x86-64, one AVX
 * register in the AVX2 clone below, NEON pairs on ARM. Never passed by value
 * across a call (that would change the ABI), only used inside kernels.
 */
typedef float byoc_v8f_ __attribute__((vector_size(32)));

/*
 * Kernels marked BYOC_CLONES are also compiled for AVX2 and picked at load
 * time (GCC/Clang function multiversioning on x86-64 ELF); the arithmetic
 * and its order are the same in both versions, so are the results. The one
 * exception is conv2d's register tile: on CPUs with FMA (BYOC_FMA, checked at
 * run time) it fuses each multiply-add, so its sums differ from the baseline's
 * by rounding only (same products, same order, one rounding per step fewer).
 */
/* -DBYOC_BASELINE_ONLY (BYOC_CPU_DISPATCH=baseline) keeps every kernel on baseline x86-64. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target_clones) && !defined(__SANITIZE_ADDRESS__)
#define BYOC_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#if __has_attribute(target) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>
#define BYOC_FMA __attribute__((target("avx2,fma")))
#endif
#endif
#ifndef BYOC_CLONES
#define BYOC_CLONES
#endif
/* A big kernel: not inlined (it may be cloned), fine to leave unused. */
#define BYOC_KERNEL static BYOC_CLONES BYOC_MAYBE_UNUSED


/* Rows of the im2col panel one k block holds when a piece has many tiles (see
 * byoc_conv2d_part_). */
#define BYOC_CONV2D_KC 1024
/* A piece of at most this many tiles packs them all per k block ... */
#ifndef BYOC_CONV2D_TB
#define BYOC_CONV2D_TB 4
#endif
/* ... in panels of at most this many rows in all (16 floats each: 256 KB of stack). */
#ifndef BYOC_CONV2D_PANEL
#define BYOC_CONV2D_PANEL 4096
#endif

/* Floats of scratch `byoc_conv2d_f32` needs: one zero-padded image (the panels live on the stack). */
#define BYOC_CONV2D_SCRATCH(C, G, KH, KW, OH, OW, SH, SW, DH, DW)                               \
  ((C) * (((OH)-1) * (SH) + ((KH)-1) * (DH) + 1) *                                              \
   ((((OW) + 7) / 8 * 8 - 1) * (SW) + ((KW)-1) * (DW) + 1))

/* 16 floats at y, of which np are valid, into two vectors (zeros past np), and back. */
static inline __attribute__((always_inline)) void byoc_load16_(const float* y, int64_t np,
                                                               byoc_v8f_* lo, byoc_v8f_* hi) {
  if (np == 16) { /* a whole tile: no staging copy (a memcpy of run-time length is a call) */
    memcpy(lo, y, sizeof *lo);
    memcpy(hi, y + 8, sizeof *hi);
    return;
  }
  float tmp[16] = {0};
  memcpy(tmp, y, (size_t)np * sizeof(float));
  memcpy(lo, tmp, sizeof *lo);
  memcpy(hi, tmp + 8, sizeof *hi);
}

typedef int32_t byoc_v8i_ __attribute__((vector_size(32)));
typedef double byoc_v4d_ __attribute__((vector_size(32)));
typedef float byoc_v4f_ __attribute__((vector_size(16)));
typedef int32_t byoc_v4i_ __attribute__((vector_size(16)));

/* The np valid of 16 floats in two vectors to y. */
static inline __attribute__((always_inline)) void byoc_store16_(float* y, int64_t np,
                                                                const byoc_v8f_* lo,
                                                                const byoc_v8f_* hi) {
  if (np == 16) {
    memcpy(y, lo, sizeof *lo);
    memcpy(y + 8, hi, sizeof *hi);
    return;
  }
  float tmp[16];
  memcpy(tmp, lo, sizeof *lo);
  memcpy(tmp + 8, hi, sizeof *hi);
  memcpy(y, tmp, (size_t)np * sizeof(float));
}

/*
 * One tile of 6 output channels x 16 pixels in 12 vector registers:
 * y[t * plane + j] = (first ? 0 : y[t * plane + j]) + sum_k wt[t][k] * panel[k][j]
 * for t < to, j < np, summed in order of k. Inlined into the (cloned) caller.
 */
static inline __attribute__((always_inline)) void byoc_conv2d_tile_(
    const float* restrict panel, const float* const* wt, int64_t kc, float* restrict y,
    int64_t plane, int64_t to, int64_t np, int first) {
  byoc_v8f_ a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0};
  byoc_v8f_ b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0}, b4 = {0}, b5 = {0};
  if (!first) {
    byoc_load16_(y, np, &a0, &b0);
    if (to > 1) byoc_load16_(y + plane, np, &a1, &b1);
    if (to > 2) byoc_load16_(y + 2 * plane, np, &a2, &b2);
    if (to > 3) byoc_load16_(y + 3 * plane, np, &a3, &b3);
    if (to > 4) byoc_load16_(y + 4 * plane, np, &a4, &b4);
    if (to > 5) byoc_load16_(y + 5 * plane, np, &a5, &b5);
  }
  const float *w0 = wt[0], *w1 = wt[1], *w2 = wt[2], *w3 = wt[3], *w4 = wt[4], *w5 = wt[5];
  for (int64_t k = 0; k < kc; ++k, panel += 16) {
    byoc_v8f_ v0, v1;
    memcpy(&v0, panel, sizeof v0);
    memcpy(&v1, panel + 8, sizeof v1);
    a0 += w0[k] * v0;
    b0 += w0[k] * v1;
    a1 += w1[k] * v0;
    b1 += w1[k] * v1;
    a2 += w2[k] * v0;
    b2 += w2[k] * v1;
    a3 += w3[k] * v0;
    b3 += w3[k] * v1;
    a4 += w4[k] * v0;
    b4 += w4[k] * v1;
    a5 += w5[k] * v0;
    b5 += w5[k] * v1;
  }
  byoc_store16_(y, np, &a0, &b0);
  if (to > 1) byoc_store16_(y + plane, np, &a1, &b1);
  if (to > 2) byoc_store16_(y + 2 * plane, np, &a2, &b2);
  if (to > 3) byoc_store16_(y + 3 * plane, np, &a3, &b3);
  if (to > 4) byoc_store16_(y + 4 * plane, np, &a4, &b4);
  if (to > 5) byoc_store16_(y + 5 * plane, np, &a5, &b5);
}

#ifdef BYOC_FMA
/* byoc_conv2d_tile_ with fused multiply-adds (AVX2 + FMA); called, not inlined. */
static BYOC_FMA BYOC_MAYBE_UNUSED void byoc_conv2d_tile_fma_(
    const float* restrict panel, const float* const* wt, int64_t kc, float* restrict y,
    int64_t plane, int64_t to, int64_t np, int first) {
  __m256 a[6], b[6];
  float tmp[16];
  for (int t = 0; t < 6; ++t) {
    if (first || t >= to) {
      a[t] = _mm256_setzero_ps();
      b[t] = _mm256_setzero_ps();
    } else if (np == 16) {
      a[t] = _mm256_loadu_ps(y + t * plane);
      b[t] = _mm256_loadu_ps(y + t * plane + 8);
    } else {
      memset(tmp, 0, sizeof tmp);
      memcpy(tmp, y + t * plane, (size_t)np * sizeof(float));
      a[t] = _mm256_loadu_ps(tmp);
      b[t] = _mm256_loadu_ps(tmp + 8);
    }
  }
  __m256 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5];
  __m256 b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3], b4 = b[4], b5 = b[5];
  const float *w0 = wt[0], *w1 = wt[1], *w2 = wt[2], *w3 = wt[3], *w4 = wt[4], *w5 = wt[5];
  for (int64_t k = 0; k < kc; ++k, panel += 16) {
    const __m256 v0 = _mm256_loadu_ps(panel), v1 = _mm256_loadu_ps(panel + 8);
    __m256 s = _mm256_broadcast_ss(w0 + k);
    a0 = _mm256_fmadd_ps(s, v0, a0);
    b0 = _mm256_fmadd_ps(s, v1, b0);
    s = _mm256_broadcast_ss(w1 + k);
    a1 = _mm256_fmadd_ps(s, v0, a1);
    b1 = _mm256_fmadd_ps(s, v1, b1);
    s = _mm256_broadcast_ss(w2 + k);
    a2 = _mm256_fmadd_ps(s, v0, a2);
    b2 = _mm256_fmadd_ps(s, v1, b2);
    s = _mm256_broadcast_ss(w3 + k);
    a3 = _mm256_fmadd_ps(s, v0, a3);
    b3 = _mm256_fmadd_ps(s, v1, b3);
    s = _mm256_broadcast_ss(w4 + k);
    a4 = _mm256_fmadd_ps(s, v0, a4);
    b4 = _mm256_fmadd_ps(s, v1, b4);
    s = _mm256_broadcast_ss(w5 + k);
    a5 = _mm256_fmadd_ps(s, v0, a5);
    b5 = _mm256_fmadd_ps(s, v1, b5);
  }
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5;
  b[0] = b0, b[1] = b1, b[2] = b2, b[3] = b3, b[4] = b4, b[5] = b5;
  for (int t = 0; t < to; ++t) {
    if (np == 16) {
      _mm256_storeu_ps(y + t * plane, a[t]);
      _mm256_storeu_ps(y + t * plane + 8, b[t]);
      continue;
    }
    _mm256_storeu_ps(tmp, a[t]);
    _mm256_storeu_ps(tmp + 8, b[t]);
    memcpy(y + t * plane, tmp, (size_t)np * sizeof(float));
  }
}
#endif

/* The shape of one conv2d call, derived once (see byoc_conv2d_run_). */
typedef struct {
  int64_t C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G;
  int64_t CG, OG, WS, HP, WP, OW8, P;
} byoc_conv_geom_;

/*
 * Channels [c0, c1) of image x (C x H x W) into the zero-padded copy xp
 * (C x HP x WP). With `split`, each padded row is stored as its even
 * columns, then its odd ones (for stride-2 depthwise windows).
 */
static inline void byoc_conv2d_pad_(const byoc_conv_geom_* g, const float* restrict x,
                                    float* restrict xp, int64_t c0, int64_t c1, int split) {
  const int64_t HP = g->HP, WP = g->WP, H = g->H, W = g->W, PT = g->PT, PL = g->PL;
  const int64_t end = PL + W < WP ? PL + W : WP;
  const int64_t half = (WP + 1) / 2;
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t r = 0; r < HP; ++r) {
      float* dst = xp + (c * HP + r) * WP;
      const int64_t ih = r - PT;
      if (ih < 0 || ih >= H || end <= PL) {
        memset(dst, 0, (size_t)WP * sizeof(float));
        continue;
      }
      const float* src = x + (c * H + ih) * W; /* padded column j is src[j - PL] */
      if (split) { /* zeros, then the image's columns: no select per element */
        memset(dst, 0, (size_t)WP * sizeof(float));
        for (int64_t j = PL + (PL & 1); j < end; j += 2) dst[j / 2] = src[j - PL];
        for (int64_t j = PL + !(PL & 1); j < end; j += 2) dst[half + j / 2] = src[j - PL];
        continue;
      }
      memset(dst, 0, (size_t)PL * sizeof(float));
      memcpy(dst + PL, src, (size_t)(end - PL) * sizeof(float));
      memset(dst + end, 0, (size_t)(WP - end) * sizeof(float));
    }
  }
}

/*
 * Depthwise (one input and one output channel per group), channels [c0, c1) of one image.
 * Each channel is padded into `plane` (one padded channel, HP x WP, reused for every
 * channel: its zeros are written once, then only the image's part changes, so the plane
 * stays in L1), then computed from it. An output vector is 8 columns of one output row;
 * the vectors of a channel (rows x vectors per row, numbered row-major) go six at a time
 * through the taps, so six independent sums are in flight (one vector at a time waited on
 * each add: about 6 GFLOP/s on shufflenet's 3x3 layers). Each output is still summed in
 * order of (kh, kw) from 0, a product and an add per tap (no FMA, at either dispatch level):
 * the results do not depend on the grouping, the dispatch level or the threads. With
 * stride 2 the padded rows hold their even columns, then their odd ones, so every tap
 * reads 8 contiguous floats: tap column 2m is even column m + ow, 2m + 1 is odd column
 * m + ow. Other strides gather their 8 columns (one vector at a time).
 */
enum { BYOC_DW_JOBS = 6 };

/* Zeros where the padded plane has no image, once per call. */
static inline void byoc_conv2d_dw_zero_(const byoc_conv_geom_* g, float* restrict plane) {
  memset(plane, 0, (size_t)(g->HP * g->WP) * sizeof(float));
}

/* The image's part of channel xc into the plane (whose other positions hold zeros). */
static inline __attribute__((always_inline)) void byoc_conv2d_dw_fill_(
    const byoc_conv_geom_* g, const float* restrict xc, float* restrict plane, int split) {
  const int64_t HP = g->HP, WP = g->WP, H = g->H, W = g->W, PT = g->PT, PL = g->PL;
  const int64_t end = PL + W < WP ? PL + W : WP, n = end - PL; /* image columns used */
  const int64_t r1 = PT + H < HP ? PT + H : HP;
  const int64_t half = (WP + 1) / 2;
  if (n <= 0) return;
  for (int64_t r = PT; r < r1; ++r) {
    const float* restrict src = xc + (r - PT) * W;
    float* restrict dst = plane + r * WP;
    /* blocks of 8 (16) columns, the last one ending at column n (overlapping the one
     * before it: the same values again), one at a time only in a row narrower than 8 */
    if (!split) {
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) memcpy(dst + PL + i, src + i, 8 * sizeof(float));
      if (i < n && n >= 8) memcpy(dst + PL + n - 8, src + n - 8, 8 * sizeof(float));
      if (n >= 4 && n < 8) {
        memcpy(dst + PL, src, 4 * sizeof(float));
        memcpy(dst + PL + n - 4, src + n - 4, 4 * sizeof(float));
        continue;
      }
      for (; i < n && n < 4; ++i) dst[PL + i] = src[i];
      continue;
    }
    /* image column i is padded column j = PL + i: even j at j / 2, odd j at half + j / 2;
     * columns i0, i0 + 2, ... land at consecutive places, as do i0 + 1, i0 + 3, ... */
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      byoc_v8f_ a, b;
      memcpy(&a, src + i, sizeof a);
      memcpy(&b, src + i + 8, sizeof b);
#if defined(__clang__)
      const byoc_v8f_ ev = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
      const byoc_v8f_ od = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
      const byoc_v8f_ ev = __builtin_shuffle(a, b, (byoc_v8i_){0, 2, 4, 6, 8, 10, 12, 14});
      const byoc_v8f_ od = __builtin_shuffle(a, b, (byoc_v8i_){1, 3, 5, 7, 9, 11, 13, 15});
#endif
      const int64_t je = PL + i, jo = PL + i + 1;
      memcpy(dst + (je & 1 ? half : 0) + je / 2, &ev, sizeof ev);
      memcpy(dst + (jo & 1 ? half : 0) + jo / 2, &od, sizeof od);
    }
    while (i < n && n >= 8) {
      const int64_t i0 = i + 8 <= n ? i : n - 8;
      byoc_v4f_ a, b;
      memcpy(&a, src + i0, sizeof a);
      memcpy(&b, src + i0 + 4, sizeof b);
#if defined(__clang__)
      const byoc_v4f_ ev = __builtin_shufflevector(a, b, 0, 2, 4, 6);
      const byoc_v4f_ od = __builtin_shufflevector(a, b, 1, 3, 5, 7);
#else
      const byoc_v4f_ ev = __builtin_shuffle(a, b, (byoc_v4i_){0, 2, 4, 6});
      const byoc_v4f_ od = __builtin_shuffle(a, b, (byoc_v4i_){1, 3, 5, 7});
#endif
      const int64_t je = PL + i0, jo = PL + i0 + 1;
      memcpy(dst + (je & 1 ? half : 0) + je / 2, &ev, sizeof ev);
      memcpy(dst + (jo & 1 ? half : 0) + jo / 2, &od, sizeof od);
      i = i0 + 8;
    }
    for (; i < n; ++i) {
      const int64_t j = PL + i;
      dst[(j & 1 ? half : 0) + j / 2] = src[i];
    }
  }
}

/* The 8 output columns at y (count of them valid: the rest are not stored). */
static inline __attribute__((always_inline)) void byoc_dw_store_(float* restrict y,
                                                                 const byoc_v8f_* a,
                                                                 int64_t count) {
  if (count >= 8) {
    memcpy(y, a, sizeof *a);
    return;
  }
  float tmp[8];
  memcpy(tmp, a, sizeof tmp);
  for (int64_t l = 0; l < count; ++l) y[l] = tmp[l];
}

#define BYOC_DW_TAP_(k)                          \
  do {                                           \
    byoc_v8f_ v_;                                \
    memcpy(&v_, p + o##k, sizeof v_);            \
    a##k += s * v_;                              \
  } while (0)

/* Six output vectors whose first taps are at plane + off[k] (stride 1, or 2 split). */
static inline __attribute__((always_inline)) void byoc_dw_six_(
    const float* restrict plane, const float* restrict wc, const int64_t* off, int64_t KH,
    int64_t KW, int64_t DH, int64_t DW, int64_t WP, int64_t half, int split, byoc_v8f_* out) {
  const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3], o4 = off[4], o5 = off[5];
  byoc_v8f_ a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0};
  if (KH == 3 && KW == 3 && DW == 1) { /* the common window, unrolled along its rows */
    for (int64_t kh = 0; kh < 3; ++kh) {
      const float* xr = plane + kh * DH * WP;
      const float* p = xr;
      float s = wc[3 * kh];
      BYOC_DW_TAP_(0); BYOC_DW_TAP_(1); BYOC_DW_TAP_(2); BYOC_DW_TAP_(3); BYOC_DW_TAP_(4); BYOC_DW_TAP_(5);
      p = split ? xr + half : xr + 1;
      s = wc[3 * kh + 1];
      BYOC_DW_TAP_(0); BYOC_DW_TAP_(1); BYOC_DW_TAP_(2); BYOC_DW_TAP_(3); BYOC_DW_TAP_(4); BYOC_DW_TAP_(5);
      p = split ? xr + 1 : xr + 2;
      s = wc[3 * kh + 2];
      BYOC_DW_TAP_(0); BYOC_DW_TAP_(1); BYOC_DW_TAP_(2); BYOC_DW_TAP_(3); BYOC_DW_TAP_(4); BYOC_DW_TAP_(5);
    }
    out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3, out[4] = a4, out[5] = a5;
    return;
  }
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = plane + kh * DH * WP;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t col = kw * DW;
      const float* p = split ? xr + (col & 1 ? half : 0) + col / 2 : xr + col;
      const float s = wc[kh * KW + kw];
      BYOC_DW_TAP_(0);
      BYOC_DW_TAP_(1);
      BYOC_DW_TAP_(2);
      BYOC_DW_TAP_(3);
      BYOC_DW_TAP_(4);
      BYOC_DW_TAP_(5);
    }
  }
  out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3, out[4] = a4, out[5] = a5;
}

/* One output vector: row oh, columns from ow (any stride). */
static inline __attribute__((always_inline)) void byoc_dw_one_(
    const byoc_conv_geom_* g, const float* restrict plane, const float* restrict wc, int64_t oh,
    int64_t ow, int split, byoc_v8f_* out) {
  const int64_t WP = g->WP, KH = g->KH, KW = g->KW, SH = g->SH, SW = g->SW, DH = g->DH, DW = g->DW;
  const int64_t half = (WP + 1) / 2;
  byoc_v8f_ a = {0};
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = plane + (oh * SH + kh * DH) * WP;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t col = kw * DW;
      byoc_v8f_ v;
      if (split) {
        memcpy(&v, xr + (col & 1 ? half : 0) + col / 2 + ow, sizeof v);
      } else if (SW == 1) {
        memcpy(&v, xr + ow + col, sizeof v);
      } else {
        const float* p = xr + ow * SW + col;
        v = (byoc_v8f_){p[0], p[SW], p[2 * SW], p[3 * SW], p[4 * SW], p[5 * SW], p[6 * SW],
                        p[7 * SW]};
      }
      a += wc[kh * KW + kw] * v;
    }
  }
  *out = a;
}

/* One channel from its padded plane into yc (OH x OW). */
static inline __attribute__((always_inline)) void byoc_dw_channel_(
    const byoc_conv_geom_* g, const float* restrict plane, const float* restrict wc,
    float* restrict yc, int split) {
  const int64_t OH = g->OH, OW = g->OW, nv = (OW + 7) / 8, jobs = OH * nv;
  const int64_t WP = g->WP, SH = g->SH, SW = split ? 1 : g->SW;
  const int64_t half = (WP + 1) / 2;
  if (!(split || g->SW == 1) || jobs < BYOC_DW_JOBS) {
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ow += 8) {
        byoc_v8f_ a;
        byoc_dw_one_(g, plane, wc, oh, ow, split, &a);
        byoc_dw_store_(yc + oh * OW + ow, &a, OW - ow);
      }
    return;
  }
  /* A row's vectors start at columns 0, 8, 16, ..., the last at OW - 8 (overlapping the one
   * before it when 8 does not divide OW: its columns are computed again, the same way), so
   * every store is whole unless the row is narrower than 8. Vectors go six at a time in
   * row-major order; the last group ends at the last vector, overlapping the group before.
   * A row narrower than 8 is stored whole too, its extra lanes into the rows after it, which
   * are all stored later (in this group or a later one), except where they would leave the
   * channel's plane: there only its OW columns. */
  const int64_t last = OW >= 8 ? OW - 8 : 0, count = OW >= 8 ? 8 : OW, P = OH * OW;
  /* one or two vectors left over: one at a time (a group costs about three) */
  const int64_t rest = jobs % BYOC_DW_JOBS, grouped = rest <= 2 ? jobs - rest : jobs;
  int64_t r = 0, v = 0;
  for (int64_t j0 = 0; j0 < grouped; j0 += BYOC_DW_JOBS) {
    if (j0 + BYOC_DW_JOBS > jobs) { /* the overlapping last group */
      r = (jobs - BYOC_DW_JOBS) / nv, v = (jobs - BYOC_DW_JOBS) % nv;
    }
    int64_t off[BYOC_DW_JOBS], yo[BYOC_DW_JOBS];
    for (int k = 0; k < BYOC_DW_JOBS; ++k) {
      const int64_t ow = v == nv - 1 ? last : 8 * v;
      off[k] = r * SH * WP + ow * SW;
      yo[k] = r * OW + ow;
      if (++v == nv) v = 0, ++r;
    }
    byoc_v8f_ a[BYOC_DW_JOBS];
    byoc_dw_six_(plane, wc, off, g->KH, g->KW, g->DH, g->DW, WP, half, split, a);
    for (int k = 0; k < BYOC_DW_JOBS; ++k)
      byoc_dw_store_(yc + yo[k], &a[k], yo[k] + 8 <= P ? 8 : count);
  }
  for (int64_t j = grouped; j < jobs; ++j) {
    const int64_t oh = j / nv, ow = j % nv == nv - 1 ? last : 8 * (j % nv);
    byoc_v8f_ a;
    byoc_dw_one_(g, plane, wc, oh, ow, split, &a);
    byoc_dw_store_(yc + oh * OW + ow, &a, oh * OW + ow + 8 <= P ? 8 : count);
  }
}

BYOC_KERNEL void byoc_conv2d_dw_part_(const byoc_conv_geom_* g, const float* restrict x,
                                      float* restrict plane, const float* restrict w,
                                      float* restrict y, int64_t c0, int64_t c1, int split,
                                      const byoc_epilogue_* ep) {
  if (c1 <= c0) return;
  byoc_conv2d_dw_zero_(g, plane);
  const int64_t KK = g->KH * g->KW, HW = g->H * g->W, P = g->OH * g->OW;
  for (int64_t c = c0; c < c1; ++c) {
    byoc_conv2d_dw_fill_(g, x + c * HW, plane, split);
    float* yc = y + c * P;
    if (split)
      byoc_dw_channel_(g, plane, w + c * KK, yc, 1);
    else
      byoc_dw_channel_(g, plane, w + c * KK, yc, 0);
    if (ep != NULL) byoc_epilogue_run_(ep, c, yc, P); /* the channel's plane, in cache */
  }
}

/*
 * One group of one image (xg: its padded channels, wg: its weights, yg: its
 * output channels), pixel tiles [t0, t1) x output channels [oc0, oc1) of the
 * group. The reduction index k = (c, kh, kw) is cut into blocks; per block, the
 * block's rows of each tile's im2col are packed into a panel (on the stack: per
 * thread), and every tile of 6 output channels is accumulated over it in
 * registers, continuing the sums of the previous blocks from y. Two orders:
 *
 *   - at most BYOC_CONV2D_TB tiles (a small map, or a thread's share of one): the
 *     panels of all the tiles, then per chunk of 6 channels every tile, so the
 *     chunk's weight rows come from memory once and from L1 for the other tiles,
 *     in blocks of up to BYOC_CONV2D_PANEL / tiles rows (long contiguous runs of
 *     each row: the prefetchers follow them). The weights are the bytes there;
 *     one tile after the other, each streamed the whole weights from L2 or memory.
 *   - more tiles: per tile, its panel, then every chunk of channels, in blocks
 *     whose weights, (oc1 - oc0) x rows, stay in L2 (at most 512 KB) for the next
 *     tile.
 *
 * Either way each output is summed in order of k, with the same operations: the
 * blocking changes no result. Then the epilogue (channels from ch0), over the
 * piece's pixels of each channel while they are in cache: applied inside the
 * register tile it made the compiler spill the accumulators.
 */
/* Rows [k0, k0 + kc) of the im2col of pixel tile `tile` (16 pixels) into pk, 16 floats a row. */
static inline __attribute__((always_inline)) void byoc_conv2d_pack_(const byoc_conv_geom_* g,
                                                                    const float* restrict xg,
                                                                    int64_t tile, int64_t k0,
                                                                    int64_t kc, float* restrict pk) {
  enum { TP = 16 };
  const int64_t HP = g->HP, WP = g->WP, OW = g->OW, P = g->P;
  const int64_t KH = g->KH, KW = g->KW, SH = g->SH, SW = g->SW, DH = g->DH, DW = g->DW;
  int64_t off[TP];
  const int64_t p0 = tile * TP;
  const int64_t np = P - p0 < TP ? P - p0 : TP;
  for (int64_t j = 0; j < TP; ++j) {
    const int64_t p = p0 + (j < np ? j : np - 1);
    off[j] = (p / OW) * SH * WP + (p % OW) * SW;
  }
  const int contiguous = off[TP - 1] - off[0] == TP - 1;
  int64_t ic = k0 / (KH * KW), kh = k0 / KW % KH, kw = k0 % KW;
  for (int64_t k = 0; k < kc; ++k, pk += TP) {
    const float* b = xg + (ic * HP + kh * DH) * WP + kw * DW;
    if (contiguous) {
      memcpy(pk, b + off[0], TP * sizeof(float));
    } else {
      for (int64_t j = 0; j < TP; ++j) pk[j] = b[off[j]];
    }
    if (++kw == KW) {
      kw = 0;
      if (++kh == KH) {
        kh = 0;
        ++ic;
      }
    }
  }
}

#ifdef BYOC_FMA
#define BYOC_CONV2D_TILE_(panel, wt, kc, yt, P, to, np, first)         \
  do {                                                                \
    if (use_fma) {                                                    \
      byoc_conv2d_tile_fma_(panel, wt, kc, yt, P, to, np, first);     \
    } else {                                                          \
      byoc_conv2d_tile_(panel, wt, kc, yt, P, to, np, first);         \
    }                                                                 \
  } while (0)
#else
#define BYOC_CONV2D_TILE_(panel, wt, kc, yt, P, to, np, first) \
  byoc_conv2d_tile_(panel, wt, kc, yt, P, to, np, first)
#endif

BYOC_KERNEL void byoc_conv2d_part_(const byoc_conv_geom_* g, const float* restrict xg,
                                   const float* restrict wg, float* restrict yg, int64_t t0,
                                   int64_t t1, int64_t oc0, int64_t oc1, const byoc_epilogue_* ep,
                                   int64_t ch0) {
  enum { TO = 6, TP = 16 };
  float panel[TP * BYOC_CONV2D_PANEL] __attribute__((aligned(64)));
  const int64_t P = g->P, WS = g->WS;
  if (t1 <= t0 || oc1 <= oc0) return;
#ifdef BYOC_FMA
  const int use_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  if (t1 - t0 > BYOC_CONV2D_TB) { /* tile by tile */
    int64_t KC = 131072 / (oc1 - oc0); /* a block's weights: at most 512 KB */
    KC = KC < 64 ? 64 : KC > BYOC_CONV2D_KC ? BYOC_CONV2D_KC : KC;
    KC = KC > WS ? WS : KC;
    for (int64_t k0 = 0; k0 < WS; k0 += KC) {
      const int64_t kc = WS - k0 < KC ? WS - k0 : KC;
      for (int64_t tile = t0; tile < t1; ++tile) {
        const int64_t p0 = tile * TP;
        const int64_t np = P - p0 < TP ? P - p0 : TP;
        byoc_conv2d_pack_(g, xg, tile, k0, kc, panel);
        for (int64_t oc = oc0; oc < oc1; oc += TO) {
          const int64_t to = oc1 - oc < TO ? oc1 - oc : TO;
          const float* wt[TO];
          for (int64_t t = 0; t < TO; ++t) wt[t] = wg + (oc + (t < to ? t : 0)) * WS + k0;
          BYOC_CONV2D_TILE_(panel, wt, kc, yg + oc * P + p0, P, to, np, k0 == 0);
        }
      }
    }
  } else { /* the tiles together */
    int64_t KC = BYOC_CONV2D_PANEL / (t1 - t0);
    KC = KC > WS ? WS : KC;
    for (int64_t k0 = 0; k0 < WS; k0 += KC) {
      const int64_t kc = WS - k0 < KC ? WS - k0 : KC;
      for (int64_t tile = t0; tile < t1; ++tile) byoc_conv2d_pack_(g, xg, tile, k0, kc, panel + (tile - t0) * kc * TP);
      for (int64_t oc = oc0; oc < oc1; oc += TO) {
        const int64_t to = oc1 - oc < TO ? oc1 - oc : TO;
        const float* wt[TO];
        for (int64_t t = 0; t < TO; ++t) wt[t] = wg + (oc + (t < to ? t : 0)) * WS + k0;
        for (int64_t tile = t0; tile < t1; ++tile) {
          const int64_t p0 = tile * TP;
          const int64_t np = P - p0 < TP ? P - p0 : TP;
          BYOC_CONV2D_TILE_(panel + (tile - t0) * kc * TP, wt, kc, yg + oc * P + p0, P, to, np, k0 == 0);
        }
      }
    }
  }
  if (ep != NULL) { /* the piece's pixels of each channel: one contiguous run, still in cache */
    const int64_t p0 = t0 * TP, p1 = t1 * TP < P ? t1 * TP : P;
    for (int64_t oc = oc0; oc < oc1; ++oc) byoc_epilogue_run_(ep, ch0 + oc, yg + oc * P + p0, p1 - p0);
  }
}

/* Depthwise: channels [c0, c1), padded one at a time into the piece of the scratch that
 * holds channel c0's padded plane (each thread its own, so no thread waits for another's
 * padding, and a plane stays in L1 while its channel is computed). */
static inline void byoc_conv2d_dw_pad_part_(const byoc_conv_geom_* g, const float* restrict x,
                                            float* restrict xp, const float* restrict w,
                                            float* restrict y, int64_t c0, int64_t c1, int split,
                                            const byoc_epilogue_* ep) {
  byoc_conv2d_dw_part_(g, x, xp + c0 * g->HP * g->WP, w, y, c0, c1, split, ep);
}

/*
 * Work units [u0, u1) of one image for one thread. A unit is one 16-pixel tile times one
 * chunk of 6 output channels of one group, numbered group-major, then tile, then channel
 * chunk; thread t of nt takes units [U * t / nt, U * (t + 1) / nt) of the U in all, so the
 * threads' shares differ by one unit at most, whatever the map size. (Cutting only the
 * pixel tiles left 13 tiles of a 14x14 map as 6 and 7 on two threads, 8 % lost; cutting
 * channel chunks too, every chunk repacked the tiles' panels.) Runs of whole tiles go in
 * chunks of at most `chunk` tiles, each chunk's epilogue while its outputs are in cache; a
 * tile shared with the next thread is split between their channel chunks (both pack it).
 */
static inline void byoc_conv2d_units_(const byoc_conv_geom_* g, const float* restrict xs,
                                      const float* restrict w, float* restrict yn, int64_t tiles,
                                      int64_t u0, int64_t u1, int64_t chunk,
                                      const byoc_epilogue_* ep) {
  const int64_t ocu = (g->OG + 5) / 6, per_group = tiles * ocu;
  for (int64_t u = u0; u < u1;) {
    const int64_t grp = u / per_group, r = u % per_group;
    const int64_t tile = r / ocu, unit = r % ocu;
    const float* xg = xs + grp * g->CG * g->HP * g->WP;
    const float* wg = w + grp * g->OG * g->WS;
    float* yg = yn + grp * g->OG * g->P;
    if (unit != 0 || u1 - u < ocu) { /* part of one tile's channel chunks */
      const int64_t end = unit + (u1 - u) < ocu ? unit + (u1 - u) : ocu;
      const int64_t oc1 = 6 * end < g->OG ? 6 * end : g->OG;
      byoc_conv2d_part_(g, xg, wg, yg, tile, tile + 1, 6 * unit, oc1, ep, grp * g->OG);
      u += end - unit;
      continue;
    }
    int64_t n = (u1 - u) / ocu; /* whole tiles, all channels */
    n = n < tiles - tile ? n : tiles - tile;
    n = n < chunk ? n : chunk;
    byoc_conv2d_part_(g, xg, wg, yg, tile, tile + n, 0, g->OG, ep, grp * g->OG);
    u += n * ocu;
  }
}

/*
 * The same units numbered group-major, then channel chunk, then tile: thread t's share
 * [u0, u1) is a run of whole chunks of channels over every tile, with at most a part of
 * one chunk's tiles at each end. Each thread streams only its channels' weights (and packs
 * every tile's panels): the split for layers whose weights outweigh their pixels.
 */
static inline void byoc_conv2d_chunks_(const byoc_conv_geom_* g, const float* restrict xs,
                                       const float* restrict w, float* restrict yn,
                                       int64_t tiles, int64_t u0, int64_t u1,
                                       const byoc_epilogue_* ep) {
  const int64_t ocu = (g->OG + 5) / 6, per_group = tiles * ocu;
  for (int64_t u = u0; u < u1;) {
    const int64_t grp = u / per_group, r = u % per_group;
    const int64_t unit = r / tiles, tile = r % tiles;
    const float* xg = xs + grp * g->CG * g->HP * g->WP;
    const float* wg = w + grp * g->OG * g->WS;
    float* yg = yn + grp * g->OG * g->P;
    if (tile != 0 || u1 - u < tiles) { /* part of one chunk's tiles */
      const int64_t end = tile + (u1 - u) < tiles ? tile + (u1 - u) : tiles;
      const int64_t oc1 = 6 * unit + 6 < g->OG ? 6 * unit + 6 : g->OG;
      byoc_conv2d_part_(g, xg, wg, yg, tile, end, 6 * unit, oc1, ep, grp * g->OG);
      u += end - tile;
      continue;
    }
    int64_t n = (u1 - u) / tiles; /* whole chunks, every tile */
    n = n < ocu - unit ? n : ocu - unit;
    const int64_t oc1 = 6 * (unit + n) < g->OG ? 6 * (unit + n) : g->OG;
    byoc_conv2d_part_(g, xg, wg, yg, 0, tiles, 6 * unit, oc1, ep, grp * g->OG);
    u += n * tiles;
  }
}

/*
 * The geometry of a conv2d (see byoc_conv2d_run_); returns whether the tiles read the image
 * itself (no padded copy: no padding, and every window inside the image).
 */
static inline int byoc_conv2d_geom_(byoc_conv_geom_* g, int64_t C, int64_t H, int64_t W,
                                    int64_t O, int64_t KH, int64_t KW, int64_t OH, int64_t OW,
                                    int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                    int64_t DW, int64_t G) {
  g->C = C, g->H = H, g->W = W, g->O = O, g->KH = KH, g->KW = KW, g->OH = OH, g->OW = OW;
  g->SH = SH, g->SW = SW, g->PT = PT, g->PL = PL, g->DH = DH, g->DW = DW, g->G = G;
  g->CG = C / G, g->OG = O / G, g->WS = g->CG * KH * KW;
  g->HP = (OH - 1) * SH + (KH - 1) * DH + 1;
  g->OW8 = (OW + 7) / 8 * 8;
  g->WP = (g->OW8 - 1) * SW + (KW - 1) * DW + 1;
  g->P = OH * OW;
  if (g->CG == 1 && g->OG == 1) return 0; /* depthwise: its own padded rows */
  /* The tiles need no room past the last output column: rows just wide enough; and when
   * the windows never leave the image (no padding, e.g. 1x1 at any stride), no copy at all:
   * the tiles read the image, its rows W apart. */
  g->WP = (OW - 1) * SW + (KW - 1) * DW + 1;
  const int direct = PT == 0 && PL == 0 && g->HP <= H && g->WP <= W;
  if (direct) g->HP = H, g->WP = W;
  return direct;
}

/* Whether a conv2d's threads split its output channels (byoc_conv2d_chunks_) rather than
 * its pixel tiles: when a group's weights are the bigger stream, at least 2 output channels
 * per pixel (each tile-split thread would stream all of them for its share of the pixels). */
#ifndef BYOC_CONV2D_BY_CHANNEL
#define BYOC_CONV2D_BY_CHANNEL 8
#endif
static inline int byoc_conv2d_by_channel_(const byoc_conv_geom_* g) {
  return g->KH * g->KW == 1 && g->OG >= BYOC_CONV2D_BY_CHANNEL * g->P;
}

/* Units [u0, u1) of one image's (xs: the padded image, or the image): a claim of a split
 * (BYOC_STEAL_); runs of whole tiles in chunks of at most `chunk` tiles. */
static inline void byoc_conv2d_claim_(const byoc_conv_geom_* g, const float* restrict xs,
                                      const float* restrict w, float* restrict yn, int64_t u0,
                                      int64_t u1, int64_t chunk, const byoc_epilogue_* ep) {
  const int64_t tiles = (g->P + 15) / 16;
  if (byoc_conv2d_by_channel_(g))
    byoc_conv2d_chunks_(g, xs, w, yn, tiles, u0, u1, ep);
  else
    byoc_conv2d_units_(g, xs, w, yn, tiles, u0, u1, chunk, ep);
}

/*
 * y[n, o, oh, ow] = sum_{c in group(o), kh, kw} x[n, c, oh*SH - PT + kh*DH, ow*SW - PL + kw*DW]
 *                                                * w[o, c - group_start, kh, kw]
 * then the epilogue `ep` (NULL: none). Each image is first copied into the
 * scratch with its zero padding made explicit (and, depthwise, room for whole
 * 8-column tiles), so nothing below checks bounds; a conv without padding whose
 * windows stay inside the image reads it in place. Then, per group,
 * byoc_conv2d_part_ computes tiles of 16 pixels x 6 output channels, the
 * reduction index k = (c, kh, kw) in blocks. Each output is summed in order of
 * k, so the result depends neither on the blocking nor on the threads (with
 * FMA, the tile fuses each step: see BYOC_CLONES). With several threads, the
 * padding copy is split over channels, and the (tile, 6-channel chunk) units
 * into equal shares, runs of pixel tiles or, when the weights outweigh the
 * pixels, of channel chunks (byoc_conv2d_claim_ under BYOC_STEAL_; depthwise: over channels).
 */
static inline void byoc_conv2d_run_(const float* restrict x, const float* restrict w,
                                    float* restrict y, float* restrict scratch, int64_t N,
                                    int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH,
                                    int64_t KW, int64_t OH, int64_t OW, int64_t SH, int64_t SW,
                                    int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G,
                                    const byoc_epilogue_* ep) {
  byoc_conv_geom_ g;
  const int direct = byoc_conv2d_geom_(&g, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G);
  const int depthwise = g.CG == 1 && g.OG == 1;
  const int split = depthwise && SW == 2;
  float* xp = scratch;
  const int64_t tiles = (g.P + 15) / 16;
  const int64_t macs = g.P * g.OG * g.WS; /* per group and image */
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * C * H * W;
    float* yn = y + n * O * g.P;
    if (depthwise) { /* each thread pads its own channels, then computes them: one region */
      const int32_t nt = byoc_threads_for(macs * C, BYOC_PAR_GRAIN);
      BYOC_STEAL_(nt, C, byoc_steal_grain_(nt, C, 1), 1, c0, c1,
                  byoc_conv2d_dw_pad_part_(&g, xn, xp, w, yn, c0, c1, split, ep));
      continue;
    }
    const float* xs = direct ? xn : xp; /* what the tiles read */
    if (!direct) { /* split as a copy is: at least BYOC_COPY_GRAIN bytes a thread */
      const int32_t nt = byoc_threads_for(C * g.HP * g.WP * (int64_t)sizeof(float), BYOC_COPY_GRAIN);
      BYOC_SPLIT_(nt, t, byoc_conv2d_pad_(&g, xn, xp, C * t / nt, C * (t + 1) / nt, split));
    }
    const int32_t nt = byoc_threads_for(macs * G, BYOC_PAR_GRAIN);
    if (nt <= 1) { /* no OpenMP region at all (see BYOC_SPLIT_) */
      for (int64_t grp = 0; grp < G; ++grp)
        byoc_conv2d_part_(&g, xs + grp * g.CG * g.HP * g.WP, w + grp * g.OG * g.WS,
                          yn + grp * g.OG * g.P, 0, tiles, 0, g.OG, ep, grp * g.OG);
      continue;
    }
    /* The (tile, channel chunk) units in equal shares, claimed in runs of `chunk` tiles:
     * up to 4 runs a thread, or 256 KB of outputs if larger (a call per chunk of a small
     * layer cost 10-15 %: shufflenet's grouped 1x1 convs, 1.7x -> 1.97x); claims end on
     * whole tiles. Split by channel (byoc_conv2d_chunks_): claims of whole channel chunks
     * over every tile, about a quarter of a share. */
    const int64_t ocu = (g.OG + 5) / 6, units = G * tiles * ocu;
    int64_t chunk = (tiles + 4 * nt - 1) / (4 * (int64_t)nt);
    chunk = chunk > 4096 / g.OG ? chunk : 4096 / g.OG;
    const int by_channel = byoc_conv2d_by_channel_(&g);
    const int64_t align = by_channel ? tiles : ocu;
    const int64_t grain = by_channel ? byoc_steal_grain_(nt, units, tiles) : chunk * ocu;
    BYOC_STEAL_(nt, units, grain, align, u0, u1, byoc_conv2d_claim_(&g, xs, w, yn, u0, u1, chunk, ep));
  }
}

/* conv2d (NCHW, OIHW), no epilogue; `scratch`: BYOC_CONV2D_SCRATCH floats. */
static inline BYOC_MAYBE_UNUSED void byoc_conv2d_f32(
    const float* restrict x, const float* restrict w, float* restrict y, float* restrict scratch,
    int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,
    int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G) {
  byoc_conv2d_run_(x, w, y, scratch, N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G, NULL);
}

/*
 * conv2d with an epilogue: `parts` (BYOC_EP_*) says which of bias (O), scale
 * and shift (O each) are real (the others are never read: any pointer does),
 * `act` (BYOC_ACT_*) with alpha, beta the activation.
 */
static inline BYOC_MAYBE_UNUSED void byoc_conv2d_ep_f32(
    const float* restrict x, const float* restrict w, const float* bias, const float* scale,
    const float* shift, float* restrict y, float* restrict scratch, int64_t N, int64_t C, int64_t H,
    int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t SH, int64_t SW,
    int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G, int32_t parts, int32_t act,
    float alpha, float beta) {
  const byoc_epilogue_ ep = byoc_epilogue_of_(parts, bias, scale, shift, act, alpha, beta);
  byoc_conv2d_run_(x, w, y, scratch, N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G, &ep);
}

/* ---- conv2d_transpose -------------------------------------------------------- */

/*
 * Transposed convolution, data NCHW, weight (C, O/G, KH, KW) (nn.conv2d_transpose):
 * per image and group, cols[m, p] = sum_c w[c, m] * x[c, p] (m = (o, kh, kw),
 * p = input pixel, c over the group's input channels, in order) into the
 * scratch, then each column is added into the output pixel it lands on
 * (oy = iy*SH - PT + kh*DH, ox = ix*SW - PL + kw*DW; outside the cropped
 * output: dropped), in order of (kh, kw, iy, ix) per output channel.
 * Scratch: (O/G)*KH*KW*H*W floats. Threads split the rows m of cols, then
 * the output channels.
 */
BYOC_KERNEL void byoc_conv2d_transpose_cols_(const float* restrict x, const float* restrict w,
                                             float* restrict cols, int64_t CG, int64_t M,
                                             int64_t P, int64_t m0, int64_t m1) {
  enum { TP = 512 };
  for (int64_t p0 = 0; p0 < P; p0 += TP) {
    const int64_t np = P - p0 < TP ? P - p0 : TP;
    int64_t m = m0;
    for (; m + 4 <= m1; m += 4) {
      float* r0 = cols + m * P + p0;
      float* r1 = r0 + P;
      float* r2 = r1 + P;
      float* r3 = r2 + P;
      for (int64_t j = 0; j < np; ++j) r0[j] = r1[j] = r2[j] = r3[j] = 0.0f;
      for (int64_t c = 0; c < CG; ++c) {
        const float* xc = x + c * P + p0;
        const float w0 = w[c * M + m], w1 = w[c * M + m + 1], w2 = w[c * M + m + 2],
                    w3 = w[c * M + m + 3];
        for (int64_t j = 0; j < np; ++j) {
          const float v = xc[j];
          r0[j] += w0 * v;
          r1[j] += w1 * v;
          r2[j] += w2 * v;
          r3[j] += w3 * v;
        }
      }
    }
    for (; m < m1; ++m) {
      float* r0 = cols + m * P + p0;
      for (int64_t j = 0; j < np; ++j) r0[j] = 0.0f;
      for (int64_t c = 0; c < CG; ++c) {
        const float* xc = x + c * P + p0;
        const float w0 = w[c * M + m];
        for (int64_t j = 0; j < np; ++j) r0[j] += w0 * xc[j];
      }
    }
  }
}

static inline void byoc_conv2d_transpose_add_(const float* restrict cols, float* restrict y,
                                              int64_t H, int64_t W, int64_t KH, int64_t KW,
                                              int64_t OH, int64_t OW, int64_t SH, int64_t SW,
                                              int64_t PT, int64_t PL, int64_t DH, int64_t DW,
                                              int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    float* yo = y + o * OH * OW;
    for (int64_t i = 0; i < OH * OW; ++i) yo[i] = 0.0f;
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float* col = cols + ((o * KH + kh) * KW + kw) * H * W;
        /* input columns whose output column lies in [0, OW) */
        const int64_t shift = kw * DW - PL;
        int64_t lo = shift >= 0 ? 0 : (-shift + SW - 1) / SW;
        int64_t hi = OW - 1 - shift < 0 ? 0 : (OW - 1 - shift) / SW + 1;
        hi = hi < W ? hi : W;
        lo = lo < hi ? lo : hi;
        for (int64_t iy = 0; iy < H; ++iy) {
          const int64_t oy = iy * SH - PT + kh * DH;
          if (oy < 0 || oy >= OH) continue;
          float* yr = yo + oy * OW;
          const float* cr = col + iy * W;
          if (SW == 1) {
            for (int64_t ix = lo; ix < hi; ++ix) yr[ix + shift] += cr[ix];
          } else {
            for (int64_t ix = lo; ix < hi; ++ix) yr[ix * SW + shift] += cr[ix];
          }
        }
      }
    }
  }
}

static inline BYOC_MAYBE_UNUSED void byoc_conv2d_transpose_f32(
    const float* restrict x, const float* restrict w, float* restrict y, float* restrict scratch,
    int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,
    int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G) {
  const int64_t CG = C / G, OG = O / G, M = OG * KH * KW, P = H * W;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      const float* xg = x + (n * C + g * CG) * P;
      const float* wg = w + g * CG * M;
      float* yg = y + (n * O + g * OG) * OH * OW;
      {
        const int32_t nt = byoc_threads_for(CG * M * P, BYOC_PAR_GRAIN);
        BYOC_SPLIT_(nt, t, byoc_conv2d_transpose_cols_(xg, wg, scratch, CG, M, P, M * t / nt, M * (t + 1) / nt));
      }
      const int32_t nt = byoc_threads_for(M * P, 4 * BYOC_PAR_GRAIN);
      BYOC_SPLIT_(nt, t, byoc_conv2d_transpose_add_(scratch, yg, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, OG * t / nt, OG * (t + 1) / nt));
    }
  }
}

/* ---- resize2d ------------------------------------------------------------------ */

/*
 * nn.resize2d (NCHW), separable as the reference is: along H, then along W,
 * in double, rounded to float once at the end. Per axis the lowering passes a
 * table computed with the reference's own code (byoc/interpreters/kernels.py):
 * nearest (`linear` 0): the source index of each output index (the identity
 * for an axis left as it is); linear: the two source indices and the weight w
 * of the second, as the bits of a double; the value is a*(1-w) + b*w.
 */
static inline double byoc_f64_bits_(int64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

static inline void byoc_resize2d_rows_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int32_t hlin,
                                       const int64_t* hlo, const int64_t* hhi, const int64_t* hwt,
                                       int32_t wlin, const int64_t* wlo, const int64_t* whi,
                                       const int64_t* wwt, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) { /* r = (channel, output row) */
    const int64_t c = r / OH, oh = r % OH;
    const float* xa = x + (c * H + hlo[oh]) * W;
    float* yr = y + r * OW;
    if (!hlin && !wlin) {
      for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = xa[wlo[ow]];
      continue;
    }
    if (!hlin) { /* W only */
      for (int64_t ow = 0; ow < OW; ++ow) {
        const double t = byoc_f64_bits_(wwt[ow]);
        yr[ow] = (float)((double)xa[wlo[ow]] * (1.0 - t) + (double)xa[whi[ow]] * t);
      }
      continue;
    }
    const float* xb = x + (c * H + hhi[oh]) * W;
    const double s = byoc_f64_bits_(hwt[oh]), s1 = 1.0 - s;
    if (!wlin) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t i = wlo[ow];
        yr[ow] = (float)((double)xa[i] * s1 + (double)xb[i] * s);
      }
      continue;
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t i = wlo[ow], j = whi[ow];
      const double t = byoc_f64_bits_(wwt[ow]);
      const double a = (double)xa[i] * s1 + (double)xb[i] * s;
      const double b = (double)xa[j] * s1 + (double)xb[j] * s;
      yr[ow] = (float)(a * (1.0 - t) + b * t);
    }
  }
}

static inline BYOC_MAYBE_UNUSED void byoc_resize2d_f32(
    const float* restrict x, float* restrict y, int64_t NC, int64_t H, int64_t W, int64_t OH,
    int64_t OW, int32_t hlin, const int64_t* hlo, const int64_t* hhi, const int64_t* hwt,
    int32_t wlin, const int64_t* wlo, const int64_t* whi, const int64_t* wwt) {
  const int64_t rows = NC * OH;
  const int32_t nt = byoc_threads_for(rows * OW * (1 + 2 * (hlin + wlin)), 2 * BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_resize2d_rows_(x, y, H, W, OH, OW, hlin, hlo, hhi, hwt, wlin, wlo, whi, wwt, rows * t / nt, rows * (t + 1) / nt));
}

/* ---- lrn ------------------------------------------------------------------------- */

/*
 * Local response normalisation across the middle dim of an (outer, n, inner)
 * view (nn.lrn): y = x / (bias + alpha_n * s)^beta, s the float sum of x^2
 * over the window [i - (size-1)/2, i + size/2] clipped to [0, n), summed from
 * its first element, as the reference does; alpha_n = alpha / size.
 */
static inline void byoc_lrn_rows_(const float* restrict x, float* restrict y, int64_t n,
                                  int64_t inner, int64_t size, float alpha_n, float bias,
                                  float beta, int64_t r0, int64_t r1) {
  const int64_t before = (size - 1) / 2;
  for (int64_t r = r0; r < r1; ++r) { /* r = (o, i): the window reads x only */
    const int64_t o = r / n, i = r % n;
    const float* xo = x + o * n * inner;
    float* yr = y + r * inner;
    for (int64_t p = 0; p < inner; ++p) yr[p] = 0.0f;
    for (int64_t k = 0; k < size; ++k) {
      const int64_t j = i + k - before;
      if (j < 0 || j >= n) continue;
      const float* xr = xo + j * inner;
      for (int64_t p = 0; p < inner; ++p) yr[p] += xr[p] * xr[p];
    }
    const float* xi = xo + i * inner;
    for (int64_t p = 0; p < inner; ++p) yr[p] = xi[p] / powf(bias + alpha_n * yr[p], beta);
  }
}

static inline BYOC_MAYBE_UNUSED void byoc_lrn_f32(const float* restrict x, float* restrict y,
                                                  int64_t outer, int64_t n, int64_t inner,
                                                  int64_t size, float alpha_n, float bias,
                                                  float beta) {
  const int64_t rows = outer * n;
  const int32_t nt = byoc_threads_for(rows * inner * (size + 16), BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_lrn_rows_(x, y, n, inner, size, alpha_n, bias, beta, rows * t / nt, rows * (t + 1) / nt));
}

/* ---- dense and matmul ------------------------------------------------------ */

/*
 * y[m, n] = sum_k x[m, k] * w[n, k]  (x: M x K, w: N x K, y: M x N), rows [m0, m1) and
 * columns [n0, n1), each row segment then through the epilogue `ep` (NULL: none).
 * The sum of each output does not depend on the range: the same code computes it.
 */
BYOC_KERNEL void byoc_dense_part_(const float* restrict x, const float* restrict w,
                                  float* restrict y, int64_t N, int64_t K, int64_t m0, int64_t m1,
                                  int64_t n0, int64_t n1, const byoc_epilogue_* ep) {
  enum { L = 8 };
  const int64_t K8 = K - K % L;
  const int64_t N4 = n0 + (n1 - n0) / 4 * 4;
  for (int64_t m = m0; m < m1; ++m) {
    const float* xr = x + m * K;
    float* yr = y + m * N;
    for (int64_t n = n0; n < N4; n += 4) {
      const float* w0 = w + n * K;
      const float* w1 = w0 + K;
      const float* w2 = w1 + K;
      const float* w3 = w2 + K;
      float s0[L] = {0}, s1[L] = {0}, s2[L] = {0}, s3[L] = {0};
      for (int64_t k = 0; k < K8; k += L) {
        for (int j = 0; j < L; ++j) {
          const float v = xr[k + j];
          s0[j] += v * w0[k + j];
          s1[j] += v * w1[k + j];
          s2[j] += v * w2[k + j];
          s3[j] += v * w3[k + j];
        }
      }
      float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
      for (int j = 0; j < L; ++j) {
        t0 += s0[j];
        t1 += s1[j];
        t2 += s2[j];
        t3 += s3[j];
      }
      for (int64_t k = K8; k < K; ++k) {
        t0 += xr[k] * w0[k];
        t1 += xr[k] * w1[k];
        t2 += xr[k] * w2[k];
        t3 += xr[k] * w3[k];
      }
      yr[n] = t0;
      yr[n + 1] = t1;
      yr[n + 2] = t2;
      yr[n + 3] = t3;
    }
    for (int64_t n = N4; n < n1; ++n) {
      const float* w0 = w + n * K;
      float s0[L] = {0};
      for (int64_t k = 0; k < K8; k += L)
        for (int j = 0; j < L; ++j) s0[j] += xr[k + j] * w0[k + j];
      float t0 = 0.0f;
      for (int j = 0; j < L; ++j) t0 += s0[j];
      for (int64_t k = K8; k < K; ++k) t0 += xr[k] * w0[k];
      yr[n] = t0;
    }
    if (ep != NULL) byoc_epilogue_row_(ep, n0, yr + n0, n1 - n0);
  }
}

/* Columns [4 * q0, 4 * q1) of every row (the last quad may be short). */
static inline void byoc_dense_quads_(const float* restrict x, const float* restrict w,
                                     float* restrict y, int64_t M, int64_t N, int64_t K,
                                     int64_t q0, int64_t q1, const byoc_epilogue_* ep) {
  const int64_t n0 = 4 * q0, n1 = 4 * q1 < N ? 4 * q1 : N;
  if (n0 < n1) byoc_dense_part_(x, w, y, N, K, 0, M, n0, n1, ep);
}

/*
 * Threads split the rows when there are enough of them, else the columns
 * (in multiples of 4, so every column is summed by the same code as with one
 * thread: identical results at any thread count); shares with stealing (BYOC_STEAL_).
 */
static inline void byoc_dense_run_(const float* restrict x, const float* restrict w,
                                   float* restrict y, int64_t M, int64_t N, int64_t K,
                                   const byoc_epilogue_* ep) {
  const int32_t nt = byoc_threads_for(M * N * K, BYOC_PAR_GRAIN);
  if (nt <= 1) {
    byoc_dense_part_(x, w, y, N, K, 0, M, 0, N, ep);
    return;
  }
  if (M >= 2 * (int64_t)nt) {
    BYOC_STEAL_(nt, M, byoc_steal_grain_(nt, M, 1), 1, m0, m1,
                byoc_dense_part_(x, w, y, N, K, m0, m1, 0, N, ep));
    return;
  }
  const int64_t quads = (N + 3) / 4;
  BYOC_STEAL_(nt, quads, byoc_steal_grain_(nt, quads, 1), 1, q0, q1,
              byoc_dense_quads_(x, w, y, M, N, K, q0, q1, ep));
}

static inline BYOC_MAYBE_UNUSED void byoc_dense_f32(const float* restrict x, const float* restrict w,
                                                    float* restrict y, int64_t M, int64_t N,
                                                    int64_t K) {
  byoc_dense_run_(x, w, y, M, N, K, NULL);
}

/* dense with an epilogue (per output column n): see byoc_conv2d_ep_f32. */
static inline BYOC_MAYBE_UNUSED void byoc_dense_ep_f32(
    const float* restrict x, const float* restrict w, const float* bias, const float* scale,
    const float* shift, float* restrict y, int64_t M, int64_t N, int64_t K, int32_t parts,
    int32_t act, float alpha, float beta) {
  const byoc_epilogue_ ep = byoc_epilogue_of_(parts, bias, scale, shift, act, alpha, beta);
  byoc_dense_run_(x, w, y, M, N, K, &ep);
}

/* One matrix product y (M x N) = a (M x K) . b (K x N). */
static inline void byoc_matmul2d_f32_(const float* restrict a, const float* restrict b,
                                      float* restrict y, int64_t M, int64_t K, int64_t N) {
  for (int64_t m = 0; m < M; ++m) {
    float* yr = y + m * N;
    for (int64_t n = 0; n < N; ++n) yr[n] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float av = a[m * K + k];
      const float* br = b + k * N;
      for (int64_t n = 0; n < N; ++n) yr[n] += av * br[n];
    }
  }
}

/*
 * Batched matmul with numpy broadcasting of the batch dimensions: the output
 * batch has `nb` dims `bshape`; `astr`/`bstr` give, per batch dim, how many
 * elements to step in a and b (0 where that operand broadcasts).
 */
BYOC_KERNEL void byoc_matmul_f32(const float* restrict a, const float* restrict b,
                                   float* restrict y, int64_t M, int64_t K, int64_t N, int32_t nb,
                                   const int64_t* bshape, const int64_t* astr,
                                   const int64_t* bstr) {
  int64_t idx[BYOC_MAX_RANK] = {0};
  int64_t total = 1;
  for (int32_t d = 0; d < nb; ++d) total *= bshape[d];
  int64_t ao = 0, bo = 0;
  for (int64_t t = 0; t < total; ++t) {
    byoc_matmul2d_f32_(a + ao, b + bo, y + t * M * N, M, K, N);
    for (int32_t d = nb - 1; d >= 0; --d) {
      ao += astr[d];
      bo += bstr[d];
      if (++idx[d] < bshape[d]) break;
      ao -= astr[d] * bshape[d];
      bo -= bstr[d] * bshape[d];
      idx[d] = 0;
    }
  }
}

/* ---- pooling --------------------------------------------------------------- */

/* Window rows/cols outside the input are skipped (they are -inf padding). */
static inline float byoc_max_window_(const float* restrict xc, int64_t H, int64_t W, int64_t KH,
                                     int64_t KW, int64_t DH, int64_t DW, int64_t top,
                                     int64_t left) {
  float m = -INFINITY;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    if (ih < 0 || ih >= H) continue;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = left + kw * DW;
      if (iw < 0 || iw >= W) continue;
      const float v = xc[ih * W + iw];
      m = (v > m || v != v) && m == m ? v : m;
    }
  }
  return m;
}

/* *m = max(*m, *v) per lane with the scalar rule of byoc_max_window_ (a NaN wins, the first stays). */
static inline __attribute__((always_inline)) void byoc_vmax_(byoc_v8f_* m, const byoc_v8f_* v) {
  const byoc_v8i_ take = ((*v > *m) | (*v != *v)) & (*m == *m);
  *m = (byoc_v8f_)(((byoc_v8i_)*v & take) | ((byoc_v8i_)*m & ~take));
}

/*
 * p[0], p[s], ..., p[7s] as a vector, reading nothing past p[7s]: stride 1 is
 * one load; stride 2 two overlapping loads (p[0..7], p[7..14]) and a shuffle.
 */
static inline __attribute__((always_inline)) void byoc_load8_(const float* p, int64_t s,
                                                              byoc_v8f_* out) {
  byoc_v8f_ v;
  if (s == 1) {
    memcpy(&v, p, sizeof v);
  } else if (s == 2) {
    byoc_v8f_ a, b;
    memcpy(&a, p, sizeof a);
    memcpy(&b, p + 7, sizeof b);
#if defined(__clang__)
    v = __builtin_shufflevector(a, b, 0, 2, 4, 6, 9, 11, 13, 15);
#else
    v = __builtin_shuffle(a, b, (byoc_v8i_){0, 2, 4, 6, 9, 11, 13, 15});
#endif
  } else {
    v = (byoc_v8f_){p[0], p[s], p[2 * s], p[3 * s], p[4 * s], p[5 * s], p[6 * s], p[7 * s]};
  }
  *out = v;
}

/*
 * The output columns whose window lies inside the input: [lo, hi), clamped
 * to [0, OW]. Every bound is computed once and each loop counts up from a
 * start it cannot pass: no loop's trip count depends on an index that could
 * overflow (gcc derived one from `ow + 8 <= hi` and rejected a 1x8x2x96 2x2/2
 * pool with -Waggressive-loop-optimizations).
 */
static inline void byoc_pool_inner_cols_(int64_t W, int64_t OW, int64_t KW, int64_t SW,
                                         int64_t PL, int64_t DW, int64_t* lo_out,
                                         int64_t* hi_out) {
  const int64_t last = W - 1 - (KW - 1) * DW + PL; /* the last column's window start, shifted */
  int64_t lo = (PL + SW - 1) / SW, hi = last >= 0 ? last / SW + 1 : 0;
  hi = hi < OW ? hi : OW;
  lo = lo < hi ? lo : hi;
  *lo_out = lo;
  *hi_out = hi;
}

/*
 * Max pooling of channels [c0, c1): 8 output columns at a time over the
 * columns whose window lies inside the input, one at a time elsewhere. Each
 * lane visits its window in the order byoc_max_window_ does: the same
 * results as the scalar code, and in the AVX2 clone as in the baseline one.
 */
/* The 8 outputs of row `top` from column ow (their windows inside the input) into y. */
static inline __attribute__((always_inline)) void byoc_max_pool8_(
    const float* restrict xc, float* restrict y, int64_t H, int64_t W, int64_t KH, int64_t KW,
    int64_t SW, int64_t PL, int64_t DH, int64_t DW, int64_t top, int64_t ow) {
  byoc_v8f_ m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                 -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    if (ih < 0 || ih >= H) continue;
    const float* xr = xc + ih * W + ow * SW - PL;
    for (int64_t kw = 0; kw < KW; ++kw) {
      byoc_v8f_ v;
      byoc_load8_(xr + kw * DW, SW, &v);
      byoc_vmax_(&m, &v);
    }
  }
  memcpy(y, &m, sizeof m);
}

/* byoc_max_pool8_ for the 32 outputs from column ow: four vectors through the window
 * together (one at a time, each waited on the maximum before it). */
static inline __attribute__((always_inline)) void byoc_max_pool8x4_(
    const float* restrict xc, float* restrict y, int64_t H, int64_t W, int64_t KH, int64_t KW,
    int64_t SW, int64_t PL, int64_t DH, int64_t DW, int64_t top, int64_t ow) {
  byoc_v8f_ m0 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  byoc_v8f_ m1 = m0, m2 = m0, m3 = m0;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    if (ih < 0 || ih >= H) continue;
    const float* xr = xc + ih * W + ow * SW - PL;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const float* p = xr + kw * DW;
      byoc_v8f_ v0, v1, v2, v3;
      byoc_load8_(p, SW, &v0);
      byoc_load8_(p + 8 * SW, SW, &v1);
      byoc_load8_(p + 16 * SW, SW, &v2);
      byoc_load8_(p + 24 * SW, SW, &v3);
      byoc_vmax_(&m0, &v0);
      byoc_vmax_(&m1, &v1);
      byoc_vmax_(&m2, &v2);
      byoc_vmax_(&m3, &v3);
    }
  }
  memcpy(y, &m0, sizeof m0);
  memcpy(y + 8, &m1, sizeof m1);
  memcpy(y + 16, &m2, sizeof m2);
  memcpy(y + 24, &m3, sizeof m3);
}

BYOC_KERNEL void byoc_max_pool2d_part_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                       int64_t DW, int64_t c0, int64_t c1) {
  int64_t lo, hi;
  byoc_pool_inner_cols_(W, OW, KW, SW, PL, DW, &lo, &hi);
  const int64_t nvec = (hi - lo) / 8, tail = lo + 8 * nvec;
  /* The inner columns past the last whole group of 8: one more group ending at hi, which
   * overlaps the previous one (its lanes compute the same windows again, the same way),
   * instead of one window at a time. */
  const int64_t overlap = nvec > 0 && tail < hi;
  const int64_t scalar_from = overlap ? hi : tail;
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * H * W;
    float* yc = y + c * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t top = oh * SH - PT;
      for (int64_t ow = 0; ow < lo; ++ow)
        yc[oh * OW + ow] = byoc_max_window_(xc, H, W, KH, KW, DH, DW, top, ow * SW - PL);
      int64_t b = 0;
      for (; b + 4 <= nvec; b += 4) {
        const int64_t ow = lo + 8 * b;
        byoc_max_pool8x4_(xc, yc + oh * OW + ow, H, W, KH, KW, SW, PL, DH, DW, top, ow);
      }
      for (; b < nvec; ++b) {
        const int64_t ow = lo + 8 * b;
        byoc_max_pool8_(xc, yc + oh * OW + ow, H, W, KH, KW, SW, PL, DH, DW, top, ow);
      }
      if (overlap)
        byoc_max_pool8_(xc, yc + oh * OW + hi - 8, H, W, KH, KW, SW, PL, DH, DW, top, hi - 8);
      for (int64_t ow = scalar_from; ow < OW; ++ow)
        yc[oh * OW + ow] = byoc_max_window_(xc, H, W, KH, KW, DH, DW, top, ow * SW - PL);
    }
  }
}

/* Threads split the channels (the results do not depend on the split). */
static inline void byoc_max_pool2d_f32(const float* restrict x, float* restrict y, int64_t NC,
                                       int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t KH,
                                       int64_t KW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                                       int64_t DH, int64_t DW) {
  const int32_t nt = byoc_threads_for(NC * OH * OW * KH * KW, 2 * BYOC_PAR_GRAIN);
  BYOC_STEAL_(nt, NC, byoc_steal_grain_(nt, NC, 1), 1, c0, c1,
              byoc_max_pool2d_part_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, DH, DW, c0, c1));
}

/*
 * Average over the window. The divisor counts the input elements in the
 * window, or with `include_pad` also those in the user padding
 * (PT, PL, PB, PR), never the extra rows ceil_mode adds.
 */
static inline float byoc_avg_window_(const float* restrict xc, int64_t H, int64_t W, int64_t KH,
                                     int64_t KW, int64_t PT, int64_t PL, int64_t PB, int64_t PR,
                                     int64_t DH, int64_t DW, int32_t include_pad, int64_t top,
                                     int64_t left) {
  double sum = 0.0;
  int64_t count = 0;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    const int in_h = ih >= 0 && ih < H;
    const int pad_h = ih >= -PT && ih < H + PB;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = left + kw * DW;
      const int in_w = iw >= 0 && iw < W;
      if (in_h && in_w) {
        sum += (double)xc[ih * W + iw];
        ++count;
      } else if (include_pad && pad_h && iw >= -PL && iw < W + PR) {
        ++count;
      }
    }
  }
  return (float)(sum / (double)(count > 0 ? count : 1));
}


/*
 * Channels [c0, c1) from the input itself. Where a window lies inside the input (its rows
 * and its columns), 4 output columns are summed at a time in double, each lane in the
 * window order of byoc_avg_window_ and divided by KH*KW as it would be: the same results.
 */
static inline void byoc_avg_pool2d_rows_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t PB,
                                       int64_t PR, int64_t DH, int64_t DW, int32_t include_pad,
                                       int64_t c0, int64_t c1) {
  int64_t lo, hi;
  byoc_pool_inner_cols_(W, OW, KW, SW, PL, DW, &lo, &hi);
  const int64_t nvec = (hi - lo) / 4;
  /* the inner columns past the last whole group of 4: one more group ending at hi,
   * overlapping the one before it (its lanes compute the same windows the same way) */
  const int64_t tail = nvec > 0 ? hi : lo;
  const double area = (double)(KH * KW);
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * H * W;
    float* yc = y + c * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t top = oh * SH - PT;
      const int rows_inside = top >= 0 && top + (KH - 1) * DH < H;
      const int64_t vec_end = rows_inside ? tail : 0, scalar_from = rows_inside ? lo : 0;
      for (int64_t ow = 0; ow < scalar_from; ++ow)
        yc[oh * OW + ow] = byoc_avg_window_(xc, H, W, KH, KW, PT, PL, PB, PR, DH, DW,
                                            include_pad, top, ow * SW - PL);
      for (int64_t ow0 = scalar_from; ow0 < vec_end; ow0 += 4) {
        const int64_t ow = ow0 + 4 <= vec_end ? ow0 : vec_end - 4;
        byoc_v4d_ s = {0.0, 0.0, 0.0, 0.0};
        for (int64_t kh = 0; kh < KH; ++kh) {
          const float* xr = xc + (top + kh * DH) * W + ow * SW - PL;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const float* p = xr + kw * DW;
            byoc_v4d_ v;
            if (SW == 1) { /* 4 consecutive floats: one load, one conversion */
              byoc_v4f_ f;
              memcpy(&f, p, sizeof f);
              v = __builtin_convertvector(f, byoc_v4d_);
            } else {
              v = (byoc_v4d_){(double)p[0], (double)p[SW], (double)p[2 * SW], (double)p[3 * SW]};
            }
            s += v;
          }
        }
        s /= area;
        for (int j = 0; j < 4; ++j) yc[oh * OW + ow + j] = (float)s[j];
      }
      for (int64_t ow = vec_end > scalar_from ? vec_end : scalar_from; ow < OW; ++ow)
        yc[oh * OW + ow] = byoc_avg_window_(xc, H, W, KH, KW, PT, PL, PB, PR, DH, DW,
                                            include_pad, top, ow * SW - PL);
    }
  }
}

/*
 * Channels [c0, c1), by the first of these that applies (all give the results of
 * byoc_avg_window_: each window's elements summed in double in (kh, kw) order from 0, then
 * divided by its count):
 *   - one output whose window lies inside the input (an average over the whole map, e.g.
 *     shufflenet's 7x7 pool): 8 channels at a time, a lane each, in window order;
 *   - stride 1 or 2, and a padded channel that fits BYOC_POOL_PLANE floats: each channel is
 *     padded with zeros into a plane on the stack (stride 2: even columns, then odd ones, as
 *     the depthwise conv does), and 4 output vectors of 4 columns go through the window at
 *     a time. A padded zero adds +0.0 to a sum that is never -0.0 (it starts at +0.0): no
 *     sum changes. Each vector is divided lane by lane by its windows' counts;
 *   - otherwise, byoc_avg_pool2d_rows_.
 */
#define BYOC_POOL_PLANE 4096

/* How many k in [0, K) put start + k * D in [lo, hi). */
static inline int64_t byoc_pool_taps_(int64_t start, int64_t K, int64_t D, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t k = 0; k < K; ++k) n += start + k * D >= lo && start + k * D < hi;
  return n;
}

/* Four output vectors (4 columns each) whose first taps are at plane + off[k], summed. */
static inline __attribute__((always_inline)) void byoc_avg_four_(
    const float* restrict plane, const int64_t* off, int64_t KH, int64_t KW, int64_t DH,
    int64_t DW, int64_t WP, int64_t half, int split, byoc_v4d_* out) {
  byoc_v4d_ a0 = {0.0, 0.0, 0.0, 0.0}, a1 = a0, a2 = a0, a3 = a0;
  const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3];
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = plane + kh * DH * WP;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t col = kw * DW;
      const float* p = split ? xr + (col & 1 ? half : 0) + col / 2 : xr + col;
      byoc_v4f_ f0, f1, f2, f3;
      memcpy(&f0, p + o0, sizeof f0);
      memcpy(&f1, p + o1, sizeof f1);
      memcpy(&f2, p + o2, sizeof f2);
      memcpy(&f3, p + o3, sizeof f3);
      a0 += __builtin_convertvector(f0, byoc_v4d_);
      a1 += __builtin_convertvector(f1, byoc_v4d_);
      a2 += __builtin_convertvector(f2, byoc_v4d_);
      a3 += __builtin_convertvector(f3, byoc_v4d_);
    }
  }
  out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
}

/* The 4 averages s / d (as floats) at y, count of them (the rest are not stored). */
static inline __attribute__((always_inline)) void byoc_avg_store_(float* restrict y,
                                                                  const byoc_v4d_* s,
                                                                  const byoc_v4d_* d,
                                                                  int64_t count) {
  const byoc_v4f_ r = __builtin_convertvector(*s / *d, byoc_v4f_);
  if (count >= 4) {
    memcpy(y, &r, sizeof r);
    return;
  }
  float tmp[4];
  memcpy(tmp, &r, sizeof tmp);
  for (int64_t l = 0; l < count; ++l) y[l] = tmp[l];
}

static inline __attribute__((always_inline)) void byoc_avg_pool2d_planes_(
    const float* restrict x, float* restrict y, int64_t H, int64_t W, int64_t OH, int64_t OW,
    int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t PB,
    int64_t PR, int64_t DH, int64_t DW, int32_t include_pad, int64_t c0, int64_t c1) {
  float plane[BYOC_POOL_PLANE] __attribute__((aligned(64)));
  double div[BYOC_POOL_PLANE + 4]; /* per output: its window's count (as a double) */
  const int split = SW == 2;
  const int64_t OWV = OW < 4 ? 4 : OW;
  byoc_conv_geom_ g; /* the padded plane's shape, as byoc_conv2d_dw_fill_ reads it */
  g.H = H, g.W = W, g.PT = PT, g.PL = PL;
  g.HP = (OH - 1) * SH + (KH - 1) * DH + 1;
  g.WP = (OWV - 1) * SW + (KW - 1) * DW + 1;
  const int64_t WP = g.WP, half = (WP + 1) / 2, SWP = split ? 1 : SW;
  const int64_t rlo = include_pad ? -PT : 0, rhi = include_pad ? H + PB : H;
  const int64_t clo = include_pad ? -PL : 0, chi = include_pad ? W + PR : W;
  const int64_t nv = (OW + 3) / 4, jobs = OH * nv, P = OH * OW;
  const int64_t last = OW >= 4 ? OW - 4 : 0, count = OW >= 4 ? 4 : OW;
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t rows = byoc_pool_taps_(oh * SH - PT, KH, DH, rlo, rhi);
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t cnt = rows * byoc_pool_taps_(ow * SW - PL, KW, DW, clo, chi);
      div[oh * OW + ow] = (double)(cnt > 0 ? cnt : 1);
    }
  }
  for (int64_t i = P; i < P + 4; ++i) div[i] = 1.0; /* the lanes past the last output */
  memset(plane, 0, (size_t)(g.HP * WP) * sizeof(float));
  for (int64_t c = c0; c < c1; ++c) {
    byoc_conv2d_dw_fill_(&g, x + c * H * W, plane, split);
    float* yc = y + c * P;
    int64_t r = 0, v = 0;
    for (int64_t j0 = 0; j0 < jobs; j0 += 4) {
      if (j0 + 4 > jobs && jobs >= 4) r = (jobs - 4) / nv, v = (jobs - 4) % nv; /* overlap */
      const int64_t n = jobs - j0 < 4 ? jobs - j0 : 4;
      int64_t off[4], yo[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t ow = v == nv - 1 ? last : 4 * v, rr = r < OH ? r : OH - 1;
        off[k] = rr * SH * WP + ow * SWP;
        yo[k] = rr * OW + ow;
        if (++v == nv) v = 0, ++r;
      }
      byoc_v4d_ s[4];
      byoc_avg_four_(plane, off, KH, KW, DH, DW, WP, half, split, s);
      for (int k = 0; k < (jobs >= 4 ? 4 : n); ++k) { /* whole stores stay inside the plane (see the dw conv) */
        byoc_v4d_ d;
        memcpy(&d, div + yo[k], sizeof d);
        byoc_avg_store_(yc + yo[k], &s[k], &d, yo[k] + 4 <= P ? 4 : count);
      }
    }
  }
}

/* One output per channel, its window inside the input: 8 channels at a time. */
static inline __attribute__((always_inline)) void byoc_avg_pool2d_whole_(
    const float* restrict x, float* restrict y, int64_t H, int64_t W, int64_t KH, int64_t KW,
    int64_t top, int64_t left, int64_t DH, int64_t DW, int64_t c0, int64_t c1) {
  const int64_t HW = H * W;
  const double area = (double)(KH * KW);
  int64_t c = c0;
  for (; c + 8 <= c1; c += 8) {
    byoc_v4d_ a = {0.0, 0.0, 0.0, 0.0}, b = a;
    const float* xc = x + c * HW + top * W + left;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float* p = xc + kh * DH * W + kw * DW;
        a += (byoc_v4d_){(double)p[0], (double)p[HW], (double)p[2 * HW], (double)p[3 * HW]};
        b += (byoc_v4d_){(double)p[4 * HW], (double)p[5 * HW], (double)p[6 * HW], (double)p[7 * HW]};
      }
    a /= area, b /= area;
    for (int l = 0; l < 4; ++l) y[c + l] = (float)a[l], y[c + 4 + l] = (float)b[l];
  }
  for (; c < c1; ++c) {
    double s = 0.0;
    const float* xc = x + c * HW + top * W + left;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) s += (double)xc[kh * DH * W + kw * DW];
    y[c] = (float)(s / area);
  }
}

BYOC_KERNEL void byoc_avg_pool2d_part_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t PB,
                                       int64_t PR, int64_t DH, int64_t DW, int32_t include_pad,
                                       int64_t c0, int64_t c1) {
  if (OH == 1 && OW == 1 && PT <= 0 && PL <= 0 && (KH - 1) * DH - PT < H &&
      (KW - 1) * DW - PL < W) {
    byoc_avg_pool2d_whole_(x, y, H, W, KH, KW, -PT, -PL, DH, DW, c0, c1);
    return;
  }
  const int64_t OWV = OW < 4 ? 4 : OW;
  const int64_t HP = (OH - 1) * SH + (KH - 1) * DH + 1, WP = (OWV - 1) * SW + (KW - 1) * DW + 1;
  if ((SW == 1 || SW == 2) && HP * WP <= BYOC_POOL_PLANE) {
    byoc_avg_pool2d_planes_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW,
                            include_pad, c0, c1);
    return;
  }
  byoc_avg_pool2d_rows_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, include_pad,
                        c0, c1);
}

static inline void byoc_avg_pool2d_f32(const float* restrict x, float* restrict y, int64_t NC,
                                       int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t KH,
                                       int64_t KW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                                       int64_t PB, int64_t PR, int64_t DH, int64_t DW,
                                       int32_t include_pad) {
  /* a window element costs about what a conv2d multiply-add does (a load, a conversion to
   * double, an add, 4 lanes a vector): split from 2 x BYOC_PAR_GRAIN, like a convolution
   * (shufflenet's 272 x 14 x 14 -> 7 x 7 pool, 120 K elements, 45 us, stayed on one thread) */
  const int32_t nt = byoc_threads_for(NC * OH * OW * KH * KW, BYOC_PAR_GRAIN);
  BYOC_STEAL_(nt, NC, byoc_steal_grain_(nt, NC, 1), 1, c0, c1,
              byoc_avg_pool2d_part_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, include_pad, c0, c1));
}

/* Each channel's sum in double in order of i, 8 channels at a time (a lane each: one sum
 * at a time waited on each add), then divided by HW. */
BYOC_KERNEL void byoc_global_avg_pool2d_part_(const float* restrict x, float* restrict y,
                                              int64_t HW, int64_t c0, int64_t c1) {
  byoc_avg_pool2d_whole_(x, y, 1, HW, 1, HW, 0, 0, 1, 1, c0, c1);
}

static inline void byoc_global_avg_pool2d_f32(const float* restrict x, float* restrict y,
                                              int64_t NC, int64_t HW) {
  /* a read of each input once: split as a copy is (squeezenet's 1000 x 13 x 13) */
  const int32_t nt = byoc_threads_for(NC * HW * (int64_t)sizeof(float), BYOC_COPY_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_global_avg_pool2d_part_(x, y, HW, NC * t / nt, NC * (t + 1) / nt));
}

static inline void byoc_global_max_pool2d_part_(const float* restrict x, float* restrict y,
                                                 int64_t HW, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; ++c) {
    float m = -INFINITY;
    for (int64_t i = 0; i < HW; ++i) m = m == m ? byoc_maxf_(m, x[c * HW + i]) : m;
    y[c] = m;
  }
}

static inline void byoc_global_max_pool2d_f32(const float* restrict x, float* restrict y,
                                              int64_t NC, int64_t HW) {
  /* a read of each input once: split as a copy is (squeezenet's 1000 x 13 x 13) */
  const int32_t nt = byoc_threads_for(NC * HW * (int64_t)sizeof(float), BYOC_COPY_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_global_max_pool2d_part_(x, y, HW, NC * t / nt, NC * (t + 1) / nt));
}

/* ---- softmax --------------------------------------------------------------- */

/* Softmax over the middle dim of an (outer, n, inner) view, rows r = (o, i) in [r0, r1). */
static inline void byoc_softmax_rows_(const float* restrict x, float* restrict y, int64_t n,
                                      int64_t inner, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const float* xs = x + o * n * inner + i;
    float* ys = y + o * n * inner + i;
    float m = -INFINITY;
    for (int64_t k = 0; k < n; ++k) m = m == m ? byoc_maxf_(m, xs[k * inner]) : m;
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const float e = expf(xs[k * inner] - m);
      ys[k * inner] = e;
      sum += (double)e;
    }
    const float s = (float)sum;
    for (int64_t k = 0; k < n; ++k) ys[k * inner] = ys[k * inner] / s;
  }
}

/* Threads split the rows. */
static inline void byoc_softmax_f32(const float* restrict x, float* restrict y, int64_t outer,
                                    int64_t n, int64_t inner) {
  const int64_t rows = outer * inner;
  const int32_t nt = byoc_threads_for(rows * n * 8, BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_softmax_rows_(x, y, n, inner, rows * t / nt, rows * (t + 1) / nt));
}

/* ---- reductions ------------------------------------------------------------ */

/*
 * Reduce x over some of its dims. The output is walked in row-major order
 * over the kept dims (`nk` dims: extents `kext`, input strides `kstr`); for
 * each output element the reduced dims (`nr`: `rext`, `rstr`) are walked.
 * Adjacent dims of one kind are merged by the caller.
 */
#define BYOC_DEFINE_REDUCE(NAME, T, ACC, INIT, STEP, FINISH)                                 \
  static inline void NAME##_part_(const T* restrict x, T* restrict y, int32_t nk,              \
                                  const int64_t* kext, const int64_t* kstr, int32_t nr,        \
                                  const int64_t* rext, const int64_t* rstr, int64_t nred,      \
                                  int64_t t0, int64_t t1) {                                    \
    int64_t kidx[BYOC_MAX_RANK] = {0}, ridx[BYOC_MAX_RANK] = {0};                             \
    const int64_t inner = nr > 0 ? rext[nr - 1] : 1;                                          \
    const int64_t istep = nr > 0 ? rstr[nr - 1] : 0;                                          \
    int64_t base = 0;                                                                         \
    {                                                                                         \
      int64_t q = t0;                                                                         \
      for (int32_t d = nk - 1; d >= 0; --d) {                                                 \
        kidx[d] = q % kext[d];                                                                \
        q /= kext[d];                                                                         \
        base += kidx[d] * kstr[d];                                                            \
      }                                                                                       \
    }                                                                                         \
    for (int64_t t = t0; t < t1; ++t) {                                                       \
      ACC acc = INIT;                                                                         \
      int64_t off = base;                                                                     \
      for (int64_t r = 0; r < nred; r += inner) {                                             \
        for (int64_t i = 0; i < inner; ++i) {                                                 \
          const T v = x[off + i * istep];                                                     \
          STEP;                                                                               \
        }                                                                                     \
        for (int32_t d = nr - 2; d >= 0; --d) {                                               \
          off += rstr[d];                                                                     \
          if (++ridx[d] < rext[d]) break;                                                     \
          off -= rstr[d] * rext[d];                                                           \
          ridx[d] = 0;                                                                        \
        }                                                                                     \
      }                                                                                       \
      y[t] = FINISH;                                                                          \
      for (int32_t d = nk - 1; d >= 0; --d) {                                                 \
        base += kstr[d];                                                                      \
        if (++kidx[d] < kext[d]) break;                                                       \
        base -= kstr[d] * kext[d];                                                            \
        kidx[d] = 0;                                                                          \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  static inline void NAME(const T* restrict x, T* restrict y, int32_t nk, const int64_t* kext, \
                          const int64_t* kstr, int32_t nr, const int64_t* rext,                \
                          const int64_t* rstr) {                                               \
    int64_t nout = 1, nred = 1;                                                               \
    for (int32_t d = 0; d < nk; ++d) nout *= kext[d];                                         \
    for (int32_t d = 0; d < nr; ++d) nred *= rext[d];                                         \
    const int32_t nt = byoc_threads_for(nout * nred, 2 * BYOC_PAR_GRAIN);                     \
    BYOC_SPLIT_(nt, t,                                                                        \
                NAME##_part_(x, y, nk, kext, kstr, nr, rext, rstr, nred, nout * t / nt,       \
                             nout * (t + 1) / nt));                                           \
  }

BYOC_DEFINE_REDUCE(byoc_reduce_sum_f32, float, double, 0.0, acc += (double)v, (float)acc)
BYOC_DEFINE_REDUCE(byoc_reduce_mean_f32, float, double, 0.0, acc += (double)v,
                   (float)(acc / (double)(nred > 0 ? nred : 1)))
BYOC_DEFINE_REDUCE(byoc_reduce_max_f32, float, float, -INFINITY,
                   acc = acc == acc ? byoc_maxf_(acc, v) : acc, acc)
/* int32 sums wrap modulo 2^32, as numpy's int64 sum cast back to int32 does. */
BYOC_DEFINE_REDUCE(byoc_reduce_sum_i32, int32_t, uint32_t, 0u, acc += (uint32_t)v,
                   (int32_t)acc)
BYOC_DEFINE_REDUCE(byoc_reduce_max_i32, int32_t, int32_t, INT32_MIN, acc = v > acc ? v : acc,
                   acc)

/* ---- layout ---------------------------------------------------------------- */

/*
 * Transpose: walk the output (rank `nd`, extents `oshape`) in row-major order;
 * `istr[d]` is how far the input moves per step of output dim d. The output's rows
 * (its last dim) are split across the threads when the copy is big (shufflenet's channel
 * shuffles: whole rows of 784-3136 floats); a copy is the same bytes however it is split.
 */
#define BYOC_DEFINE_TRANSPOSE(NAME, T)                                                         \
  static inline void NAME##_rows_(const T* restrict x, T* restrict y, int32_t nd,              \
                                  const int64_t* oshape, const int64_t* istr, int64_t r0,       \
                                  int64_t r1) {                                                 \
    int64_t idx[BYOC_MAX_RANK] = {0};                                                         \
    const int64_t inner = nd > 0 ? oshape[nd - 1] : 1;                                        \
    const int64_t step = nd > 0 ? istr[nd - 1] : 0;                                           \
    int64_t off = 0;                                                                          \
    for (int64_t d = nd - 2, r = r0; d >= 0; --d) { /* the index of row r0 */                 \
      idx[d] = r % oshape[d];                                                                 \
      r /= oshape[d];                                                                         \
      off += idx[d] * istr[d];                                                                \
    }                                                                                         \
    for (int64_t t = r0 * inner; t < r1 * inner; t += inner) {                                \
      if (step == 1) /* a run of whole rows (e.g. a channel shuffle): one copy */             \
        memcpy(y + t, x + off, (size_t)inner * sizeof(T));                                    \
      else                                                                                    \
        for (int64_t i = 0; i < inner; ++i) y[t + i] = x[off + i * step];                     \
      for (int32_t d = nd - 2; d >= 0; --d) {                                                 \
        off += istr[d];                                                                       \
        if (++idx[d] < oshape[d]) break;                                                      \
        off -= istr[d] * oshape[d];                                                           \
        idx[d] = 0;                                                                           \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  static inline void NAME(const T* restrict x, T* restrict y, int32_t nd, const int64_t* oshape, \
                          const int64_t* istr) {                                               \
    int64_t total = 1;                                                                        \
    for (int32_t d = 0; d < nd; ++d) total *= oshape[d];                                      \
    if (total == 0) return;                                                                   \
    const int64_t inner = nd > 0 ? oshape[nd - 1] : 1;                                        \
    const int64_t rows = total / inner;                                                       \
    const int32_t nt0 = byoc_threads_for(total * (int64_t)sizeof(T), BYOC_COPY_GRAIN);        \
    const int32_t nt = nt0 < rows ? nt0 : (int32_t)rows;                                      \
    BYOC_SPLIT_(nt, t, NAME##_rows_(x, y, nd, oshape, istr, rows * t / nt, rows * (t + 1) / nt)); \
  }

BYOC_DEFINE_TRANSPOSE(byoc_transpose_f32, float)
BYOC_DEFINE_TRANSPOSE(byoc_transpose_i32, int32_t)

/*
 * Pad (numpy.pad): `before[d]` elements are added in front of dim d; mode 0
 * fills with `value`, 1 repeats the edge, 2 reflects (without the edge), 3 wraps.
 */
static inline int64_t byoc_pad_source_(int64_t c, int64_t n, int32_t mode) {
  if (c >= 0 && c < n) return c;
  if (mode == 0) return -1;
  if (mode == 1) return c < 0 ? 0 : n - 1;
  if (mode == 3) return ((c % n) + n) % n;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = c % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

#define BYOC_DEFINE_PAD(NAME, T)                                                              \
  static inline void NAME(const T* restrict x, T* restrict y, int32_t nd, const int64_t* ishape, \
                          const int64_t* oshape, const int64_t* before, int32_t mode, T value) { \
    int64_t idx[BYOC_MAX_RANK] = {0}, istr[BYOC_MAX_RANK];                                    \
    int64_t total = 1, s = 1;                                                                 \
    for (int32_t d = nd - 1; d >= 0; --d) {                                                   \
      istr[d] = s;                                                                            \
      s *= ishape[d];                                                                         \
      total *= oshape[d];                                                                     \
    }                                                                                         \
    for (int64_t t = 0; t < total; ++t) {                                                     \
      int64_t off = 0;                                                                        \
      int inside = 1;                                                                         \
      for (int32_t d = 0; d < nd; ++d) {                                                      \
        const int64_t c = byoc_pad_source_(idx[d] - before[d], ishape[d], mode);              \
        if (c < 0) {                                                                          \
          inside = 0;                                                                         \
          break;                                                                              \
        }                                                                                     \
        off += c * istr[d];                                                                   \
      }                                                                                       \
      y[t] = inside ? x[off] : value;                                                         \
      for (int32_t d = nd - 1; d >= 0; --d) {                                                 \
        if (++idx[d] < oshape[d]) break;                                                      \
        idx[d] = 0;                                                                           \
      }                                                                                       \
    }                                                                                         \
  }

BYOC_DEFINE_PAD(byoc_pad_f32, float)
BYOC_DEFINE_PAD(byoc_pad_i32, int32_t)

#endif /* BYOC_KERNELS_H_ */
