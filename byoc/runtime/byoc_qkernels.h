/*
 * byoc_qkernels.h — int8 kernels of the quantized (QDQ) composites of the ccompiler target
 * (issue #13; lowering in byoc/lowering/nn_to_c/quant.py, docs/quantization.md).
 *
 * Every product and sum is exact integer arithmetic: the weights arrive centred and widened
 * (int16 w - w_zp, laid out [O][Kp], Kp = K rounded up to 16, zero-padded; also as int8 with
 * their row sums when they fit), the activations are packed per block of pixels, and the dot
 * products accumulate in int32. The GEMM paths — baseline C and AVX2 (vpmaddwd) on the int16
 * form, AVX-512 VNNI (vpdpbusd on 512-bit vectors) on the u8 x s8 form, corrected by
 * x_zp * sum(w) — therefore give identical integers; the path is chosen at run time
 * (__builtin_cpu_supports), and -DBYOC_BASELINE_ONLY (BYOC_CPU_DISPATCH=baseline) keeps the
 * baseline. vpmaddubsw is never used (it saturates int16 pair sums).
 *
 * The only floating point is the requantization of each accumulator, done as onnxruntime's
 * MLAS does it (MlasRequantizeOutput): v = (float)(acc + bias) * mult, clamped to
 * [lo, hi] (the output type's range minus the zero point, raised to 0 by a fused ReLU),
 * rounded half to even (byoc_q_round_), plus the output zero point. The fused elementwise,
 * pooling and concatenation kernels at the end (qlut, qadd, qmaxpool) give the integers of
 * their float QDQ blocks; why each is exact is in byoc/targets/qdq.py.
 */
#ifndef BYOC_QKERNELS_H_
#define BYOC_QKERNELS_H_

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byoc_runtime.h"

#if defined(__SSE2__)
#include <emmintrin.h> /* part of the x86-64 baseline */
#endif

#ifndef BYOC_MAYBE_UNUSED
#define BYOC_MAYBE_UNUSED __attribute__((unused))
#endif

#if defined(__x86_64__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>
#define BYOC_Q_AVX2 __attribute__((target("avx2")))
#define BYOC_Q_VNNI __attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512vnni")))
#endif
#endif

/* K is packed in blocks of this many int16 (one 256-bit vector). */
#define BYOC_QK 16

/*
 * Threads. Run CALL for t in [0, nt) across nt threads of the OpenMP team (byoc_runtime.h's
 * BYOC_PARALLEL_FOR, static schedule); with nt <= 1 run it once on the caller, entering no
 * region at all (the BYOC_SPLIT_ pattern of byoc_kernels.h). Every kernel splits over outputs
 * (conv2d tiles of pixels, planes, elements), and each output is computed by the same code
 * whatever thread runs it, so the integers are identical at any thread count.
 */
#define BYOC_Q_SPLIT_(nt, t, CALL)                                 \
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
#define BYOC_Q_GEMM_GRAIN ((int64_t)1 << 20) /* multiply-adds per thread, at least */
#define BYOC_Q_EW_GRAIN 32768                /* elements per thread, at least */
#define BYOC_Q_MAX_THREADS 64                /* threads a conv2d shares its tiles among, at most */

/* Integer kernels the compiler vectorises itself are also compiled for AVX2 and picked at
 * load time (as byoc_kernels.h's BYOC_CLONES): integer arithmetic, so identical results. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target_clones) && !defined(__SANITIZE_ADDRESS__)
#define BYOC_Q_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef BYOC_Q_CLONES
#define BYOC_Q_CLONES
#endif

/*
 * Round half to even of a float already clamped to |v| < 2^22: adding and subtracting
 * 1.5 * 2^23 rounds in the FPU's default mode (nearest even) — what nearbyintf does, without
 * its call and its saving of the floating-point environment (10+ ns an element).
 */
static inline float byoc_q_round_(float v) {
  return (v + 12582912.0f) - 12582912.0f;
}

static inline int32_t byoc_q_requant_(int32_t acc, float mult, float lo, float hi, int32_t zp) {
  float v = (float)acc * mult;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return (int32_t)byoc_q_round_(v) + zp;
}

/* ---- the int16 GEMM ------------------------------------------------------------------------
 * C[o * ldc + p] = sum_k A[o * Kp + k] * B[(k / 2) * 2 * PP + 2 * p + k % 2]: A holds the weights
 * row by row, B the packed activations with each pixel's k pairs interleaved (PP pixels, a
 * multiple of 16, the pad columns zero), so that one vpmaddwd of a broadcast weight pair and
 * 8 pixels' pairs adds 8 pixels' partial sums — no horizontal sums.
 */
static void byoc_qgemm_base_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M, int64_t PP,
                             int64_t Kp, int64_t ldc) {
  for (int64_t o = 0; o < M; ++o) {
    int32_t* c = C + o * ldc;
    for (int64_t p = 0; p < PP; ++p) c[p] = 0;
    for (int64_t k = 0; k < Kp; k += 2) {
      const int32_t a0 = A[o * Kp + k], a1 = A[o * Kp + k + 1];
      const int16_t* b = B + k * PP;
      for (int64_t p = 0; p < PP; ++p) c[p] += a0 * (int32_t)b[2 * p] + a1 * (int32_t)b[2 * p + 1];
    }
  }
}

#ifdef BYOC_Q_AVX2
/* 4 output channels x 16 pixels per tile; MADD(acc, a, b) adds the pairwise products. */
#define BYOC_QGEMM_BODY(MADD)                                                                   \
  for (int64_t o = 0; o + 4 <= M; o += 4) {                                                    \
    const int32_t* a0 = (const int32_t*)(A + o * Kp);                                          \
    const int64_t ka = Kp / 2;                                                                 \
    for (int64_t p = 0; p < PP; p += 16) {                                                     \
      __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00,        \
              c21 = c00, c30 = c00, c31 = c00;                                                 \
      const int16_t* b = B + 2 * p;                                                            \
      for (int64_t k = 0; k < ka; ++k, b += 2 * PP) {                                          \
        const __m256i x0 = _mm256_loadu_si256((const __m256i*)b);                              \
        const __m256i x1 = _mm256_loadu_si256((const __m256i*)(b + 16));                       \
        __m256i w = _mm256_set1_epi32(a0[k]);                                                  \
        c00 = MADD(c00, w, x0); c01 = MADD(c01, w, x1);                                        \
        w = _mm256_set1_epi32(a0[ka + k]);                                                     \
        c10 = MADD(c10, w, x0); c11 = MADD(c11, w, x1);                                        \
        w = _mm256_set1_epi32(a0[2 * ka + k]);                                                 \
        c20 = MADD(c20, w, x0); c21 = MADD(c21, w, x1);                                        \
        w = _mm256_set1_epi32(a0[3 * ka + k]);                                                 \
        c30 = MADD(c30, w, x0); c31 = MADD(c31, w, x1);                                        \
      }                                                                                        \
      int32_t* c = C + o * ldc + p;                                                            \
      _mm256_storeu_si256((__m256i*)c, c00); _mm256_storeu_si256((__m256i*)(c + 8), c01);      \
      c += ldc;                                                                                \
      _mm256_storeu_si256((__m256i*)c, c10); _mm256_storeu_si256((__m256i*)(c + 8), c11);      \
      c += ldc;                                                                                \
      _mm256_storeu_si256((__m256i*)c, c20); _mm256_storeu_si256((__m256i*)(c + 8), c21);      \
      c += ldc;                                                                                \
      _mm256_storeu_si256((__m256i*)c, c30); _mm256_storeu_si256((__m256i*)(c + 8), c31);      \
    }                                                                                          \
  }                                                                                            \
  for (int64_t r = M & ~(int64_t)3; r < M; ++r) {                                             \
    const int32_t* a0 = (const int32_t*)(A + r * Kp);                                          \
    for (int64_t p = 0; p < PP; p += 16) {                                                     \
      __m256i c0 = _mm256_setzero_si256(), c1 = c0;                                            \
      const int16_t* b = B + 2 * p;                                                            \
      for (int64_t k = 0; k < Kp / 2; ++k, b += 2 * PP) {                                      \
        const __m256i w = _mm256_set1_epi32(a0[k]);                                            \
        c0 = MADD(c0, w, _mm256_loadu_si256((const __m256i*)b));                               \
        c1 = MADD(c1, w, _mm256_loadu_si256((const __m256i*)(b + 16)));                        \
      }                                                                                        \
      _mm256_storeu_si256((__m256i*)(C + r * ldc + p), c0);                                    \
      _mm256_storeu_si256((__m256i*)(C + r * ldc + p + 8), c1);                                \
    }                                                                                          \
  }

#define BYOC_Q_MADD_AVX2(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
static BYOC_Q_AVX2 void byoc_qgemm_avx2_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M,
                                         int64_t PP, int64_t Kp, int64_t ldc) {
  BYOC_QGEMM_BODY(BYOC_Q_MADD_AVX2)
}

#define BYOC_Q_MADD_VNNI(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
static BYOC_Q_VNNI void byoc_qgemm_vnni_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M,
                                         int64_t PP, int64_t Kp, int64_t ldc) {
  BYOC_QGEMM_BODY(BYOC_Q_MADD_VNNI)
}
#endif

#ifdef BYOC_Q_AVX2
/*
 * The u8 x s8 form on AVX-512 VNNI (vpdpbusd on 512-bit vectors, 4 products a lane, exact in
 * int32): C[o * ldc + p] = sum_k W8[o * Kp + k] * U[(k / 4) * 4 * PP + 4 * p + k % 4], W8 the
 * centred weights as int8 (when they fit), U the activations offset to unsigned (x, or x + 128
 * for i8: x ^ 0x80) and not centred; the kernels subtract x_zp' * sum_k W8[o][k] afterwards, so
 * the integers are those of the int16 form. Tiles of 8 output channels x 32 pixels (16 zmm
 * accumulators); PP is a multiple of 32.
 */
#define BYOC_Q_VNNI512_TILE(R)                                                                  \
  {                                                                                            \
    __m512i acc0[R], acc1[R];                                                                  \
    _Pragma("GCC unroll 8") for (int r = 0; r < (R); ++r) acc0[r] = acc1[r] = _mm512_setzero_si512(); \
    const uint8_t* b = U + 4 * p;                                                              \
    for (int64_t k = 0; k < ka; ++k, b += 4 * PP) {                                            \
      const __m512i x0 = _mm512_loadu_si512((const void*)b);                                   \
      const __m512i x1 = _mm512_loadu_si512((const void*)(b + 64));                            \
      _Pragma("GCC unroll 8") for (int r = 0; r < (R); ++r) {                                  \
        const __m512i w = _mm512_set1_epi32(a0[r * ka + k]);                                   \
        acc0[r] = _mm512_dpbusd_epi32(acc0[r], x0, w);                                         \
        acc1[r] = _mm512_dpbusd_epi32(acc1[r], x1, w);                                         \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < (R); ++r) {                                    \
      _mm512_storeu_si512((void*)(C + (o + r) * ldc + p), acc0[r]);                            \
      _mm512_storeu_si512((void*)(C + (o + r) * ldc + p + 16), acc1[r]);                       \
    }                                                                                          \
  }
static BYOC_Q_VNNI void byoc_qgemm_u8_vnni_(const int8_t* W8, const uint8_t* U, int32_t* C,
                                            int64_t M, int64_t PP, int64_t Kp, int64_t ldc) {
  const int64_t ka = Kp / 4;
  int64_t o = 0;
  for (; o + 8 <= M; o += 8) {
    const int32_t* a0 = (const int32_t*)(W8 + o * Kp);
    for (int64_t p = 0; p < PP; p += 32) BYOC_Q_VNNI512_TILE(8)
  }
  for (; o + 4 <= M; o += 4) {
    const int32_t* a0 = (const int32_t*)(W8 + o * Kp);
    for (int64_t p = 0; p < PP; p += 32) BYOC_Q_VNNI512_TILE(4)
  }
  for (; o < M; ++o) {
    const int32_t* a0 = (const int32_t*)(W8 + o * Kp);
    for (int64_t p = 0; p < PP; p += 32) BYOC_Q_VNNI512_TILE(1)
  }
}

/*
 * The same GEMM with the requantization fused (a 1x1 stride-1 convolution without padding,
 * whose tile pixels are contiguous in y): each 8 x 32 tile is requantized in registers — the
 * float operations of byoc_q_requant_row512_ — and stored as bytes, y[o * ystride + p] for
 * p < tp (the tail masked). b: the corrected bias of each row, mult its multiplier. No int32
 * accumulators go through memory.
 */
#define BYOC_Q_VNNI512_RQ(A, r, col)                                                            \
  {                                                                                            \
    const int64_t left = tp - (p + (col));                                                     \
    if (left > 0) {                                                                            \
      const __mmask16 km = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);     \
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32((A), _mm512_set1_epi32(b[o + (r)]))), \
                               _mm512_set1_ps(mult[o + (r)]));                                 \
      v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);                                           \
      _mm_mask_storeu_epi8(y + (o + (r)) * ystride + p + (col), km,                            \
                           _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), vz))); \
    }                                                                                          \
  }
