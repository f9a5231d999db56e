/*
 * byoc_qpool.h — int8 average pooling of the QDQ composite `qavgpool`, and `qconcat` in one
 * pass.
 *
 * quantize(avg_pool2d | global_avg_pool2d(dequantize(x))), computed as byoc's reference does it
 * (byoc/targets/qdq.py, "qavgpool", has the proof): the window's f64 sum of the dequantized
 * values is exact in any order, so it is the integer sum of table[byte] (d(byte) / 2^e, int64)
 * times 2^e; then, per output, the reference's float steps: / count in f64, to f32, quantize
 * (f32 division by the scale, clamp to the type's range minus the zero point, round half to
 * even, + zero point). Integer sums and IEEE operations only: the same bytes on every CPU, at
 * every dispatch level and thread count (planes split across the team).
 */
#ifndef BYOC_QPOOL_H_
#define BYOC_QPOOL_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "byoc_qkernels.h"

/* The integer sum of table[x] over an n-element row: four accumulators, no order effect. */
static inline int64_t byoc_qpool_row_sum_(const uint8_t* x, const int64_t* table, int64_t n) {
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += table[x[i]];
    s1 += table[x[i + 1]];
    s2 += table[x[i + 2]];
    s3 += table[x[i + 3]];
  }
  for (; i < n; ++i) s0 += table[x[i]];
  return (s0 + s1) + (s2 + s3);
}

/*
 * The fast form of the same integer sum (AVX-512 VBMI): table[b] = m * u(b) + c + ra[b] + rb[b]
 * for every byte b, u(b) = b ^ flip (the value + 128 for i8, the value for u8), ra, rb bytes
 * (qdq.py's `linear_split`: d(q) / 2^e is (q - z) * s / 2^e rounded to 24 bits, so it is
 * linear in q up to a rounding residual of at most 128). Sum over a row = m * sum(u) + c * n +
 * sum(ra) + sum(rb): vpsadbw sums the bytes, vpermi2b looks ra and rb up, 64 bytes a step.
 * Integer sums: exactly the scalar loop's value. Returns the bytes it did (a multiple of 64).
 */
#ifdef BYOC_Q_VBMI
static BYOC_Q_VBMI int64_t byoc_qpool_sum_vbmi_(const uint8_t* x, int64_t n, const uint8_t* r, int with_rb,
                                                uint8_t flip, int64_t* sum_u, int64_t* sum_r) {
  const __m512i a0 = _mm512_loadu_si512((const void*)r), a1 = _mm512_loadu_si512((const void*)(r + 64));
  const __m512i a2 = _mm512_loadu_si512((const void*)(r + 128)), a3 = _mm512_loadu_si512((const void*)(r + 192));
  const __m512i b0 = _mm512_loadu_si512((const void*)(r + 256)), b1 = _mm512_loadu_si512((const void*)(r + 320));
  const __m512i b2 = _mm512_loadu_si512((const void*)(r + 384)), b3 = _mm512_loadu_si512((const void*)(r + 448));
  const __m512i zero = _mm512_setzero_si512(), f = _mm512_set1_epi8((char)flip);
  __m512i su = zero, sr = zero;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512((const void*)(x + i));
    const __mmask64 high = _mm512_movepi8_mask(v);
    su = _mm512_add_epi64(su, _mm512_sad_epu8(_mm512_xor_si512(v, f), zero));
    const __m512i ra = _mm512_mask_blend_epi8(high, _mm512_permutex2var_epi8(a0, v, a1),
                                              _mm512_permutex2var_epi8(a2, v, a3));
    sr = _mm512_add_epi64(sr, _mm512_sad_epu8(ra, zero));
    if (with_rb) {
      const __m512i rb = _mm512_mask_blend_epi8(high, _mm512_permutex2var_epi8(b0, v, b1),
                                                _mm512_permutex2var_epi8(b2, v, b3));
      sr = _mm512_add_epi64(sr, _mm512_sad_epu8(rb, zero));
    }
  }
  *sum_u = _mm512_reduce_add_epi64(su);
  *sum_r = _mm512_reduce_add_epi64(sr);
  return i;
}
#endif

/* The integer sum of table[x] over a row, by the fast form where `r` is given (NULL: none). */
static inline int64_t byoc_qpool_plane_sum_(const uint8_t* x, const int64_t* table, int64_t n,
                                            const uint8_t* r, int with_rb, int64_t m, int64_t c,
                                            uint8_t flip, int vbmi) {
#ifdef BYOC_Q_VBMI
  if (vbmi && r != NULL && n >= 64) {
    int64_t su = 0, sr = 0;
    const int64_t done = byoc_qpool_sum_vbmi_(x, n, r, with_rb, flip, &su, &sr);
    return m * su + c * done + sr + byoc_qpool_row_sum_(x + done, table, n - done);
  }
#endif
  (void)r, (void)with_rb, (void)m, (void)c, (void)flip, (void)vbmi;
  return byoc_qpool_row_sum_(x, table, n);
}

