/*
 * byoc_qkernels.h — int8 kernels of the quantized (QDQ) composites of the ccompiler target
 * (issue #13; lowering in byoc/lowering/nn_to_c/quant.py, docs/quantization.md).
 *
 * Every product and sum is exact integer arithmetic: the weights arrive centred and widened
 * (int16 w - w_zp, laid out [O][Kp], Kp = K rounded up to 16, zero-padded), the activations
 * are centred and widened while they are packed (x - x_zp; padding is 0), and the dot
 * products accumulate in int32. The three code paths — baseline C, AVX2 (vpmaddwd) and
 * AVX-512 VNNI (vpdpwssd on 256-bit vectors) — therefore give identical integers; the path is
 * chosen at run time (__builtin_cpu_supports), and -DBYOC_BASELINE_ONLY
 * (BYOC_CPU_DISPATCH=baseline) keeps the baseline.
 *
 * The only floating point is the requantization of each accumulator, done as onnxruntime's
 * MLAS does it (MlasRequantizeOutput): v = (float)(acc + bias) * mult, clamped to
 * [lo, hi] (the output type's range minus the zero point, raised to 0 by a fused ReLU),
 * rounded half to even (nearbyintf), plus the output zero point.
 */
#ifndef BYOC_QKERNELS_H_
#define BYOC_QKERNELS_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef BYOC_MAYBE_UNUSED
#define BYOC_MAYBE_UNUSED __attribute__((unused))
#endif

#if defined(__x86_64__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>
#define BYOC_Q_AVX2 __attribute__((target("avx2")))
#define BYOC_Q_VNNI __attribute__((target("avx2,avx512f,avx512vl,avx512vnni")))
#endif
#endif

/* K is packed in blocks of this many int16 (one 256-bit vector). */
#define BYOC_QK 16

static inline int32_t byoc_q_requant_(int32_t acc, float mult, float lo, float hi, int32_t zp) {
  float v = (float)acc * mult;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return (int32_t)nearbyintf(v) + zp;
}

/* ---- the int16 GEMM: C[o * ldc + p] = sum_k A[o][k] * B[p][k], both rows Kp long ---------- */

static void byoc_qgemm_base_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M, int64_t P,
                             int64_t Kp, int64_t ldc) {
  for (int64_t o = 0; o < M; ++o) {
    const int16_t* a = A + o * Kp;
    for (int64_t p = 0; p < P; ++p) {
      const int16_t* b = B + p * Kp;
      int32_t s = 0;
      for (int64_t k = 0; k < Kp; ++k) s += (int32_t)a[k] * (int32_t)b[k];
      C[o * ldc + p] = s;
    }
  }
}

