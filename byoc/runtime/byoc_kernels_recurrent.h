/*
 * byoc_kernels_recurrent.h — the recurrent cells nn.lstm, nn.gru and nn.rnn (ONNX LSTM,
 * GRU and RNN), one call per op: the whole time loop runs inside the kernel.
 * Part of byoc_kernels.h; docs/c-codegen.md ("Recurrent cells") describes the design.
 *
 *   1. the input projection of every time step and direction, X . W^T (T*B x D*G*H), in one
 *      call of the dense kernel (split across threads as dense splits);
 *   2. per direction, per time step: the recurrent product h . R^T (a small GEMM, B x G*H,
 *      byoc_rnn_gemv_), then one pointwise pass over the gates of each active batch row
 *      (biases, peepholes, clip, activations, the new state), writing Y.
 *
 * Threads: a bidirectional op on two or more threads runs each direction's time loop on a
 * thread of its own (one region for the whole op, no synchronisation per step); otherwise a
 * step whose recurrent product is large enough (B*G*H*H multiply-adds, BYOC_PAR_GRAIN a
 * thread) is split by hidden units, one region per step (the team is held awake during a
 * run); a small one runs on the calling thread with no region at all. Every value is computed
 * by the same code whatever the split, so results do not depend on the thread count.
 *
 * Semantics are ONNX's as onnxruntime computes them: batch row b runs for len_b =
 * sequence_lens[b] steps (clamped to [0, T]); Y is 0 at times t >= len_b; Y_h / Y_c hold the
 * state after the row's last step, and 0 for a row with len_b = 0.
 */
#ifndef BYOC_KERNELS_RECURRENT_H_
#define BYOC_KERNELS_RECURRENT_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_simd.h"
#include "byoc_kernels_dense.h"

#include <math.h>
#include <string.h>

/* Activation codes: the order of ACTIVATIONS in byoc/dialects/nn/recurrent.py. */
enum {
  BYOC_RNN_RELU = 0,
  BYOC_RNN_TANH = 1,
  BYOC_RNN_SIGMOID = 2,
  BYOC_RNN_AFFINE = 3,
  BYOC_RNN_LEAKY_RELU = 4,
  BYOC_RNN_THRESHOLDED_RELU = 5,
  BYOC_RNN_SCALED_TANH = 6,
  BYOC_RNN_HARD_SIGMOID = 7,
  BYOC_RNN_ELU = 8,
  BYOC_RNN_SOFTSIGN = 9,
  BYOC_RNN_SOFTPLUS = 10
};

/* `flags` bits: which optional operands are present, and the cell options. */
enum {
  BYOC_RNN_BIAS = 1,
  BYOC_RNN_H0 = 2,
  BYOC_RNN_C0 = 4,
  BYOC_RNN_PEEPHOLE = 8,
  BYOC_RNN_LINEAR_BEFORE_RESET = 16,
  BYOC_RNN_INPUT_FORGET = 32,
  BYOC_RNN_BATCH_MAJOR = 64 /* layout 1: X [B, T, I], Y [B, T, D, H], states [B, D, H] */
};

enum { BYOC_RNN_CELL_RNN = 1, BYOC_RNN_CELL_GRU = 3, BYOC_RNN_CELL_LSTM = 4 }; /* = gates */

/*
 * e^x for 8 lanes (Cephes' expf: x = n ln2 + r in two parts, a degree-6 polynomial in r,
 * times 2^n built in the exponent bits; about 1 ulp). x is clamped to [-87.3, 88.7] (the
 * result then saturates near FLT_MIN / FLT_MAX); a NaN lane gives NaN. Plain vector
 * arithmetic, so the loops calling it vectorise in both the baseline and the AVX2 clone.
 */
/* m ? a : b per lane (m: a comparison's all-ones / zero lanes); casts between vector types
 * of one size keep the bits. */
#define BYOC_RNN_SEL_(m, a, b) \
  ((byoc_v8f_)(((byoc_v8i_)(a) & (m)) | ((byoc_v8i_)(b) & ~(m))))

static inline __attribute__((always_inline)) void byoc_rnn_exp8_(const byoc_v8f_* in,
                                                                   byoc_v8f_* out) {
  const byoc_v8f_ x0 = *in;
  const byoc_v8i_ nan = x0 != x0;
  byoc_v8f_ x = x0;
  const byoc_v8f_ zero = {0};
  x = BYOC_RNN_SEL_(x < -87.3f, zero - 87.3f, x);
  x = BYOC_RNN_SEL_(x > 88.7f, zero + 88.7f, x);
  x = BYOC_RNN_SEL_(nan, zero, x);
  byoc_v8f_ fx = x * 1.44269504088896341f + 0.5f;
  byoc_v8i_ n = __builtin_convertvector(fx, byoc_v8i_); /* truncates: floor below */
  byoc_v8f_ nf = __builtin_convertvector(n, byoc_v8f_);
  n = n + (nf > fx); /* a true comparison is -1 */
  nf = __builtin_convertvector(n, byoc_v8f_);
  x = x - nf * 0.693359375f;
  x = x - nf * -2.12194440e-4f;
  const byoc_v8f_ z = x * x;
  byoc_v8f_ p = 1.9875691500e-4f * x + 1.3981999507e-3f;
  p = p * x + 8.3334519073e-3f;
  p = p * x + 4.1665795894e-2f;
  p = p * x + 1.6666665459e-1f;
  p = p * x + 5.0000001201e-1f;
  p = p * z + x + 1.0f;
  /* 2^n in two factors, so n = 128 (x near 88.7) does not overflow the exponent field */
  const byoc_v8i_ half = n >> 1;
  const byoc_v8i_ e1 = (half + 127) << 23, e2 = (n - half + 127) << 23;
  p = p * (byoc_v8f_)e1 * (byoc_v8f_)e2;
  *out = BYOC_RNN_SEL_(nan, x0, p);
}