#define BYOC_Q_VNNI512_TILE_RQ(R)                                                               \
  {                                                                                            \
    __m512i acc0[R], acc1[R];                                                                  \
    _Pragma("GCC unroll 8") for (int r = 0; r < (R); ++r) acc0[r] = acc1[r] = _mm512_setzero_si512(); \
    const uint8_t* bp = U + 4 * p;                                                             \
    for (int64_t k = 0; k < ka; ++k, bp += 4 * PP) {                                           \
      const __m512i x0 = _mm512_loadu_si512((const void*)bp);                                  \
      const __m512i x1 = _mm512_loadu_si512((const void*)(bp + 64));                           \
      _Pragma("GCC unroll 8") for (int r = 0; r < (R); ++r) {                                  \
        const __m512i w = _mm512_set1_epi32(a0[r * ka + k]);                                   \
        acc0[r] = _mm512_dpbusd_epi32(acc0[r], x0, w);                                         \
        acc1[r] = _mm512_dpbusd_epi32(acc1[r], x1, w);                                         \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < (R); ++r) {                                    \
      BYOC_Q_VNNI512_RQ(acc0[r], r, 0)                                                         \
      BYOC_Q_VNNI512_RQ(acc1[r], r, 16)                                                        \
    }                                                                                          \
  }
static BYOC_Q_VNNI void byoc_qgemm_u8_vnni_rq_(const int8_t* W8, const uint8_t* U, int64_t M,
                                               int64_t PP, int64_t Kp, int64_t tp, const int32_t* b,
                                               const float* mult, float lo, float hi, int32_t zp,
                                               uint8_t* y, int64_t ystride) {
  const int64_t ka = Kp / 4;
  const __m512i vz = _mm512_set1_epi32(zp);
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  int64_t o = 0;
  for (; o + 8 <= M; o += 8) {
    const int32_t* a0 = (const int32_t*)(W8 + o * Kp);
    for (int64_t p = 0; p < PP; p += 32) BYOC_Q_VNNI512_TILE_RQ(8)
  }
  for (; o + 4 <= M; o += 4) {
    const int32_t* a0 = (const int32_t*)(W8 + o * Kp);
    for (int64_t p = 0; p < PP; p += 32) BYOC_Q_VNNI512_TILE_RQ(4)
  }
  for (; o < M; ++o) {
    const int32_t* a0 = (const int32_t*)(W8 + o * Kp);
    for (int64_t p = 0; p < PP; p += 32) BYOC_Q_VNNI512_TILE_RQ(1)
  }
}

/* dst[4 p + r] = rows[r * pp + p] ^ flip (r < 4, p < pp, pp a multiple of 16): four im2col rows
 * interleaved into vpdpbusd's layout, i8 turned into u8 (x + 128 = x ^ 0x80). */
static BYOC_Q_VNNI void byoc_q_interleave4_(const uint8_t* rows, int64_t pp, uint8_t flip, uint8_t* dst) {
  const __m128i f = _mm_set1_epi8((char)flip);
  for (int64_t p = 0; p < pp; p += 16) {
    const __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(rows + p)), f);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(rows + pp + p)), f);
    const __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(rows + 2 * pp + p)), f);
    const __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(rows + 3 * pp + p)), f);
    const __m128i ablo = _mm_unpacklo_epi8(a, b), abhi = _mm_unpackhi_epi8(a, b);
    const __m128i cdlo = _mm_unpacklo_epi8(c, d), cdhi = _mm_unpackhi_epi8(c, d);
    uint8_t* o = dst + 4 * p;
    _mm_storeu_si128((__m128i*)o, _mm_unpacklo_epi16(ablo, cdlo));
    _mm_storeu_si128((__m128i*)(o + 16), _mm_unpackhi_epi16(ablo, cdlo));
    _mm_storeu_si128((__m128i*)(o + 32), _mm_unpacklo_epi16(abhi, cdhi));
    _mm_storeu_si128((__m128i*)(o + 48), _mm_unpackhi_epi16(abhi, cdhi));
  }
}

/* The same from four row pointers (the implicit-GEMM packing of stride-1 convolutions): dst[4 p
 * + r] = r_r[p] ^ flip for p < nv, 0 for nv <= p < pp (columns never stored). Reads r_r[p]
 * for p < nv only. */
static BYOC_Q_VNNI void byoc_q_interleave4p_(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2,
                                             const uint8_t* r3, int64_t nv, int64_t pp, uint8_t flip,
                                             uint8_t* dst) {
  const __m128i f = _mm_set1_epi8((char)flip);
  int64_t p = 0;
  for (; p + 16 <= nv; p += 16) {
    const __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(r0 + p)), f);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(r1 + p)), f);
    const __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(r2 + p)), f);
    const __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(r3 + p)), f);
    const __m128i ablo = _mm_unpacklo_epi8(a, b), abhi = _mm_unpackhi_epi8(a, b);
    const __m128i cdlo = _mm_unpacklo_epi8(c, d), cdhi = _mm_unpackhi_epi8(c, d);
    uint8_t* o = dst + 4 * p;
    _mm_storeu_si128((__m128i*)o, _mm_unpacklo_epi16(ablo, cdlo));
    _mm_storeu_si128((__m128i*)(o + 16), _mm_unpackhi_epi16(ablo, cdlo));
    _mm_storeu_si128((__m128i*)(o + 32), _mm_unpacklo_epi16(abhi, cdhi));
    _mm_storeu_si128((__m128i*)(o + 48), _mm_unpackhi_epi16(abhi, cdhi));
  }
  for (; p < nv; ++p) {
    dst[4 * p] = r0[p] ^ flip;
    dst[4 * p + 1] = r1[p] ^ flip;
    dst[4 * p + 2] = r2[p] ^ flip;
    dst[4 * p + 3] = r3[p] ^ flip;
  }
  if (pp > nv) memset(dst + 4 * nv, 0, (size_t)(4 * (pp - nv)));
}

/* Requantization of n accumulators into bytes with AVX-512 (16 a step, the tail masked): the
 * same float operations as byoc_q_requant_ (cvtps rounds half to even in the default mode); the
 * clamped value plus the zero point fits the output type, so vpmovdb's truncation is exact for
 * u8 and i8 alike. */
static BYOC_Q_VNNI void byoc_q_requant_row512_(const int32_t* acc, int64_t n, int32_t bias, float m,
                                               float lo, float hi, int32_t zp, uint8_t* y) {
  const __m512i vb = _mm512_set1_epi32(bias), vz = _mm512_set1_epi32(zp);
  const __m512 vm = _mm512_set1_ps(m), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    const __m512i a = _mm512_add_epi32(_mm512_maskz_loadu_epi32(k, acc + i), vb);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), vm);
    v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
    const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
    _mm_mask_storeu_epi8(y + i, k, _mm512_cvtepi32_epi8(r));
  }
}

/* One im2col row of bytes: dst[t] = x byte of output pixel p0 + t at tap (c, i, j), or the
 * raw zero-point byte `pad` outside the input; t < tp, then pad up to pp. */
static void byoc_q_im2col_row_(const uint8_t* xc, uint8_t pad, uint8_t* dst, int64_t H, int64_t W,
                               int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                               int64_t i, int64_t j, int64_t DH, int64_t DW, int64_t p0, int64_t tp,
                               int64_t pp) {
  int64_t t = 0, oh = p0 / OW, ow = p0 % OW;
  while (t < tp) {
    const int64_t run = OW - ow < tp - t ? OW - ow : tp - t;
    const int64_t ih = oh * SH - PT + i * DH;
    uint8_t* d = dst + t;
    if (ih < 0 || ih >= H) {
      memset(d, pad, (size_t)run);
    } else {
      const uint8_t* row = xc + ih * W;
      const int64_t base = ow * SW - PL + j * DW; /* iw of the run's first pixel */
      if (SW == 1) {
        int64_t r0 = base < 0 ? -base : 0, r1 = W - base;
        r0 = r0 < run ? r0 : run;
        r1 = r1 < run ? r1 : run;
        r1 = r1 > r0 ? r1 : r0;
        memset(d, pad, (size_t)r0);
        memcpy(d + r0, row + base + r0, (size_t)(r1 - r0));
        memset(d + r1, pad, (size_t)(run - r1));
      } else {
        for (int64_t r = 0; r < run; ++r) {
          const int64_t iw = base + r * SW;
          d[r] = iw >= 0 && iw < W ? row[iw] : pad;
        }
      }
    }
    t += run;
    ow = 0;
    ++oh;
  }
  memset(dst + tp, pad, (size_t)(pp - tp));
}

/* The packed block U (Kp / 4 groups of 4 * pp bytes) of pixels [p0, p0 + tp) of one group;
 * `rows` holds 4 * pp bytes of scratch. */
static void byoc_q_pack_u8_(const uint8_t* xg, uint8_t pad, uint8_t flip, uint8_t* U, uint8_t* rows,
                            int64_t CG, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OW,
                            int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW,
                            int64_t p0, int64_t tp, int64_t pp, int64_t Kp) {
  const int64_t K = CG * KH * KW;
  for (int64_t kq = 0; kq < Kp / 4; ++kq) {
    for (int64_t r = 0; r < 4; ++r) {
      const int64_t k = 4 * kq + r;
      if (k >= K) {
        memset(rows + r * pp, pad, (size_t)pp);
        continue;
      }
      const int64_t c = k / (KH * KW), i = (k / KW) % KH, j = k % KW;
      byoc_q_im2col_row_(xg + c * H * W, pad, rows + r * pp, H, W, OW, SH, SW, PT, PL, i, j, DH, DW,
                         p0, tp, pp);
    }
    byoc_q_interleave4_(rows, pp, flip, U + kq * 4 * pp);
  }
}
#endif

#ifdef BYOC_Q_AVX2
/*
 * A convolution as an implicit GEMM (AVX-512 VNNI, the u8 x s8 form). The padded input is
 * split into SH x SW phase planes per channel: phase (a, b) holds the padded bytes at rows
 * r * SH + a and columns q * SW + b, HV = OH + (KH - 1) * DH / SH rows of WV = OW + (KW - 1) *
 * DW / SW bytes (the zero point outside x). Over the "virtual" pixels v = oh * WV + ow, tap
 * (c, i, j) reads phase ((i DH) % SH, (j DW) % SW) of channel c at offset
 * (i DH / SH) * WV + j DW / SW + v: each packed row is a contiguous slice, no im2col copy.
 * The WV - OW columns past each output row are computed and never stored. xp holds the
 * phase planes of every image and channel, with WV + 32 readable bytes after the last; or x itself
 * for a 1x1 stride-1 convolution without padding (WV == OW, HV == OH, nothing past the end
 * read). Tile `it` (image n, group g, virtual pixels [p0, p0 + TP)) with this thread's scratch
 * (U, then the accumulators).
 */
static void byoc_qconv2d_vtile_(const uint8_t* xp, int64_t HP, int64_t WV, int64_t SH, int64_t SW,
                                const int8_t* w8,
                                const int32_t* wsum, const int32_t* bias, const float* mult,
                                uint8_t* y, float* scratch, int64_t C, int64_t O, int64_t G,
                                int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t DH,
                                int64_t DW, int64_t Kp, int64_t TP, int32_t xzu, int32_t yzp,
                                float lo, float hi, uint8_t flip, int64_t it) {
  const int64_t CG = C / G, OG = O / G, PV = OH * WV, TT = (PV + TP - 1) / TP;
  const int64_t n = it / (G * TT), g = (it / TT) % G, p0 = (it % TT) * TP;
  const int64_t tp = PV - p0 < TP ? PV - p0 : TP, pp = (tp + 31) & ~(int64_t)31;
  uint8_t* u = (uint8_t*)scratch;
  int32_t* acc = (int32_t*)(u + 2 * Kp * ((TP + 31) & ~(int64_t)31));
  const uint8_t* xg = xp + (n * C + g * CG) * SH * SW * HP * WV + p0;
  const int64_t K = CG * KH * KW, plane = HP * WV;
  /* tap k = (c, i, j) in (c, kh, kw) order, walked without divisions: i * DH = iq * SH + ip,
   * j * DW = jq * SW + jp */
  int64_t c = 0, i = 0, j = 0, ip = 0, iq = 0, jp = 0, jq = 0;
  for (int64_t kq = 0; kq < Kp / 4; ++kq) {
    const uint8_t* r[4];
    for (int64_t q = 0; q < 4; ++q) {
      if (4 * kq + q >= K) { /* past K the weights are 0: any readable row */
        r[q] = xg;
        continue;
      }
      r[q] = xg + ((c * SH + ip) * SW + jp) * plane + iq * WV + jq;
      if (++j < KW) {
        for (jp += DW; jp >= SW; jp -= SW) ++jq;
        continue;
      }
      j = jp = jq = 0;
      if (++i < KH) {
        for (ip += DH; ip >= SH; ip -= SH) ++iq;
        continue;
      }
      i = ip = iq = 0;
      ++c;
    }
    byoc_q_interleave4p_(r[0], r[1], r[2], r[3], tp, pp, flip, u + kq * 4 * pp);
  }
  if (WV == OW) { /* pixels contiguous in y: requantize in the GEMM's registers */
    for (int64_t o = 0; o < OG; ++o) {
      const int64_t oc = g * OG + o;
      acc[o] = (int32_t)((uint32_t)bias[oc] - (uint32_t)xzu * (uint32_t)wsum[oc]);
    }
    byoc_qgemm_u8_vnni_rq_(w8 + g * OG * Kp, u, OG, pp, Kp, tp, acc, mult + g * OG, lo, hi, yzp,
                           y + (n * O + g * OG) * OH * OW + p0, OH * OW);
    return;
  }
  byoc_qgemm_u8_vnni_(w8 + g * OG * Kp, u, acc, OG, pp, Kp, pp);
  for (int64_t o = 0; o < OG; ++o) {
    const int64_t oc = g * OG + o;
    /* the sums are not centred: take x_zp' * sum(w8) off (mod 2^32, as i32 wraps) */
    const int32_t b = (int32_t)((uint32_t)bias[oc] - (uint32_t)xzu * (uint32_t)wsum[oc]);
    const int32_t* a = acc + o * pp;
    uint8_t* yo = y + (n * O + oc) * OH * OW;
    if (WV == OW) {
      byoc_q_requant_row512_(a, tp, b, mult[oc], lo, hi, yzp, yo + p0);
      continue;
    }
    for (int64_t v = p0; v < p0 + tp;) {
      const int64_t oh = v / WV, ow = v - oh * WV;
      const int64_t end = (oh + 1) * WV < p0 + tp ? (oh + 1) * WV : p0 + tp;
      if (ow < OW) {
        const int64_t e = oh * WV + OW < end ? oh * WV + OW : end;
        byoc_q_requant_row512_(a + (v - p0), e - v, b, mult[oc], lo, hi, yzp, yo + oh * OW + ow);
      }
      v = end;
    }
  }
}

