/*
 * byoc_kernels_dense.h — dense (x . w^T, then an epilogue) and batched matmul with
 * broadcasting. Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_DENSE_H_
#define BYOC_KERNELS_DENSE_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"

/* ---- dense and matmul ------------------------------------------------------ */

/* Floats of x one block of rows of byoc_dense_part_ reads: such a block stays in L2 while
 * every column of w streams past it once. */
#define BYOC_DENSE_XBLOCK 65536

/*
 * y[m, n] = sum_k x[m, k] * w[n, k]  (x: M x K, w: N x K, y: M x N), rows [m0, m1) and
 * columns [n0, n1), each row segment then through the epilogue `ep` (NULL: none).
 * Rows go in blocks of BYOC_DENSE_XBLOCK / K; within a block, four columns of w at a time
 * against every row of the block, so w is read once a block rather than once a row (a
 * classifier's 8210 x 1024 weights, 33 MB, against 20 rows: once instead of 20 times).
 * The sum of each output does not depend on the range or the order: the same code
 * computes it.
 */
BYOC_KERNEL void byoc_dense_part_(const float* restrict x, const float* restrict w,
                                  float* restrict y, int64_t N, int64_t K, int64_t m0, int64_t m1,
                                  int64_t n0, int64_t n1, const byoc_epilogue_* ep) {
  enum { L = 8 };
  const int64_t K8 = K - K % L;
  const int64_t N4 = n0 + (n1 - n0) / 4 * 4;
  const int64_t rows = K < BYOC_DENSE_XBLOCK ? BYOC_DENSE_XBLOCK / (K > 0 ? K : 1) : 1;
  for (int64_t mb = m0; mb < m1; mb += rows) {
    const int64_t me = m1 - mb < rows ? m1 : mb + rows;
    for (int64_t n = n0; n < N4; n += 4) {
      const float* w0 = w + n * K;
      const float* w1 = w0 + K;
      const float* w2 = w1 + K;
      const float* w3 = w2 + K;
      for (int64_t m = mb; m < me; ++m) {
        const float* xr = x + m * K;
        float* yr = y + m * N;
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
    }
    for (int64_t n = N4; n < n1; ++n) {
      const float* w0 = w + n * K;
      for (int64_t m = mb; m < me; ++m) {
        const float* xr = x + m * K;
        float s0[L] = {0};
        for (int64_t k = 0; k < K8; k += L)
          for (int j = 0; j < L; ++j) s0[j] += xr[k + j] * w0[k + j];
        float t0 = 0.0f;
        for (int j = 0; j < L; ++j) t0 += s0[j];
        for (int64_t k = K8; k < K; ++k) t0 += xr[k] * w0[k];
        y[m * N + n] = t0;
      }
    }
    if (ep != NULL)
      for (int64_t m = mb; m < me; ++m) byoc_epilogue_row_(ep, n0, y + m * N + n0, n1 - n0);
  }
}


/* ---- the GEMM register tile ------------------------------------------------- */

/* Rows and columns of the GEMM register tile, and the depth of one packed panel. */
enum { BYOC_GEMM_MR = 6, BYOC_GEMM_NR = 16, BYOC_GEMM_KC = 512 };

/* Dense takes the tile (byoc_gemm_rows_) from this many rows on; fewer rows go through the
 * dot products of byoc_dense_part_ (packing the weights costs about what one row computes). */
#define BYOC_DENSE_TILE_ROWS 3

/*
 * The tile: c[i * ldc + j] = (first ? 0 : c[i * ldc + j]) + sum_k a[i * lda + k] * b[k * ldb + j]
 * for i < mr (<= 6) and j < nr (<= 16; b always holds 16 readable floats a row), summed in
 * order of k, a multiply and an add a step, in 12 vector registers (6 rows x 2 vectors).
 * Rows past mr read row 0 and are not stored.
 */
static inline __attribute__((always_inline)) void byoc_gemm_tile_(
    const float* restrict a, int64_t lda, const float* restrict b, int64_t ldb, int64_t kc,
    float* restrict c, int64_t ldc, int64_t mr, int64_t nr, int first) {
  byoc_v8f_ a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0};
  byoc_v8f_ b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0}, b4 = {0}, b5 = {0};
  if (!first) {
    byoc_load16_(c, nr, &a0, &b0);
    if (mr > 1) byoc_load16_(c + ldc, nr, &a1, &b1);
    if (mr > 2) byoc_load16_(c + 2 * ldc, nr, &a2, &b2);
    if (mr > 3) byoc_load16_(c + 3 * ldc, nr, &a3, &b3);
    if (mr > 4) byoc_load16_(c + 4 * ldc, nr, &a4, &b4);
    if (mr > 5) byoc_load16_(c + 5 * ldc, nr, &a5, &b5);
  }
  const float* x0 = a;
  const float* x1 = mr > 1 ? a + lda : a;
  const float* x2 = mr > 2 ? a + 2 * lda : a;
  const float* x3 = mr > 3 ? a + 3 * lda : a;
  const float* x4 = mr > 4 ? a + 4 * lda : a;
  const float* x5 = mr > 5 ? a + 5 * lda : a;
  for (int64_t k = 0; k < kc; ++k, b += ldb) {
    byoc_v8f_ v0, v1;
    memcpy(&v0, b, sizeof v0);
    memcpy(&v1, b + 8, sizeof v1);
    a0 += x0[k] * v0;
    b0 += x0[k] * v1;
    a1 += x1[k] * v0;
    b1 += x1[k] * v1;
    a2 += x2[k] * v0;
    b2 += x2[k] * v1;
    a3 += x3[k] * v0;
    b3 += x3[k] * v1;
    a4 += x4[k] * v0;
    b4 += x4[k] * v1;
    a5 += x5[k] * v0;
    b5 += x5[k] * v1;
  }
  byoc_store16_(c, nr, &a0, &b0);
  if (mr > 1) byoc_store16_(c + ldc, nr, &a1, &b1);
  if (mr > 2) byoc_store16_(c + 2 * ldc, nr, &a2, &b2);
  if (mr > 3) byoc_store16_(c + 3 * ldc, nr, &a3, &b3);
  if (mr > 4) byoc_store16_(c + 4 * ldc, nr, &a4, &b4);
  if (mr > 5) byoc_store16_(c + 5 * ldc, nr, &a5, &b5);
}