/* tanh for 8 lanes: Cephes' tanhf (an odd polynomial below |x| = 0.625, else
 * 1 - 2 / (e^(2|x|) + 1) with the sign of x); a few ulp. */
static inline __attribute__((always_inline)) void byoc_rnn_tanh8_(const byoc_v8f_* in,
                                                                    byoc_v8f_* out) {
  const byoc_v8f_ x = *in;
  const byoc_v8i_ neg = x < 0.0f;
  const byoc_v8f_ a = BYOC_RNN_SEL_(neg, -x, x);
  const byoc_v8f_ s = x * x;
  byoc_v8f_ poly = -5.70498872745e-3f * s + 2.06390887954e-2f;
  poly = poly * s - 5.37397155531e-2f;
  poly = poly * s + 1.33314422036e-1f;
  poly = poly * s - 3.33332819422e-1f;
  poly = poly * s * x + x;
  byoc_v8f_ e, a2 = a + a;
  byoc_rnn_exp8_(&a2, &e);
  byoc_v8f_ big = 1.0f - 2.0f / (e + 1.0f);
  big = BYOC_RNN_SEL_(neg, -big, big);
  *out = BYOC_RNN_SEL_(a < 0.625f, poly, big); /* NaN: a < 0.625 is false, big is NaN */
}

/* 1 / (1 + e^-x) for 8 lanes. */
static inline __attribute__((always_inline)) void byoc_rnn_sigmoid8_(const byoc_v8f_* in,
                                                                       byoc_v8f_* out) {
  byoc_v8f_ e, m = -*in;
  byoc_rnn_exp8_(&m, &e);
  *out = 1.0f / (1.0f + e);
}

/* A vector function over n values in place: whole vectors, then the tail through a padded
 * copy (so every value is computed by the same lanes' code). */
#define BYOC_RNN_MAP8_(FN, v, n)                                        \
  do {                                                                  \
    int64_t i_ = 0;                                                     \
    for (; i_ + 8 <= (n); i_ += 8) {                                    \
      byoc_v8f_ a_, b_;                                                 \
      memcpy(&a_, (v) + i_, sizeof a_);                                 \
      FN(&a_, &b_);                                                     \
      memcpy((v) + i_, &b_, sizeof b_);                                 \
    }                                                                   \
    if (i_ < (n)) {                                                     \
      float t_[8] = {0};                                                \
      memcpy(t_, (v) + i_, (size_t)((n) - i_) * sizeof(float));         \
      byoc_v8f_ a_, b_;                                                 \
      memcpy(&a_, t_, sizeof a_);                                       \
      FN(&a_, &b_);                                                     \
      memcpy(t_, &b_, sizeof b_);                                       \
      memcpy((v) + i_, t_, (size_t)((n) - i_) * sizeof(float));         \
    }                                                                   \
  } while (0)

/* f(v) in place for n values (one switch per vector, not per element). A kernel of its own
 * (BYOC_KERNEL, so cloned): gcc does not inline it into the step, and a plain static function
 * would run the baseline's code from the step's AVX2 clone. */
BYOC_KERNEL void byoc_rnn_act_(int32_t code, float alpha, float beta, float* restrict v,
                                 int64_t n) {
  switch (code) {
    case BYOC_RNN_RELU:
      BYOC_EACH8_(n, i, v[i] = v[i] < 0.0f ? 0.0f : v[i]);
      break;
    case BYOC_RNN_TANH:
      BYOC_RNN_MAP8_(byoc_rnn_tanh8_, v, n);
      break;
    case BYOC_RNN_SIGMOID:
      BYOC_RNN_MAP8_(byoc_rnn_sigmoid8_, v, n);
      break;
    case BYOC_RNN_AFFINE:
      BYOC_EACH8_(n, i, v[i] = alpha * v[i] + beta);
      break;
    case BYOC_RNN_LEAKY_RELU:
      BYOC_EACH8_(n, i, v[i] = v[i] >= 0.0f ? v[i] : alpha * v[i]);
      break;
    case BYOC_RNN_THRESHOLDED_RELU:
      BYOC_EACH8_(n, i, v[i] = v[i] > alpha ? v[i] : 0.0f);
      break;
    case BYOC_RNN_SCALED_TANH:
      for (int64_t i = 0; i < n; ++i) v[i] = alpha * tanhf(beta * v[i]);
      break;
    case BYOC_RNN_HARD_SIGMOID:
      BYOC_EACH8_(n, i, {
        const float s = alpha * v[i] + beta;
        v[i] = s < 0.0f ? 0.0f : s > 1.0f ? 1.0f : s;
      });
      break;
    case BYOC_RNN_ELU:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] >= 0.0f ? v[i] : alpha * expm1f(v[i]);
      break;
    case BYOC_RNN_SOFTSIGN:
      BYOC_EACH8_(n, i, v[i] = v[i] / (1.0f + fabsf(v[i])));
      break;
    default: /* BYOC_RNN_SOFTPLUS: log(1 + e^x) without overflow */
      for (int64_t i = 0; i < n; ++i) {
        const float x = v[i];
        v[i] = x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
      }
      break;
  }
}