/* One output: sum * 2^e / count in f64, to f32, quantize (byoc_q_quantize1_, as the lone
 * quantize kernel). */
static inline int32_t byoc_qpool_out_(int64_t sum, double unit, int32_t count, float ys, float qlo,
                                      float qhi, int32_t zy) {
  const double mean = ((double)sum * unit) / (double)count;
  return (int32_t)byoc_q_quantize1_((float)mean, ys, qlo, qhi) + zy;
}

#define BYOC_DEFINE_QAVGPOOL(NAME, XT, YT, QMIN, QMAX)                                          \
  static void NAME##_part_(const XT* x, const int64_t* table, const int32_t* counts, YT* y,    \
                           int64_t NC, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OH, \
                           int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,          \
                           int64_t DH, int64_t DW, double unit, float ys, int32_t zy,           \
                           const uint8_t* r, int with_rb, int64_t m, int64_t c, int vbmi,       \
                           int64_t t, int64_t nt) {                                             \
    const float qlo = (float)(QMIN) - (float)zy, qhi = (float)(QMAX) - (float)zy;              \
    for (int64_t nc = NC * t / nt; nc < NC * (t + 1) / nt; ++nc) {                             \
      const uint8_t* xc = (const uint8_t*)(x + nc * H * W);                                    \
      YT* yc = y + nc * OH * OW;                                                               \
      if (KH == H && KW == W && OH == 1 && OW == 1 && PT == 0 && PL == 0) {                    \
        const int64_t sum = byoc_qpool_plane_sum_(xc, table, H * W, r, with_rb, m, c,          \
                                                  (uint8_t)((XT)-1 < 0 ? 0x80 : 0), vbmi);     \
        yc[0] = (YT)byoc_qpool_out_(sum, unit, counts[0], ys, qlo, qhi, zy);                   \
        continue;                                                                              \
      }                                                                                        \
      for (int64_t oh = 0; oh < OH; ++oh)                                                      \
        for (int64_t ow = 0; ow < OW; ++ow) {                                                  \
          int64_t sum = 0;                                                                     \
          for (int64_t i = 0; i < KH; ++i) {                                                   \
            const int64_t ih = oh * SH - PT + i * DH;                                          \
            if (ih < 0 || ih >= H) continue;                                                   \
            const uint8_t* row = xc + ih * W;                                                  \
            if (DW == 1) {                                                                     \
              int64_t j0 = ow * SW - PL, j1 = j0 + KW;                                         \
              j0 = j0 < 0 ? 0 : j0;                                                            \
              j1 = j1 > W ? W : j1;                                                            \
              if (j1 > j0) sum += byoc_qpool_row_sum_(row + j0, table, j1 - j0);               \
              continue;                                                                        \
            }                                                                                  \
            for (int64_t j = 0; j < KW; ++j) {                                                 \
              const int64_t iw = ow * SW - PL + j * DW;                                        \
              if (iw >= 0 && iw < W) sum += table[row[iw]];                                    \
            }                                                                                  \
          }                                                                                    \
          yc[oh * OW + ow] = (YT)byoc_qpool_out_(sum, unit, counts[oh * OW + ow], ys, qlo, qhi, zy); \
        }                                                                                      \
    }                                                                                          \
  }                                                                                            \
  static BYOC_MAYBE_UNUSED void NAME(const XT* x, const int64_t* table, const int32_t* counts,  \
                                     const uint8_t* rtab, YT* y, int64_t N, int64_t C, int64_t H, int64_t W, \
                                     int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t SH, \
                                     int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, \
                                     int32_t exponent, float ys, int32_t zy, int32_t split,    \
                                     int64_t m, int64_t c) {                                   \
    const double unit = ldexp(1.0, exponent);                                                  \
    const int vbmi = split > 0 && byoc_qgemm_level() > 0 && byoc_q_vbmi_();                    \
    const int32_t nt = byoc_threads_for(N * C * OH * OW * KH * KW, BYOC_Q_EW_GRAIN);           \
    BYOC_SPLIT_(nt, t, NAME##_part_(x, table, counts, y, N * C, H, W, KH, KW, OH, OW, SH, SW, \
                                      PT, PL, DH, DW, unit, ys, zy, split > 0 ? rtab : NULL,   \
                                      split > 1, m, c, vbmi, t, nt));                          \
  }

BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_u8_u8, uint8_t, uint8_t, 0, 255)
BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_u8_i8, uint8_t, int8_t, -128, 127)
BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_i8_u8, int8_t, uint8_t, 0, 255)
BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_i8_i8, int8_t, int8_t, -128, 127)

/*
 * qconcat in one pass (2 to 4 inputs): each input's rows go straight into their place in y,
 * through the input's table (bit k of lut_mask) or copied — no table output to copy again;
 * bit 8 + k says input k is already in its slice (lower-to-c computed it in place) and is
 * skipped (its pointer is then inside y and never read).
 * Input k is (outer, inner_k) bytes; y is (outer, sum inner_k). Every byte is a lookup or a
 * copy of the same byte, whatever thread does it (each input row split by elements).
 */
static void byoc_qconcat_part_(const uint8_t* const* xs, const int64_t* inner, int32_t k_n,
                               const uint8_t* tables, int32_t lut_mask, uint8_t* y, int64_t outer,
                               int vbmi, int64_t t, int64_t nt) {
  int64_t total = 0;
  for (int32_t k = 0; k < k_n; ++k) total += inner[k];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off = 0;
    for (int32_t k = 0; k < k_n; ++k) {
      const int64_t i0 = inner[k] * t / nt, i1 = inner[k] * (t + 1) / nt;
      const uint8_t* src = xs[k] + o * inner[k] + i0;
      uint8_t* dst = y + o * total + off + i0;
      if (lut_mask >> (8 + k) & 1) {
        /* already in place: its producer wrote this slice */
      } else if (lut_mask >> k & 1) {
        byoc_qlut_row_(src, tables + 256 * k, dst, i1 - i0, vbmi);
      } else if (i1 > i0) {
        memcpy(dst, src, (size_t)(i1 - i0));
      }
      off += inner[k];
    }
  }
}

static void byoc_qconcat_(const uint8_t* const* xs, const int64_t* inner, int32_t k_n,
                          const uint8_t* tables, int32_t lut_mask, uint8_t* y, int64_t outer) {
  const int vbmi = (lut_mask & 0xFF) != 0 && byoc_qgemm_level() > 0 && byoc_q_vbmi_();
  int64_t total = 0, work = 0;
  for (int32_t k = 0; k < k_n; ++k) {
    total += inner[k];
    if (!(lut_mask >> (8 + k) & 1)) work += inner[k];
  }
  const int32_t nt = byoc_threads_for(outer * work, BYOC_Q_EW_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_qconcat_part_(xs, inner, k_n, tables, lut_mask, y, outer, vbmi, t, nt));
}

/* The entry points, by number of inputs; pointers as void: inputs may be i8 or u8. */
static BYOC_MAYBE_UNUSED void byoc_qconcat2(const void* x0, const void* x1, const uint8_t* tables,
                                            void* y, int64_t outer, int64_t n0, int64_t n1,
                                            int32_t lut_mask) {
  const uint8_t* xs[2] = {(const uint8_t*)x0, (const uint8_t*)x1};
  const int64_t inner[2] = {n0, n1};
  byoc_qconcat_(xs, inner, 2, tables, lut_mask, (uint8_t*)y, outer);
}
static BYOC_MAYBE_UNUSED void byoc_qconcat3(const void* x0, const void* x1, const void* x2,
                                            const uint8_t* tables, void* y, int64_t outer,
                                            int64_t n0, int64_t n1, int64_t n2, int32_t lut_mask) {
  const uint8_t* xs[3] = {(const uint8_t*)x0, (const uint8_t*)x1, (const uint8_t*)x2};
  const int64_t inner[3] = {n0, n1, n2};
  byoc_qconcat_(xs, inner, 3, tables, lut_mask, (uint8_t*)y, outer);
}
static BYOC_MAYBE_UNUSED void byoc_qconcat4(const void* x0, const void* x1, const void* x2,
                                            const void* x3, const uint8_t* tables, void* y,
                                            int64_t outer, int64_t n0, int64_t n1, int64_t n2,
                                            int64_t n3, int32_t lut_mask) {
  const uint8_t* xs[4] = {(const uint8_t*)x0, (const uint8_t*)x1, (const uint8_t*)x2, (const uint8_t*)x3};
  const int64_t inner[4] = {n0, n1, n2, n3};
  byoc_qconcat_(xs, inner, 4, tables, lut_mask, (uint8_t*)y, outer);
}

#endif /* BYOC_QPOOL_H_ */