#ifdef BYOC_FMA
/* byoc_gemm_tile_ with fused multiply-adds (AVX2 + FMA): the same products in the same
 * order, one rounding a step fewer; called, not inlined. */
static BYOC_FMA BYOC_MAYBE_UNUSED void byoc_gemm_tile_fma_(
    const float* restrict a, int64_t lda, const float* restrict b, int64_t ldb, int64_t kc,
    float* restrict c, int64_t ldc, int64_t mr, int64_t nr, int first) {
  __m256 lo[6], hi[6];
  float tmp[16];
  for (int i = 0; i < 6; ++i) {
    if (first || i >= mr) {
      lo[i] = _mm256_setzero_ps();
      hi[i] = _mm256_setzero_ps();
    } else if (nr == 16) {
      lo[i] = _mm256_loadu_ps(c + i * ldc);
      hi[i] = _mm256_loadu_ps(c + i * ldc + 8);
    } else {
      memset(tmp, 0, sizeof tmp);
      memcpy(tmp, c + i * ldc, (size_t)nr * sizeof(float));
      lo[i] = _mm256_loadu_ps(tmp);
      hi[i] = _mm256_loadu_ps(tmp + 8);
    }
  }
  __m256 a0 = lo[0], a1 = lo[1], a2 = lo[2], a3 = lo[3], a4 = lo[4], a5 = lo[5];
  __m256 b0 = hi[0], b1 = hi[1], b2 = hi[2], b3 = hi[3], b4 = hi[4], b5 = hi[5];
  const float* x0 = a;
  const float* x1 = mr > 1 ? a + lda : a;
  const float* x2 = mr > 2 ? a + 2 * lda : a;
  const float* x3 = mr > 3 ? a + 3 * lda : a;
  const float* x4 = mr > 4 ? a + 4 * lda : a;
  const float* x5 = mr > 5 ? a + 5 * lda : a;
  for (int64_t k = 0; k < kc; ++k, b += ldb) {
    const __m256 v0 = _mm256_loadu_ps(b), v1 = _mm256_loadu_ps(b + 8);
    __m256 s = _mm256_broadcast_ss(x0 + k);
    a0 = _mm256_fmadd_ps(s, v0, a0);
    b0 = _mm256_fmadd_ps(s, v1, b0);
    s = _mm256_broadcast_ss(x1 + k);
    a1 = _mm256_fmadd_ps(s, v0, a1);
    b1 = _mm256_fmadd_ps(s, v1, b1);
    s = _mm256_broadcast_ss(x2 + k);
    a2 = _mm256_fmadd_ps(s, v0, a2);
    b2 = _mm256_fmadd_ps(s, v1, b2);
    s = _mm256_broadcast_ss(x3 + k);
    a3 = _mm256_fmadd_ps(s, v0, a3);
    b3 = _mm256_fmadd_ps(s, v1, b3);
    s = _mm256_broadcast_ss(x4 + k);
    a4 = _mm256_fmadd_ps(s, v0, a4);
    b4 = _mm256_fmadd_ps(s, v1, b4);
    s = _mm256_broadcast_ss(x5 + k);
    a5 = _mm256_fmadd_ps(s, v0, a5);
    b5 = _mm256_fmadd_ps(s, v1, b5);
  }
  lo[0] = a0, lo[1] = a1, lo[2] = a2, lo[3] = a3, lo[4] = a4, lo[5] = a5;
  hi[0] = b0, hi[1] = b1, hi[2] = b2, hi[3] = b3, hi[4] = b4, hi[5] = b5;
  for (int i = 0; i < mr; ++i) {
    if (nr == 16) {
      _mm256_storeu_ps(c + i * ldc, lo[i]);
      _mm256_storeu_ps(c + i * ldc + 8, hi[i]);
      continue;
    }
    _mm256_storeu_ps(tmp, lo[i]);
    _mm256_storeu_ps(tmp + 8, hi[i]);
    memcpy(c + i * ldc, tmp, (size_t)nr * sizeof(float));
  }
}
#define BYOC_GEMM_TILE_(fma, a, lda, b, ldb, kc, c, ldc, mr, nr, first)       \
  do {                                                                        \
    if (fma)                                                                  \
      byoc_gemm_tile_fma_(a, lda, b, ldb, kc, c, ldc, mr, nr, first);         \
    else                                                                      \
      byoc_gemm_tile_(a, lda, b, ldb, kc, c, ldc, mr, nr, first);             \
  } while (0)