/* numpy.clip(v, -c, c) in place (NaN passes through); c <= 0: no clip. */
static inline void byoc_rnn_clip_(float c, float* restrict v, int64_t n) {
  if (!(c > 0.0f)) return;
  BYOC_EACH8_(n, i, v[i] = v[i] < -c ? -c : v[i] > c ? c : v[i]);
}

/* The pointwise pieces of a step, on n values of distinct buffers, in blocks of 8
 * (BYOC_EACH8_, byoc_kernels_glue.h) so that gcc vectorises them: the same operations as
 * plain loops, so the same results. */
#define BYOC_RNN_PW_ static inline __attribute__((always_inline)) void
BYOC_RNN_PW_ byoc_rnn_add_(float* restrict a, const float* restrict x, int64_t n) {
  BYOC_EACH8_(n, j, a[j] += x[j]);
}
BYOC_RNN_PW_ byoc_rnn_add2_(float* restrict a, const float* restrict u, const float* restrict v,
                            int64_t n) {
  BYOC_EACH8_(n, j, a[j] += u[j] + v[j]);
}
BYOC_RNN_PW_ byoc_rnn_addmul_(float* restrict a, const float* restrict u,
                              const float* restrict v, int64_t n) {
  BYOC_EACH8_(n, j, a[j] += u[j] * v[j]);
}
BYOC_RNN_PW_ byoc_rnn_mul_(float* restrict a, const float* restrict x, int64_t n) {
  BYOC_EACH8_(n, j, a[j] *= x[j]);
}
BYOC_RNN_PW_ byoc_rnn_prod_(float* restrict o, const float* restrict u, const float* restrict v,
                            int64_t n) {
  BYOC_EACH8_(n, j, o[j] = u[j] * v[j]);
}
BYOC_RNN_PW_ byoc_rnn_one_minus_(float* restrict o, const float* restrict u, int64_t n) {
  BYOC_EACH8_(n, j, o[j] = 1.0f - u[j]);
}
/* c = f * c + i * g (LSTM's new cell state) */
BYOC_RNN_PW_ byoc_rnn_cell_(float* restrict c, const float* restrict f, const float* restrict i,
                            const float* restrict g, int64_t n) {
  BYOC_EACH8_(n, j, c[j] = f[j] * c[j] + i[j] * g[j]);
}
/* o = (1 - z) * a + z * h (GRU's new state) */
BYOC_RNN_PW_ byoc_rnn_blend_(float* restrict o, const float* restrict z, const float* restrict a,
                             const float* restrict h, int64_t n) {
  BYOC_EACH8_(n, j, o[j] = (1.0f - z[j]) * a[j] + z[j] * h[j]);
}
#undef BYOC_RNN_PW_

/*
 * out[m * ldo + n] = sum_k h[m * H + k] * r[n * H + k] for rows n in [n0, n1), m in [0, B):
 * four rows of R at a time against every batch row (R's rows stay in L1 across the batch),
 * eight-lane partial sums added in lane order, then the tail. Each output is summed by the
 * same code wherever [n0, n1) starts, so a split by rows gives the single-thread results.
 */
static inline __attribute__((always_inline)) float byoc_rnn_hsum_(const byoc_v8f_* s) {
  float t = 0.0f;
  for (int j = 0; j < 8; ++j) t += (*s)[j];
  return t;
}

static inline void byoc_rnn_gemv_(const float* restrict h, const float* restrict r,
                                  float* restrict out, int64_t B, int64_t H, int64_t ldo,
                                  int64_t n0, int64_t n1) {
  const int64_t H8 = H - H % 8;
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float* r0 = r + n * H;
    const float* r1 = r0 + H;
    const float* r2 = r1 + H;
    const float* r3 = r2 + H;
    for (int64_t m = 0; m < B; ++m) {
      const float* hm = h + m * H;
      byoc_v8f_ s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
      for (int64_t k = 0; k < H8; k += 8) {
        byoc_v8f_ x, w0, w1, w2, w3;
        memcpy(&x, hm + k, sizeof x);
        memcpy(&w0, r0 + k, sizeof w0);
        memcpy(&w1, r1 + k, sizeof w1);
        memcpy(&w2, r2 + k, sizeof w2);
        memcpy(&w3, r3 + k, sizeof w3);
        s0 += x * w0;
        s1 += x * w1;
        s2 += x * w2;
        s3 += x * w3;
      }
      float t0 = byoc_rnn_hsum_(&s0), t1 = byoc_rnn_hsum_(&s1);
      float t2 = byoc_rnn_hsum_(&s2), t3 = byoc_rnn_hsum_(&s3);
      for (int64_t k = H8; k < H; ++k) {
        t0 += hm[k] * r0[k];
        t1 += hm[k] * r1[k];
        t2 += hm[k] * r2[k];
        t3 += hm[k] * r3[k];
      }
      float* o = out + m * ldo + n;
      o[0] = t0, o[1] = t1, o[2] = t2, o[3] = t3;
    }
  }
  for (; n < n1; ++n) {
    const float* r0 = r + n * H;
    for (int64_t m = 0; m < B; ++m) {
      const float* hm = h + m * H;
      byoc_v8f_ s0 = {0};
      for (int64_t k = 0; k < H8; k += 8) {
        byoc_v8f_ x, w0;
        memcpy(&x, hm + k, sizeof x);
        memcpy(&w0, r0 + k, sizeof w0);
        s0 += x * w0;
      }
      float t0 = byoc_rnn_hsum_(&s0);
      for (int64_t k = H8; k < H; ++k) t0 += hm[k] * r0[k];
      out[m * ldo + n] = t0;
    }
  }
}

