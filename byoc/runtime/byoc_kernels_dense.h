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

#endif /* BYOC_KERNELS_DENSE_H_ */