/*
 * Two panels at once with AVX-512: c (mr <= 6 rows x nr <= 32 columns) from panel b0 (columns
 * 0-15) and b1 (16-31), in 12 registers of 16 lanes. Each output is the same chain of fused
 * multiply-adds in order of k as in byoc_gemm_tile_fma_, so the results are identical to it.
 */
#define BYOC_GEMM_AVX512 __attribute__((target("avx512f,avx2,fma")))
static BYOC_GEMM_AVX512 BYOC_MAYBE_UNUSED void byoc_gemm_tile2_avx512_(
    const float* restrict a, int64_t lda, const float* restrict b0, const float* restrict b1,
    int64_t ldb, int64_t kc, float* restrict c, int64_t ldc, int64_t mr, int64_t nr, int first) {
  const __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1u);
  const __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1u);
  __m512 lo[6], hi[6];
  for (int i = 0; i < 6; ++i) {
    if (first || i >= mr) {
      lo[i] = _mm512_setzero_ps();
      hi[i] = _mm512_setzero_ps();
    } else {
      lo[i] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
      hi[i] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
    }
  }
  __m512 a0 = lo[0], a1 = lo[1], a2 = lo[2], a3 = lo[3], a4 = lo[4], a5 = lo[5];
  __m512 h0 = hi[0], h1 = hi[1], h2 = hi[2], h3 = hi[3], h4 = hi[4], h5 = hi[5];
  const float* x0 = a;
  const float* x1 = mr > 1 ? a + lda : a;
  const float* x2 = mr > 2 ? a + 2 * lda : a;
  const float* x3 = mr > 3 ? a + 3 * lda : a;
  const float* x4 = mr > 4 ? a + 4 * lda : a;
  const float* x5 = mr > 5 ? a + 5 * lda : a;
  for (int64_t k = 0; k < kc; ++k, b0 += ldb, b1 += ldb) {
    const __m512 v0 = _mm512_loadu_ps(b0), v1 = _mm512_loadu_ps(b1);
    __m512 s = _mm512_set1_ps(x0[k]);
    a0 = _mm512_fmadd_ps(s, v0, a0);
    h0 = _mm512_fmadd_ps(s, v1, h0);
    s = _mm512_set1_ps(x1[k]);
    a1 = _mm512_fmadd_ps(s, v0, a1);
    h1 = _mm512_fmadd_ps(s, v1, h1);
    s = _mm512_set1_ps(x2[k]);
    a2 = _mm512_fmadd_ps(s, v0, a2);
    h2 = _mm512_fmadd_ps(s, v1, h2);
    s = _mm512_set1_ps(x3[k]);
    a3 = _mm512_fmadd_ps(s, v0, a3);
    h3 = _mm512_fmadd_ps(s, v1, h3);
    s = _mm512_set1_ps(x4[k]);
    a4 = _mm512_fmadd_ps(s, v0, a4);
    h4 = _mm512_fmadd_ps(s, v1, h4);
    s = _mm512_set1_ps(x5[k]);
    a5 = _mm512_fmadd_ps(s, v0, a5);
    h5 = _mm512_fmadd_ps(s, v1, h5);
  }
  lo[0] = a0, lo[1] = a1, lo[2] = a2, lo[3] = a3, lo[4] = a4, lo[5] = a5;
  hi[0] = h0, hi[1] = h1, hi[2] = h2, hi[3] = h3, hi[4] = h4, hi[5] = h5;
  for (int i = 0; i < mr; ++i) {
    _mm512_mask_storeu_ps(c + i * ldc, m0, lo[i]);
    _mm512_mask_storeu_ps(c + i * ldc + 16, m1, hi[i]);
  }
}
/* Which tile: 2 (AVX-512F: two panels at once), 1 (AVX2 + FMA), 0 (the baseline's). */
#define BYOC_GEMM_LEVEL_()                                                             \
  (BYOC_HAS_AVX512_("avx512f") ? 2                                               \
   : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 1 : 0)