#ifdef BYOC_FMA
/* t[q] = the sum of the 8 lanes of a_q for four rows at once, in a fixed tree: pairs of
 * lanes, then pairs of pairs (two horizontal adds), then the two halves. */
static BYOC_FMA inline __attribute__((always_inline)) void byoc_rnn_sum4_(__m256 a0, __m256 a1,
                                                                          __m256 a2, __m256 a3,
                                                                          float* t) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  _mm_storeu_ps(t, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}

/* byoc_rnn_gemv_ with fused multiply-adds (AVX2 + FMA) and two accumulators a row (terms k
 * and k + 8 of every 16, added before the lanes; the lanes of four rows summed together by
 * byoc_rnn_sum4_): the same products summed in another order, one rounding fewer per term;
 * still the same code for every row whatever the split. */
static BYOC_FMA BYOC_MAYBE_UNUSED void byoc_rnn_gemv_fma_(const float* restrict h,
                                                          const float* restrict r,
                                                          float* restrict out, int64_t B,
                                                          int64_t H, int64_t ldo, int64_t n0,
                                                          int64_t n1) {
  const int64_t H8 = H - H % 8, H16 = H - H % 16;
  float lanes[8];
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float* r0 = r + n * H;
    const float* r1 = r0 + H;
    const float* r2 = r1 + H;
    const float* r3 = r2 + H;
    for (int64_t m = 0; m < B; ++m) {
      const float* hm = h + m * H;
      /* two accumulators a row (terms k and k + 8 of each 16): eight chains of FMAs */
      __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      __m256 u0 = s0, u1 = s0, u2 = s0, u3 = s0;
      int64_t k = 0;
      for (; k < H16; k += 16) {
        const __m256 x = _mm256_loadu_ps(hm + k), x8 = _mm256_loadu_ps(hm + k + 8);
        s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r0 + k), s0);
        s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r1 + k), s1);
        s2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r2 + k), s2);
        s3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r3 + k), s3);
        u0 = _mm256_fmadd_ps(x8, _mm256_loadu_ps(r0 + k + 8), u0);
        u1 = _mm256_fmadd_ps(x8, _mm256_loadu_ps(r1 + k + 8), u1);
        u2 = _mm256_fmadd_ps(x8, _mm256_loadu_ps(r2 + k + 8), u2);
        u3 = _mm256_fmadd_ps(x8, _mm256_loadu_ps(r3 + k + 8), u3);
      }
      for (; k < H8; k += 8) {
        const __m256 x = _mm256_loadu_ps(hm + k);
        s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r0 + k), s0);
        s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r1 + k), s1);
        s2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r2 + k), s2);
        s3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r3 + k), s3);
      }
      float t[4];
      byoc_rnn_sum4_(_mm256_add_ps(s0, u0), _mm256_add_ps(s1, u1), _mm256_add_ps(s2, u2),
                     _mm256_add_ps(s3, u3), t);
      for (int64_t k = H8; k < H; ++k) {
        t[0] += hm[k] * r0[k];
        t[1] += hm[k] * r1[k];
        t[2] += hm[k] * r2[k];
        t[3] += hm[k] * r3[k];
      }
      memcpy(out + m * ldo + n, t, sizeof t);
    }
  }
  for (; n < n1; ++n) {
    const float* r0 = r + n * H;
    for (int64_t m = 0; m < B; ++m) {
      const float* hm = h + m * H;
      __m256 s0 = _mm256_setzero_ps();
      for (int64_t k = 0; k < H8; k += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(hm + k), _mm256_loadu_ps(r0 + k), s0);
      _mm256_storeu_ps(lanes, s0);
      float t0 = 0.0f;
      for (int j = 0; j < 8; ++j) t0 += lanes[j];
      for (int64_t k = H8; k < H; ++k) t0 += hm[k] * r0[k];
      out[m * ldo + n] = t0;
    }
  }
}