#define BYOC_Q_ROWBUF 4096 /* padded row bytes of the vectorised stride-2 split */
static inline size_t byoc_q_nz_(int64_t v) { return v > 0 ? (size_t)v : 0; }
/* d[t] = row[t - PL] for 0 <= t - PL < W, else pad, t < n (sizes clamped at 0). */
static void byoc_q_pad_row_(uint8_t* d, const uint8_t* row, uint8_t pad, int64_t n, int64_t PL, int64_t W) {
  const int64_t l = PL < 0 ? 0 : PL < n ? PL : n;
  const int64_t c = W < n - l ? W : n - l;
  memset(d, pad, byoc_q_nz_(l));
  if (c > 0) memcpy(d + l, row, (size_t)c);
  const int64_t e = l + (c > 0 ? c : 0);
  memset(d + e, pad, byoc_q_nz_(n - e));
}
/* The phase planes of x for byoc_qconv2d_vtile_ (per image and channel SH x SW planes of HP x
 * WV bytes, then WV + 32 bytes); the phases no tap reads are left as they are. */
static void byoc_q_pad_planes_(const uint8_t* x, uint8_t pad, uint8_t* xp, int64_t NC, int64_t H,
                               int64_t W, int64_t HP, int64_t WV, int64_t SH, int64_t SW, int64_t KH,
                               int64_t KW, int64_t DH, int64_t DW, int64_t PT, int64_t PL) {
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t ph = 0; ph < SH * SW; ++ph) {
      const int64_t a = ph / SW, b = ph % SW;
      int used_a = 0, used_b = 0;
      for (int64_t i = 0; i < KH; ++i) used_a |= (i * DH) % SH == a;
      for (int64_t j = 0; j < KW; ++j) used_b |= (j * DW) % SW == b;
      if (!used_a || !used_b) continue;
      for (int64_t r = 0; r < HP; ++r) {
        uint8_t* d = xp + ((nc * SH * SW + ph) * HP + r) * WV;
        const int64_t ih = r * SH + a - PT;
        if (ih < 0 || ih >= H) {
          memset(d, pad, byoc_q_nz_(WV));
          continue;
        }
        const uint8_t* row = x + (nc * H + ih) * W;
        if (SW == 1) {
          byoc_q_pad_row_(d, row, pad, WV, PL, W);
          continue;
        }
        if (SW == 2 && 2 * WV + 2 <= BYOC_Q_ROWBUF) {
          /* the padded row, then its bytes of parity b: 16 a step (mask or shift, packus) */
          uint8_t t[BYOC_Q_ROWBUF + 32];
          byoc_q_pad_row_(t, row, pad, 2 * WV + 2, PL, W);
          memset(t + 2 * WV + 2, pad, 32);
          int64_t q = 0;
#if defined(__SSE2__)
          /* the last step may write up to 15 bytes past the row: into the next row or plane,
           * written after this one, or the slack after the last plane */
          const __m128i lo8 = _mm_set1_epi16(0x00FF);
          for (; q < WV; q += 16) {
            __m128i v0 = _mm_loadu_si128((const __m128i*)(t + 2 * q));
            __m128i v1 = _mm_loadu_si128((const __m128i*)(t + 2 * q + 16));
            v0 = b ? _mm_srli_epi16(v0, 8) : _mm_and_si128(v0, lo8);
            v1 = b ? _mm_srli_epi16(v1, 8) : _mm_and_si128(v1, lo8);
            _mm_storeu_si128((__m128i*)(d + q), _mm_packus_epi16(v0, v1));
          }
#endif
          for (; q < WV; ++q) d[q] = t[2 * q + b];
          continue;
        }
        for (int64_t q = 0; q < WV; ++q) {
          const int64_t iw = q * SW + b - PL;
          d[q] = iw >= 0 && iw < W ? row[iw] : pad;
        }
      }
    }
  memset(xp + NC * SH * SW * HP * WV, pad, (size_t)(WV + 32));
}
#endif

#ifdef BYOC_Q_AVX2
/* acc[o] = sum_k (xr[k] ^ flip) * w8[o * Kp + k] for o < N (AVX-512 VNNI, one row of a dense
 * layer): four weight rows a step share each 64-byte load of the row, the K tail masked (the
 * masked weights are 0). The sums are not centred, as in the conv2d's u8 x s8 form. */
static BYOC_Q_VNNI void byoc_q_dot_u8_vnni_(const uint8_t* xr, uint8_t flip, const int8_t* w8,
                                            int64_t N, int64_t K, int64_t Kp, int32_t* acc) {
  const __m512i f = _mm512_set1_epi8((char)flip);
  for (int64_t o = 0; o < N; o += 4) {
    const int64_t nr = N - o < 4 ? N - o : 4;
    const int8_t* w0 = w8 + o * Kp;
    const int8_t* w1 = nr > 1 ? w0 + Kp : w0;
    const int8_t* w2 = nr > 2 ? w0 + 2 * Kp : w0;
    const int8_t* w3 = nr > 3 ? w0 + 3 * Kp : w0;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < K; k += 64) {
      const __mmask64 m = K - k >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (K - k)) - 1);
      const __m512i xv = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, xr + k), f);
      a0 = _mm512_dpbusd_epi32(a0, xv, _mm512_maskz_loadu_epi8(m, w0 + k));
      a1 = _mm512_dpbusd_epi32(a1, xv, _mm512_maskz_loadu_epi8(m, w1 + k));
      a2 = _mm512_dpbusd_epi32(a2, xv, _mm512_maskz_loadu_epi8(m, w2 + k));
      a3 = _mm512_dpbusd_epi32(a3, xv, _mm512_maskz_loadu_epi8(m, w3 + k));
    }
    acc[o] = _mm512_reduce_add_epi32(a0);
    if (nr > 1) acc[o + 1] = _mm512_reduce_add_epi32(a1);
    if (nr > 2) acc[o + 2] = _mm512_reduce_add_epi32(a2);
    if (nr > 3) acc[o + 3] = _mm512_reduce_add_epi32(a3);
  }
}
#define BYOC_Q_DOT8(...) byoc_q_dot_u8_vnni_(__VA_ARGS__)
#else
#define BYOC_Q_DOT8(...) ((void)0)
#endif

#ifdef BYOC_Q_AVX2
#define BYOC_Q_USE8(level, use8) ((level) == 2 && (use8))
#define BYOC_Q_GEMM8(W8, U, C, M, PP, Kp, ldc) byoc_qgemm_u8_vnni_(W8, U, C, M, PP, Kp, ldc)
#define BYOC_Q_PACK8(...) byoc_q_pack_u8_(__VA_ARGS__)
#define BYOC_Q_VTILE(...) byoc_qconv2d_vtile_(__VA_ARGS__)
#define BYOC_Q_PAD_PLANES(...) byoc_q_pad_planes_(__VA_ARGS__)
#else
#define BYOC_Q_USE8(level, use8) ((void)(use8), 0)
#define BYOC_Q_GEMM8(W8, U, C, M, PP, Kp, ldc) ((void)(W8), (void)(U))
#define BYOC_Q_PACK8(...) ((void)0)
#define BYOC_Q_VTILE(...) ((void)0)
#define BYOC_Q_PAD_PLANES(...) ((void)0)
#endif

/* 0: baseline, 1: AVX2, 2: AVX-512 VNNI — what byoc_qgemm_ runs on this CPU. */
static BYOC_MAYBE_UNUSED int byoc_qgemm_level(void) {
#ifdef BYOC_Q_AVX2
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw"))
    return 2;
  if (__builtin_cpu_supports("avx2")) return 1;
#endif
  return 0;
}

static void byoc_qgemm_(const int16_t* A, const int16_t* B, int32_t* C, int64_t M, int64_t PP,
                        int64_t Kp, int64_t ldc, int level) {
#ifdef BYOC_Q_AVX2
  if (level == 2) {
    byoc_qgemm_vnni_(A, B, C, M, PP, Kp, ldc);
    return;
  }
  if (level == 1) {
    byoc_qgemm_avx2_(A, B, C, M, PP, Kp, ldc);
    return;
  }
#endif
  (void)level;
  byoc_qgemm_base_(A, B, C, M, PP, Kp, ldc);
}

/* ---- requantization of a row of accumulators (vectorised where AVX2 is) ----------------- */
#define BYOC_DEFINE_REQUANT_ROW(NAME, YT, PACK)                                                 \
  static void NAME##_base_(const int32_t* acc, int64_t n, int32_t bias, float m, float lo,     \
                           float hi, int32_t zp, YT* y) {                                      \
    for (int64_t i = 0; i < n; ++i) y[i] = (YT)byoc_q_requant_(acc[i] + bias, m, lo, hi, zp);  \
  }                                                                                            \
  BYOC_REQUANT_AVX2(NAME, YT, PACK)                                                            \
  static BYOC_MAYBE_UNUSED void NAME(const int32_t* acc, int64_t n, int32_t bias, float m,     \
                                     float lo, float hi, int32_t zp, YT* y, int level) {       \
    BYOC_REQUANT_DISPATCH(NAME)                                                                \
    (void)level;                                                                               \
    NAME##_base_(acc, n, bias, m, lo, hi, zp, y);                                              \
  }

#ifdef BYOC_Q_AVX2
/* _mm256_cvtps_epi32 rounds half to even (the default MXCSR mode), as byoc_q_round_ does. */
#define BYOC_REQUANT_AVX2(NAME, YT, PACK)                                                       \
  static BYOC_Q_AVX2 void NAME##_avx2_(const int32_t* acc, int64_t n, int32_t bias, float m,   \
                                       float lo, float hi, int32_t zp, YT* y) {                \
    const __m256i vb = _mm256_set1_epi32(bias), vz = _mm256_set1_epi32(zp);                    \
    const __m256 vm = _mm256_set1_ps(m), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);   \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8) {                                                               \
      __m256i a = _mm256_add_epi32(_mm256_loadu_si256((const __m256i*)(acc + i)), vb);         \
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), vm);                                     \
      v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);                                           \
      __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), vz);                                 \
      __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));  \
      _mm_storel_epi64((__m128i*)(y + i), PACK(w, w));                                         \
    }                                                                                          \
    NAME##_base_(acc + i, n - i, bias, m, lo, hi, zp, y + i);                                  \
  }
#define BYOC_REQUANT_DISPATCH(NAME)                                                             \
  if (level > 0) {                                                                             \
    NAME##_avx2_(acc, n, bias, m, lo, hi, zp, y);                                              \
    return;                                                                                    \
  }
#else
#define BYOC_REQUANT_AVX2(NAME, YT, PACK)
#define BYOC_REQUANT_DISPATCH(NAME)
#endif

BYOC_DEFINE_REQUANT_ROW(byoc_q_requant_row_u8_, uint8_t, _mm_packus_epi16)
BYOC_DEFINE_REQUANT_ROW(byoc_q_requant_row_i8_, int8_t, _mm_packs_epi16)

/* ---- kernels, one per (activation type, output type) ------------------------------------- */

/* The first output channel of thread t's share of OG channels, in blocks of 8 (a GEMM tile). */
#define BYOC_Q_BLOCK0_(OG, t, nt)                                                              \
  ((((OG) + 7) / 8 * (int64_t)(t) / (nt)) * 8 < (OG) ? (((OG) + 7) / 8 * (int64_t)(t) / (nt)) * 8 : (OG))