#else
#define BYOC_GEMM_TILE_(fma, a, lda, b, ldb, kc, c, ldc, mr, nr, first) \
  byoc_gemm_tile_(a, lda, b, ldb, kc, c, ldc, mr, nr, first)
#define BYOC_GEMM_LEVEL_() 0
#endif

/*
 * Rows [m0, m1) x columns [n0, n1) of y (row stride ldy) = x (row stride K) . w^T (w: N x K,
 * rows K apart), through the tile: per block of BYOC_GEMM_KC of k and panel of 16 columns,
 * the panel of w transposed into `bp` (kc x 16, zeros past the last column), then every
 * 6-row tile of the rows against it. Each output is summed in order of k by the tile, so
 * it does not depend on the range (nor on the threads that split the ranges).
 */
BYOC_KERNEL void byoc_gemm_rows_(const float* restrict x, const float* restrict w,
                                 float* restrict y, int64_t ldy, int64_t K, int64_t m0,
                                 int64_t m1, int64_t n0, int64_t n1, const byoc_epilogue_* ep) {
  enum { MR = BYOC_GEMM_MR, NR = BYOC_GEMM_NR, KC = BYOC_GEMM_KC };
  float bp[2 * KC * NR] __attribute__((aligned(64)));
  const int level = BYOC_GEMM_LEVEL_();
  const int fma = level >= 1;
  (void)fma;
  if (m1 <= m0 || n1 <= n0) return;
  for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += KC) {
    const int64_t kc = K - k0 < KC ? K - k0 : KC;
    /* AVX-512: two panels a step (the second one in bp + KC * NR), then a last single one */
    const int64_t step = level == 2 ? 2 * NR : NR;
    for (int64_t n = n0; n < n1; n += step) {
      const int64_t width = n1 - n < step ? n1 - n : step;
      for (int64_t j = 0; j < width; ++j) { /* column j: row n + j of w */
        const float* wr = w + (n + j) * K + k0;
        float* dst = bp + (j / NR) * KC * NR + j % NR;
        for (int64_t k = 0; k < kc; ++k) dst[k * NR] = wr[k];
      }
      for (int64_t j = width; j < (width > NR ? 2 * NR : NR); ++j) {
        float* dst = bp + (j / NR) * KC * NR + j % NR;
        for (int64_t k = 0; k < kc; ++k) dst[k * NR] = 0.0f;
      }
      for (int64_t m = m0; m < m1; m += MR) {
        const int64_t mr = m1 - m < MR ? m1 - m : MR;
#ifdef BYOC_FMA
        if (width > NR) {
          byoc_gemm_tile2_avx512_(x + m * K + k0, K, bp, bp + KC * NR, NR, kc, y + m * ldy + n,
                                  ldy, mr, width, k0 == 0);
          continue;
        }
#endif
        BYOC_GEMM_TILE_(fma, x + m * K + k0, K, bp, NR, kc, y + m * ldy + n, ldy, mr, width, k0 == 0);
      }
    }
    if (K == 0) break;
  }
  if (ep != NULL)
    for (int64_t m = m0; m < m1; ++m) byoc_epilogue_row_(ep, n0, y + m * ldy + n0, n1 - n0);
}

/* ---- few rows against many weights: dot products (AVX-512) ------------------------- */

