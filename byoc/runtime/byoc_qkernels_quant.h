/*
 * byoc_qkernels_quant.h — quantize (f32 -> u8/i8) and dequantize (u8/i8 -> f32), per tensor
 * or per axis. Part of byoc_qkernels.h.
 */
#ifndef BYOC_QKERNELS_QUANT_H_
#define BYOC_QKERNELS_QUANT_H_

#include "byoc_qkernels_base.h"
#include "byoc_qkernels_gemm.h"

/* quantize / dequantize, per tensor or per axis: element (o, c, i) of the (n / (CH * inner),
 * CH, inner) view uses scale[c], zp[c]. A row of `inner` elements shares them. */
static inline float byoc_q_quantize1_(float x, float scale, float qlo, float qhi) {
  float v = x / scale;
  v = v < qlo ? qlo : v;
  v = v > qhi ? qhi : v;
  return byoc_q_round_(v != v ? 0.0f : v);
}

#ifdef BYOC_Q_AVX2
#define BYOC_Q_512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))

/* Lanes of f32 already divided by the output scale, as the output's integers before they are
 * narrowed: NaN -> 0, clamped to [vlo, vhi], rounded (cvtps in the default mode: to nearest
 * even, as byoc_q_round_), plus the zero point vz. */
static BYOC_Q_AVX2 inline __m256i byoc_q_saturate256_(__m256 v, __m256 vlo, __m256 vhi, __m256i vz) {
  v = _mm256_andnot_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), v);
  v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), vz);
}
static BYOC_Q_512 inline __m512i byoc_q_saturate512_(__m512 v, __m512 vlo, __m512 vhi, __m512i vz) {
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
  v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), vz);
}

/* The AVX2 part of a quantize row: the elements it did (a multiple of 8); NaN -> 0 first, as the
 * scalar code does. _mm256_div_ps divides exactly as the scalar division does. */
#define BYOC_QUANTIZE_AVX2_FN(NAME, YT, PACK)                                                   \
  static BYOC_Q_AVX2 int64_t NAME##_avx2_(const float* x, float scale, int32_t z, YT* y,       \
                                          int64_t len, float qlo, float qhi) {                 \
    const __m256 vs = _mm256_set1_ps(scale), vlo = _mm256_set1_ps(qlo), vhi = _mm256_set1_ps(qhi); \
    const __m256i vz = _mm256_set1_epi32(z);                                                   \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= len; i += 8) {                                                             \
      const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), vs);                              \
      const __m256i r = byoc_q_saturate256_(v, vlo, vhi, vz);                                  \
      __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));  \
      _mm_storel_epi64((__m128i*)(y + i), PACK(w, w));                                         \
    }                                                                                          \
    return i;                                                                                  \
  }
/* 16 lanes on 512-bit vectors (the VNNI level's CPUs): the same division, NaN -> 0, clamp and
 * rounding; vpmov[u]sdb narrows the clamped integers: identical bytes. */
#define BYOC_QUANTIZE_AVX512_FN(NAME, YT)                                                       \
  static BYOC_Q_512 int64_t NAME##_avx512_(const float* x, float scale, int32_t z, YT* y,      \
                                           int64_t len, float qlo, float qhi) {                \
    const __m512 vs = _mm512_set1_ps(scale), vlo = _mm512_set1_ps(qlo), vhi = _mm512_set1_ps(qhi); \
    const __m512i vz = _mm512_set1_epi32(z);                                                   \
    int64_t i = 0;                                                                             \
    for (; i + 16 <= len; i += 16) {                                                           \
      const __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), vs);                              \
      const __m512i r = byoc_q_saturate512_(v, vlo, vhi, vz);                                  \
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

BYOC_DEFINE_QUANTIZE(byoc_quantize_u8, uint8_t, 0, 255, _mm_packus_epi16)
BYOC_DEFINE_QUANTIZE(byoc_quantize_i8, int8_t, -128, 127, _mm_packs_epi16)
BYOC_DEFINE_DEQUANTIZE(byoc_dequantize_u8, uint8_t)
BYOC_DEFINE_DEQUANTIZE(byoc_dequantize_i8, int8_t)

#endif /* BYOC_QKERNELS_QUANT_H_ */
