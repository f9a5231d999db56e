/*
 * byoc_kernels_index.h — the kernels of the ops that move or index elements of every
 * element type the C codegen holds (f32, i64, i32, i8, u8, bool): transposes and pads of
 * the 8-bit, 64-bit and bool types, the reductions beyond sum/mean/max of
 * byoc_kernels_reduce.h, arg-max/min, running sums and products, one-hot, layer and RMS
 * normalisation, log-softmax. Slices, splits, gathers, broadcasts and tiles need no kernel: lower-to-c
 * reads them through strided views in its fused loops. Part of byoc_kernels.h.
 *
 * Every index and offset is int64_t, so a view of more than 2^31 elements is addressed
 * correctly. Semantics match the numpy reference kernels (byoc/interpreters/).
 */
#ifndef BYOC_KERNELS_INDEX_H_
#define BYOC_KERNELS_INDEX_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_layout.h"
#include "byoc_kernels_reduce.h"

/* NaN-propagating minimum (numpy.minimum). */
static inline float byoc_minf_(float a, float b) { return (a <= b || a != a) ? a : b; }

/* ---- reductions of the other element types (BYOC_DEFINE_REDUCE) --------------------- */

/* Integer sums and products wrap modulo 2^n, as numpy's do. */
BYOC_DEFINE_REDUCE(byoc_reduce_sum_i64, int64_t, uint64_t, 0u, acc += (uint64_t)v, (int64_t)acc)
BYOC_DEFINE_REDUCE(byoc_reduce_max_i64, int64_t, int64_t, INT64_MIN, acc = v > acc ? v : acc, acc)
BYOC_DEFINE_REDUCE(byoc_reduce_min_f32, float, float, INFINITY,
                   acc = acc == acc ? byoc_minf_(acc, v) : acc, acc)
BYOC_DEFINE_REDUCE(byoc_reduce_min_i32, int32_t, int32_t, INT32_MAX, acc = v < acc ? v : acc, acc)
BYOC_DEFINE_REDUCE(byoc_reduce_min_i64, int64_t, int64_t, INT64_MAX, acc = v < acc ? v : acc, acc)
BYOC_DEFINE_REDUCE(byoc_reduce_prod_f32, float, double, 1.0, acc *= (double)v, (float)acc)
BYOC_DEFINE_REDUCE(byoc_reduce_prod_i32, int32_t, uint32_t, 1u, acc *= (uint32_t)v, (int32_t)acc)
BYOC_DEFINE_REDUCE(byoc_reduce_prod_i64, int64_t, uint64_t, 1u, acc *= (uint64_t)v, (int64_t)acc)

BYOC_DEFINE_TRANSPOSE(byoc_transpose_i64, int64_t)
BYOC_DEFINE_TRANSPOSE(byoc_transpose_i8, int8_t)
BYOC_DEFINE_TRANSPOSE(byoc_transpose_ui8, uint8_t)
BYOC_DEFINE_TRANSPOSE(byoc_transpose_i1, bool)

BYOC_DEFINE_PAD(byoc_pad_i64, int64_t)
BYOC_DEFINE_PAD(byoc_pad_i8, int8_t)
BYOC_DEFINE_PAD(byoc_pad_ui8, uint8_t)
BYOC_DEFINE_PAD(byoc_pad_i1, bool)

/* ---- arg-max / arg-min ------------------------------------------------------ */

/*
 * The index (int64) of the extreme element of each line of an (outer, n, inner) view,
 * over the middle dim. `last` != 0 takes the last of equal extremes, else the first. A NaN
 * counts as the extreme (numpy.argmax/argmin): the first NaN, or with `last` the last one.
 * BETTER(v, best) is the strict comparison (> for max, < for min).
 */