/* On AVX-512F CPUs, dense with BYOC_DENSE_TILE_ROWS to BYOC_DENSE_DOT_ROWS - 1 rows and at
 * least BYOC_DENSE_DOT_DEPTH terms a sum takes byoc_dense_dots_avx512_: the weights are read
 * once, in place, with no packed panel (transposing a classifier's 8210 x 1024 weights into
 * panels costs more than its 20 rows compute). With fewer terms the 16 lanes' final sum
 * costs more than the products; with more rows the tile's reuse wins. */
#define BYOC_DENSE_DOT_ROWS 32
#define BYOC_DENSE_DOT_DEPTH 64

#ifdef BYOC_FMA
/* The 8 lanes of s summed in a fixed tree (halves of 4, then 2, then 1). */
static BYOC_FMA inline __attribute__((always_inline)) float byoc_dots_sum8_(__m256 s) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

#define BYOC_DOTS_ROW_(i, xi)                                                     \
  do {                                                                            \
    const __m512 p_ = (xi);                                                       \
    a##i##0 = _mm512_fmadd_ps(p_, u0, a##i##0);                                   \
    a##i##1 = _mm512_fmadd_ps(p_, u1, a##i##1);                                   \
    a##i##2 = _mm512_fmadd_ps(p_, u2, a##i##2);                                   \
    a##i##3 = _mm512_fmadd_ps(p_, u3, a##i##3);                                   \
  } while (0)
#define BYOC_DOTS_STORE_(i)                                                            \
  do {                                                                                 \
    if (i < mr) {                                                                      \
      float* yi_ = y + (m + i) * N + n;                                                \
      const __m512 s_[4] = {a##i##0, a##i##1, a##i##2, a##i##3};                      \
      for (int64_t j_ = 0; j_ < nw; ++j_) {                                            \
        const __m256 lo_ = _mm512_castps512_ps256(s_[j_]);                             \
        const __m256 hi_ =                                                             \
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s_[j_]), 1));     \
        yi_[j_] = byoc_dots_sum8_(_mm256_add_ps(lo_, hi_));                            \
      }                                                                                \
    }                                                                                  \
  } while (0)

/*
 * y[m * N + n] = sum_k x[m * K + k] * w[n * K + k] for m in [0, M), n in [n0, n1): four rows
 * of w against up to six rows of x at a time (24 accumulators of 16 lanes; the rows in blocks
 * of near-equal size), w's four rows staying in L1 across the rows of x. Each output is one
 * chain of fused multiply-adds a lane over blocks of 16 k (lane j takes k = j mod 16; the
 * last block's missing k are zeros), its 16 lanes then summed in a fixed tree (lanes j and
 * j + 8, then halves of 4, 2, 1): it does not depend on [n0, n1), nor on the threads that
 * split it.
 */