/* Lanes j and j + 8 of a 16-lane vector added: the AVX2 form's two accumulators added. */
static BYOC_GEMM_AVX512 inline __attribute__((always_inline)) __m256 byoc_rnn_halves_(__m512 s) {
  return _mm256_add_ps(_mm512_castps512_ps256(s),
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
}

/* byoc_rnn_gemv_fma_ with 16-lane registers (AVX-512F): one accumulator a row holds both of
 * its accumulators (lanes 0-7: terms k, lanes 8-15: terms k + 8 of every 16), the block of 8
 * past the last 16 goes into lanes 0-7, and the two halves are added before the lanes; the
 * same operations on every term as byoc_rnn_gemv_fma_, so the same results, with half the
 * loads and multiply-adds issued. Rows past the last group of 4 go through
 * byoc_rnn_gemv_fma_'s single-row code, as there. */
static BYOC_GEMM_AVX512 BYOC_MAYBE_UNUSED void byoc_rnn_gemv_avx512_(
    const float* restrict h, const float* restrict r, float* restrict out, int64_t B, int64_t H,
    int64_t ldo, int64_t n0, int64_t n1) {
  const int64_t H8 = H - H % 8, H16 = H - H % 16;
  const __mmask16 eight = H8 > H16 ? (__mmask16)0xFF : (__mmask16)0;
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float* r0 = r + n * H;
    const float* r1 = r0 + H;
    const float* r2 = r1 + H;
    const float* r3 = r2 + H;
    for (int64_t m = 0; m < B; ++m) {
      const float* hm = h + m * H;
      __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t k = 0; k < H16; k += 16) {
        const __m512 x = _mm512_loadu_ps(hm + k);
        s0 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r0 + k), s0);
        s1 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r1 + k), s1);
        s2 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r2 + k), s2);
        s3 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r3 + k), s3);
      }
      if (eight) {
        const __m512 x = _mm512_maskz_loadu_ps(eight, hm + H16);
        s0 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(eight, r0 + H16), s0);
        s1 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(eight, r1 + H16), s1);
        s2 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(eight, r2 + H16), s2);
        s3 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(eight, r3 + H16), s3);
      }
      float t[4];
      byoc_rnn_sum4_(byoc_rnn_halves_(s0), byoc_rnn_halves_(s1), byoc_rnn_halves_(s2),
                     byoc_rnn_halves_(s3), t);
      for (int64_t k = H8; k < H; ++k) {
        t[0] += hm[k] * r0[k];
        t[1] += hm[k] * r1[k];
        t[2] += hm[k] * r2[k];
        t[3] += hm[k] * r3[k];
      }
      memcpy(out + m * ldo + n, t, sizeof t);
    }
  }
  if (n < n1) byoc_rnn_gemv_fma_(h, r, out, B, H, ldo, n, n1);
}
#endif

/* What every step of one op needs (built once per call). */
typedef struct {
  int32_t gates, flags, dirs, reverse;   /* reverse: 1 for direction "reverse" */
  int64_t T, B, H, GH;
  const float* xw;                       /* T*B x D*GH: X . W^T (rows in X's order) */
  const float* r;                        /* [D, GH, H] */
  const float* bias;                     /* [D, 2*GH] (Wb then Rb) when BYOC_RNN_BIAS */
  const float* h0;                       /* initial_h when BYOC_RNN_H0 */
  const float* c0;                       /* initial_c when BYOC_RNN_C0 */
  const float* p;                        /* [D, 3H] peepholes (i, o, f) when BYOC_RNN_PEEPHOLE */
  const int32_t* seq;                    /* [B] */
  float* y;
  float* yh;
  float* yc;                             /* NULL unless LSTM */
  const int64_t* acts;                   /* [D, 3] activation codes */
  const float* coef;                     /* [D, 3, 2] alpha, beta */
  float clip;
  int level; /* the recurrent product's code: 2 AVX-512F, 1 AVX2 + FMA, 0 the baseline's */
} byoc_rnn_;

/* A direction's working set: h (two buffers), c, the recurrent product, r . h (GRU). */
typedef struct {
  float* h[2];
  float* c;
  float* rec;
  float* rh;
} byoc_rnn_work_;

static inline int64_t byoc_rnn_work_floats_(int64_t B, int64_t H, int64_t GH) {
  return B * (4 * H + GH);
}

static inline byoc_rnn_work_ byoc_rnn_work_of_(float* base, int64_t B, int64_t H) {
  byoc_rnn_work_ w;
  w.h[0] = base;
  w.h[1] = base + B * H;
  w.c = base + 2 * B * H;
  w.rh = base + 3 * B * H;
  w.rec = base + 4 * B * H;
  return w;
}

static inline int64_t byoc_rnn_len_(const byoc_rnn_* k, int64_t b) {
  const int64_t v = k->seq[b];
  return v < 0 ? 0 : v > k->T ? k->T : v;
}

/* Element offsets of row (t, b) of X . W^T, of Y[t, d, b], and of a state [d, b]. */
static inline int64_t byoc_rnn_xrow_(const byoc_rnn_* k, int64_t t, int64_t b) {
  return (k->flags & BYOC_RNN_BATCH_MAJOR) ? b * k->T + t : t * k->B + b;
}
static inline int64_t byoc_rnn_yoff_(const byoc_rnn_* k, int64_t t, int32_t d, int64_t b) {
  return ((k->flags & BYOC_RNN_BATCH_MAJOR) ? (b * k->T + t) * k->dirs + d
                                            : (t * k->dirs + d) * k->B + b) * k->H;
}
static inline int64_t byoc_rnn_soff_(const byoc_rnn_* k, int32_t d, int64_t b) {
  return ((k->flags & BYOC_RNN_BATCH_MAJOR) ? b * k->dirs + d : d * k->B + b) * k->H;
}

static inline void byoc_rnn_product_(const byoc_rnn_* k, const float* h, const float* r,
                                     float* out, int64_t n0, int64_t n1) {
#ifdef BYOC_FMA
  if (k->level == 2) {
    byoc_rnn_gemv_avx512_(h, r, out, k->B, k->H, k->GH, n0, n1);
    return;
  }
  if (k->level == 1) {
    byoc_rnn_gemv_fma_(h, r, out, k->B, k->H, k->GH, n0, n1);
    return;
  }
#endif
  byoc_rnn_gemv_(h, r, out, k->B, k->H, k->GH, n0, n1);
}

