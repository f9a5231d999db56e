/*
 * byoc_kernels_image.h — the image kernels besides conv2d: conv2d_transpose, resize2d and
 * local response normalization. Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_IMAGE_H_
#define BYOC_KERNELS_IMAGE_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"
#include "byoc_kernels_conv.h"

/* ---- conv2d_transpose -------------------------------------------------------- */

/*
 * Transposed convolution, data NCHW, weight (C, O/G, KH, KW) (nn.conv2d_transpose):
 * per image and group, cols[m, p] = sum_c w[c, m] * x[c, p] (m = (o, kh, kw),
 * p = input pixel, c over the group's input channels, in order) into the
 * scratch, then each column is added into the output pixel it lands on
 * (oy = iy*SH - PT + kh*DH, ox = ix*SW - PL + kw*DW; outside the cropped
 * output: dropped), in order of (kh, kw, iy, ix) per output channel.
 * Scratch: (O/G)*KH*KW*H*W floats. Threads split the rows m of cols, then
 * the output channels. cols is a 1x1 convolution of the image with the weights transposed
 * (M x CG): it goes through conv2d's register tiles (byoc_conv2d_run_; every sum in order of
 * c, fused multiply-adds where the CPU has them), block by block of rows m whose transposed
 * weights fit BYOC_CONVT_WT floats on the stack (byoc_conv2d_transpose_block_); only a
 * group of more than BYOC_CONVT_WT input channels takes the row loop below (a multiply and
 * an add a step, 4 rows at a time). A DB text detector's 2x2 stride-2 upsampling, 24 -> 24
 * channels over 80x80: 3.3 ms of cols in the row loop (it stores every partial sum), 0.2 ms
 * through the tiles; a YOLOv8 segmenter's, 128 -> 128 over 80x80 (4 blocks of 128 rows):
 * 160 ms in the row loop, 12.5 ms through the tiles (onnxruntime 5.4 ms).
 */
#define BYOC_CONVT_WT 16384
BYOC_KERNEL void byoc_conv2d_transpose_cols_(const float* restrict x, const float* restrict w,
                                             float* restrict cols, int64_t CG, int64_t M,
                                             int64_t P, int64_t m0, int64_t m1) {
  enum { TP = 512 };
  for (int64_t p0 = 0; p0 < P; p0 += TP) {
    const int64_t np = P - p0 < TP ? P - p0 : TP;
    int64_t m = m0;
    for (; m + 4 <= m1; m += 4) {
      float* r0 = cols + m * P + p0;
      float* r1 = r0 + P;
      float* r2 = r1 + P;
      float* r3 = r2 + P;
      for (int64_t j = 0; j < np; ++j) r0[j] = r1[j] = r2[j] = r3[j] = 0.0f;
      for (int64_t c = 0; c < CG; ++c) {
        const float* xc = x + c * P + p0;
        const float w0 = w[c * M + m], w1 = w[c * M + m + 1], w2 = w[c * M + m + 2],
                    w3 = w[c * M + m + 3];
        for (int64_t j = 0; j < np; ++j) {
          const float v = xc[j];
          r0[j] += w0 * v;
          r1[j] += w1 * v;
          r2[j] += w2 * v;
          r3[j] += w3 * v;
        }
      }
    }
    for (; m < m1; ++m) {
      float* r0 = cols + m * P + p0;
      for (int64_t j = 0; j < np; ++j) r0[j] = 0.0f;
      for (int64_t c = 0; c < CG; ++c) {
        const float* xc = x + c * P + p0;
        const float w0 = w[c * M + m];
        for (int64_t j = 0; j < np; ++j) r0[j] += w0 * xc[j];
      }
    }
  }
}