static BYOC_GEMM_AVX512 BYOC_MAYBE_UNUSED void byoc_dense_dots_avx512_(
    const float* restrict x, const float* restrict w, float* restrict y, int64_t M, int64_t N,
    int64_t K, int64_t n0, int64_t n1) {
  const int64_t K16 = K - K % 16;
  const __mmask16 tail = (__mmask16)((1u << (K - K16)) - 1u);
  const int64_t blocks = (M + 5) / 6;
  for (int64_t n = n0; n < n1; n += 4) {
    const int64_t nw = n1 - n < 4 ? n1 - n : 4;
    const float* w0 = w + n * K;
    const float* w1 = nw > 1 ? w0 + K : w0;
    const float* w2 = nw > 2 ? w0 + 2 * K : w0;
    const float* w3 = nw > 3 ? w0 + 3 * K : w0;
    for (int64_t bi = 0; bi < blocks; ++bi) {
      const int64_t m = M * bi / blocks, mr = M * (bi + 1) / blocks - m;
      const float* x0 = x + m * K;
      const float* x1 = mr > 1 ? x0 + K : x0;
      const float* x2 = mr > 2 ? x0 + 2 * K : x0;
      const float* x3 = mr > 3 ? x0 + 3 * K : x0;
      const float* x4 = mr > 4 ? x0 + 4 * K : x0;
      const float* x5 = mr > 5 ? x0 + 5 * K : x0;
      __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
      __m512 a10 = a00, a11 = a00, a12 = a00, a13 = a00, a20 = a00, a21 = a00, a22 = a00;
      __m512 a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00, a40 = a00, a41 = a00;
      __m512 a42 = a00, a43 = a00, a50 = a00, a51 = a00, a52 = a00, a53 = a00;
      for (int64_t k = 0; k < K16; k += 16) {
        const __m512 u0 = _mm512_loadu_ps(w0 + k), u1 = _mm512_loadu_ps(w1 + k);
        const __m512 u2 = _mm512_loadu_ps(w2 + k), u3 = _mm512_loadu_ps(w3 + k);
        BYOC_DOTS_ROW_(0, _mm512_loadu_ps(x0 + k));
        BYOC_DOTS_ROW_(1, _mm512_loadu_ps(x1 + k));
        BYOC_DOTS_ROW_(2, _mm512_loadu_ps(x2 + k));
        BYOC_DOTS_ROW_(3, _mm512_loadu_ps(x3 + k));
        BYOC_DOTS_ROW_(4, _mm512_loadu_ps(x4 + k));
        BYOC_DOTS_ROW_(5, _mm512_loadu_ps(x5 + k));
      }
      if (K16 < K) {
        const __m512 u0 = _mm512_maskz_loadu_ps(tail, w0 + K16);
        const __m512 u1 = _mm512_maskz_loadu_ps(tail, w1 + K16);
        const __m512 u2 = _mm512_maskz_loadu_ps(tail, w2 + K16);
        const __m512 u3 = _mm512_maskz_loadu_ps(tail, w3 + K16);
        BYOC_DOTS_ROW_(0, _mm512_maskz_loadu_ps(tail, x0 + K16));
        BYOC_DOTS_ROW_(1, _mm512_maskz_loadu_ps(tail, x1 + K16));
        BYOC_DOTS_ROW_(2, _mm512_maskz_loadu_ps(tail, x2 + K16));
        BYOC_DOTS_ROW_(3, _mm512_maskz_loadu_ps(tail, x3 + K16));
        BYOC_DOTS_ROW_(4, _mm512_maskz_loadu_ps(tail, x4 + K16));
        BYOC_DOTS_ROW_(5, _mm512_maskz_loadu_ps(tail, x5 + K16));
      }
      BYOC_DOTS_STORE_(0);
      BYOC_DOTS_STORE_(1);
      BYOC_DOTS_STORE_(2);
      BYOC_DOTS_STORE_(3);
      BYOC_DOTS_STORE_(4);
      BYOC_DOTS_STORE_(5);
    }
  }
}
#undef BYOC_DOTS_ROW_
#undef BYOC_DOTS_STORE_

/* Columns [n0, n1) of every row through byoc_dense_dots_avx512_, then the epilogue. */
static inline void byoc_dense_dots_(const float* restrict x, const float* restrict w,
                                    float* restrict y, int64_t M, int64_t N, int64_t K,
                                    int64_t n0, int64_t n1, const byoc_epilogue_* ep) {
  if (n1 <= n0) return;
  byoc_dense_dots_avx512_(x, w, y, M, N, K, n0, n1);
  if (ep != NULL)
    for (int64_t m = 0; m < M; ++m) byoc_epilogue_row_(ep, n0, y + m * N + n0, n1 - n0);
}
#endif

/* Columns [4 * q0, 4 * q1) of every row (the last quad may be short). */
static inline void byoc_dense_quads_(const float* restrict x, const float* restrict w,
                                     float* restrict y, int64_t M, int64_t N, int64_t K,
                                     int64_t q0, int64_t q1, const byoc_epilogue_* ep) {
  const int64_t n0 = 4 * q0, n1 = 4 * q1 < N ? 4 * q1 : N;
  if (n0 < n1) byoc_dense_part_(x, w, y, N, K, 0, M, n0, n1, ep);
}

/*
 * Multiply-adds a thread must have before the GEMM tile (dense and matmul) is split: the
 * tile runs 30-65 G multiply-adds a second on one core (AVX2 to AVX-512), so a share of 2^19
 * is 8-16 us, several times what a region costs (starting it on an awake worker, and each
 * share packing its own panels of w). BYOC_PAR_GRAIN, sized for scalar loops, would split
 * a 32 x 128 x 128 product (10 us on one thread) into two shares of 1-2 us each.
 */
#ifndef BYOC_GEMM_GRAIN
#define BYOC_GEMM_GRAIN 524288
#endif

/* Items [i0, i1) of the split of byoc_dense_run_: item i is the column group i / rb (`step`
 * columns, the width byoc_gemm_rows_ packs at once) and the row block i % rb (of `tiles`
 * 6-row tiles, rb blocks). */