#ifdef BYOC_Q_AVX2
static inline __attribute__((always_inline)) BYOC_Q_AVX2 int32_t byoc_q_hsum_(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/* One 4 x 2 register tile per (o, p) block; MADD(acc, a, b) adds the pairwise products. */
#define BYOC_QGEMM_BODY(MADD)                                                                   \
  int64_t o = 0;                                                                               \
  for (; o + 4 <= M; o += 4) {                                                                 \
    const int16_t* a0 = A + o * Kp;                                                            \
    int64_t p = 0;                                                                             \
    for (; p + 2 <= P; p += 2) {                                                               \
      const int16_t* b0 = B + p * Kp;                                                          \
      __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,        \
              c21 = c00, c30 = c00, c31 = c00;                                                 \
      for (int64_t k = 0; k < Kp; k += BYOC_QK) {                                              \
        const __m256i x0 = _mm256_loadu_si256((const __m256i*)(b0 + k));                       \
        const __m256i x1 = _mm256_loadu_si256((const __m256i*)(b0 + Kp + k));                  \
        __m256i w = _mm256_loadu_si256((const __m256i*)(a0 + k));                              \
        c00 = MADD(c00, w, x0); c01 = MADD(c01, w, x1);                                        \
        w = _mm256_loadu_si256((const __m256i*)(a0 + Kp + k));                                 \
        c10 = MADD(c10, w, x0); c11 = MADD(c11, w, x1);                                        \
        w = _mm256_loadu_si256((const __m256i*)(a0 + 2 * Kp + k));                             \
        c20 = MADD(c20, w, x0); c21 = MADD(c21, w, x1);                                        \
        w = _mm256_loadu_si256((const __m256i*)(a0 + 3 * Kp + k));                             \
        c30 = MADD(c30, w, x0); c31 = MADD(c31, w, x1);                                        \
      }                                                                                        \
      int32_t* c = C + o * ldc + p;                                                            \
      c[0] = byoc_q_hsum_(c00); c[1] = byoc_q_hsum_(c01);                                      \
      c[ldc] = byoc_q_hsum_(c10); c[ldc + 1] = byoc_q_hsum_(c11);                              \
      c[2 * ldc] = byoc_q_hsum_(c20); c[2 * ldc + 1] = byoc_q_hsum_(c21);                      \
      c[3 * ldc] = byoc_q_hsum_(c30); c[3 * ldc + 1] = byoc_q_hsum_(c31);                      \
    }                                                                                          \
    for (; p < P; ++p) {                                                                       \
      const int16_t* b0 = B + p * Kp;                                                          \
      __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;                          \
      for (int64_t k = 0; k < Kp; k += BYOC_QK) {                                              \
        const __m256i x0 = _mm256_loadu_si256((const __m256i*)(b0 + k));                       \
        c0 = MADD(c0, _mm256_loadu_si256((const __m256i*)(a0 + k)), x0);                       \
        c1 = MADD(c1, _mm256_loadu_si256((const __m256i*)(a0 + Kp + k)), x0);                  \
        c2 = MADD(c2, _mm256_loadu_si256((const __m256i*)(a0 + 2 * Kp + k)), x0);              \
        c3 = MADD(c3, _mm256_loadu_si256((const __m256i*)(a0 + 3 * Kp + k)), x0);              \
      }                                                                                        \
      C[o * ldc + p] = byoc_q_hsum_(c0); C[(o + 1) * ldc + p] = byoc_q_hsum_(c1);              \
      C[(o + 2) * ldc + p] = byoc_q_hsum_(c2); C[(o + 3) * ldc + p] = byoc_q_hsum_(c3);        \
    }                                                                                          \
  }                                                                                            \
  for (; o < M; ++o) {                                                                         \
    const int16_t* a0 = A + o * Kp;                                                            \
    for (int64_t p = 0; p < P; ++p) {                                                          \
      const int16_t* b0 = B + p * Kp;                                                          \
      __m256i c0 = _mm256_setzero_si256();                                                     \
      for (int64_t k = 0; k < Kp; k += BYOC_QK)                                                \
        c0 = MADD(c0, _mm256_loadu_si256((const __m256i*)(a0 + k)),                            \
                  _mm256_loadu_si256((const __m256i*)(b0 + k)));                               \
      C[o * ldc + p] = byoc_q_hsum_(c0);                                                       \
    }                                                                                          \
  }

#define BYOC_Q_MADD_AVX2(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
static BYOC_Q_AVX2 void byoc_qgemm_avx2_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M,
                                         int64_t P, int64_t Kp, int64_t ldc) {
  BYOC_QGEMM_BODY(BYOC_Q_MADD_AVX2)
}

#define BYOC_Q_MADD_VNNI(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
static BYOC_Q_VNNI void byoc_qgemm_vnni_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M,
                                         int64_t P, int64_t Kp, int64_t ldc) {
  BYOC_QGEMM_BODY(BYOC_Q_MADD_VNNI)
}
#endif

