/*
 * byoc_kernels_reduce.h — softmax and the reductions (sum, mean, max, min, prod over a
 * set of axes). Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_REDUCE_H_
#define BYOC_KERNELS_REDUCE_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"

/* ---- softmax --------------------------------------------------------------- */

/* gcc if-converts the clamps of byoc_softmax_exp_ (so vectorises its loop) only when
 * comparisons may not trap; the results are the same, only FP exception flags differ. */
#if defined(__GNUC__) && !defined(__clang__)
#define BYOC_NO_TRAP_ __attribute__((optimize("no-trapping-math")))
#else
#define BYOC_NO_TRAP_
#endif

/*
 * exp(x) for softmax's shifted logits, x in [-inf, 0]: byoc_expf (byoc_math.h), within 2 ulp
 * of libm's expf, branch-free so a loop of it vectorises; x <= -104 (exp(-inf) included)
 * gives 0. The vector rows below repeat its operations lane by lane, so the same bits.
 */
static inline BYOC_NO_TRAP_ float byoc_softmax_exp_(float x) { return byoc_expf(x); }

/* The contiguous softmax is also compiled for AVX2 (8 lanes) and AVX-512F (16 lanes) and
 * picked at run time (byoc_kernels_simd.h is not included: its intrinsics header would slow
 * the parse of every unit that includes this one); -DBYOC_BASELINE_ONLY keeps the 4-lane
 * baseline. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && \
    !defined(BYOC_BASELINE_ONLY) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target)
#define BYOC_SOFTMAX_AVX2_ __attribute__((target("avx2")))
#define BYOC_SOFTMAX_AVX512_ __attribute__((target("avx512f,avx2")))
#endif
#if __has_attribute(target_clones)
#define BYOC_REDUCE_CLONES_ __attribute__((target_clones("avx2", "default")))
#endif
#endif
/* The f32 reductions' vector loops are also compiled for AVX2 and picked at load time. */
#ifndef BYOC_REDUCE_CLONES_
#define BYOC_REDUCE_CLONES_
#endif

#ifdef _OPENMP
#define BYOC_SIMD_MAX_(v) BYOC_PRAGMA_(omp simd reduction(max : v))
#define BYOC_SIMD_SUM_(v) BYOC_PRAGMA_(omp simd reduction(+ : v))
#else
#define BYOC_SIMD_MAX_(v)
#define BYOC_SIMD_SUM_(v)
#endif

/* Softmax of one row of n elements with stride `inner`, scalar (libm's expf, the sum in
 * double): rows with a NaN or an infinite maximum, and rows of an inner softmax axis. */
