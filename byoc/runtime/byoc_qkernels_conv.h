/*
 * byoc_qkernels_conv.h — the int8 conv2d, depthwise conv2d and dense kernels, one per
 * (activation type, output type), and the requantization of their accumulator rows.
 * Part of byoc_qkernels.h.
 */
#ifndef BYOC_QKERNELS_CONV_H_
#define BYOC_QKERNELS_CONV_H_

#include "byoc_qkernels_base.h"
#include "byoc_qkernels_gemm.h"

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
  return level == 2 && BYOC_HAS_AVX512_("avx512vbmi");
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
    BYOC_SPLIT_(nt, t, NAME##_part_(x, w, bias, mult, y, scratch + t * per, C, H, W, KH, KW, OH, \
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

#endif /* BYOC_QKERNELS_CONV_H_ */
