/*
 * byoc_qkernels_gemm.h — the int8 GEMM paths: baseline C and AVX2 on the int16 form,
 * AVX-512 VNNI on the u8 x s8 form, the activation packing (im2col) they read, and the
 * run-time choice between them (byoc_qgemm_level). Part of byoc_qkernels.h.
 */
#ifndef BYOC_QKERNELS_GEMM_H_
#define BYOC_QKERNELS_GEMM_H_

#include "byoc_qkernels_base.h"

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
  if (BYOC_HAS_AVX512_("avx512vnni") && BYOC_HAS_AVX512_("avx512vl") &&
      BYOC_HAS_AVX512_("avx512bw"))
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

#endif /* BYOC_QKERNELS_GEMM_H_ */