/*
 * conv2d (NCHW, groups G): x (N, C, H, W) of XT, w int16 (O, Kp) centred, K = C/G*KH*KW in
 * (c, kh, kw) order; w8 the same as int8 and wsum its row sums when use8 (the centred weights
 * fit int8: then AVX-512 VNNI runs the u8 x s8 form); bias int32 (O); mult f32 (O);
 * y (N, O, OH, OW) of YT. TP: output pixels
 * per block; scratch: Kp * PP int16 (the packed block, PP = TP rounded up to 16) then
 * (O / G) * PP int32.
 */
#define BYOC_DEFINE_QCONV2D(NAME, XT, YT, ROW, XOFF)                                            \
  /* output channels [o0, o1) of group g of one packed block: GEMM, then requantization */     \
  static inline __attribute__((always_inline)) void NAME##_rows_(const int16_t* w, const int8_t* w8, const int32_t* wsum,            \
                           const int32_t* bias, const float* mult, YT* y, int32_t* acc,        \
                           const uint8_t* u, const int16_t* cols, int64_t n, int64_t g,        \
                           int64_t O, int64_t OG, int64_t P, int64_t p0, int64_t tp, int64_t pp, \
                           int64_t Kp, int32_t xzu, int32_t yzp, float lo, float hi, int level, \
                           int u8, int64_t o0, int64_t o1) {                                   \
    if (o1 <= o0) return;                                                                      \
    if (u8)                                                                                    \
      BYOC_Q_GEMM8(w8 + (g * OG + o0) * Kp, u, acc + o0 * pp, o1 - o0, pp, Kp, pp);            \
    else                                                                                       \
      byoc_qgemm_(w + (g * OG + o0) * Kp, cols, acc + o0 * pp, o1 - o0, pp, Kp, pp, level);    \
    for (int64_t o = o0; o < o1; ++o) {                                                        \
      const int64_t oc = g * OG + o;                                                           \
      /* the u8 form's sums are not centred: take x_zp' * sum(w8) off (mod 2^32, as i32 wraps) */ \
      const int32_t b = u8 ? (int32_t)((uint32_t)bias[oc] - (uint32_t)xzu * (uint32_t)wsum[oc]) : bias[oc]; \
      ROW(acc + o * pp, tp, b, mult[oc], lo, hi, yzp, y + (n * O + oc) * P + p0, level);         \
    }                                                                                          \
  }                                                                                            \
  /* tile `it` (image n, group g, pixels [p0, p0 + TP)) with this thread's scratch: packing,   \
   * GEMM, requantization */                                                                   \
  static void NAME##_tile_(                                                                    \
      const XT* x, const int16_t* w, const int8_t* w8, const int32_t* wsum, const int32_t* bias, \
      const float* mult, YT* y, float* scratch, int64_t C, int64_t H, int64_t W, int64_t O,    \
      int64_t G, int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t SH, int64_t SW,       \
      int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t Kp, int64_t TP, int32_t xzp,     \
      int32_t yzp, float lo, float hi, int32_t use8, int64_t it, int level) {                  \
    const int64_t CG = C / G, OG = O / G, P = OH * OW, TT = (P + TP - 1) / TP;                 \
    const int64_t n = it / (G * TT), g = (it / TT) % G, p0 = (it % TT) * TP;                   \
    int16_t* cols = (int16_t*)scratch;                                                         \
    int32_t* acc = (int32_t*)(cols + Kp * ((TP + 31) & ~(int64_t)31));                         \
    const int32_t off = (XOFF), xzu = xzp + off; /* i8 + 128 -> u8 for vpdpbusd */          \
    const XT* xg = x + (n * C + g * CG) * H * W;                                               \
    const int64_t tp = P - p0 < TP ? P - p0 : TP, pp = (tp + 31) & ~(int64_t)31;               \
    if (BYOC_Q_USE8(level, use8)) {                                                            \
      uint8_t* u = (uint8_t*)cols;                                                             \
      BYOC_Q_PACK8((const uint8_t*)xg, (uint8_t)xzp, (uint8_t)(off ? 0x80 : 0), u, u + Kp * pp, CG, H, W, KH, KW, OW, SH, SW, PT, PL, DH, DW, p0, tp, pp, Kp); \
      NAME##_rows_(w, w8, wsum, bias, mult, y, acc, u, cols, n, g, O, OG, P, p0, tp, pp, Kp, xzu, \
                   yzp, lo, hi, level, 1, 0, OG);                                              \
      return;                                                                                  \
    }                                                                                          \
    memset(cols, 0, (size_t)(Kp * pp) * sizeof(int16_t));                                     \
    int64_t k = 0;                                                                             \
    for (int64_t c = 0; c < CG; ++c)                                                           \
      for (int64_t i = 0; i < KH; ++i)                                                         \
        for (int64_t j = 0; j < KW; ++j, ++k) {                                                \
          int16_t* dst = cols + (k >> 1) * 2 * pp + (k & 1);                                   \
          int64_t t = 0, oh = p0 / OW, ow = p0 % OW;                                           \
          while (t < tp) {                                                                     \
            const int64_t run = OW - ow < tp - t ? OW - ow : tp - t;                           \
            const int64_t ih = oh * SH - PT + i * DH;                                          \
            if (ih >= 0 && ih < H) {                                                           \
              const XT* row = xg + (c * H + ih) * W;                                           \
              for (int64_t r = 0; r < run; ++r) {                                              \
                const int64_t iw = (ow + r) * SW - PL + j * DW;                                \
                if (iw >= 0 && iw < W) dst[2 * (t + r)] = (int16_t)((int32_t)row[iw] - xzp);   \
              }                                                                                \
            }                                                                                  \
            t += run;                                                                          \
            ow = 0;                                                                            \
            ++oh;                                                                              \
          }                                                                                    \
        }                                                                                      \
    NAME##_rows_(w, w8, wsum, bias, mult, y, acc, (const uint8_t*)cols, cols, n, g, O, OG, P, p0, \
                 tp, pp, Kp, xzu, yzp, lo, hi, level, 0, 0, OG);                               \
  }                                                                                            \
  /* The tiles are shared out round-robin, one OpenMP region a call: thread 0 uses `scratch`, \
   * the others a block of their own (a tile a thread fails to get one for is done after the  \
   * region, with `scratch`). Each tile is computed alike by any thread: identical integers. */ \
  static BYOC_MAYBE_UNUSED void NAME(                                                          \
      const XT* x, const int16_t* w, const int8_t* w8, const int32_t* wsum, const int32_t* bias, \
      const float* mult, YT* y, float* scratch, int64_t N, int64_t C, int64_t H, int64_t W,    \
      int64_t O, int64_t G, int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t SH,        \
      int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t Kp, int64_t TP,      \
      int32_t xzp, int32_t yzp, float lo, float hi, int32_t use8) {                            \
    const int level = byoc_qgemm_level();                                                      \
    const int64_t PPm = (TP + 31) & ~(int64_t)31; /* the scratch the lowering gives: */      \
    const size_t bytes = (size_t)(2 * Kp * PPm + 4 * (O / G) * PPm); /* cols, then acc */     \
    /* stride 1 on AVX-512 VNNI: the implicit GEMM over the padded planes (byoc_qconv2d_vtile_) */ \
    const int vmode = BYOC_Q_USE8(level, use8);                                                \
    const int64_t HPv = OH + (KH - 1) * DH / SH, WV = OW + (KW - 1) * DW / SW;                 \
    const int direct = KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT == 0 && PL == 0 && H == OH && W == OW; \
    const uint8_t* xp = (const uint8_t*)x;                                                     \
    if (vmode && !direct) {                                                                    \
      uint8_t* planes = (uint8_t*)scratch + ((bytes + 63) & ~(size_t)63);                      \
      BYOC_Q_PAD_PLANES((const uint8_t*)x, (uint8_t)xzp, planes, N * C, H, W, HPv, WV,         \
                        direct ? 1 : SH, direct ? 1 : SW, KH, KW, DH, DW, PT, PL);             \
      xp = planes;                                                                             \
    }                                                                                          \
    const int32_t xzu = xzp + (XOFF);                                                          \
    const uint8_t flip = (uint8_t)((XOFF) ? 0x80 : 0);                                         \
    const int64_t total = N * G * (((vmode ? OH * WV : OH * OW) + TP - 1) / TP);               \
    int32_t nt = byoc_threads_for(N * O * OH * OW * Kp, BYOC_Q_GEMM_GRAIN);                    \
    nt = nt < total ? nt : (int32_t)total;                                                     \
    nt = nt < BYOC_Q_MAX_THREADS ? nt : BYOC_Q_MAX_THREADS;                                    \
    (void)xp, (void)xzu, (void)flip, (void)HPv, (void)WV, (void)direct;                         \
    if (nt <= 1) {                                                                             \
      for (int64_t it = 0; it < total; ++it)                                                   \
        if (vmode)                                                                             \
          BYOC_Q_VTILE(xp, HPv, WV, SH, SW, w8, wsum, bias, mult, (uint8_t*)y, scratch, C, O, G, KH, KW, OH, \
                       OW, DH, DW, Kp, TP, xzu, yzp, lo, hi, flip, it);                        \
        else                                                                                   \
          NAME##_tile_(x, w, w8, wsum, bias, mult, y, scratch, C, H, W, O, G, KH, KW, OH, OW, SH, \
                       SW, PT, PL, DH, DW, Kp, TP, xzp, yzp, lo, hi, use8, it, level);         \
      return;                                                                                  \
    }                                                                                          \
    unsigned char ok[BYOC_Q_MAX_THREADS];                                                      \
    BYOC_PARALLEL_FOR(nt)                                                                      \
    for (int32_t t = 0; t < nt; ++t) {                                                         \
      float* s = t == 0 ? scratch : (float*)malloc(bytes);                                     \
      ok[t] = s != NULL;                                                                       \
      if (s != NULL) {                                                                         \
        for (int64_t it = t; it < total; it += nt)                                             \
          if (vmode)                                                                           \
            BYOC_Q_VTILE(xp, HPv, WV, SH, SW, w8, wsum, bias, mult, (uint8_t*)y, s, C, O, G, KH, KW, OH, \
                         OW, DH, DW, Kp, TP, xzu, yzp, lo, hi, flip, it);                      \
          else                                                                                 \
            NAME##_tile_(x, w, w8, wsum, bias, mult, y, s, C, H, W, O, G, KH, KW, OH, OW, SH, SW, \
                         PT, PL, DH, DW, Kp, TP, xzp, yzp, lo, hi, use8, it, level);           \
        if (t != 0) free(s);                                                                   \
      }                                                                                        \
    }                                                                                          \
    for (int32_t t = 1; t < nt; ++t) {                                                         \
      if (!ok[t]) {                                                                            \
        for (int64_t it = t; it < total; it += nt) {                                           \
          if (vmode)                                                                           \
            BYOC_Q_VTILE(xp, HPv, WV, SH, SW, w8, wsum, bias, mult, (uint8_t*)y, scratch, C, O, G, KH, KW, \
                         OH, OW, DH, DW, Kp, TP, xzu, yzp, lo, hi, flip, it);                  \
          else                                                                                 \
            NAME##_tile_(x, w, w8, wsum, bias, mult, y, scratch, C, H, W, O, G, KH, KW, OH, OW, \
                         SH, SW, PT, PL, DH, DW, Kp, TP, xzp, yzp, lo, hi, use8, it, level);   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

/*
 * Depthwise conv2d (G == C == O): w int16 (C, KH*KW) centred. Scratch: the centred, padded
 * plane (HP * WP int16) then OW int32. The taps of one output row accumulate across OW (the
 * inner loop vectorises when SW == 1).
 */
#ifdef BYOC_Q_AVX2
/* One output row of a stride-1 depthwise conv2d, 8 pixels a step: acc[ow] = sum over the taps
 * of w * plane value, exact (centred values and weights fit int16; each int32 lane of the
 * widened values times (w, 0) in vpmaddwd is x * w + sign-half * 0). Returns the pixels done. */
static BYOC_Q_AVX2 int64_t byoc_q_dw_row_avx2_(const int16_t* plane, int64_t WP, const int16_t* wc,
                                              int64_t KH, int64_t KW, int64_t DH, int64_t DW,
                                              int64_t r0, int32_t* acc, int64_t OW) {
  int64_t ow = 0;
  for (; ow + 8 <= OW; ow += 8) {
    __m256i a = _mm256_setzero_si256();
    for (int64_t i = 0; i < KH; ++i) {
      const int16_t* src = plane + (r0 + i * DH) * WP + ow;
      for (int64_t j = 0; j < KW; ++j) {
        const __m256i v = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i*)(src + j * DW)));
        const __m256i w = _mm256_set1_epi32((int32_t)(uint16_t)wc[i * KW + j]);
        a = _mm256_add_epi32(a, _mm256_madd_epi16(v, w));
      }
    }
    _mm256_storeu_si256((__m256i*)(acc + ow), a);
  }
  return ow;
}
#define BYOC_Q_DW_ROW(plane, WP, wc, KH, KW, DH, DW, r0, acc, OW) \
  byoc_q_dw_row_avx2_(plane, WP, wc, KH, KW, DH, DW, r0, acc, OW)
#else
#define BYOC_Q_DW_ROW(plane, WP, wc, KH, KW, DH, DW, r0, acc, OW) ((int64_t)0)
#endif