static inline void byoc_conv2d_transpose_add_(const float* restrict cols, float* restrict y,
                                              int64_t H, int64_t W, int64_t KH, int64_t KW,
                                              int64_t OH, int64_t OW, int64_t SH, int64_t SW,
                                              int64_t PT, int64_t PL, int64_t DH, int64_t DW,
                                              int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    float* yo = y + o * OH * OW;
    for (int64_t i = 0; i < OH * OW; ++i) yo[i] = 0.0f;
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float* col = cols + ((o * KH + kh) * KW + kw) * H * W;
        /* input columns whose output column lies in [0, OW) */
        const int64_t shift = kw * DW - PL;
        int64_t lo = shift >= 0 ? 0 : (-shift + SW - 1) / SW;
        int64_t hi = OW - 1 - shift < 0 ? 0 : (OW - 1 - shift) / SW + 1;
        hi = hi < W ? hi : W;
        lo = lo < hi ? lo : hi;
        for (int64_t iy = 0; iy < H; ++iy) {
          const int64_t oy = iy * SH - PT + kh * DH;
          if (oy < 0 || oy >= OH) continue;
          float* yr = yo + oy * OW;
          const float* cr = col + iy * W;
          if (SW == 1) {
            for (int64_t ix = lo; ix < hi; ++ix) yr[ix + shift] += cr[ix];
          } else {
            for (int64_t ix = lo; ix < hi; ++ix) yr[ix * SW + shift] += cr[ix];
          }
        }
      }
    }
  }
}

/* Rows of cols one pass of conv2d's tiles computes: all M when their transposed weights fit
 * BYOC_CONVT_WT floats, else as many as fit, a multiple of 8 (whole register tiles) when
 * that is at least 8; 0 when not one row fits (the row loop). */
static inline int64_t byoc_conv2d_transpose_block_(int64_t M, int64_t CG) {
  if (M * CG <= BYOC_CONVT_WT) return M;
  const int64_t rows = BYOC_CONVT_WT / CG;
  return rows >= 8 ? rows - rows % 8 : rows;
}

static inline BYOC_MAYBE_UNUSED void byoc_conv2d_transpose_f32(
    const float* restrict x, const float* restrict w, float* restrict y, float* restrict scratch,
    int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,
    int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G) {
  const int64_t CG = C / G, OG = O / G, M = OG * KH * KW, P = H * W;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      const float* xg = x + (n * C + g * CG) * P;
      const float* wg = w + g * CG * M;
      float* yg = y + (n * O + g * OG) * OH * OW;
      const int64_t MB = byoc_conv2d_transpose_block_(M, CG);
      if (MB > 0 && !(M == 1 && CG == 1)) {
        /* per block: wt[m, c] = wg[c, m0 + m]; the 1x1 conv reads the image in place (no
           scratch) and writes rows [m0, m0 + mb) of cols */
        float wt[BYOC_CONVT_WT];
        for (int64_t m0 = 0; m0 < M; m0 += MB) {
          const int64_t mb = M - m0 < MB ? M - m0 : MB;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t m = 0; m < mb; ++m) wt[m * CG + c] = wg[c * M + m0 + m];
          byoc_conv2d_run_(xg, wt, scratch + m0 * P, NULL, 1, CG, H, W, mb, 1, 1, H, W, 1, 1, 0, 0, 1, 1, 1, NULL);
        }
      } else {
        const int32_t nt = byoc_threads_for(CG * M * P, BYOC_PAR_GRAIN);
        BYOC_SPLIT_(nt, t, byoc_conv2d_transpose_cols_(xg, wg, scratch, CG, M, P, M * t / nt, M * (t + 1) / nt));
      }
      const int32_t nt = byoc_threads_for(M * P, 4 * BYOC_PAR_GRAIN);
      BYOC_SPLIT_(nt, t, byoc_conv2d_transpose_add_(scratch, yg, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, OG * t / nt, OG * (t + 1) / nt));
    }
  }
}

/* ---- resize2d ------------------------------------------------------------------ */

/*
 * nn.resize2d (NCHW), separable as the reference is: along H, then along W,
 * in double, rounded to float once at the end. Per axis the lowering passes a
 * table computed with the reference's own code (byoc/interpreters/kernels.py):
 * nearest (`linear` 0): the source index of each output index (the identity
 * for an axis left as it is); linear: the two source indices and the weight w
 * of the second, as the bits of a double; the value is a*(1-w) + b*w.
 */
