/*
 * byoc_kernels_conv_dot.h — the shape of a conv call (byoc_conv_geom_), and the conv of a
 * handful of output pixels in all, as dot products. byoc_conv2d_run_ (byoc_kernels_conv.h)
 * chooses it. Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_CONV_DOT_H_
#define BYOC_KERNELS_CONV_DOT_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"

/* The shape of one conv2d call, derived once (see byoc_conv2d_run_). */
typedef struct {
  int64_t C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G;
  int64_t CG, OG, WS, HP, WP, OW8, P;
} byoc_conv_geom_;

/*
 * Convolutions with a handful of output pixels in all (N * P <= BYOC_CONV_DOT_PIX; groups 1,
 * any padding: an audio model's STFT as a 1x256 conv over 3 frames, its small convs over 1-3
 * frames): a panel of transposed weights (the other paths) would be packed for a few pixels
 * and never reused. Here each pixel's window is gathered once into a contiguous column (its
 * padding as zeros, no padded copy of the image), and
 * every output is a dot product of its weight row, read in place, with the column: 4 pixels
 * at a time, an `omp simd` sum over k (lanes summed at the end; within the bound of any order
 * of the terms). Threads split the output channels; each output is computed by the same code
 * whatever the split, so results do not depend on the threads. The epilogue runs per image
 * and channel.
 */
#define BYOC_CONV_DOT_PIX 8

/* The least work a thread of the vectorised 1-D paths takes, in multiply-adds: one runs in
 * about an eighth of the time of BYOC_PAR_GRAIN's simple operations (a lane of a vector FMA),
 * so a thread gets about as much time, ~10 us, before a second one is woken (silero's STFT
 * conv, 0.2 M multiply-adds: 11 us on one thread, 39 us split in two on a loaded machine). */
#define BYOC_MAC_GRAIN (8 * BYOC_PAR_GRAIN)
#define BYOC_CONV_DOT_MAX_WS 2048

static inline int byoc_conv_dot_(const byoc_conv_geom_* g, int64_t N) {
  return g->G == 1 && N * g->P <= BYOC_CONV_DOT_PIX && g->WS <= BYOC_CONV_DOT_MAX_WS;
}

#ifdef _OPENMP
#define BYOC_CONV_DOT_SIMD_ BYOC_PRAGMA_(omp simd reduction(+ : a0, a1, a2, a3))
#else
#define BYOC_CONV_DOT_SIMD_
#endif

/* Output channels [o0, o1) of every image (x: N images read in place). */
BYOC_KERNEL void byoc_conv_dot_part_(const byoc_conv_geom_* g, const float* restrict x,
                                     const float* restrict w, float* restrict y, int64_t N,
                                     int64_t o0, int64_t o1, const byoc_epilogue_* ep) {
  float col[BYOC_CONV_DOT_PIX * BYOC_CONV_DOT_MAX_WS];
  const int64_t WS = g->WS, O = g->O, P = g->P, OW = g->OW, KH = g->KH, KW = g->KW;
  const int64_t H = g->H, W = g->W, image = g->C * H * W, T = N * P;
  for (int64_t t = 0; t < T; ++t) { /* the window of pixel t, zeros where it leaves the image */
    const int64_t n = t / P, p = t % P;
    const int64_t ih0 = p / OW * g->SH - g->PT, iw0 = p % OW * g->SW - g->PL;
    const float* xn = x + n * image;
    float* ct = col + t * WS;
    for (int64_t c = 0; c < g->C; ++c)
      for (int64_t kh = 0; kh < KH; ++kh) {
        const int64_t ih = ih0 + kh * g->DH;
        const int row = ih >= 0 && ih < H;
        const float* xr = xn + (c * H + (row ? ih : 0)) * W;
        float* cr = ct + (c * KH + kh) * KW;
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t iw = iw0 + kw * g->DW;
          cr[kw] = row && iw >= 0 && iw < W ? xr[iw] : 0.0f;
        }
      }
  }
  for (int64_t o = o0; o < o1; ++o) {
    const float* restrict wr = w + o * WS;
    for (int64_t t0 = 0; t0 < T; t0 += 4) {
      /* a last group of fewer than 4 pixels repeats its first column */
      const float* c0 = col + t0 * WS;
      const float* c1 = t0 + 1 < T ? c0 + WS : c0;
      const float* c2 = t0 + 2 < T ? c0 + 2 * WS : c0;
      const float* c3 = t0 + 3 < T ? c0 + 3 * WS : c0;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      BYOC_CONV_DOT_SIMD_
      for (int64_t k = 0; k < WS; ++k) {
        const float v = wr[k];
        a0 += v * c0[k];
        a1 += v * c1[k];
        a2 += v * c2[k];
        a3 += v * c3[k];
      }
      const float a[4] = {a0, a1, a2, a3};
      for (int64_t i = 0; i < 4 && t0 + i < T; ++i) {
        const int64_t n = (t0 + i) / P, p = (t0 + i) % P;
        y[n * O * P + o * P + p] = a[i];
      }
    }
    if (ep != NULL)
      for (int64_t n = 0; n < N; ++n) byoc_epilogue_run_(ep, o, y + n * O * P + o * P, P);
  }
}

#endif /* BYOC_KERNELS_CONV_DOT_H_ */
