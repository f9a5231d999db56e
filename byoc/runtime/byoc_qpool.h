/*
 * byoc_qpool.h — int8 average pooling of the QDQ composite `qavgpool` (issue #13).
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
                           int64_t DH, int64_t DW, double unit, float ys, int32_t zy, int64_t t, \
                           int64_t nt) {                                                        \
    const float qlo = (float)(QMIN) - (float)zy, qhi = (float)(QMAX) - (float)zy;              \
    for (int64_t nc = NC * t / nt; nc < NC * (t + 1) / nt; ++nc) {                             \
      const uint8_t* xc = (const uint8_t*)(x + nc * H * W);                                    \
      YT* yc = y + nc * OH * OW;                                                               \
      if (KH == H && KW == W && OH == 1 && OW == 1 && PT == 0 && PL == 0) {                    \
        yc[0] = (YT)byoc_qpool_out_(byoc_qpool_row_sum_(xc, table, H * W), unit, counts[0], ys, \
                                    qlo, qhi, zy);                                             \
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
                                     YT* y, int64_t N, int64_t C, int64_t H, int64_t W,        \
                                     int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t SH, \
                                     int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, \
                                     int32_t exponent, float ys, int32_t zy) {                 \
    const double unit = ldexp(1.0, exponent);                                                  \
    const int32_t nt = byoc_threads_for(N * C * OH * OW * KH * KW, BYOC_Q_EW_GRAIN);           \
    BYOC_Q_SPLIT_(nt, t, NAME##_part_(x, table, counts, y, N * C, H, W, KH, KW, OH, OW, SH, SW, \
                                      PT, PL, DH, DW, unit, ys, zy, t, nt));                   \
  }

BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_u8_u8, uint8_t, uint8_t, 0, 255)
BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_u8_i8, uint8_t, int8_t, -128, 127)
BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_i8_u8, int8_t, uint8_t, 0, 255)
BYOC_DEFINE_QAVGPOOL(byoc_qavgpool_i8_i8, int8_t, int8_t, -128, 127)

#endif /* BYOC_QPOOL_H_ */