static inline double byoc_f64_bits_(int64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

static inline void byoc_resize2d_rows_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int32_t hlin,
                                       const int64_t* hlo, const int64_t* hhi, const int64_t* hwt,
                                       int32_t wlin, const int64_t* wlo, const int64_t* whi,
                                       const int64_t* wwt, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) { /* r = (channel, output row) */
    const int64_t c = r / OH, oh = r % OH;
    const float* xa = x + (c * H + hlo[oh]) * W;
    float* yr = y + r * OW;
    if (!hlin && !wlin) {
      for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = xa[wlo[ow]];
      continue;
    }
    if (!hlin) { /* W only */
      for (int64_t ow = 0; ow < OW; ++ow) {
        const double t = byoc_f64_bits_(wwt[ow]);
        yr[ow] = (float)((double)xa[wlo[ow]] * (1.0 - t) + (double)xa[whi[ow]] * t);
      }
      continue;
    }
    const float* xb = x + (c * H + hhi[oh]) * W;
    const double s = byoc_f64_bits_(hwt[oh]), s1 = 1.0 - s;
    if (!wlin) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t i = wlo[ow];
        yr[ow] = (float)((double)xa[i] * s1 + (double)xb[i] * s);
      }
      continue;
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t i = wlo[ow], j = whi[ow];
      const double t = byoc_f64_bits_(wwt[ow]);
      const double a = (double)xa[i] * s1 + (double)xb[i] * s;
      const double b = (double)xa[j] * s1 + (double)xb[j] * s;
      yr[ow] = (float)(a * (1.0 - t) + b * t);
    }
  }
}

static inline BYOC_MAYBE_UNUSED void byoc_resize2d_f32(
    const float* restrict x, float* restrict y, int64_t NC, int64_t H, int64_t W, int64_t OH,
    int64_t OW, int32_t hlin, const int64_t* hlo, const int64_t* hhi, const int64_t* hwt,
    int32_t wlin, const int64_t* wlo, const int64_t* whi, const int64_t* wwt) {
  const int64_t rows = NC * OH;
  const int32_t nt = byoc_threads_for(rows * OW * (1 + 2 * (hlin + wlin)), 2 * BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_resize2d_rows_(x, y, H, W, OH, OW, hlin, hlo, hhi, hwt, wlin, wlo, whi, wwt, rows * t / nt, rows * (t + 1) / nt));
}

/* ---- lrn ------------------------------------------------------------------------- */

/*
 * Local response normalisation across the middle dim of an (outer, n, inner)
 * view (nn.lrn): y = x / (bias + alpha_n * s)^beta, s the float sum of x^2
 * over the window [i - (size-1)/2, i + size/2] clipped to [0, n), summed from
 * its first element, as the reference does; alpha_n = alpha / size.
 */
static inline void byoc_lrn_rows_(const float* restrict x, float* restrict y, int64_t n,
                                  int64_t inner, int64_t size, float alpha_n, float bias,
                                  float beta, int64_t r0, int64_t r1) {
  const int64_t before = (size - 1) / 2;
  for (int64_t r = r0; r < r1; ++r) { /* r = (o, i): the window reads x only */
    const int64_t o = r / n, i = r % n;
    const float* xo = x + o * n * inner;
    float* yr = y + r * inner;
    for (int64_t p = 0; p < inner; ++p) yr[p] = 0.0f;
    for (int64_t k = 0; k < size; ++k) {
      const int64_t j = i + k - before;
      if (j < 0 || j >= n) continue;
      const float* xr = xo + j * inner;
      for (int64_t p = 0; p < inner; ++p) yr[p] += xr[p] * xr[p];
    }
    const float* xi = xo + i * inner;
    for (int64_t p = 0; p < inner; ++p) yr[p] = xi[p] / powf(bias + alpha_n * yr[p], beta);
  }
}

static inline BYOC_MAYBE_UNUSED void byoc_lrn_f32(const float* restrict x, float* restrict y,
                                                  int64_t outer, int64_t n, int64_t inner,
                                                  int64_t size, float alpha_n, float bias,
                                                  float beta) {
  const int64_t rows = outer * n;
  const int32_t nt = byoc_threads_for(rows * inner * (size + 16), BYOC_PAR_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_lrn_rows_(x, y, n, inner, size, alpha_n, bias, beta, rows * t / nt, rows * (t + 1) / nt));
}

#endif /* BYOC_KERNELS_IMAGE_H_ */