#define BYOC_DEFINE_ARG(NAME, T, BETTER, ISNAN)                                                     \
  static inline void NAME##_part_(const T* restrict x, int64_t* restrict y, int64_t n,         \
                                  int64_t inner, int32_t last, int64_t r0, int64_t r1) {       \
    for (int64_t r = r0; r < r1; ++r) {                                                        \
      const int64_t o = r / inner, i = r % inner;                                              \
      const T* xs = x + o * n * inner + i;                                                     \
      T best = xs[0];                                                                          \
      int64_t at = 0;                                                                          \
      for (int64_t k = 1; k < n; ++k) {                                                        \
        const T v = xs[k * inner];                                                             \
        const int v_nan = ISNAN(v), best_nan = ISNAN(best);                                    \
        const int take = last ? (!best_nan && (BETTER(v, best) || v == best)) || v_nan         \
                              : !best_nan && (BETTER(v, best) || v_nan);                       \
        if (take) {                                                                            \
          best = v;                                                                            \
          at = k;                                                                              \
        }                                                                                      \
      }                                                                                        \
      y[r] = at;                                                                               \
    }                                                                                          \
  }                                                                                            \
  static inline void NAME(const T* restrict x, int64_t* restrict y, int64_t outer, int64_t n,  \
                          int64_t inner, int32_t last) {                                       \
    const int64_t rows = outer * inner;                                                        \
    const int32_t nt = byoc_threads_for(rows * n, BYOC_PAR_GRAIN);                             \
    BYOC_SPLIT_(nt, t, NAME##_part_(x, y, n, inner, last, rows * t / nt, rows * (t + 1) / nt)); \
  }

#define BYOC_GT_(a, b) ((a) > (b))
#define BYOC_LT_(a, b) ((a) < (b))
#define BYOC_ISNAN_F_(v) ((v) != (v))
#define BYOC_ISNAN_I_(v) 0

#define BYOC_DEFINE_ARGS(SUFFIX, T, ISNAN)                         \
  BYOC_DEFINE_ARG(byoc_argmax_##SUFFIX, T, BYOC_GT_, ISNAN)       \
  BYOC_DEFINE_ARG(byoc_argmin_##SUFFIX, T, BYOC_LT_, ISNAN)

BYOC_DEFINE_ARGS(f32, float, BYOC_ISNAN_F_)
BYOC_DEFINE_ARGS(i64, int64_t, BYOC_ISNAN_I_)
BYOC_DEFINE_ARGS(i32, int32_t, BYOC_ISNAN_I_)
BYOC_DEFINE_ARGS(i8, int8_t, BYOC_ISNAN_I_)
BYOC_DEFINE_ARGS(ui8, uint8_t, BYOC_ISNAN_I_)

/* ---- running sums and products ------------------------------------------------- */

/*
 * A running reduction over the middle dim of an (outer, n, inner) view (numpy.cumsum and
 * numpy.cumprod: one accumulator, updated in order, so float results are the reference's
 * bit for bit); `exclusive` leaves each element out, `reverse` runs from the end. ACC is
 * the type the running value is kept in (unsigned for the integers: they wrap modulo 2^n,
 * as numpy's do), INIT its start, STEP updates `acc` with `v`.
 */
#define BYOC_DEFINE_SCAN(NAME, T, ACC, INIT, STEP)                                           \
  static inline void NAME##_part_(const T* restrict x, T* restrict y, int64_t n,               \
                                  int64_t inner, int32_t exclusive, int32_t reverse,           \
                                  int64_t r0, int64_t r1) {                                    \
    for (int64_t r = r0; r < r1; ++r) {                                                        \
      const int64_t o = r / inner, i = r % inner;                                              \
      const T* xs = x + o * n * inner + i;                                                     \
      T* ys = y + o * n * inner + i;                                                           \
      ACC acc = INIT;                                                                          \
      for (int64_t j = 0; j < n; ++j) {                                                        \
        const int64_t k = reverse ? n - 1 - j : j;                                             \
        const ACC v = (ACC)xs[k * inner];                                                      \
        if (exclusive) {                                                                       \
          ys[k * inner] = (T)acc;                                                              \
          STEP;                                                                                \
        } else {                                                                               \
          STEP;                                                                                \
          ys[k * inner] = (T)acc;                                                              \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  static inline void NAME(const T* restrict x, T* restrict y, int64_t outer, int64_t n,        \
                          int64_t inner, int32_t exclusive, int32_t reverse) {                 \
    const int64_t rows = outer * inner;                                                        \
    const int32_t nt = byoc_threads_for(rows * n, BYOC_PAR_GRAIN);                             \
    BYOC_SPLIT_(nt, t, NAME##_part_(x, y, n, inner, exclusive, reverse, rows * t / nt,         \
                                    rows * (t + 1) / nt));                                     \
  }

BYOC_DEFINE_SCAN(byoc_cumsum_f32, float, float, 0.0f, acc += v)
BYOC_DEFINE_SCAN(byoc_cumsum_i64, int64_t, uint64_t, 0u, acc += v)
BYOC_DEFINE_SCAN(byoc_cumsum_i32, int32_t, uint32_t, 0u, acc += v)
BYOC_DEFINE_SCAN(byoc_cumprod_f32, float, float, 1.0f, acc *= v)
BYOC_DEFINE_SCAN(byoc_cumprod_i64, int64_t, uint64_t, 1u, acc *= v)
BYOC_DEFINE_SCAN(byoc_cumprod_i32, int32_t, uint32_t, 1u, acc *= v)

/* ---- one-hot ------------------------------------------------------------------ */

/*
 * y[o, d, i] = values[1] if idx[o, i] (negative: counted from depth) == d else values[0],
 * for an (outer, inner) index array and an (outer, depth, inner) result. An index
 * outside [-depth, depth) selects no position: its line is all values[0].
 */
#define BYOC_DEFINE_ONE_HOT(NAME, T)                                                         \
  static inline void NAME(const int64_t* restrict idx, const T* restrict values,               \
                          T* restrict y, int64_t outer, int64_t depth, int64_t inner) {        \
    const T off = values[0], on = values[1];                                                   \
    for (int64_t o = 0; o < outer; ++o) {                                                      \
      T* ys = y + o * depth * inner;                                                           \
      for (int64_t t = 0; t < depth * inner; ++t) ys[t] = off;                                 \
      for (int64_t i = 0; i < inner; ++i) {                                                    \
        int64_t d = idx[o * inner + i];                                                        \
        if (d < 0 && d >= -depth) d += depth;                                                  \
        if (d >= 0 && d < depth) ys[d * inner + i] = on;                                       \
      }                                                                                        \
    }                                                                                          \
  }

BYOC_DEFINE_ONE_HOT(byoc_one_hot_f32, float)
BYOC_DEFINE_ONE_HOT(byoc_one_hot_i64, int64_t)
BYOC_DEFINE_ONE_HOT(byoc_one_hot_i32, int32_t)
BYOC_DEFINE_ONE_HOT(byoc_one_hot_i8, int8_t)
BYOC_DEFINE_ONE_HOT(byoc_one_hot_ui8, uint8_t)
BYOC_DEFINE_ONE_HOT(byoc_one_hot_i1, bool)

/* ---- layer normalisation ---------------------------------------------------------- */

/* Rows [r0, r1) of byoc_layer_norm_f32, one element at a time (the x86-64 baseline). */
static inline void byoc_layer_norm_rows_(const float* restrict x, const float* restrict gamma,
                                         const float* restrict beta, float* restrict y,
                                         int64_t n, float eps, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xs = x + r * n;
    float* ys = y + r * n;
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) sum += (double)xs[k];
    const float mean = (float)(sum / (double)n);
    double sq = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const float d = xs[k] - mean;
      sq += (double)d * (double)d;
    }
    const float var = (float)(sq / (double)n);
    const float denom = sqrtf(var + eps);
    for (int64_t k = 0; k < n; ++k) ys[k] = (xs[k] - mean) / denom * gamma[k] + beta[k];
  }
}

#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && \
    !defined(BYOC_BASELINE_ONLY) && !defined(__SANITIZE_ADDRESS__)
#if __has_attribute(target)
#define BYOC_LAYER_NORM_AVX2_ 1
typedef float byoc_ln_v4f_ __attribute__((vector_size(16)));
typedef double byoc_ln_v4d_ __attribute__((vector_size(32)));
typedef float byoc_ln_v8f_ __attribute__((vector_size(32)));

/* byoc_layer_norm_rows_ with AVX2 (about 3x faster on rows of 192): the sum and the
 * squared deviations in four double lanes (then the n % 4 last elements), the
 * normalisation eight floats at a time, each element the same (x - mean) / denom * gamma
 * + beta. */
static __attribute__((target("avx2"))) BYOC_MAYBE_UNUSED void byoc_layer_norm_rows_avx2_(
    const float* restrict x, const float* restrict gamma, const float* restrict beta,
    float* restrict y, int64_t n, float eps, int64_t r0, int64_t r1) {
  const int64_t n4 = n - n % 4, n8 = n - n % 8;
  for (int64_t r = r0; r < r1; ++r) {
    const float* xs = x + r * n;
    float* ys = y + r * n;
    byoc_ln_v4d_ acc = {0};
    for (int64_t k = 0; k < n4; k += 4) {
      byoc_ln_v4f_ v;
      memcpy(&v, xs + k, sizeof v);
      acc += __builtin_convertvector(v, byoc_ln_v4d_);
    }
    double sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (int64_t k = n4; k < n; ++k) sum += (double)xs[k];
    const float mean = (float)(sum / (double)n);
    byoc_ln_v4d_ sqv = {0};
    for (int64_t k = 0; k < n4; k += 4) {
      byoc_ln_v4f_ v;
      memcpy(&v, xs + k, sizeof v);
      const byoc_ln_v4d_ d = __builtin_convertvector(v - mean, byoc_ln_v4d_);
      sqv += d * d;
    }
    double sq = (sqv[0] + sqv[1]) + (sqv[2] + sqv[3]);
    for (int64_t k = n4; k < n; ++k) {
      const float d = xs[k] - mean;
      sq += (double)d * (double)d;
    }
    const float var = (float)(sq / (double)n);
    const float denom = sqrtf(var + eps);
    for (int64_t k = 0; k < n8; k += 8) {
      byoc_ln_v8f_ v, g, b;
      memcpy(&v, xs + k, sizeof v);
      memcpy(&g, gamma + k, sizeof g);
      memcpy(&b, beta + k, sizeof b);
      v = (v - mean) / denom * g + b;
      memcpy(ys + k, &v, sizeof v);
    }
    for (int64_t k = n8; k < n; ++k) ys[k] = (xs[k] - mean) / denom * gamma[k] + beta[k];
  }
}
#endif
#endif

/* The AVX2 rows where the CPU has AVX2, else the baseline's. */
static inline void byoc_layer_norm_pick_(const float* restrict x, const float* restrict gamma,
                                         const float* restrict beta, float* restrict y,
                                         int64_t n, float eps, int64_t r0, int64_t r1) {
#ifdef BYOC_LAYER_NORM_AVX2_
  if (__builtin_cpu_supports("avx2")) {
    byoc_layer_norm_rows_avx2_(x, gamma, beta, y, n, eps, r0, r1);
    return;
  }
#endif
  byoc_layer_norm_rows_(x, gamma, beta, y, n, eps, r0, r1);
}

/*
 * (x - mean) / sqrt(var + eps) * gamma + beta over each row of n elements of an
 * (rows, n) view (the reference: mean and variance of the row, in float, here summed in
 * double); gamma and beta hold n elements. Threads split the rows, from BYOC_PAR_GRAIN
 * elements a thread (a 64 x 192 row block, 3 us on one thread, stays on it).
 */
static inline void byoc_layer_norm_f32(const float* restrict x, const float* restrict gamma,
                                       const float* restrict beta, float* restrict y,
                                       int64_t rows, int64_t n, float eps) {
  const int32_t nt = byoc_threads_for(rows * n, BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_layer_norm_pick_(x, gamma, beta, y, n, eps, rows * t / nt,
                                           rows * (t + 1) / nt));
}

/* Rows [r0, r1) of byoc_rms_norm_f32. */
static inline void byoc_rms_norm_rows_(const float* restrict x, const float* restrict gamma,
                                       float* restrict y, int64_t n, float eps, int64_t r0,
                                       int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xs = x + r * n;
    float* ys = y + r * n;
    double sq = 0.0;
    for (int64_t k = 0; k < n; ++k) sq += (double)xs[k] * (double)xs[k];
    const float denom = sqrtf((float)(sq / (double)n) + eps);
    for (int64_t k = 0; k < n; ++k) ys[k] = xs[k] / denom * gamma[k];
  }
}

/* x / sqrt(mean(x^2) + eps) * gamma over each row of n elements (the reference's RMSNorm;
 * the squares summed in double); gamma holds n elements. Threads split the rows. */
static inline void byoc_rms_norm_f32(const float* restrict x, const float* restrict gamma,
                                     float* restrict y, int64_t rows, int64_t n, float eps) {
  const int32_t nt = byoc_threads_for(rows * n * 3, BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_rms_norm_rows_(x, gamma, y, n, eps, rows * t / nt, rows * (t + 1) / nt));
}

/* ---- log-softmax ---------------------------------------------------------------- */

/* (x - max) - log(sum(exp(x - max))) over the middle dim of an (outer, n, inner) view
 * (the reference's log_softmax; the exponentials summed in double). */
static inline void byoc_log_softmax_f32(const float* restrict x, float* restrict y, int64_t outer,
                                        int64_t n, int64_t inner) {
  const int64_t rows = outer * inner;
  const int32_t nt = byoc_threads_for(rows * n * 8, BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_softmax_rows_(x, y, n, inner, rows * t / nt, rows * (t + 1) / nt, 1));
}

#endif /* BYOC_KERNELS_INDEX_H_ */