static inline void byoc_dense_items_(const float* restrict x, const float* restrict w,
                                     float* restrict y, int64_t M, int64_t N, int64_t K,
                                     int64_t step, int64_t rb, int64_t i0, int64_t i1,
                                     const byoc_epilogue_* ep) {
  const int64_t tiles = (M + BYOC_GEMM_MR - 1) / BYOC_GEMM_MR;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t g = i / rb, r = i % rb;
    const int64_t n0 = g * step, n1 = n0 + step < N ? n0 + step : N;
    const int64_t m0 = tiles * r / rb * BYOC_GEMM_MR;
    const int64_t m1e = tiles * (r + 1) / rb * BYOC_GEMM_MR, m1 = m1e < M ? m1e : M;
    byoc_gemm_rows_(x, w, y, N, K, m0, m1, n0, n1, ep);
  }
}

/*
 * From BYOC_DENSE_TILE_ROWS rows on, the GEMM tile (byoc_gemm_rows_), on more than one
 * thread from BYOC_GEMM_GRAIN multiply-adds a thread. The split is over column groups (the
 * 16 or, with AVX-512, 32 columns the tile packs at once): each group's panels of w are
 * packed once, by the thread that computes them. Only when there are fewer than two groups
 * a thread are the rows cut too, into as few blocks as give two items a thread (each block
 * packs its group's panels again; a split over row tiles alone would pack all of w once per
 * claim: docs/threads.md measures it).
 * Fewer rows: the dot products of byoc_dense_part_, threads splitting the rows when there
 * are enough of them, else the columns in multiples of 4. On AVX-512F CPUs, a few rows with
 * enough terms take byoc_dense_dots_avx512_ instead (BYOC_DENSE_DOT_ROWS), threads splitting
 * the columns in multiples of 4. Either way every output is
 * summed by the same code whatever the split: identical results at any thread count.
 */
static inline void byoc_dense_run_(const float* restrict x, const float* restrict w,
                                   float* restrict y, int64_t M, int64_t N, int64_t K,
                                   const byoc_epilogue_* ep) {
#ifdef BYOC_FMA
  if (M >= BYOC_DENSE_TILE_ROWS && M < BYOC_DENSE_DOT_ROWS && K >= BYOC_DENSE_DOT_DEPTH &&
      BYOC_GEMM_LEVEL_() == 2) { /* threads split the columns in quads */
    const int32_t nt = byoc_threads_for(M * N * K, BYOC_PAR_GRAIN);
    const int64_t quads = (N + 3) / 4;
    BYOC_STEAL_(nt, quads, byoc_steal_grain_(nt, quads, 1), 1, q0, q1,
                byoc_dense_dots_(x, w, y, M, N, K, 4 * q0, 4 * q1 < N ? 4 * q1 : N, ep));
    return;
  }
#endif
  if (M >= BYOC_DENSE_TILE_ROWS) {
    const int32_t nt = byoc_threads_for(M * N * K, BYOC_GEMM_GRAIN);
    if (nt <= 1) {
      byoc_gemm_rows_(x, w, y, N, K, 0, M, 0, N, ep);
      return;
    }
    const int64_t step = BYOC_GEMM_LEVEL_() == 2 ? 2 * BYOC_GEMM_NR : BYOC_GEMM_NR;
    const int64_t groups = (N + step - 1) / step;
    const int64_t tiles = (M + BYOC_GEMM_MR - 1) / BYOC_GEMM_MR;
    int64_t rb = (2 * (int64_t)nt + groups - 1) / groups;
    if (rb > tiles) rb = tiles;
    const int64_t items = groups * rb;
    BYOC_STEAL_(nt, items, byoc_steal_grain_(nt, items, 1), 1, i0, i1,
                byoc_dense_items_(x, w, y, M, N, K, step, rb, i0, i1, ep));
    return;
  }
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

/*
 * Panels [p0, p1) of 16 columns of one matrix product y (M x N) = a (M x K) . b (K x N),
 * every row: the tile reads b in place (rows N apart); a last panel narrower than 16 is
 * first copied into `edge` (K x 16, zeros past the last column), so the tile never reads
 * past b. Each output is summed in order of k by the tile.
 */
static inline void byoc_matmul_panels_(const float* restrict a, const float* restrict b,
                                       float* restrict y, int64_t M, int64_t K, int64_t N,
                                       int64_t p0, int64_t p1, int fma) { /* fma: the level */
  enum { MR = BYOC_GEMM_MR, NR = BYOC_GEMM_NR, KC = BYOC_GEMM_KC };
  (void)fma;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n = p * NR, nr = N - n < NR ? N - n : NR;
#ifdef BYOC_FMA
    if (fma == 2 && p + 1 < p1 && N - n >= 2 * NR) { /* two whole panels at once */
      for (int64_t m = 0; m < M; m += MR) {
        const int64_t mr = M - m < MR ? M - m : MR;
        byoc_gemm_tile2_avx512_(a + m * K, K, b + n, b + n + NR, N, K, y + m * N + n, N, mr,
                                2 * NR, 1);
      }
      ++p;
      continue;
    }
#endif
    if (nr == NR) {
      for (int64_t m = 0; m < M; m += MR) {
        const int64_t mr = M - m < MR ? M - m : MR;
        BYOC_GEMM_TILE_(fma, a + m * K, K, b + n, N, K, y + m * N + n, N, mr, nr, 1);
      }
      continue;
    }
    float edge[KC * NR] __attribute__((aligned(64)));
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += KC) {
      const int64_t kc = K - k0 < KC ? K - k0 : KC;
      for (int64_t k = 0; k < kc; ++k) {
        for (int64_t j = 0; j < nr; ++j) edge[k * NR + j] = b[(k0 + k) * N + n + j];
        for (int64_t j = nr; j < NR; ++j) edge[k * NR + j] = 0.0f;
      }
      for (int64_t m = 0; m < M; m += MR) {
        const int64_t mr = M - m < MR ? M - m : MR;
        BYOC_GEMM_TILE_(fma, a + m * K + k0, K, edge, NR, kc, y + m * N + n, N, mr, nr, k0 == 0);
      }
      if (K == 0) break;
    }
  }
}

