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

/* Softmax (or, with `log_`, log-softmax) over the middle dim of an (outer, n, inner) view,
 * rows r = (o, i) in [r0, r1); the exponentials are summed in double. */
static inline void byoc_softmax_rows_(const float* restrict x, float* restrict y, int64_t n,
                                      int64_t inner, int64_t r0, int64_t r1, int log_) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const float* xs = x + o * n * inner + i;
    float* ys = y + o * n * inner + i;
    float m = -INFINITY;
    for (int64_t k = 0; k < n; ++k) m = m == m ? byoc_maxf_(m, xs[k * inner]) : m;
    double sum = 0.0;
    if (log_) {
      for (int64_t k = 0; k < n; ++k) sum += (double)expf(xs[k * inner] - m);
      const float lse = logf((float)sum);
      for (int64_t k = 0; k < n; ++k) ys[k * inner] = (xs[k * inner] - m) - lse;
      continue;
    }
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
  BYOC_SPLIT_(nt, t, byoc_softmax_rows_(x, y, n, inner, rows * t / nt, rows * (t + 1) / nt, 0));
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

#endif /* BYOC_KERNELS_REDUCE_H_ */