#ifdef BYOC_Q_AVX2
#define BYOC_Q_VNNI_VBMI __attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512vnni,avx512vbmi")))
/* Whether byoc_q_dw_plane_vbmi_ may run: AVX-512 VNNI (level 2) and VBMI. */
static BYOC_MAYBE_UNUSED int byoc_q_dw_vbmi_(int level) {
  return level == 2 && __builtin_cpu_supports("avx512vbmi");
}
/*
 * One plane of a depthwise conv2d with AVX-512 VNNI + VBMI, 16 output pixels a step: the u8
 * padded plane (x, or x ^ 0x80 for i8, the zero point's byte outside; not centred) is read
 * 64 bytes at a time and vpermb puts taps j0..j0+3 of pixel p in lane p's 4 bytes
 * (bytes p * SW + q * DW), so one vpdpbusd with the taps' int8 weights (0 past KW) adds 4
 * taps of 16 pixels; then x_zp' * sum(w) is taken off (mod 2^32, as the int32 sums wrap)
 * and the row requantized as byoc_q_requant_row512_ does. Needs 15 * SW + 3 * DW <= 63, the
 * centred weights in int8, and HP * WP + 64 + 4 * DW * ceil(KW / 4) bytes of `buf`. Returns 0 (nothing done) when the
 * weights do not fit.
 */
static BYOC_Q_VNNI_VBMI int byoc_q_dw_plane_vbmi_(const uint8_t* xc, uint8_t flip, uint8_t pad,
                                                  const int16_t* wc, int32_t bias, float m, float lo,
                                                  float hi, int32_t xzu, int32_t zp, uint8_t* yc,
                                                  uint8_t* buf, int64_t H, int64_t W, int64_t KH,
                                                  int64_t KW, int64_t OH, int64_t OW, int64_t SH,
                                                  int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                                  int64_t DW, int64_t HP, int64_t WP) {
  int32_t wsum = 0;
  for (int64_t t = 0; t < KH * KW; ++t) {
    if (wc[t] < -128 || wc[t] > 127) return 0;
    wsum += wc[t];
  }
  /* the padded plane, 64 bytes of slack after it */
  for (int64_t r = 0; r < HP; ++r) {
    uint8_t* d = buf + r * WP;
    const int64_t ih = r - PT;
    if (ih < 0 || ih >= H) {
      memset(d, pad ^ flip, byoc_q_nz_(WP));
      continue;
    }
    byoc_q_pad_row_(d, xc + ih * W, pad, WP, PL, W);
    if (flip) {
      const __m512i f = _mm512_set1_epi8((char)flip);
      for (int64_t q = 0; q < WP; q += 64) {
        const __mmask64 k = WP - q >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (WP - q)) - 1);
        _mm512_mask_storeu_epi8(d + q, k, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, d + q), f));
      }
    }
  }
  memset(buf + HP * WP, 0, (size_t)(64 + 4 * ((KW + 3) / 4) * DW));
  /* lane p, byte q: p * SW + q * DW */
  uint8_t idx[64];
  for (int p = 0; p < 16; ++p)
    for (int q = 0; q < 4; ++q) idx[4 * p + q] = (uint8_t)(p * SW + q * DW);
  const __m512i vidx = _mm512_loadu_si512((const void*)idx);
  const int64_t nj = (KW + 3) / 4;
  const __m512i vb = _mm512_set1_epi32((int32_t)((uint32_t)bias - (uint32_t)xzu * (uint32_t)wsum));
  const __m512i vz = _mm512_set1_epi32(zp);
  const __m512 vm = _mm512_set1_ps(m), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  __m512i wv[64]; /* (i, j0 / 4) -> 4 taps' int8 weights, 0 past KW; KH * nj <= 64 (checked by the caller) */
  for (int64_t i = 0; i < KH; ++i)
    for (int64_t jq = 0; jq < nj; ++jq) {
      uint32_t packed = 0;
      for (int64_t q = 0; q < 4; ++q)
        if (4 * jq + q < KW) packed |= (uint32_t)(uint8_t)(int8_t)wc[i * KW + 4 * jq + q] << (8 * q);
      wv[i * nj + jq] = _mm512_set1_epi32((int32_t)packed);
    }
  /* 16-pixel chunks of the output rows, 4 at a time (independent vpdpbusd chains) */
  const int64_t nch = (OW + 15) / 16, total = OH * nch;
  for (int64_t t0 = 0; t0 < total; t0 += 4) {
    const int64_t nu = total - t0 < 4 ? total - t0 : 4;
    const uint8_t* base[4];
    int64_t at[4], len[4];
    for (int64_t u = 0; u < 4; ++u) {
      const int64_t t = t0 + (u < nu ? u : 0), oh = t / nch, ow = (t - oh * nch) * 16;
      base[u] = buf + oh * SH * WP + ow * SW;
      at[u] = oh * OW + ow;
      len[u] = OW - ow < 16 ? OW - ow : 16;
    }
    __m512i a[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int64_t i = 0; i < KH; ++i)
      for (int64_t jq = 0; jq < nj; ++jq) {
        const int64_t off = i * DH * WP + 4 * jq * DW;
        const __m512i wq = wv[i * nj + jq];
        _Pragma("GCC unroll 4") for (int u = 0; u < 4; ++u) {
          const __m512i src = _mm512_loadu_si512((const void*)(base[u] + off));
          a[u] = _mm512_dpbusd_epi32(a[u], _mm512_permutexvar_epi8(vidx, src), wq);
        }
      }
    for (int64_t u = 0; u < nu; ++u) {
      const __mmask16 k = len[u] >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << len[u]) - 1);
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a[u], vb)), vm);
      v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
      _mm_mask_storeu_epi8(yc + at[u], k, _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), vz)));
    }
  }
  return 1;
}
#define BYOC_Q_DW_VBMI(...) byoc_q_dw_plane_vbmi_(__VA_ARGS__)
#else
static BYOC_MAYBE_UNUSED int byoc_q_dw_vbmi_(int level) { (void)level; return 0; }
#define BYOC_Q_DW_VBMI(...) 0
#endif

/* Threads a depthwise conv2d may use: its scratch holds this many planes (see quant.py). */
#define BYOC_Q_DW_THREADS 8
#define BYOC_DEFINE_QDWCONV2D(NAME, XT, YT, ROW)                                                \
  /* planes [nc0, nc1) of the (N * C) planes; `scratch` is this thread's. Always inlined: the \
   * caller's literal sizes and strides specialise (and vectorise) the taps' loops. */         \
  static inline __attribute__((always_inline)) void NAME##_part_(                              \
      const XT* x, const int16_t* w, const int32_t* bias, const float* mult, YT* y, float* scratch, \
      int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH, int64_t OW,         \
      int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t HP,      \
      int64_t WP, int32_t xzp, int32_t yzp, float lo, float hi, int64_t nc0, int64_t nc1, int level, \
      int vbmi) {                                                                              \
    int16_t* plane = (int16_t*)scratch;                                                        \
    int32_t* acc = (int32_t*)(plane + ((HP * WP + 1) & ~(int64_t)1));                          \
    for (int64_t nc = nc0; nc < nc1; ++nc) {                                                   \
      const int64_t c = nc % C;                                                                \
      const XT* xc = x + nc * H * W;                                                           \
      if (vbmi && BYOC_Q_DW_VBMI((const uint8_t*)xc, (uint8_t)(((XT)-1 < 0) ? 0x80 : 0), (uint8_t)xzp, \
                                 w + c * KH * KW, bias[c], mult[c], lo, hi,                    \
                                 xzp + (((XT)-1 < 0) ? 128 : 0), yzp, (uint8_t*)(y + nc * OH * OW), \
                                 (uint8_t*)scratch, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, HP, WP)) \
        continue;                                                                              \
      memset(plane, 0, (size_t)(HP * WP) * sizeof(int16_t));                                   \
      for (int64_t r = 0; r < H; ++r)                                                          \
        for (int64_t q = 0; q < W; ++q)                                                        \
          plane[(r + PT) * WP + q + PL] = (int16_t)((int32_t)xc[r * W + q] - xzp);             \
      const int16_t* wc = w + c * KH * KW;                                                     \
      YT* yc = y + nc * OH * OW;                                                               \
      for (int64_t oh = 0; oh < OH; ++oh) {                                                    \
        const int64_t done = SW == 1 && level > 0 ? BYOC_Q_DW_ROW(plane, WP, wc, KH, KW, DH, DW, oh * SH, acc, OW) : 0; \
        for (int64_t ow = done; ow < OW; ++ow) acc[ow] = 0;                                    \
        for (int64_t i = 0; i < KH; ++i)                                                       \
          for (int64_t j = 0; j < KW; ++j) {                                                   \
            const int32_t wv = wc[i * KW + j];                                                 \
            const int16_t* src = plane + (oh * SH + i * DH) * WP + j * DW;                     \
            if (SW == 1)                                                                       \
              for (int64_t ow = done; ow < OW; ++ow) acc[ow] += wv * (int32_t)src[ow];         \
            else                                                                               \
              for (int64_t ow = 0; ow < OW; ++ow) acc[ow] += wv * (int32_t)src[ow * SW];       \
          }                                                                                    \
        ROW(acc, OW, bias[c], mult[c], lo, hi, yzp, yc + oh * OW, level);                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  static BYOC_MAYBE_UNUSED void NAME(                                                          \
      const XT* x, const int16_t* w, const int32_t* bias, const float* mult, YT* y, float* scratch, \
      int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH, int64_t OW, \
      int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t HP,      \
      int64_t WP, int32_t xzp, int32_t yzp, float lo, float hi) {                              \
    const int level = byoc_qgemm_level();                                                      \
    const int64_t per = ((HP * WP + 1) / 2 + 1 + OW); /* floats of one thread's scratch */     \
    int32_t nt = byoc_threads_for(N * C * OH * OW * KH * KW, BYOC_Q_GEMM_GRAIN / 4);           \
    nt = nt < BYOC_Q_DW_THREADS ? nt : BYOC_Q_DW_THREADS;                                      \
    /* the VBMI form: its byte plane and slack fit the thread's scratch, taps fit vpermb */   \
    const int vbmi = byoc_q_dw_vbmi_(level) && 15 * SW + 3 * DW <= 63 && KH * ((KW + 3) / 4) <= 64 && \
                     HP * WP + 64 + 4 * ((KW + 3) / 4) * DW <= 4 * per;                        \
    BYOC_Q_SPLIT_(nt, t, NAME##_part_(x, w, bias, mult, y, scratch + t * per, C, H, W, KH, KW, OH, \
                                      OW, SH, SW, PT, PL, DH, DW, HP, WP, xzp, yzp, lo, hi,    \
                                      N * C * t / nt, N * C * (t + 1) / nt, level, vbmi));     \
  }

/*
 * dense / matmul with a constant right operand: x (M, K) of XT, w int16 (N, Kp) centred (w8 the
 * same as int8 and wsum its row sums when use8: the centred weights fit int8), y (M, N).
 * AVX-512 VNNI with use8: each row's dot products with the u8 x s8 form (byoc_q_dot_u8_vnni_),
 * corrected by x_zp' * wsum; otherwise the int16 GEMM on packed blocks of TP rows. Scratch:
 * Kp * PP int16 (packed rows, PP = TP rounded up to 16) then N * PP int32.
 */
#define BYOC_DEFINE_QDENSE(NAME, XT, YT, XOFF)                                                  \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, const int16_t* w, const int8_t* w8,         \
                                     const int32_t* wsum, const int32_t* bias,                 \
                                     const float* mult, YT* y, float* scratch, int64_t M,      \
                                     int64_t N, int64_t K, int64_t Kp, int64_t TP, int32_t xzp, \
                                     int32_t yzp, float lo, float hi, int32_t use8) {          \
    int16_t* rows = (int16_t*)scratch;                                                         \
    int32_t* acc = (int32_t*)(rows + Kp * ((TP + 15) & ~(int64_t)15));                        \
    const int level = byoc_qgemm_level();                                                      \
    if (BYOC_Q_USE8(level, use8)) {                                                            \
      const int32_t xzu = xzp + (XOFF);                                                        \
      for (int64_t m = 0; m < M; ++m) {                                                        \
        BYOC_Q_DOT8((const uint8_t*)(x + m * K), (uint8_t)((XOFF) ? 0x80 : 0), w8, N, K, Kp, acc); \
        YT* yr = y + m * N;                                                                    \
        for (int64_t o = 0; o < N; ++o) {                                                      \
          const int32_t b = (int32_t)((uint32_t)bias[o] - (uint32_t)xzu * (uint32_t)wsum[o]);  \
          yr[o] = (YT)byoc_q_requant_((int32_t)((uint32_t)acc[o] + (uint32_t)b), mult[o], lo, hi, yzp); \
        }                                                                                      \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    (void)w8, (void)wsum;                                                                      \
    for (int64_t m0 = 0; m0 < M; m0 += TP) {                                                   \
      const int64_t tp = M - m0 < TP ? M - m0 : TP, pp = (tp + 15) & ~(int64_t)15;             \
      memset(rows, 0, (size_t)(Kp * pp) * sizeof(int16_t));                                    \
      for (int64_t t = 0; t < tp; ++t) {                                                       \
        const XT* xr = x + (m0 + t) * K;                                                       \
        for (int64_t k = 0; k < K; ++k)                                                        \
          rows[(k >> 1) * 2 * pp + 2 * t + (k & 1)] = (int16_t)((int32_t)xr[k] - xzp);         \
      }                                                                                        \
      byoc_qgemm_(w, rows, acc, N, pp, Kp, pp, level);                                         \
      for (int64_t t = 0; t < tp; ++t) {                                                       \
        YT* yr = y + (m0 + t) * N;                                                             \
        for (int64_t o = 0; o < N; ++o)                                                        \
          yr[o] = (YT)byoc_q_requant_(acc[o * pp + t] + bias[o], mult[o], lo, hi, yzp);        \
      }                                                                                        \
    }                                                                                          \
  }

/* quantize / dequantize, per tensor or per axis: element (o, c, i) of the (n / (CH * inner),
 * CH, inner) view uses scale[c], zp[c]. A row of `inner` elements shares them. */
static inline float byoc_q_quantize1_(float x, float scale, float qlo, float qhi) {
  float v = x / scale;
  v = v < qlo ? qlo : v;
  v = v > qhi ? qhi : v;
  return byoc_q_round_(v != v ? 0.0f : v);
}

#ifdef BYOC_Q_AVX2
/* The AVX2 part of a quantize row: the elements it did (a multiple of 8); NaN -> 0 first, as the
 * scalar code does. _mm256_div_ps divides exactly as the scalar division does. */
#define BYOC_QUANTIZE_AVX2_FN(NAME, YT, PACK)                                                   \
  static BYOC_Q_AVX2 int64_t NAME##_avx2_(const float* x, float scale, int32_t z, YT* y,       \
                                          int64_t len, float qlo, float qhi) {                 \
    const __m256 vs = _mm256_set1_ps(scale), vlo = _mm256_set1_ps(qlo), vhi = _mm256_set1_ps(qhi); \
    const __m256i vz = _mm256_set1_epi32(z);                                                   \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= len; i += 8) {                                                             \
      __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), vs);                                    \
      v = _mm256_andnot_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), v);                              \
      v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);                                           \
      __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), vz);                                 \
      __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));  \
      _mm_storel_epi64((__m128i*)(y + i), PACK(w, w));                                         \
    }                                                                                          \
    return i;                                                                                  \
  }