/* 0: baseline, 1: AVX2, 2: AVX-512 VNNI — what byoc_qgemm_ runs on this CPU. */
static BYOC_MAYBE_UNUSED int byoc_qgemm_level(void) {
#ifdef BYOC_Q_AVX2
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) return 2;
  if (__builtin_cpu_supports("avx2")) return 1;
#endif
  return 0;
}

static void byoc_qgemm_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M, int64_t P,
                        int64_t Kp, int64_t ldc, int level) {
#ifdef BYOC_Q_AVX2
  if (level == 2) {
    byoc_qgemm_vnni_(A, B, C, M, P, Kp, ldc);
    return;
  }
  if (level == 1) {
    byoc_qgemm_avx2_(A, B, C, M, P, Kp, ldc);
    return;
  }
#endif
  (void)level;
  byoc_qgemm_base_(A, B, C, M, P, Kp, ldc);
}

/* ---- kernels, one per (activation type, output type) ------------------------------------- */

/*
 * conv2d (NCHW, groups G): x (N, C, H, W) of XT, w int16 (O, Kp) centred, K = C/G*KH*KW in
 * (c, kh, kw) order; bias int32 (O); mult f32 (O); y (N, O, OH, OW) of YT. Scratch: TP * Kp
 * int16 (the packed pixel block) then (O / G) * TP int32. TP: output pixels per block.
 */
#define BYOC_DEFINE_QCONV2D(NAME, XT, YT)                                                       \
  static BYOC_MAYBE_UNUSED void NAME(                                                          \
      const XT* x, const int16_t* w, const int32_t* bias, const float* mult, YT* y, float* scratch, \
      int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t G, int64_t KH, int64_t KW, \
      int64_t OH, int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,      \
      int64_t DW, int64_t Kp, int64_t TP, int32_t xzp, int32_t yzp, float lo, float hi) {      \
    const int64_t CG = C / G, OG = O / G, K = CG * KH * KW, P = OH * OW;                       \
    int16_t* cols = (int16_t*)scratch;                                                         \
    int32_t* acc = (int32_t*)(cols + TP * Kp);                                                 \
    const int level = byoc_qgemm_level();                                                      \
    for (int64_t n = 0; n < N; ++n)                                                            \
      for (int64_t g = 0; g < G; ++g) {                                                        \
        const XT* xg = x + (n * C + g * CG) * H * W;                                           \
        for (int64_t p0 = 0; p0 < P; p0 += TP) {                                               \
          const int64_t tp = P - p0 < TP ? P - p0 : TP;                                        \
          for (int64_t t = 0; t < tp; ++t) {                                                   \
            const int64_t oh = (p0 + t) / OW, ow = (p0 + t) % OW;                              \
            int16_t* col = cols + t * Kp;                                                      \
            int64_t k = 0;                                                                     \
            for (int64_t c = 0; c < CG; ++c)                                                   \
              for (int64_t i = 0; i < KH; ++i) {                                               \
                const int64_t ih = oh * SH - PT + i * DH;                                      \
                const XT* row = xg + (c * H + ih) * W;                                         \
                for (int64_t j = 0; j < KW; ++j, ++k) {                                        \
                  const int64_t iw = ow * SW - PL + j * DW;                                    \
                  col[k] = (ih >= 0 && ih < H && iw >= 0 && iw < W)                            \
                               ? (int16_t)((int32_t)row[iw] - xzp) : (int16_t)0;               \
                }                                                                              \
              }                                                                                \
            for (; k < Kp; ++k) col[k] = 0;                                                    \
          }                                                                                    \
          byoc_qgemm_(w + g * OG * Kp, cols, acc, OG, tp, Kp, tp, level);                      \
          for (int64_t o = 0; o < OG; ++o) {                                                   \
            const int64_t oc = g * OG + o;                                                     \
            YT* yo = y + (n * O + oc) * P + p0;                                                \
            const int32_t b = bias[oc];                                                        \
            const float m = mult[oc];                                                          \
            for (int64_t t = 0; t < tp; ++t)                                                   \
              yo[t] = (YT)byoc_q_requant_(acc[o * tp + t] + b, m, lo, hi, yzp);                \
          }                                                                                    \
        }                                                                                      \
        (void)K;                                                                               \
      }                                                                                        \
  }