/* The recurrent product of gates [g0, g1) for hidden units [j0, j1). */
static inline void byoc_rnn_gates_product_(const byoc_rnn_* k, const float* h, const float* r,
                                           float* out, int32_t g0, int32_t g1, int64_t j0,
                                           int64_t j1) {
  for (int32_t g = g0; g < g1; ++g) byoc_rnn_product_(k, h, r, out, g * k->H + j0, g * k->H + j1);
}

/*
 * One step s of direction d for hidden units [j0, j1): the recurrent product of those units'
 * gate rows (phase 0), then the gates of every active row. GRU without linear_before_reset
 * needs r . h of every unit before its candidate's product: `phase` 1 computes z, r and r . h,
 * phase 2 the candidate and the new state (with all units' r . h ready); other cells do
 * everything in phase 0.
 */
BYOC_KERNEL void byoc_rnn_step_(const byoc_rnn_* k, const byoc_rnn_work_* w, int32_t d,
                                int64_t s, int32_t phase, int64_t j0, int64_t j1) {
  const int64_t H = k->H, GH = k->GH, B = k->B, n = j1 - j0;
  const float* h = w->h[s & 1];
  float* hn = w->h[(s + 1) & 1];
  const float* r = k->r + (int64_t)d * GH * H;
  const float* wb = (k->flags & BYOC_RNN_BIAS) ? k->bias + (int64_t)d * 2 * GH : NULL;
  const float* rb = wb != NULL ? wb + GH : NULL;
  const int64_t* act = k->acts + 3 * d;
  const float* cf = k->coef + 6 * d;
  const int32_t G = k->gates;
  const int gru_split = G == 3 && !(k->flags & BYOC_RNN_LINEAR_BEFORE_RESET);
  if (n <= 0) return;
  if (gru_split && phase == 2)
    byoc_rnn_gates_product_(k, w->rh, r, w->rec, 2, 3, j0, j1);
  else
    byoc_rnn_gates_product_(k, h, r, w->rec, 0, gru_split ? 2 : G, j0, j1);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = byoc_rnn_len_(k, b);
    if (s >= len) continue;
    const int64_t t = k->reverse || d == 1 ? len - 1 - s : s;
    const float* xw = k->xw + byoc_rnn_xrow_(k, t, b) * k->dirs * GH + (int64_t)d * GH;
    float* g = w->rec + b * GH; /* the gate pre-activations, in place */
    const float* hb = h + b * H;
    float* hnb = hn + b * H;
    if (G == 1) {
      float* a = g + j0;
      byoc_rnn_add_(a, xw + j0, n);
      if (wb != NULL) byoc_rnn_add2_(a, wb + j0, rb + j0, n);
      byoc_rnn_clip_(k->clip, a, n);
      byoc_rnn_act_((int32_t)act[0], cf[0], cf[1], a, n);
      memcpy(hnb + j0, a, (size_t)n * sizeof(float));
    } else if (G == 3) {
      float* z = g + j0;
      float* rr = g + H + j0;
      float* hh = g + 2 * H + j0;
      if (phase != 2) {
        byoc_rnn_add_(z, xw + j0, n);
        byoc_rnn_add_(rr, xw + H + j0, n);
        if (wb != NULL) {
          byoc_rnn_add2_(z, wb + j0, rb + j0, n);
          byoc_rnn_add2_(rr, wb + H + j0, rb + H + j0, n);
        }
        byoc_rnn_clip_(k->clip, z, n);
        byoc_rnn_clip_(k->clip, rr, n);
        byoc_rnn_act_((int32_t)act[0], cf[0], cf[1], z, n);
        byoc_rnn_act_((int32_t)act[0], cf[0], cf[1], rr, n);
        if (gru_split) {
          float* rh = w->rh + b * H + j0;
          byoc_rnn_prod_(rh, rr, hb + j0, n);
          if (phase == 1) continue;
        }
      }
      /* gru_split: hh = (r . h) R_h^T (phase 2 product) + Rb_h; linear_before_reset:
       * hh = r * (h R_h^T + Rb_h) */
      if (rb != NULL) byoc_rnn_add_(hh, rb + 2 * H + j0, n);
      if (!gru_split) byoc_rnn_mul_(hh, rr, n);
      byoc_rnn_add_(hh, xw + 2 * H + j0, n);
      if (wb != NULL) byoc_rnn_add_(hh, wb + 2 * H + j0, n);
      byoc_rnn_clip_(k->clip, hh, n);
      byoc_rnn_act_((int32_t)act[1], cf[2], cf[3], hh, n);
      byoc_rnn_blend_(hnb + j0, z, hh, hb + j0, n);
    } else { /* LSTM: gates i, o, f, c */
      float* gi = g + j0;
      float* go = g + H + j0;
      float* gf = g + 2 * H + j0;
      float* gc = g + 3 * H + j0;
      float* c = w->c + b * H + j0;
      for (int32_t q = 0; q < 4; ++q) {
        float* a = g + q * H + j0;
        const float* x = xw + q * H + j0;
        byoc_rnn_add_(a, x, n);
        if (wb != NULL) byoc_rnn_add2_(a, wb + q * H + j0, rb + q * H + j0, n);
      }
      const float* p = (k->flags & BYOC_RNN_PEEPHOLE) ? k->p + (int64_t)d * 3 * H : NULL;
      if (p != NULL) {
        byoc_rnn_addmul_(gi, p + j0, c, n);
        byoc_rnn_addmul_(gf, p + 2 * H + j0, c, n);
      }
      byoc_rnn_clip_(k->clip, gi, n);
      byoc_rnn_act_((int32_t)act[0], cf[0], cf[1], gi, n);
      if (k->flags & BYOC_RNN_INPUT_FORGET) {
        byoc_rnn_one_minus_(gf, gi, n);
      } else {
        byoc_rnn_clip_(k->clip, gf, n);
        byoc_rnn_act_((int32_t)act[0], cf[0], cf[1], gf, n);
      }
      byoc_rnn_clip_(k->clip, gc, n);
      byoc_rnn_act_((int32_t)act[1], cf[2], cf[3], gc, n);
      byoc_rnn_cell_(c, gf, gi, gc, n);
      if (p != NULL) byoc_rnn_addmul_(go, p + H + j0, c, n);
      byoc_rnn_clip_(k->clip, go, n);
      byoc_rnn_act_((int32_t)act[0], cf[0], cf[1], go, n);
      memcpy(gc, c, (size_t)n * sizeof(float)); /* h(c) computed in the candidate's slot */
      byoc_rnn_act_((int32_t)act[2], cf[4], cf[5], gc, n);
      byoc_rnn_prod_(hnb + j0, go, gc, n);
    }
    memcpy(k->y + byoc_rnn_yoff_(k, t, d, b) + j0, hnb + j0, (size_t)n * sizeof(float));
  }
}

