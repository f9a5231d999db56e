/*
 * byoc_qkernels_fused.h — the fused int8 elementwise and pooling kernels (qlut, qadd,
 * qmaxpool). Part of byoc_qkernels.h.
 */
#ifndef BYOC_QKERNELS_FUSED_H_
#define BYOC_QKERNELS_FUSED_H_

#include "byoc_qkernels_base.h"
#include "byoc_qkernels_gemm.h"
#include "byoc_qkernels_quant.h"

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
  return BYOC_HAS_AVX512_("avx512vbmi") && BYOC_HAS_AVX512_("avx512bw");
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
  BYOC_SPLIT_(nt, t, byoc_qlut_part_(x, table, y, n, inner, CH, vbmi, t, nt));
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
      const __m256i r = byoc_q_saturate256_(_mm256_div_ps(v, vsy), vlo, vhi, vzy);             \
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); \
      _mm_storel_epi64((__m128i*)(y + i), BYOC_Q_PACK_##YT(w, w));                             \
    }                                                                                          \
    return i;                                                                                  \
  }
/* The same lanes on 512-bit vectors (AVX-512 F/BW, the VNNI level's CPUs): the same f32
 * operations one by one (explicit mul / add / div, no FMA), the same rounding (cvtps in the
 * default mode), saturated to bytes by vpmov[u]sdb after the clamp: identical bytes. */
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
      const __m512i r = byoc_q_saturate512_(_mm512_div_ps(v, vsy), vlo, vhi, vzy);             \
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
    BYOC_SPLIT_(nt, t, NAME##_part_(a, b, y, n * t / nt, n * (t + 1) / nt - n * t / nt, sa, za, \
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
  static BYOC_CLONES void NAME##_part_(const XT* x, XT* y, int64_t NC, int64_t H, int64_t W,  \
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
    BYOC_SPLIT_(nt, t, NAME##_part_(x, y, N * C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, level, t, nt)); \
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

#endif /* BYOC_QKERNELS_FUSED_H_ */