/* 16 lanes on 512-bit vectors (the VNNI level's CPUs): the same division, NaN -> 0, clamp and
 * rounding; vpmov[u]sdb narrows the clamped integers: identical bytes. */
#define BYOC_QUANTIZE_AVX512_FN(NAME, YT)                                                       \
  static __attribute__((target("avx2,avx512f,avx512bw,avx512vl"))) int64_t NAME##_avx512_(     \
      const float* x, float scale, int32_t z, YT* y, int64_t len, float qlo, float qhi) {     \
    const __m512 vs = _mm512_set1_ps(scale), vlo = _mm512_set1_ps(qlo), vhi = _mm512_set1_ps(qhi); \
    const __m512i vz = _mm512_set1_epi32(z);                                                   \
    int64_t i = 0;                                                                             \
    for (; i + 16 <= len; i += 16) {                                                           \
      __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), vs);                                    \
      v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);                        \
      v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);                                           \
      const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);                           \
      _mm_storeu_si128((__m128i*)(y + i), BYOC_Q_NARROW512_##YT(r));                           \
    }                                                                                          \
    return i;                                                                                  \
  }
#define BYOC_Q_NARROW512_uint8_t _mm512_cvtusepi32_epi8
#define BYOC_Q_NARROW512_int8_t _mm512_cvtsepi32_epi8
#define BYOC_QUANTIZE_AVX2_CALL(NAME)                                                           \
  if (level > 1) i = NAME##_avx512_(x, scale, z, y, len, qlo, qhi);                            \
  if (level > 0) i += NAME##_avx2_(x + i, scale, z, y + i, len - i, qlo, qhi);
#else
#define BYOC_QUANTIZE_AVX512_FN(NAME, YT)
#define BYOC_QUANTIZE_AVX2_FN(NAME, YT, PACK)
#define BYOC_QUANTIZE_AVX2_CALL(NAME)
#endif

#define BYOC_DEFINE_QUANTIZE(NAME, YT, QMIN, QMAX, PACK)                                        \
  BYOC_QUANTIZE_AVX2_FN(NAME, YT, PACK)                                                        \
  BYOC_QUANTIZE_AVX512_FN(NAME, YT)                                                            \
  static void NAME##_row_(const float* x, float scale, int32_t z, YT* y, int64_t len, int level) { \
    const float qlo = (float)(QMIN) - (float)z, qhi = (float)(QMAX) - (float)z;                \
    int64_t i = 0;                                                                             \
    BYOC_QUANTIZE_AVX2_CALL(NAME)                                                              \
    (void)level;                                                                               \
    for (; i < len; ++i) y[i] = (YT)((int32_t)byoc_q_quantize1_(x[i], scale, qlo, qhi) + z);   \
  }                                                                                            \
  static BYOC_MAYBE_UNUSED void NAME(const float* x, const float* scale, const YT* zp, YT* y,  \
                                     int64_t n, int64_t inner, int64_t CH) {                   \
    const int level = byoc_qgemm_level();                                                      \
    for (int64_t o = 0; o < n; o += CH * inner)                                                \
      for (int64_t c = 0; c < CH; ++c)                                                         \
        NAME##_row_(x + o + c * inner, scale[c], (int32_t)zp[c], y + o + c * inner, inner, level); \
  }

#define BYOC_DEFINE_DEQUANTIZE(NAME, XT)                                                        \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, const float* scale, const XT* zp, float* y,  \
                                     int64_t n, int64_t inner, int64_t CH) {                   \
    for (int64_t o = 0; o < n; o += CH * inner)                                                \
      for (int64_t c = 0; c < CH; ++c) {                                                       \
        const XT* xr = x + o + c * inner;                                                      \
        float* yr = y + o + c * inner;                                                         \
        const int32_t z = (int32_t)zp[c];                                                      \
        const float s = scale[c];                                                              \
        for (int64_t i = 0; i < inner; ++i) yr[i] = (float)((int32_t)xr[i] - z) * s;           \
      }                                                                                        \
  }

BYOC_DEFINE_QCONV2D(byoc_qconv2d_u8_u8, uint8_t, uint8_t, byoc_q_requant_row_u8_, 0)
BYOC_DEFINE_QCONV2D(byoc_qconv2d_u8_i8, uint8_t, int8_t, byoc_q_requant_row_i8_, 0)
BYOC_DEFINE_QCONV2D(byoc_qconv2d_i8_u8, int8_t, uint8_t, byoc_q_requant_row_u8_, 128)
BYOC_DEFINE_QCONV2D(byoc_qconv2d_i8_i8, int8_t, int8_t, byoc_q_requant_row_i8_, 128)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_u8_u8, uint8_t, uint8_t, byoc_q_requant_row_u8_)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_u8_i8, uint8_t, int8_t, byoc_q_requant_row_i8_)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_i8_u8, int8_t, uint8_t, byoc_q_requant_row_u8_)
BYOC_DEFINE_QDWCONV2D(byoc_qdwconv2d_i8_i8, int8_t, int8_t, byoc_q_requant_row_i8_)
BYOC_DEFINE_QDENSE(byoc_qdense_u8_u8, uint8_t, uint8_t, 0)
BYOC_DEFINE_QDENSE(byoc_qdense_u8_i8, uint8_t, int8_t, 0)
BYOC_DEFINE_QDENSE(byoc_qdense_i8_u8, int8_t, uint8_t, 128)
BYOC_DEFINE_QDENSE(byoc_qdense_i8_i8, int8_t, int8_t, 128)
BYOC_DEFINE_QUANTIZE(byoc_quantize_u8, uint8_t, 0, 255, _mm_packus_epi16)
BYOC_DEFINE_QUANTIZE(byoc_quantize_i8, int8_t, -128, 127, _mm_packs_epi16)
BYOC_DEFINE_DEQUANTIZE(byoc_dequantize_u8, uint8_t)
BYOC_DEFINE_DEQUANTIZE(byoc_dequantize_i8, int8_t)

/* ---- fused int8 elementwise, pooling and concatenation (docs/quantization.md) -------------
 * The composites byoc/targets/qdq.py calls qlut, qadd, qmaxpool and qconcat. Each gives the
 * integers of its float QDQ block (dequantize in f32, the float op, quantize): see the
 * exactness argument there. Elementwise loops split across the OpenMP team by elements
 * (static schedule, each element computed alone: identical at any thread count).
 */

/* y = table[c * 256 + byte(x)], element (o, c, i) of the (n / (CH * inner), CH, inner) view;
 * CH == 1: one table. A lookup, so every code path gives the same bytes. */
#ifdef BYOC_Q_AVX2
#define BYOC_Q_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))
/* 64 bytes a step: vpermi2b looks each byte's low 7 bits up in two 128-byte halves; bit 7
 * chooses the half. */
static BYOC_Q_VBMI void byoc_qlut_row_vbmi_(const uint8_t* x, const uint8_t* t, uint8_t* y, int64_t len) {
  const __m512i t0 = _mm512_loadu_si512((const void*)t), t1 = _mm512_loadu_si512((const void*)(t + 64));
  const __m512i t2 = _mm512_loadu_si512((const void*)(t + 128)), t3 = _mm512_loadu_si512((const void*)(t + 192));
  int64_t i = 0;
  for (; i + 64 <= len; i += 64) {
    const __m512i v = _mm512_loadu_si512((const void*)(x + i));
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    const __mmask64 high = _mm512_movepi8_mask(v);
    _mm512_storeu_si512((void*)(y + i), _mm512_mask_blend_epi8(high, lo, hi));
  }
  if (i < len) { /* the tail (short rows: a 7x7 plane is all tail) by masked loads and stores */
    const __mmask64 m = (__mmask64)(((uint64_t)1 << (len - i)) - 1);
    const __m512i v = _mm512_maskz_loadu_epi8(m, (const void*)(x + i));
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8((void*)(y + i), m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
}
static BYOC_MAYBE_UNUSED int byoc_q_vbmi_(void) {
  return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
}
#else
static BYOC_MAYBE_UNUSED int byoc_q_vbmi_(void) { return 0; }
#endif

static void byoc_qlut_row_(const uint8_t* x, const uint8_t* t, uint8_t* y, int64_t len, int vbmi) {
#ifdef BYOC_Q_AVX2
  if (vbmi) {
    byoc_qlut_row_vbmi_(x, t, y, len);
    return;
  }
#endif
  (void)vbmi;
  for (int64_t i = 0; i < len; ++i) y[i] = t[x[i]];
}

static void byoc_qlut_part_(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n,
                            int64_t inner, int64_t CH, int vbmi, int64_t t, int64_t nt) {
  if (CH == 1) {
    const int64_t i0 = n * t / nt, i1 = n * (t + 1) / nt;
    byoc_qlut_row_(x + i0, table, y + i0, i1 - i0, vbmi);
    return;
  }
  const int64_t rows = n / inner, r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
  for (int64_t r = r0; r < r1; ++r)
    byoc_qlut_row_(x + r * inner, table + (r % CH) * 256, y + r * inner, inner, vbmi);
}

static BYOC_MAYBE_UNUSED void byoc_qlut_bytes_(const uint8_t* x, const uint8_t* table, uint8_t* y,
                                               int64_t n, int64_t inner, int64_t CH) {
  const int vbmi = byoc_qgemm_level() > 0 && byoc_q_vbmi_();
  const int32_t nt = byoc_threads_for(n, BYOC_Q_EW_GRAIN);
  BYOC_Q_SPLIT_(nt, t, byoc_qlut_part_(x, table, y, n, inner, CH, vbmi, t, nt));
}

#define BYOC_DEFINE_QLUT(NAME, XT, YT)                                                          \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, const uint8_t* table, YT* y, int64_t n,      \
                                     int64_t inner, int64_t CH) {                              \
    byoc_qlut_bytes_((const uint8_t*)x, table, (uint8_t*)y, n, inner, CH);                     \
  }

/*
 * y = quantize([relu](dequantize(a) + dequantize(b)))  (or *): the f32 operations of the
 * reference in the same order, one rounding each — (float)(a - za) * sa, the same for b, the
 * sum or product, max(., 0), / sy — then clamping to the output range minus zy (integer
 * bounds, so clamp-then-round = round-then-saturate), rounding half to even, + zy. No FMA:
 * neither the baseline nor the AVX2 code is compiled with it.
 */
static inline int32_t byoc_qadd1_(int32_t a, int32_t b, float sa, float sb, float sy, float qlo,
                                  float qhi, int32_t mul, int32_t relu) {
  const float fa = (float)a * sa, fb = (float)b * sb;
  float v = mul ? fa * fb : fa + fb;
  if (relu) v = v > 0.0f ? v : 0.0f;
  v = v / sy;
  v = v < qlo ? qlo : v;
  v = v > qhi ? qhi : v;
  return (int32_t)byoc_q_round_(v != v ? 0.0f : v);
}

#ifdef BYOC_Q_AVX2
#define BYOC_Q_WIDEN_uint8_t(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(p)))
#define BYOC_Q_WIDEN_int8_t(p) _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p)))
#define BYOC_Q_PACK_uint8_t _mm_packus_epi16
#define BYOC_Q_PACK_int8_t _mm_packs_epi16
#define BYOC_QADD_AVX2(NAME, AT, BT, YT)                                                        \
  static BYOC_Q_AVX2 int64_t NAME##_avx2_(const AT* a, const BT* b, YT* y, int64_t n, float sa, \
                                          int32_t za, float sb, int32_t zb, float sy, float qlo, \
                                          float qhi, int32_t zy, int32_t mul, int32_t relu) {  \
    const __m256 vsa = _mm256_set1_ps(sa), vsb = _mm256_set1_ps(sb), vsy = _mm256_set1_ps(sy); \
    const __m256 vlo = _mm256_set1_ps(qlo), vhi = _mm256_set1_ps(qhi), zero = _mm256_setzero_ps(); \
    const __m256i vza = _mm256_set1_epi32(za), vzb = _mm256_set1_epi32(zb), vzy = _mm256_set1_epi32(zy); \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8) {                                                               \
      const __m256 fa = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(BYOC_Q_WIDEN_##AT(a + i), vza)), vsa); \
      const __m256 fb = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(BYOC_Q_WIDEN_##BT(b + i), vzb)), vsb); \
      __m256 v = mul ? _mm256_mul_ps(fa, fb) : _mm256_add_ps(fa, fb);                          \
      if (relu) v = _mm256_max_ps(v, zero);                                                    \
      v = _mm256_div_ps(v, vsy);                                                               \
      v = _mm256_andnot_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), v);                              \
      v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);                                           \
      const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(v), vzy);                          \
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); \
      _mm_storel_epi64((__m128i*)(y + i), BYOC_Q_PACK_##YT(w, w));                             \
    }                                                                                          \
    return i;                                                                                  \
  }