static inline void byoc_softmax_row_(const float* restrict xs, float* restrict ys, int64_t n,
                                     int64_t inner) {
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

/*
 * Softmax of rows [r0, r1) of n contiguous elements, W lanes at a time (GCC's vector
 * extension, the last n % W elements one by one): the maximum with a NaN check in one
 * pass, then exp and the sum (in float, W partial sums then the tail: within the bound of
 * any order of n terms), then the scaling. No per-row setup beyond a few registers, so rows
 * of 32 or 64 elements (attention scores) cost a few vector operations each. A row with a
 * NaN or an infinite maximum takes the scalar path (its NaNs as numpy's). The exponential
 * is byoc_softmax_exp_'s operations in its order on every lane (the library is built
 * without contraction into fused multiply-adds): each lane is bit-identical to it, at
 * every width. Vectors stay inside the function (by value they would change the ABI
 * between the widths' target attributes).
 */
#define BYOC_DEFINE_SOFTMAX_ROWS_(NAME, ATTR, W)                                               \
  typedef float NAME##vf_ __attribute__((vector_size(4 * (W))));                              \
  typedef int32_t NAME##vi_ __attribute__((vector_size(4 * (W))));                            \
  typedef uint32_t NAME##vu_ __attribute__((vector_size(4 * (W))));                           \
  static ATTR BYOC_NO_TRAP_ BYOC_MAYBE_UNUSED void NAME(const float* restrict x,              \
                                                        float* restrict y, int64_t n,         \
                                                        int64_t r0, int64_t r1) {             \
    typedef NAME##vf_ vf;                                                                     \
    typedef NAME##vi_ vi;                                                                     \
    typedef NAME##vu_ vu;                                                                     \
    const int64_t nw = n - n % (W);                                                           \
    for (int64_t r = r0; r < r1; ++r) {                                                       \
      const float* restrict xs = x + r * n;                                                   \
      float* restrict ys = y + r * n;                                                         \
      float m = -INFINITY;                                                                    \
      int32_t nans = 0;                                                                       \
      if (nw > 0) {                                                                           \
        vf mv;                                                                                \
        memcpy(&mv, xs, sizeof mv);                                                           \
        vi bad = mv != mv;                                                                    \
        for (int64_t k = (W); k < nw; k += (W)) {                                             \
          vf v;                                                                               \
          memcpy(&v, xs + k, sizeof v);                                                       \
          const vi gt = v > mv;                                                               \
          mv = (vf)((gt & (vi)v) | (~gt & (vi)mv));                                           \
          bad |= v != v;                                                                      \
        }                                                                                     \
        for (int j = 0; j < (W); ++j) {                                                       \
          m = mv[j] > m ? mv[j] : m;                                                          \
          nans |= bad[j];                                                                     \
        }                                                                                     \
      }                                                                                       \
      for (int64_t k = nw; k < n; ++k) {                                                      \
        m = xs[k] > m ? xs[k] : m;                                                            \
        nans |= xs[k] != xs[k];                                                               \
      }                                                                                       \
      if (nans != 0 || m == INFINITY || m == -INFINITY) {                                     \
        byoc_softmax_row_(xs, ys, n, 1);                                                      \
        continue;                                                                             \
      }                                                                                       \
      vf sv = {0};                                                                            \
      const vf zero = sv, lo_c = zero - 104.0f, hi_c = zero + 88.0f;                          \
      for (int64_t k = 0; k < nw; k += (W)) {                                                 \
        vf v;                                                                                 \
        memcpy(&v, xs + k, sizeof v);                                                         \
        v = v - m;                                                                            \
        const vi below = v < lo_c, above = v > hi_c;                                          \
        vf xc = (vf)((below & (vi)lo_c) | (~below & (vi)v));                                  \
        xc = (vf)((above & (vi)hi_c) | (~above & (vi)xc));                                    \
        const vf t = xc * 1.44269504088896341f + 12582912.0f;                                 \
        const vf nf = t - 12582912.0f;                                                        \
        const vu ni = (vu)t - 0x4B400000u;                                                    \
        const vu half = (vu)((vi)ni >> 1);                                                    \
        const vf lo = (vf)((half + 127u) << 23);                                              \
        const vf hi = (vf)((ni - half + 127u) << 23);                                         \
        const vf rr = (xc - nf * 0.693359375f) - nf * -2.12194440e-4f;                        \
        vf p = zero + 1.9875691500e-4f;                                                       \
        p = p * rr + 1.3981999507e-3f;                                                        \
        p = p * rr + 8.3334519073e-3f;                                                        \
        p = p * rr + 4.1665795894e-2f;                                                        \
        p = p * rr + 1.6666665459e-1f;                                                        \
        p = p * rr + 5.0000001201e-1f;                                                        \
        const vf e = ((p * (rr * rr) + rr + 1.0f) * lo) * hi;                                 \
        memcpy(ys + k, &e, sizeof e);                                                         \
        sv += e;                                                                              \
      }                                                                                       \
      float sum = 0.0f;                                                                       \
      for (int j = 0; j < (W); ++j) sum += sv[j];                                             \
      for (int64_t k = nw; k < n; ++k) {                                                      \
        const float e = byoc_softmax_exp_(xs[k] - m);                                         \
        ys[k] = e;                                                                            \
        sum += e;                                                                             \
      }                                                                                       \
      const float inv = 1.0f / sum;                                                           \
      for (int64_t k = 0; k < nw; k += (W)) {                                                 \
        vf v;                                                                                 \
        memcpy(&v, ys + k, sizeof v);                                                         \
        v *= inv;                                                                             \
        memcpy(ys + k, &v, sizeof v);                                                         \
      }                                                                                       \
      for (int64_t k = nw; k < n; ++k) ys[k] = ys[k] * inv;                                   \
    }                                                                                         \
  }

BYOC_DEFINE_SOFTMAX_ROWS_(byoc_softmax_rows4_, , 4)
#ifdef BYOC_SOFTMAX_AVX2_
BYOC_DEFINE_SOFTMAX_ROWS_(byoc_softmax_rows8_, BYOC_SOFTMAX_AVX2_, 8)
BYOC_DEFINE_SOFTMAX_ROWS_(byoc_softmax_rows16_, BYOC_SOFTMAX_AVX512_, 16)
#endif

/* The widest of the three the CPU runs. */
static inline void byoc_softmax_contiguous_rows_(const float* restrict x, float* restrict y,
                                                 int64_t n, int64_t r0, int64_t r1) {
#ifdef BYOC_SOFTMAX_AVX2_
  if (BYOC_HAS_AVX512_("avx512f")) {
    byoc_softmax_rows16_(x, y, n, r0, r1);
    return;
  }
  if (__builtin_cpu_supports("avx2")) {
    byoc_softmax_rows8_(x, y, n, r0, r1);
    return;
  }
#endif
  byoc_softmax_rows4_(x, y, n, r0, r1);
}

/* Log-softmax of one row of n elements with stride `inner` (libm's expf, the sum in double). */
static inline void byoc_log_softmax_row_(const float* restrict xs, float* restrict ys, int64_t n,
                                         int64_t inner) {
  float m = -INFINITY;
  for (int64_t k = 0; k < n; ++k) m = m == m ? byoc_maxf_(m, xs[k * inner]) : m;
  double sum = 0.0;
  for (int64_t k = 0; k < n; ++k) sum += (double)expf(xs[k * inner] - m);
  const float lse = logf((float)sum);
  for (int64_t k = 0; k < n; ++k) ys[k * inner] = (xs[k * inner] - m) - lse;
}

/* Softmax (or, with `log_`, log-softmax) over the middle dim of an (outer, n, inner) view,
 * rows r = (o, i) in [r0, r1). */
static inline void byoc_softmax_rows_(const float* restrict x, float* restrict y, int64_t n,
                                      int64_t inner, int64_t r0, int64_t r1, int log_) {
  if (inner == 1 && !log_) {
    byoc_softmax_contiguous_rows_(x, y, n, r0, r1);
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const int64_t at = o * n * inner + i;
    if (log_)
      byoc_log_softmax_row_(x + at, y + at, n, inner);
    else
      byoc_softmax_row_(x + at, y + at, n, inner);
  }
}

/* Threads split the rows. */
static inline void byoc_softmax_f32(const float* restrict x, float* restrict y, int64_t outer,
                                    int64_t n, int64_t inner) {
  const int64_t rows = outer * inner;
  const int32_t nt = byoc_threads_for(rows * n * 8, BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_softmax_rows_(x, y, n, inner, rows * t / nt, rows * (t + 1) / nt, 0));
}

/* ---- reductions ------------------------------------------------------------ */

enum { BYOC_RED_SUM_ = 0, BYOC_RED_MEAN_ = 1, BYOC_RED_MAX_ = 2 };

/* Outputs a vector pass of byoc_reduce_f32_fast_ accumulates at once (doubles on the stack). */
#define BYOC_REDUCE_RUN 256

/*
 * The f32 sum, mean and max of outputs [t0, t1) as vector loops, in three layouts (returns 0
 * for any other, which the scalar walk below takes):
 * - rows of fewer than 8 contiguous terms one after another: the scalar walk's operations
 *   without its index steps;
 * - the reduced elements of an output are one contiguous run (nr == 1, stride 1: a softmax
 *   or layer norm over the last axis, a global pool): one `omp simd` reduction per output,
 *   sums in double lane by lane (as the scalar walk, in double: within the bound of any
 *   order of the terms); a max over a run holding a NaN is taken by the scalar walk (its
 *   NaN as numpy's);
 * - the kept innermost dim is contiguous (a reduction over an outer axis: a layer norm over
 *   channels of a channels-first tensor, a mean over time): up to BYOC_REDUCE_RUN adjacent
 *   outputs accumulate side by side, each reduced element of the walk added to all of them
 *   in one vector loop. Each output sees its terms in the scalar walk's order with its
 *   operation, so results equal the scalar walk's.
 */
static BYOC_REDUCE_CLONES_ BYOC_MAYBE_UNUSED int byoc_reduce_f32_fast_(
    const float* restrict x, float* restrict y, int32_t nk, const int64_t* kext,
    const int64_t* kstr, int32_t nr, const int64_t* rext, const int64_t* rstr, int64_t nred,
    int64_t t0, int64_t t1, int kind) {
  int64_t kidx[BYOC_MAX_RANK] = {0};
  if (nr == 1 && rstr[0] == 1 && nred < 8 && nk == 1 && kstr[0] == nred) {
    /* short rows one after another (a max over 3 branches' outputs stacked last): the
     * scalar walk's operations in its order, without its index steps */
    const int64_t n = nred;
    BYOC_SIMD
    for (int64_t t = t0; t < t1; ++t) {
      const float* xs = x + t * n;
      if (kind == BYOC_RED_MAX_) {
        float m = -INFINITY;
        for (int64_t k = 0; k < n; ++k) {
          const float v = xs[k];
          m = m == m ? ((m >= v || m != m) ? m : v) : m;
        }
        y[t] = m;
      } else {
        double acc = 0.0;
        for (int64_t k = 0; k < n; ++k) acc += (double)xs[k];
        y[t] = kind == BYOC_RED_MEAN_ ? (float)(acc / (double)n) : (float)acc;
      }
    }
    return 1;
  }
  if (nr == 1 && rstr[0] == 1 && nred >= 8) {
    const int64_t n = nred;
    int64_t base = byoc_index_at_(t0, kidx, kext, kstr, nk - 1);
    for (int64_t t = t0; t < t1; ++t) {
      const float* restrict xs = x + base;
      if (kind == BYOC_RED_MAX_) {
        float m = -INFINITY;
        BYOC_SIMD_MAX_(m)
        for (int64_t k = 0; k < n; ++k) m = xs[k] > m ? xs[k] : m;
        int32_t nans = 0;
        BYOC_SIMD_SUM_(nans)
        for (int64_t k = 0; k < n; ++k) nans += xs[k] != xs[k];
        if (nans > 0) {
          m = -INFINITY;
          for (int64_t k = 0; k < n; ++k) m = m == m ? byoc_maxf_(m, xs[k]) : m;
        }
        y[t] = m;
      } else {
        double acc = 0.0;
        BYOC_SIMD_SUM_(acc)
        for (int64_t k = 0; k < n; ++k) acc += (double)xs[k];
        y[t] = kind == BYOC_RED_MEAN_ ? (float)(acc / (double)n) : (float)acc;
      }
      byoc_index_step_(kidx, kext, kstr, nk - 1, &base);
    }
    return 1;
  }
  if (nk < 1 || kstr[nk - 1] != 1 || nr < 1 || nred < 2) return 0;
  const int64_t inner = rext[nr - 1], istep = rstr[nr - 1];
  double acc[BYOC_REDUCE_RUN];
  float accm[BYOC_REDUCE_RUN];
  int64_t t = t0;
  int64_t base = byoc_index_at_(t0, kidx, kext, kstr, nk - 1);
  while (t < t1) {
    /* a run of adjacent outputs along the contiguous kept dim */
    int64_t len = kext[nk - 1] - kidx[nk - 1];
    len = len < t1 - t ? len : t1 - t;
    len = len < BYOC_REDUCE_RUN ? len : BYOC_REDUCE_RUN;
    for (int64_t i = 0; i < len; ++i) acc[i] = 0.0, accm[i] = -INFINITY;
    int64_t ridx[BYOC_MAX_RANK] = {0};
    int64_t off = base;
    for (int64_t r = 0; r < nred; r += inner) {
      for (int64_t j = 0; j < inner; ++j) {
        const float* restrict xr = x + off + j * istep;
        if (kind == BYOC_RED_MAX_) {
          BYOC_SIMD
          for (int64_t i = 0; i < len; ++i) {
            const float a = accm[i], v = xr[i];
            accm[i] = a == a ? ((a >= v || a != a) ? a : v) : a;
          }
        } else {
          BYOC_SIMD
          for (int64_t i = 0; i < len; ++i) acc[i] += (double)xr[i];
        }
      }
      byoc_index_step_(ridx, rext, rstr, nr - 2, &off);
    }
    for (int64_t i = 0; i < len; ++i)
      y[t + i] = kind == BYOC_RED_MAX_    ? accm[i]
                 : kind == BYOC_RED_MEAN_ ? (float)(acc[i] / (double)nred)
                                          : (float)acc[i];
    for (int64_t i = 0; i < len; ++i) byoc_index_step_(kidx, kext, kstr, nk - 1, &base);
    t += len;
  }
  return 1;
}

/*
 * Reduce x over some of its dims. The output is walked in row-major order
 * over the kept dims (`nk` dims: extents `kext`, input strides `kstr`); for
 * each output element the reduced dims (`nr`: `rext`, `rstr`) are walked.
 * Adjacent dims of one kind are merged by the caller. FAST: an expression that
 * computes outputs [t0, t1) another way and is 1, or is 0 (byoc_reduce_f32_fast_);
 * BYOC_DEFINE_REDUCE has none.
 */
#define BYOC_DEFINE_REDUCE_FAST_(NAME, T, ACC, INIT, STEP, FINISH, FAST)                     \
  static inline void NAME##_part_(const T* restrict x, T* restrict y, int32_t nk,              \
                                  const int64_t* kext, const int64_t* kstr, int32_t nr,        \
                                  const int64_t* rext, const int64_t* rstr, int64_t nred,      \
                                  int64_t t0, int64_t t1) {                                    \
    if (FAST) return;                                                                         \
    int64_t kidx[BYOC_MAX_RANK] = {0}, ridx[BYOC_MAX_RANK] = {0};                             \
    const int64_t inner = nr > 0 ? rext[nr - 1] : 1;                                          \
    const int64_t istep = nr > 0 ? rstr[nr - 1] : 0;                                          \
    int64_t base = byoc_index_at_(t0, kidx, kext, kstr, nk - 1);                              \
    for (int64_t t = t0; t < t1; ++t) {                                                       \
      ACC acc = INIT;                                                                         \
      int64_t off = base;                                                                     \
      for (int64_t r = 0; r < nred; r += inner) {                                             \
        for (int64_t i = 0; i < inner; ++i) {                                                 \
          const T v = x[off + i * istep];                                                     \
          STEP;                                                                               \
        }                                                                                     \
        byoc_index_step_(ridx, rext, rstr, nr - 2, &off);                                     \
      }                                                                                       \
      y[t] = FINISH;                                                                          \
      byoc_index_step_(kidx, kext, kstr, nk - 1, &base);                                      \
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

#define BYOC_DEFINE_REDUCE(NAME, T, ACC, INIT, STEP, FINISH) \
  BYOC_DEFINE_REDUCE_FAST_(NAME, T, ACC, INIT, STEP, FINISH, 0)
#define BYOC_REDUCE_F32_FAST_(KIND) \
  byoc_reduce_f32_fast_(x, y, nk, kext, kstr, nr, rext, rstr, nred, t0, t1, KIND)
BYOC_DEFINE_REDUCE_FAST_(byoc_reduce_sum_f32, float, double, 0.0, acc += (double)v,
                         (float)acc, BYOC_REDUCE_F32_FAST_(BYOC_RED_SUM_))
BYOC_DEFINE_REDUCE_FAST_(byoc_reduce_mean_f32, float, double, 0.0, acc += (double)v,
                         (float)(acc / (double)(nred > 0 ? nred : 1)),
                         BYOC_REDUCE_F32_FAST_(BYOC_RED_MEAN_))
BYOC_DEFINE_REDUCE_FAST_(byoc_reduce_max_f32, float, float, -INFINITY,
                         acc = acc == acc ? byoc_maxf_(acc, v) : acc, acc,
                         BYOC_REDUCE_F32_FAST_(BYOC_RED_MAX_))
/* int32 sums wrap modulo 2^32, as numpy's int64 sum cast back to int32 does. */
BYOC_DEFINE_REDUCE(byoc_reduce_sum_i32, int32_t, uint32_t, 0u, acc += (uint32_t)v,
                   (int32_t)acc)
BYOC_DEFINE_REDUCE(byoc_reduce_max_i32, int32_t, int32_t, INT32_MIN, acc = v > acc ? v : acc,
                   acc)

#endif /* BYOC_KERNELS_REDUCE_H_ */