/* Units [j0, j1) of share t of nt: multiples of 8 where H allows. */
static inline void byoc_rnn_units_(int64_t H, int32_t nt, int32_t t, int64_t* j0, int64_t* j1) {
  const int64_t blocks = (H + 7) / 8;
  *j0 = 8 * (blocks * t / nt);
  *j1 = t == nt - 1 ? H : 8 * (blocks * (t + 1) / nt);
  if (*j0 > H) *j0 = H;
  if (*j1 > H) *j1 = H;
}

/* Share t of nt of a step: its hidden units. */
static inline void byoc_rnn_step_share_(const byoc_rnn_* k, const byoc_rnn_work_* w, int32_t d,
                                        int64_t s, int32_t phase, int32_t nt, int32_t t) {
  int64_t j0, j1;
  byoc_rnn_units_(k->H, nt, t, &j0, &j1);
  byoc_rnn_step_(k, w, d, s, phase, j0, j1);
}

/* Direction d's whole time loop; each step split over `nt` threads by hidden units. */
static inline void byoc_rnn_direction_(const byoc_rnn_* k, float* base, int32_t d, int32_t nt) {
  const int64_t B = k->B, H = k->H;
  const byoc_rnn_work_ w = byoc_rnn_work_of_(base, B, H);
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = byoc_rnn_len_(k, b);
    longest = len > longest ? len : longest;
    const int64_t so = byoc_rnn_soff_(k, d, b);
    if (k->flags & BYOC_RNN_H0)
      memcpy(w.h[0] + b * H, k->h0 + so, (size_t)H * sizeof(float));
    else
      memset(w.h[0] + b * H, 0, (size_t)H * sizeof(float));
    if ((k->flags & BYOC_RNN_C0) && k->gates == BYOC_RNN_CELL_LSTM)
      memcpy(w.c + b * H, k->c0 + so, (size_t)H * sizeof(float));
    else
      memset(w.c + b * H, 0, (size_t)H * sizeof(float));
    memset(w.rh + b * H, 0, (size_t)H * sizeof(float)); /* read for rows past their end too */
  }
  const int gru_split = k->gates == 3 && !(k->flags & BYOC_RNN_LINEAR_BEFORE_RESET);
  for (int64_t s = 0; s < longest; ++s) {
    const float* h = w.h[s & 1];
    float* hn = w.h[(s + 1) & 1];
    for (int64_t b = 0; b < B; ++b) /* a row past its end keeps its state */
      if (s >= byoc_rnn_len_(k, b)) memcpy(hn + b * H, h + b * H, (size_t)H * sizeof(float));
    for (int32_t phase = gru_split ? 1 : 0; phase <= (gru_split ? 2 : 0); ++phase) {
      if (nt > 1)
        BYOC_SPLIT_(nt, t, byoc_rnn_step_share_(k, &w, d, s, phase, nt, t));
      else
        byoc_rnn_step_(k, &w, d, s, phase, 0, H);
    }
  }
  const float* h = w.h[longest & 1];
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = byoc_rnn_len_(k, b);
    const int64_t so = byoc_rnn_soff_(k, d, b);
    for (int64_t t = len; t < k->T; ++t)
      memset(k->y + byoc_rnn_yoff_(k, t, d, b), 0, (size_t)H * sizeof(float));
    if (len > 0) {
      memcpy(k->yh + so, h + b * H, (size_t)H * sizeof(float));
      if (k->yc != NULL) memcpy(k->yc + so, w.c + b * H, (size_t)H * sizeof(float));
    } else {
      memset(k->yh + so, 0, (size_t)H * sizeof(float));
      if (k->yc != NULL) memset(k->yc + so, 0, (size_t)H * sizeof(float));
    }
  }
}