/* The same lanes on 512-bit vectors (AVX-512 F/BW, the VNNI level's CPUs): the same f32
 * operations one by one (explicit mul / add / div, no FMA), the same rounding (cvtps in the
 * default mode), saturated to bytes by vpmov[u]sdb after the clamp: identical bytes. */
#define BYOC_Q_512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))
#define BYOC_Q_WIDEN512_uint8_t(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p)))
#define BYOC_Q_WIDEN512_int8_t(p) _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(p)))
#define BYOC_QADD_AVX512(NAME, AT, BT, YT)                                                      \
  static BYOC_Q_512 int64_t NAME##_avx512_(const AT* a, const BT* b, YT* y, int64_t n, float sa, \
                                           int32_t za, float sb, int32_t zb, float sy, float qlo, \
                                           float qhi, int32_t zy, int32_t mul, int32_t relu) { \
    const __m512 vsa = _mm512_set1_ps(sa), vsb = _mm512_set1_ps(sb), vsy = _mm512_set1_ps(sy); \
    const __m512 vlo = _mm512_set1_ps(qlo), vhi = _mm512_set1_ps(qhi), zero = _mm512_setzero_ps(); \
    const __m512i vza = _mm512_set1_epi32(za), vzb = _mm512_set1_epi32(zb), vzy = _mm512_set1_epi32(zy); \
    int64_t i = 0;                                                                             \
    for (; i + 16 <= n; i += 16) {                                                             \
      const __m512 fa = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(BYOC_Q_WIDEN512_##AT(a + i), vza)), vsa); \
      const __m512 fb = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(BYOC_Q_WIDEN512_##BT(b + i), vzb)), vsb); \
      __m512 v = mul ? _mm512_mul_ps(fa, fb) : _mm512_add_ps(fa, fb);                          \
      if (relu) v = _mm512_max_ps(v, zero);                                                    \
      v = _mm512_div_ps(v, vsy);                                                               \
      v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);                        \
      v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);                                           \
      const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(v), vzy);                          \
      _mm_storeu_si128((__m128i*)(y + i), BYOC_Q_NARROW512_##YT(r));                           \
    }                                                                                          \
    return i;                                                                                  \
  }
#define BYOC_QADD_AVX2_CALL(NAME)                                                               \
  if (level > 1) i = NAME##_avx512_(a + i0, b + i0, y + i0, len, sa, za, sb, zb, sy, qlo, qhi, zy, mul, relu); \
  if (level > 0) i += NAME##_avx2_(a + i0 + i, b + i0 + i, y + i0 + i, len - i, sa, za, sb, zb, sy, qlo, qhi, zy, mul, relu);
#else
#define BYOC_QADD_AVX2(NAME, AT, BT, YT)
#define BYOC_QADD_AVX512(NAME, AT, BT, YT)
#define BYOC_QADD_AVX2_CALL(NAME)
#endif

#define BYOC_DEFINE_QADD(NAME, AT, BT, YT, QMIN, QMAX)                                          \
  BYOC_QADD_AVX2(NAME, AT, BT, YT)                                                             \
  BYOC_QADD_AVX512(NAME, AT, BT, YT)                                                           \
  static void NAME##_part_(const AT* a, const BT* b, YT* y, int64_t i0, int64_t len, float sa, \
                           int32_t za, float sb, int32_t zb, float sy, float qlo, float qhi,   \
                           int32_t zy, int32_t mul, int32_t relu, int level) {                 \
    int64_t i = 0;                                                                             \
    (void)level;                                                                               \
    BYOC_QADD_AVX2_CALL(NAME)                                                                  \
    for (; i < len; ++i)                                                                       \
      y[i0 + i] = (YT)(byoc_qadd1_((int32_t)a[i0 + i] - za, (int32_t)b[i0 + i] - zb, sa, sb, sy, \
                                   qlo, qhi, mul, relu) + zy);                                 \
  }                                                                                            \
  static BYOC_MAYBE_UNUSED void NAME(const AT* a, const BT* b, YT* y, int64_t n, float sa,    \
                                     int32_t za, float sb, int32_t zb, float sy, int32_t zy,   \
                                     int32_t mul, int32_t relu) {                              \
    const int level = byoc_qgemm_level();                                                      \
    const float qlo = (float)(QMIN) - (float)zy, qhi = (float)(QMAX) - (float)zy;              \
    const int32_t nt = byoc_threads_for(n, BYOC_Q_EW_GRAIN);                                   \
    BYOC_Q_SPLIT_(nt, t, NAME##_part_(a, b, y, n * t / nt, n * (t + 1) / nt - n * t / nt, sa, za, \
                                      sb, zb, sy, qlo, qhi, zy, mul, relu, level));            \
  }

/* m[q] = max(m[q], r[q]) over bytes that are u8 (flip 0) or i8 (flip 0x80: x ^ 0x80 orders i8
 * as u8 orders unsigned bytes). */
static inline void byoc_q_rowmax_(uint8_t* m, const uint8_t* r, int64_t n, uint8_t flip) {
  int64_t q = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8((char)flip);
  for (; q + 16 <= n; q += 16) {
    const __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(m + q)), f);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(r + q)), f);
    _mm_storeu_si128((__m128i*)(m + q), _mm_xor_si128(_mm_max_epu8(a, b), f));
  }
  if (q < n && n >= 16) { /* the tail as one overlapping vector: max is idempotent */
    q = n - 16;
    const __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(m + q)), f);
    const __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(r + q)), f);
    _mm_storeu_si128((__m128i*)(m + q), _mm_xor_si128(_mm_max_epu8(a, b), f));
    q = n;
  }
#endif
  for (; q < n; ++q) m[q] = (uint8_t)(m[q] ^ flip) > (uint8_t)(r[q] ^ flip) ? m[q] : r[q];
}

/* m[q] = max over r < nr of src[r * stride + q], q < n (nr >= 1), bytes ordered as u8 (flip 0) or
 * i8 (flip 0x80): 16 columns a step across all the rows, each chunk of m stored once; the tail
 * as one overlapping step (max is idempotent). */
static inline void byoc_q_colmax_(uint8_t* m, const uint8_t* src, int64_t stride, int64_t nr,
                                  int64_t n, uint8_t flip) {
  int64_t q = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8((char)flip);
  for (; q < n && n >= 16; q += 16) {
    if (q + 16 > n) q = n - 16;
    __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i*)(src + q)), f);
    for (int64_t r = 1; r < nr; ++r)
      a = _mm_max_epu8(a, _mm_xor_si128(_mm_loadu_si128((const __m128i*)(src + r * stride + q)), f));
    _mm_storeu_si128((__m128i*)(m + q), _mm_xor_si128(a, f));
  }
#endif
  for (; q < n; ++q) {
    uint8_t a = (uint8_t)(src[q] ^ flip);
    for (int64_t r = 1; r < nr; ++r) {
      const uint8_t v = (uint8_t)(src[r * stride + q] ^ flip);
      a = v > a ? v : a;
    }
    m[q] = (uint8_t)(a ^ flip);
  }
}

/* y[ow] = max_j r[ow * SW - PL + j * DW] for ow in [lo, hi) (windows inside the row), 16
 * outputs a step for SW 1 or 2 (stride 2: the even bytes of 32, by a mask and packus); the
 * tail as one overlapping step (max is idempotent), or, under 16 outputs in all, one step
 * through a 16-byte buffer (no scalar loop). The outputs it did not
 * do start at the returned ow (all of them for SW > 2). r has 64 readable bytes past the row
 * (their values are never stored). */
static inline int64_t byoc_q_hmax_(const uint8_t* r, uint8_t* y, int64_t lo, int64_t hi, int64_t SW,
                                   int64_t PL, int64_t KW, int64_t DW, uint8_t flip) {
  int64_t ow = lo;
#if defined(__SSE2__)
  if (SW > 2) return ow;
  const __m128i f = _mm_set1_epi8((char)flip), even = _mm_set1_epi16(0x00FF);
  const int64_t first = ow;
  for (; ow < hi; ow += 16) {
    if (ow + 16 > hi && hi - first >= 16) ow = hi - 16; /* the tail as one overlapping step */
    const uint8_t* b = r + ow * SW - PL;
    __m128i m = _mm_setzero_si128();
    for (int64_t j = 0; j < KW; ++j) {
      const uint8_t* p = b + j * DW;
      __m128i v = _mm_loadu_si128((const __m128i*)p);
      if (SW == 2)
        v = _mm_packus_epi16(_mm_and_si128(v, even),
                             _mm_and_si128(_mm_loadu_si128((const __m128i*)(p + 16)), even));
      v = _mm_xor_si128(v, f);
      m = j ? _mm_max_epu8(m, v) : v;
    }
    m = _mm_xor_si128(m, f);
    if (hi - ow >= 16) {
      _mm_storeu_si128((__m128i*)(y + ow), m);
    } else {
      uint8_t tail[16];
      _mm_storeu_si128((__m128i*)tail, m);
      memcpy(y + ow, tail, (size_t)(hi - ow));
      ow = hi;
      break;
    }
  }
#else
  (void)r, (void)y, (void)hi, (void)SW, (void)PL, (void)KW, (void)DW, (void)flip;
#endif
  return ow;
}

#ifdef BYOC_Q_AVX2
/* The two steps above on 32-byte vectors (AVX2): the same maxima of the same bytes. */
BYOC_Q_AVX2 static void byoc_q_colmax_avx2_(uint8_t* m, const uint8_t* src, int64_t stride,
                                           int64_t nr, int64_t n, uint8_t flip) {
  if (n < 32) {
    byoc_q_colmax_(m, src, stride, nr, n, flip);
    return;
  }
  const __m256i f = _mm256_set1_epi8((char)flip);
  for (int64_t q = 0; q < n; q += 32) {
    if (q + 32 > n) q = n - 32; /* the tail as one overlapping step */
    __m256i a = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(src + q)), f);
    for (int64_t r = 1; r < nr; ++r)
      a = _mm256_max_epu8(a, _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(src + r * stride + q)), f));
    _mm256_storeu_si256((__m256i*)(m + q), _mm256_xor_si256(a, f));
  }
}

BYOC_Q_AVX2 static int64_t byoc_q_hmax_avx2_(const uint8_t* r, uint8_t* y, int64_t lo, int64_t hi,
                                            int64_t SW, int64_t PL, int64_t KW, int64_t DW,
                                            uint8_t flip) {
  int64_t ow = lo;
  if (SW > 2) return ow;
  const __m256i f = _mm256_set1_epi8((char)flip), even = _mm256_set1_epi16(0x00FF);
  for (; ow < hi && hi - lo >= 32; ow += 32) {
    if (ow + 32 > hi) ow = hi - 32; /* the tail as one overlapping step: same values again */
    const uint8_t* b = r + ow * SW - PL;
    __m256i m = _mm256_setzero_si256();
    for (int64_t j = 0; j < KW; ++j) {
      const uint8_t* p = b + j * DW;
      __m256i v = _mm256_loadu_si256((const __m256i*)p);
      if (SW == 2) /* packus works per 128-bit lane: outputs 0-7, 16-23, 8-15, 24-31 */
        v = _mm256_packus_epi16(_mm256_and_si256(v, even),
                                _mm256_and_si256(_mm256_loadu_si256((const __m256i*)(p + 32)), even));
      v = _mm256_xor_si256(v, f);
      m = j ? _mm256_max_epu8(m, v) : v;
    }
    if (SW == 2) m = _mm256_permute4x64_epi64(m, 0xD8);
    _mm256_storeu_si256((__m256i*)(y + ow), _mm256_xor_si256(m, f));
  }
  return byoc_q_hmax_(r, y, ow, hi, SW, PL, KW, DW, flip);
}
#endif