/*
 * Depthwise conv2d (G == C == O): w int16 (C, KH*KW) centred. Scratch: the centred, padded
 * plane (HP * WP int16) then OW int32. The taps of one output row accumulate across OW (the
 * inner loop vectorises when SW == 1).
 */
#define BYOC_DEFINE_QDWCONV2D(NAME, XT, YT)                                                     \
  static BYOC_MAYBE_UNUSED void NAME(                                                          \
      const XT* x, const int16_t* w, const int32_t* bias, const float* mult, YT* y, float* scratch, \
      int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH, int64_t OW, \
      int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t HP,      \
      int64_t WP, int32_t xzp, int32_t yzp, float lo, float hi) {                              \
    int16_t* plane = (int16_t*)scratch;                                                        \
    int32_t* acc = (int32_t*)(plane + ((HP * WP + 1) & ~(int64_t)1));                          \
    for (int64_t n = 0; n < N; ++n)                                                            \
      for (int64_t c = 0; c < C; ++c) {                                                        \
        const XT* xc = x + (n * C + c) * H * W;                                                \
        memset(plane, 0, (size_t)(HP * WP) * sizeof(int16_t));                                 \
        for (int64_t r = 0; r < H; ++r)                                                        \
          for (int64_t q = 0; q < W; ++q)                                                      \
            plane[(r + PT) * WP + q + PL] = (int16_t)((int32_t)xc[r * W + q] - xzp);           \
        const int16_t* wc = w + c * KH * KW;                                                   \
        YT* yc = y + (n * C + c) * OH * OW;                                                    \
        const int32_t b = bias[c];                                                             \
        const float m = mult[c];                                                               \
        for (int64_t oh = 0; oh < OH; ++oh) {                                                  \
          for (int64_t ow = 0; ow < OW; ++ow) acc[ow] = b;                                     \
          for (int64_t i = 0; i < KH; ++i)                                                     \
            for (int64_t j = 0; j < KW; ++j) {                                                 \
              const int32_t wv = wc[i * KW + j];                                               \
              const int16_t* src = plane + (oh * SH + i * DH) * WP + j * DW;                   \
              if (SW == 1)                                                                     \
                for (int64_t ow = 0; ow < OW; ++ow) acc[ow] += wv * (int32_t)src[ow];          \
              else                                                                             \
                for (int64_t ow = 0; ow < OW; ++ow) acc[ow] += wv * (int32_t)src[ow * SW];     \
            }                                                                                  \
          for (int64_t ow = 0; ow < OW; ++ow)                                                  \
            yc[oh * OW + ow] = (YT)byoc_q_requant_(acc[ow], m, lo, hi, yzp);                   \
        }                                                                                      \
      }                                                                                        \
  }

/*
 * dense / matmul with a constant right operand: x (M, K) of XT, w int16 (N, Kp) centred,
 * y (M, N). Scratch: TP * Kp int16 (packed rows) then N * TP int32.
 */