/* Floats of workspace byoc_lstm_f32 / byoc_gru_f32 / byoc_rnn_f32 take (`scratch`). */
static inline int64_t byoc_rnn_scratch_floats_(int64_t T, int64_t B, int64_t H, int32_t gates,
                                               int32_t dirs) {
  const int64_t GH = gates * H;
  return T * B * dirs * GH + dirs * byoc_rnn_work_floats_(B, H, GH);
}

static inline void byoc_recurrent_run_(byoc_rnn_* k, const float* restrict x,
                                       const float* restrict w, float* restrict scratch,
                                       int64_t I) {
  const int64_t T = k->T, B = k->B, H = k->H, GH = k->GH;
  const int32_t D = k->dirs;
  float* xw = scratch;
  float* work = scratch + T * B * D * GH;
  const int64_t per = byoc_rnn_work_floats_(B, H, GH);
  k->level = BYOC_GEMM_LEVEL_();
  byoc_dense_run_(x, w, xw, T * B, D * GH, I, NULL);
  k->xw = xw;
  const int32_t nt = byoc_threads();
  if (D == 2 && nt >= 2) { /* one thread a direction, the whole time loop each */
    BYOC_SPLIT_(2, d, byoc_rnn_direction_(k, work + d * per, d, 1));
    return;
  }
  const int32_t step_nt = byoc_threads_for(B * GH * H, BYOC_PAR_GRAIN);
  for (int32_t d = 0; d < D; ++d) byoc_rnn_direction_(k, work + d * per, d, step_nt);
}

static inline void byoc_rnn_init_(byoc_rnn_* k, int32_t gates, const float* r, const float* b,
                                  const int32_t* seq, const float* h0, const float* c0,
                                  const float* p, const float* coef, float* y, float* yh,
                                  float* yc, int64_t T, int64_t B, int64_t H, int32_t direction,
                                  int32_t flags, const int64_t* acts, float clip) {
  k->gates = gates;
  k->flags = flags;
  k->dirs = direction == 2 ? 2 : 1;
  k->reverse = direction == 1;
  k->T = T, k->B = B, k->H = H, k->GH = gates * H;
  k->xw = NULL;
  k->r = r, k->bias = b, k->h0 = h0, k->c0 = c0, k->p = p, k->seq = seq;
  k->y = y, k->yh = yh, k->yc = yc;
  k->acts = acts, k->coef = coef, k->clip = clip;
  k->level = 0;
}

/*
 * The cells. Operands as nn.lstm / nn.gru / nn.rnn take them (ONNX's layouts); an absent
 * optional operand (its `flags` bit clear) may be any pointer, it is not read. `seq` is always
 * given ([B] lengths, T for every row when the op has none). `direction`: 0 forward,
 * 1 reverse, 2 bidirectional. `acts`: per direction three activation codes (f, g, h; unused
 * slots any code); `coef`: per direction and slot its alpha and beta. `clip` <= 0: none.
 * `scratch`: byoc_rnn_scratch_floats_ floats.
 */
static inline BYOC_MAYBE_UNUSED void byoc_lstm_f32(
    const float* restrict x, const float* restrict w, const float* restrict r,
    const float* restrict b, const int32_t* restrict seq, const float* restrict h0,
    const float* restrict c0, const float* restrict p, const float* restrict coef,
    float* restrict y, float* restrict yh, float* restrict yc, float* restrict scratch,
    int64_t T, int64_t B, int64_t I, int64_t H, int32_t direction, int32_t flags,
    const int64_t* acts, float clip) {
  byoc_rnn_ k;
  byoc_rnn_init_(&k, BYOC_RNN_CELL_LSTM, r, b, seq, h0, c0, p, coef, y, yh, yc, T, B, H,
                 direction, flags, acts, clip);
  byoc_recurrent_run_(&k, x, w, scratch, I);
}

static inline BYOC_MAYBE_UNUSED void byoc_gru_f32(
    const float* restrict x, const float* restrict w, const float* restrict r,
    const float* restrict b, const int32_t* restrict seq, const float* restrict h0,
    const float* restrict coef, float* restrict y, float* restrict yh, float* restrict scratch,
    int64_t T, int64_t B, int64_t I, int64_t H, int32_t direction, int32_t flags,
    const int64_t* acts, float clip) {
  byoc_rnn_ k;
  byoc_rnn_init_(&k, BYOC_RNN_CELL_GRU, r, b, seq, h0, NULL, NULL, coef, y, yh, NULL, T, B, H,
                 direction, flags, acts, clip);
  byoc_recurrent_run_(&k, x, w, scratch, I);
}

static inline BYOC_MAYBE_UNUSED void byoc_rnn_f32(
    const float* restrict x, const float* restrict w, const float* restrict r,
    const float* restrict b, const int32_t* restrict seq, const float* restrict h0,
    const float* restrict coef, float* restrict y, float* restrict yh, float* restrict scratch,
    int64_t T, int64_t B, int64_t I, int64_t H, int32_t direction, int32_t flags,
    const int64_t* acts, float clip) {
  byoc_rnn_ k;
  byoc_rnn_init_(&k, BYOC_RNN_CELL_RNN, r, b, seq, h0, NULL, NULL, coef, y, yh, NULL, T, B, H,
                 direction, flags, acts, clip);
  byoc_recurrent_run_(&k, x, w, scratch, I);
}

#endif /* BYOC_KERNELS_RECURRENT_H_ */