/* One output row's two steps, on the widest vectors `level` allows (byoc_qgemm_level). */
static inline void byoc_q_colmax_any_(uint8_t* m, const uint8_t* src, int64_t stride, int64_t nr,
                                      int64_t n, uint8_t flip, int level) {
#ifdef BYOC_Q_AVX2
  if (level > 0) {
    byoc_q_colmax_avx2_(m, src, stride, nr, n, flip);
    return;
  }
#endif
  (void)level;
  byoc_q_colmax_(m, src, stride, nr, n, flip);
}

static inline int64_t byoc_q_hmax_any_(const uint8_t* r, uint8_t* y, int64_t lo, int64_t hi,
                                       int64_t SW, int64_t PL, int64_t KW, int64_t DW, uint8_t flip,
                                       int level) {
#ifdef BYOC_Q_AVX2
  if (level > 0) return byoc_q_hmax_avx2_(r, y, lo, hi, SW, PL, KW, DW, flip);
#endif
  (void)level;
  return byoc_q_hmax_(r, y, lo, hi, SW, PL, KW, DW, flip);
}

#ifdef BYOC_Q_VBMI
/* Max pooling of planes [nc0, nc1) whose padded rows fit two 64-byte vectors (PL + W <= 128,
 * OW <= 64, every window index under 128, KW <= 16): lane p of the row pair is input column
 * p - PL, loaded under a mask (lanes outside the row hold the smallest value, so they never
 * win, and are never read); per output row, the max over the window's valid rows, then per
 * window column j one vpermi2b picks lane ow * SW + j * DW for every output at once, and one
 * masked store writes the row. Only maxima of the same bytes: the baseline path's results. */
static BYOC_Q_VBMI void byoc_qmaxpool_vbmi_(const uint8_t* x, uint8_t* y, int64_t nc0, int64_t nc1,
                                            int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH,
                                            int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                                            int64_t DH, int64_t DW, uint8_t flip) {
  const __m512i f = _mm512_set1_epi8((char)flip);
  const int64_t end = PL + W; /* lanes [PL, end) hold the row */
  const __mmask64 m0 = (PL >= 64 ? 0 : ~0ULL << PL) & (end >= 64 ? ~0ULL : (1ULL << end) - 1);
  const __mmask64 m1 = end <= 64 ? 0 : (end >= 128 ? ~0ULL : (1ULL << (end - 64)) - 1);
  const __mmask64 ym = OW >= 64 ? ~0ULL : (1ULL << OW) - 1;
  __m512i idx[16];
  for (int64_t j = 0; j < KW; ++j) {
    uint8_t lane[64];
    for (int64_t ow = 0; ow < 64; ++ow) lane[ow] = (uint8_t)(ow < OW ? ow * SW + j * DW : 0);
    idx[j] = _mm512_loadu_si512((const void*)lane);
  }
  for (int64_t nc = nc0; nc < nc1; ++nc) {
    const uint8_t* xc = x + nc * H * W;
    uint8_t* yc = y + nc * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
      for (int64_t i = 0; i < KH; ++i) {
        const int64_t ih = oh * SH - PT + i * DH;
        if (ih < 0 || ih >= H) continue;
        const uint8_t* row = xc + ih * W - PL; /* lane p: column p - PL (masked lanes not read) */
        lo = _mm512_max_epu8(lo, _mm512_maskz_mov_epi8(m0, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m0, row), f)));
        if (m1)
          hi = _mm512_max_epu8(hi, _mm512_maskz_mov_epi8(m1, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m1, row + 64), f)));
      }
      __m512i m = _mm512_permutex2var_epi8(lo, idx[0], hi);
      for (int64_t j = 1; j < KW; ++j) m = _mm512_max_epu8(m, _mm512_permutex2var_epi8(lo, idx[j], hi));
      _mm512_mask_storeu_epi8(yc + oh * OW, ym, _mm512_xor_si512(m, f));
    }
  }
}
#endif

/* Whether byoc_qmaxpool_vbmi_ takes this pooling: rows and windows fit its two vectors, and
 * every window holds an input element (rows and columns), as the baseline path assumes. */
static BYOC_MAYBE_UNUSED int byoc_qmaxpool_vbmi_fits_(int64_t H, int64_t W, int64_t KH, int64_t KW,
                                                      int64_t OH, int64_t OW, int64_t SH, int64_t SW,
                                                      int64_t PT, int64_t PL, int64_t DH, int64_t DW) {
  if (PL < 0 || PT < 0 || PL + W > 128 || OW > 64 || OW < 1 || KW > 16 || KW < 1) return 0;
  if ((OW - 1) * SW + (KW - 1) * DW >= 128) return 0;
  for (int64_t ow = 0; ow < OW; ++ow) {
    int any = 0;
    for (int64_t j = 0; j < KW; ++j) {
      const int64_t iw = ow * SW - PL + j * DW;
      any |= iw >= 0 && iw < W;
    }
    if (!any) return 0;
  }
  for (int64_t oh = 0; oh < OH; ++oh) {
    int any = 0;
    for (int64_t i = 0; i < KH; ++i) {
      const int64_t ih = oh * SH - PT + i * DH;
      any |= ih >= 0 && ih < H;
    }
    if (!any) return 0;
  }
  return 1;
}

/* Max pooling on the integers (NCHW): padding is skipped (every window holds an element).
 * Per output row: the max over the window's valid input rows, column by column (a loop the
 * compiler vectorises), then the max over each window's valid columns of that row. */
#define BYOC_QPOOL_MAXW 2048
#ifdef BYOC_Q_VBMI
#define BYOC_QMAXPOOL_VBMI_(NAME, XT)                                                           \
  if (level == 3) {                                                                            \
    byoc_qmaxpool_vbmi_((const uint8_t*)x, (uint8_t*)y, NC * t / nt, NC * (t + 1) / nt, H, W, KH, \
                        KW, OH, OW, SH, SW, PT, PL, DH, DW, (uint8_t)((XT)-1 < 0 ? 0x80 : 0)); \
    return;                                                                                    \
  }
#else
#define BYOC_QMAXPOOL_VBMI_(NAME, XT)
#endif
#define BYOC_DEFINE_QMAXPOOL(NAME, XT)                                                          \
  static BYOC_Q_CLONES void NAME##_part_(const XT* x, XT* y, int64_t NC, int64_t H, int64_t W,  \
                                          int64_t KH, int64_t KW, int64_t OH, int64_t OW,      \
                                          int64_t SH, int64_t SW, int64_t PT, int64_t PL,      \
                                          int64_t DH, int64_t DW, int level, int64_t t,        \
                                          int64_t nt) {                                        \
    BYOC_QMAXPOOL_VBMI_(NAME, XT);                                                             \
    for (int64_t nc = NC * t / nt; nc < NC * (t + 1) / nt; ++nc) {                             \
      XT rowmax[BYOC_QPOOL_MAXW + 128];                                                        \
      const XT* xc = x + nc * H * W;                                                           \
      XT* yc = y + nc * OH * OW;                                                               \
      for (int64_t oh = 0; oh < OH; ++oh) {                                                    \
        if (W <= BYOC_QPOOL_MAXW) {                                                            \
          /* the window's valid rows are i in [i0, i1): one pass over them, each chunk of     \
           * rowmax stored once (no reload of a just-stored row: store forwarding) */          \
          int64_t i0 = 0, i1 = KH;                                                             \
          while (i0 < KH && oh * SH - PT + i0 * DH < 0) ++i0;                                  \
          while (i1 > i0 && oh * SH - PT + (i1 - 1) * DH >= H) --i1;                           \
          byoc_q_colmax_any_((uint8_t*)rowmax, (const uint8_t*)(xc + (oh * SH - PT + i0 * DH) * W), \
                             DH * W, i1 - i0, W, (uint8_t)((XT)-1 < 0 ? 0x80 : 0), level);     \
          /* outputs whose window lies inside the row, [lo, hi): no bounds checks */          \
          const int64_t lo = PL > 0 ? (PL + SW - 1) / SW : 0;                                  \
          int64_t hi = W - 1 - (KW - 1) * DW + PL >= 0 ? (W - 1 - (KW - 1) * DW + PL) / SW + 1 : 0; \
          hi = hi < OW ? hi : OW;                                                              \
          const int64_t done = byoc_q_hmax_any_((const uint8_t*)rowmax, (uint8_t*)(yc + oh * OW), lo, hi, \
                                                SW, PL, KW, DW, (uint8_t)((XT)-1 < 0 ? 0x80 : 0), level); \
          for (int64_t ow = done; ow < hi; ++ow) {                                             \
            const XT* r = rowmax + ow * SW - PL;                                               \
            XT m = r[0];                                                                       \
            for (int64_t j = 1; j < KW; ++j) m = r[j * DW] > m ? r[j * DW] : m;                \
            yc[oh * OW + ow] = m;                                                              \
          }                                                                                    \
          for (int64_t ow = 0; ow < OW; ++ow) {                                                \
            if (ow == lo && hi > lo) { /* skip the inner outputs [lo, hi), done above */       \
              ow = hi - 1;                                                                     \
              continue;                                                                        \
            }                                                                                  \
            int32_t m = -1000;                                                                 \
            for (int64_t j = 0; j < KW; ++j) {                                                 \
              const int64_t iw = ow * SW - PL + j * DW;                                        \
              if (iw >= 0 && iw < W && (int32_t)rowmax[iw] > m) m = rowmax[iw];                \
            }                                                                                  \
            yc[oh * OW + ow] = (XT)m;                                                          \
          }                                                                                    \
          continue;                                                                            \
        }                                                                                      \
        for (int64_t ow = 0; ow < OW; ++ow) {                                                  \
          int32_t m = -1000;                                                                   \
          for (int64_t i = 0; i < KH; ++i) {                                                   \
            const int64_t ih = oh * SH - PT + i * DH;                                          \
            if (ih < 0 || ih >= H) continue;                                                   \
            const XT* row = xc + ih * W;                                                       \
            for (int64_t j = 0; j < KW; ++j) {                                                 \
              const int64_t iw = ow * SW - PL + j * DW;                                        \
              if (iw >= 0 && iw < W && (int32_t)row[iw] > m) m = row[iw];                      \
            }                                                                                  \
          }                                                                                    \
          yc[oh * OW + ow] = (XT)m;                                                            \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  } \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, XT* y, int64_t N, int64_t C, int64_t H,     \
                                     int64_t W, int64_t KH, int64_t KW, int64_t OH, int64_t OW, \
                                     int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, \
                                     int64_t DW) {                                             \
    const int32_t nt = byoc_threads_for(N * C * OH * (W * KH + OW * KW), BYOC_Q_EW_GRAIN);     \
    int level = byoc_qgemm_level();                                                            \
    if (level > 0 && byoc_q_vbmi_() &&                                                         \
        byoc_qmaxpool_vbmi_fits_(H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW))               \
      level = 3; /* byoc_qmaxpool_vbmi_ */                                                     \
    BYOC_Q_SPLIT_(nt, t, NAME##_part_(x, y, N * C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, level, t, nt)); \
  }

BYOC_DEFINE_QLUT(byoc_qlut_u8_u8, uint8_t, uint8_t)
BYOC_DEFINE_QLUT(byoc_qlut_u8_i8, uint8_t, int8_t)
BYOC_DEFINE_QLUT(byoc_qlut_i8_u8, int8_t, uint8_t)
BYOC_DEFINE_QLUT(byoc_qlut_i8_i8, int8_t, int8_t)
BYOC_DEFINE_QADD(byoc_qadd_u8_u8_u8, uint8_t, uint8_t, uint8_t, 0, 255)
BYOC_DEFINE_QADD(byoc_qadd_u8_u8_i8, uint8_t, uint8_t, int8_t, -128, 127)
BYOC_DEFINE_QADD(byoc_qadd_u8_i8_u8, uint8_t, int8_t, uint8_t, 0, 255)
BYOC_DEFINE_QADD(byoc_qadd_u8_i8_i8, uint8_t, int8_t, int8_t, -128, 127)
BYOC_DEFINE_QADD(byoc_qadd_i8_u8_u8, int8_t, uint8_t, uint8_t, 0, 255)
BYOC_DEFINE_QADD(byoc_qadd_i8_u8_i8, int8_t, uint8_t, int8_t, -128, 127)
BYOC_DEFINE_QADD(byoc_qadd_i8_i8_u8, int8_t, int8_t, uint8_t, 0, 255)
BYOC_DEFINE_QADD(byoc_qadd_i8_i8_i8, int8_t, int8_t, int8_t, -128, 127)
BYOC_DEFINE_QMAXPOOL(byoc_qmaxpool_u8, uint8_t)
BYOC_DEFINE_QMAXPOOL(byoc_qmaxpool_i8, int8_t)

#endif /* BYOC_QKERNELS_H_ */