#define BYOC_DEFINE_QDENSE(NAME, XT, YT)                                                        \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, const int16_t* w, const int32_t* bias,      \
                                     const float* mult, YT* y, float* scratch, int64_t M,      \
                                     int64_t N, int64_t K, int64_t Kp, int64_t TP, int32_t xzp, \
                                     int32_t yzp, float lo, float hi) {                        \
    int16_t* rows = (int16_t*)scratch;                                                         \
    int32_t* acc = (int32_t*)(rows + TP * Kp);                                                 \
    const int level = byoc_qgemm_level();                                                      \
    for (int64_t m0 = 0; m0 < M; m0 += TP) {                                                   \
      const int64_t tp = M - m0 < TP ? M - m0 : TP;                                            \
      for (int64_t t = 0; t < tp; ++t) {                                                       \
        const XT* xr = x + (m0 + t) * K;                                                       \
        int16_t* r = rows + t * Kp;                                                            \
        int64_t k = 0;                                                                         \
        for (; k < K; ++k) r[k] = (int16_t)((int32_t)xr[k] - xzp);                             \
        for (; k < Kp; ++k) r[k] = 0;                                                          \
      }                                                                                        \
      byoc_qgemm_(w, rows, acc, N, tp, Kp, tp, level);                                         \
      for (int64_t t = 0; t < tp; ++t) {                                                       \
        YT* yr = y + (m0 + t) * N;                                                             \
        for (int64_t o = 0; o < N; ++o)                                                        \
          yr[o] = (YT)byoc_q_requant_(acc[o * tp + t] + bias[o], mult[o], lo, hi, yzp);        \
      }                                                                                        \
    }                                                                                          \
  }

/* quantize / dequantize, per tensor or per axis: channel of element i = (i / inner) % CH. */
#define BYOC_DEFINE_QUANTIZE(NAME, YT, QMIN, QMAX)                                              \
  static BYOC_MAYBE_UNUSED void NAME(const float* x, const float* scale, const YT* zp, YT* y,  \
                                     int64_t n, int64_t inner, int64_t CH) {                   \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      const int64_t c = (i / inner) % CH;                                                      \
      const float z = (float)zp[c];                                                            \
      float v = x[i] / scale[c];                                                               \
      v = v < (float)(QMIN) - z ? (float)(QMIN) - z : v;                                       \
      v = v > (float)(QMAX) - z ? (float)(QMAX) - z : v;                                       \
      y[i] = (YT)((int32_t)nearbyintf(v != v ? 0.0f : v) + (int32_t)zp[c]);                    \
    }                                                                                          \
  }

#define BYOC_DEFINE_DEQUANTIZE(NAME, XT)                                                        \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, const float* scale, const XT* zp, float* y,  \
                                     int64_t n, int64_t inner, int64_t CH) {                   \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      const int64_t c = (i / inner) % CH;                                                      \
      y[i] = (float)((int32_t)x[i] - (int32_t)zp[c]) * scale[c];                               \
    }                                                                                          \
  }

BYOC_DEFINE_QCONV2D(byoc_qconv2d_u8_u8, uint8_t, uint8_t)
BYOC_DEFINE_QCONV2D(byoc_qconv2d_u8_i8, uint8_t, int8_t)
BYOC_DEFINE_QCONV2D(byoc_qconv2d_i8_u8, int8_t, uint8_t)
BYOC_DEFINE_QCONV2D(byoc_qconv2d_i8_i8, int8_t, int8_t)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_u8_u8, uint8_t, uint8_t)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_u8_i8, uint8_t, int8_t)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_i8_u8, int8_t, uint8_t)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_i8_i8, int8_t, int8_t)
BYOC_DEFINE_QDENSE(byoc_qdense_u8_u8, uint8_t, uint8_t)
BYOC_DEFINE_QDENSE(byoc_qdense_u8_i8, uint8_t, int8_t)
BYOC_DEFINE_QDENSE(byoc_qdense_i8_u8, int8_t, uint8_t)
BYOC_DEFINE_QDENSE(byoc_qdense_i8_i8, int8_t, int8_t)
BYOC_DEFINE_QUANTIZE(byoc_quantize_u8, uint8_t, 0, 255)
BYOC_DEFINE_QUANTIZE(byoc_quantize_i8, int8_t, -128, 127)
BYOC_DEFINE_DEQUANTIZE(byoc_dequantize_u8, uint8_t)
BYOC_DEFINE_DEQUANTIZE(byoc_dequantize_i8, int8_t)

#endif /* BYOC_QKERNELS_H_ */