/* Entries [e0, e1) of the batch (see byoc_matmul_f32), panels [p0, p1) of each. */
BYOC_KERNEL void byoc_matmul_part_(const float* restrict a, const float* restrict b,
                                   float* restrict y, int64_t M, int64_t K, int64_t N, int32_t nb,
                                   const int64_t* bshape, const int64_t* astr,
                                   const int64_t* bstr, int64_t e0, int64_t e1, int64_t p0,
                                   int64_t p1) {
  const int level = BYOC_GEMM_LEVEL_();
  for (int64_t e = e0; e < e1; ++e) {
    int64_t ao = 0, bo = 0, rest = e;
    for (int32_t d = nb - 1; d >= 0; --d) {
      const int64_t i = rest % bshape[d];
      rest /= bshape[d];
      ao += i * astr[d];
      bo += i * bstr[d];
    }
    byoc_matmul_panels_(a + ao, b + bo, y + e * M * N, M, K, N, p0, p1, level);
  }
}

/*
 * Batched matmul with numpy broadcasting of the batch dimensions: the output
 * batch has `nb` dims `bshape`; `astr`/`bstr` give, per batch dim, how many
 * elements to step in a and b (0 where that operand broadcasts). From
 * BYOC_GEMM_GRAIN multiply-adds a thread, threads split the batch entries when there are
 * enough of them, else the 16-column panels of each; every output is summed by the tile
 * whatever the split.
 */
static inline BYOC_MAYBE_UNUSED void byoc_matmul_f32(const float* restrict a,
                                                     const float* restrict b, float* restrict y,
                                                     int64_t M, int64_t K, int64_t N, int32_t nb,
                                                     const int64_t* bshape, const int64_t* astr,
                                                     const int64_t* bstr) {
  int64_t total = 1;
  for (int32_t d = 0; d < nb; ++d) total *= bshape[d];
  const int64_t panels = (N + BYOC_GEMM_NR - 1) / BYOC_GEMM_NR;
  const int32_t nt = byoc_threads_for(total * M * N * K, BYOC_GEMM_GRAIN);
  if (nt <= 1) {
    byoc_matmul_part_(a, b, y, M, K, N, nb, bshape, astr, bstr, 0, total, 0, panels);
    return;
  }
  if (total >= 2 * (int64_t)nt) {
    BYOC_STEAL_(nt, total, byoc_steal_grain_(nt, total, 1), 1, e0, e1,
                byoc_matmul_part_(a, b, y, M, K, N, nb, bshape, astr, bstr, e0, e1, 0, panels));
    return;
  }
  for (int64_t e = 0; e < total; ++e)
    BYOC_STEAL_(nt, panels, byoc_steal_grain_(nt, panels, 1), 1, p0, p1,
                byoc_matmul_part_(a, b, y, M, K, N, nb, bshape, astr, bstr, e, e + 1, p0, p1));
}

#endif /* BYOC_KERNELS_DENSE_H_ */
