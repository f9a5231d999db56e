/*
 * byoc_kernels_conv1d.h — the shape of a conv call (byoc_conv_geom_), and the convolutions
 * with few output pixels: 1-D rows whose vector lanes hold output channels (AVX2 and AVX-512),
 * and dot products for a handful of pixels in all. byoc_conv2d_run_ (byoc_kernels_conv.h)
 * chooses among them and the 2-D tiles. Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_CONV1D_H_
#define BYOC_KERNELS_CONV1D_H_

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
 * 1-D convolutions with short output rows (OH == 1 or OW == 1, no padding, groups 1, e.g. a
 * text CNN's 1xK convs over rows of 11-21 characters, a batch of 64 rows): a 16-pixel tile
 * of byoc_conv2d_part_ would leave most of its lanes empty (17 pixels: two tiles, 15 of 32
 * lanes used by the second). Here the vector lanes hold output channels instead: per panel of
 * 16 output channels, the weights transposed once per call into wp (WS x 16, zeros past O),
 * then for every image 6 pixels at a time,
 *   y[n, o, p] = sum_k wp[k][o] * x[n, base(p) + off[k]],  k = (c, kh, kw) in order,
 * in 12 vector registers (6 pixels x 16 channels); each output summed in order of k, a
 * multiply and an add a step (fused on CPUs with FMA, as the 2-D tile), whatever the threads
 * (which split the panels). The epilogue runs per image and channel on its P outputs.
 */
#define BYOC_CONV1D_MAX_WS 1024

/* Whether a conv takes the channel-lane path (see above). */
static inline int byoc_conv1d_lanes_(const byoc_conv_geom_* g, int direct) {
  if (!direct || g->G != 1 || (g->OH != 1 && g->OW != 1) || g->WS > BYOC_CONV1D_MAX_WS ||
      g->O < 8)
    return 0;
  const int64_t empty = (g->P + 15) / 16 * 16 - g->P;
  return 4 * empty > g->P; /* more than a fifth of the pixel tiles' lanes empty */
}

/* acc[i * 16 + j] = sum_k x[base[i] + off[k]] * wp[k * 16 + j] for 6 pixels i, 16 channels j. */
static inline __attribute__((always_inline)) void byoc_conv1d_tile_(
    const float* restrict x, const int64_t* restrict off, const int64_t* base,
    const float* restrict wp, int64_t WS, float* restrict acc) {
  byoc_v8f_ a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0};
  byoc_v8f_ b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0}, b4 = {0}, b5 = {0};
  const float *p0 = x + base[0], *p1 = x + base[1], *p2 = x + base[2];
  const float *p3 = x + base[3], *p4 = x + base[4], *p5 = x + base[5];
  for (int64_t k = 0; k < WS; ++k, wp += 16) {
    const int64_t o = off[k];
    byoc_v8f_ v0, v1;
    memcpy(&v0, wp, sizeof v0);
    memcpy(&v1, wp + 8, sizeof v1);
    a0 += p0[o] * v0;
    b0 += p0[o] * v1;
    a1 += p1[o] * v0;
    b1 += p1[o] * v1;
    a2 += p2[o] * v0;
    b2 += p2[o] * v1;
    a3 += p3[o] * v0;
    b3 += p3[o] * v1;
    a4 += p4[o] * v0;
    b4 += p4[o] * v1;
    a5 += p5[o] * v0;
    b5 += p5[o] * v1;
  }
  memcpy(acc, &a0, sizeof a0), memcpy(acc + 8, &b0, sizeof b0);
  memcpy(acc + 16, &a1, sizeof a1), memcpy(acc + 24, &b1, sizeof b1);
  memcpy(acc + 32, &a2, sizeof a2), memcpy(acc + 40, &b2, sizeof b2);
  memcpy(acc + 48, &a3, sizeof a3), memcpy(acc + 56, &b3, sizeof b3);
  memcpy(acc + 64, &a4, sizeof a4), memcpy(acc + 72, &b4, sizeof b4);
  memcpy(acc + 80, &a5, sizeof a5), memcpy(acc + 88, &b5, sizeof b5);
}

#ifdef BYOC_FMA
/* byoc_conv1d_tile_ with fused multiply-adds (AVX2 + FMA); called, not inlined. */
static BYOC_FMA BYOC_MAYBE_UNUSED void byoc_conv1d_tile_fma_(
    const float* restrict x, const int64_t* restrict off, const int64_t* base,
    const float* restrict wp, int64_t WS, float* restrict acc) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
  __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0;
  const float *p0 = x + base[0], *p1 = x + base[1], *p2 = x + base[2];
  const float *p3 = x + base[3], *p4 = x + base[4], *p5 = x + base[5];
  for (int64_t k = 0; k < WS; ++k, wp += 16) {
    const int64_t o = off[k];
    const __m256 v0 = _mm256_loadu_ps(wp), v1 = _mm256_loadu_ps(wp + 8);
    __m256 s = _mm256_broadcast_ss(p0 + o);
    a0 = _mm256_fmadd_ps(s, v0, a0);
    b0 = _mm256_fmadd_ps(s, v1, b0);
    s = _mm256_broadcast_ss(p1 + o);
    a1 = _mm256_fmadd_ps(s, v0, a1);
    b1 = _mm256_fmadd_ps(s, v1, b1);
    s = _mm256_broadcast_ss(p2 + o);
    a2 = _mm256_fmadd_ps(s, v0, a2);
    b2 = _mm256_fmadd_ps(s, v1, b2);
    s = _mm256_broadcast_ss(p3 + o);
    a3 = _mm256_fmadd_ps(s, v0, a3);
    b3 = _mm256_fmadd_ps(s, v1, b3);
    s = _mm256_broadcast_ss(p4 + o);
    a4 = _mm256_fmadd_ps(s, v0, a4);
    b4 = _mm256_fmadd_ps(s, v1, b4);
    s = _mm256_broadcast_ss(p5 + o);
    a5 = _mm256_fmadd_ps(s, v0, a5);
    b5 = _mm256_fmadd_ps(s, v1, b5);
  }
  _mm256_storeu_ps(acc, a0), _mm256_storeu_ps(acc + 8, b0);
  _mm256_storeu_ps(acc + 16, a1), _mm256_storeu_ps(acc + 24, b1);
  _mm256_storeu_ps(acc + 32, a2), _mm256_storeu_ps(acc + 40, b2);
  _mm256_storeu_ps(acc + 48, a3), _mm256_storeu_ps(acc + 56, b3);
  _mm256_storeu_ps(acc + 64, a4), _mm256_storeu_ps(acc + 72, b4);
  _mm256_storeu_ps(acc + 80, a5), _mm256_storeu_ps(acc + 88, b5);
}
#endif

/* Panels [q0, q1) of 16 output channels, every image (x: N images read in place). */
BYOC_KERNEL void byoc_conv1d_lanes_part_(const byoc_conv_geom_* g, const float* restrict x,
                                         const float* restrict w, float* restrict y, int64_t N,
                                         int64_t q0, int64_t q1, const byoc_epilogue_* ep) {
  enum { NR = 16, PR = 6 };
  float wp[BYOC_CONV1D_MAX_WS * NR] __attribute__((aligned(64)));
  int64_t off[BYOC_CONV1D_MAX_WS];
  float acc[PR * NR];
  const int64_t WS = g->WS, O = g->O, P = g->P, OW = g->OW, KH = g->KH, KW = g->KW;
  const int64_t plane = g->HP * g->WP, image = g->C * g->H * g->W;
#ifdef BYOC_FMA
  const int use_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  for (int64_t k = 0; k < WS; ++k) {
    const int64_t c = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
    off[k] = c * plane + kh * g->DH * g->WP + kw * g->DW;
  }
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t o0 = q * NR, nr = O - o0 < NR ? O - o0 : NR;
    for (int64_t k = 0; k < WS; ++k)
      for (int64_t j = 0; j < NR; ++j) wp[k * NR + j] = j < nr ? w[(o0 + j) * WS + k] : 0.0f;
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = x + n * image;
      float* yn = y + n * O * P;
      for (int64_t p0 = 0; p0 < P; p0 += PR) {
        const int64_t np = P - p0 < PR ? P - p0 : PR;
        int64_t base[PR];
        for (int64_t i = 0; i < PR; ++i) {
          const int64_t p = p0 + (i < np ? i : 0);
          base[i] = p / OW * g->SH * g->WP + p % OW * g->SW;
        }
#ifdef BYOC_FMA
        if (use_fma)
          byoc_conv1d_tile_fma_(xn, off, base, wp, WS, acc);
        else
#endif
          byoc_conv1d_tile_(xn, off, base, wp, WS, acc);
        for (int64_t j = 0; j < nr; ++j)
          for (int64_t i = 0; i < np; ++i) yn[(o0 + j) * P + p0 + i] = acc[i * NR + j];
      }
      if (ep != NULL)
        for (int64_t j = 0; j < nr; ++j) byoc_epilogue_run_(ep, o0 + j, yn + (o0 + j) * P, P);
    }
  }
}

#ifdef BYOC_FMA
/*
 * 1-D convolutions along a contiguous axis on AVX-512F CPUs (OH == 1 with SW == 1, or OW == 1
 * with SH == 1 over rows one float wide; groups 1; at least 32 pixels: a byte classifier's
 * K x 1 convs over 508 positions): the conv is a GEMM whose k-th row of the right operand is
 * the image itself from off[k] on, so no panel is packed:
 *   y[o, p] = sum_k w[o, k] * xs[off[k] + p],  k = (c, kh, kw) in order,
 * 6 output channels x 32 pixels in 12 registers of 16 lanes, loads of the last pixels masked.
 * Each output is the same chain of fused multiply-adds in order of k as in the AVX2 tile
 * (byoc_conv2d_tile_fma_), so the results are identical to it. Threads split the 6-channel
 * tiles.
 */
#define BYOC_CONV1D_WIDE_MAX_WS 8192
#define BYOC_CONV1D_AVX512 __attribute__((target("avx512f,avx2,fma")))

/* Whether a conv (its padded image xs) takes the AVX-512 contiguous-axis path above. */
static inline int byoc_conv1d_wide_(const byoc_conv_geom_* g) {
  if (g->G != 1 || g->P < 32 || g->WS > BYOC_CONV1D_WIDE_MAX_WS) return 0;
  const int along_w = g->OH == 1 && g->SW == 1;
  const int along_h = g->OW == 1 && g->SH == 1 && g->WP == 1;
  return (along_w || along_h) && BYOC_HAS_AVX512_("avx512f");
}

/* Output channels [o0, o1) of one image from xs (its padded channels). */
static BYOC_CONV1D_AVX512 BYOC_MAYBE_UNUSED void byoc_conv1d_wide_part_(
    const byoc_conv_geom_* g, const float* restrict xs, const float* restrict w,
    float* restrict y, int64_t o0, int64_t o1, const byoc_epilogue_* ep) {
  enum { MR = 6 };
  int64_t off[BYOC_CONV1D_WIDE_MAX_WS];
  const int64_t WS = g->WS, P = g->P, KH = g->KH, KW = g->KW;
  const int64_t plane = g->HP * g->WP;
  for (int64_t k = 0; k < WS; ++k) {
    const int64_t c = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
    off[k] = c * plane + kh * g->DH * g->WP + kw * g->DW;
  }
  for (int64_t o = o0; o < o1; o += MR) {
    const int64_t mr = o1 - o < MR ? o1 - o : MR;
    const float* w0 = w + o * WS;
    const float* w1 = mr > 1 ? w0 + WS : w0;
    const float* w2 = mr > 2 ? w0 + 2 * WS : w0;
    const float* w3 = mr > 3 ? w0 + 3 * WS : w0;
    const float* w4 = mr > 4 ? w0 + 4 * WS : w0;
    const float* w5 = mr > 5 ? w0 + 5 * WS : w0;
    for (int64_t p = 0; p < P; p += 32) {
      const int64_t np = P - p < 32 ? P - p : 32;
      const __mmask16 m0 = np >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << np) - 1u);
      const __mmask16 m1 = np >= 32 ? (__mmask16)0xFFFF
                           : np <= 16 ? (__mmask16)0
                                      : (__mmask16)((1u << (np - 16)) - 1u);
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
      __m512 h0 = a0, h1 = a0, h2 = a0, h3 = a0, h4 = a0, h5 = a0;
      const float* xp = xs + p;
      for (int64_t k = 0; k < WS; ++k) {
        const float* b = xp + off[k];
        const __m512 v0 = _mm512_maskz_loadu_ps(m0, b), v1 = _mm512_maskz_loadu_ps(m1, b + 16);
        __m512 s = _mm512_set1_ps(w0[k]);
        a0 = _mm512_fmadd_ps(s, v0, a0);
        h0 = _mm512_fmadd_ps(s, v1, h0);
        s = _mm512_set1_ps(w1[k]);
        a1 = _mm512_fmadd_ps(s, v0, a1);
        h1 = _mm512_fmadd_ps(s, v1, h1);
        s = _mm512_set1_ps(w2[k]);
        a2 = _mm512_fmadd_ps(s, v0, a2);
        h2 = _mm512_fmadd_ps(s, v1, h2);
        s = _mm512_set1_ps(w3[k]);
        a3 = _mm512_fmadd_ps(s, v0, a3);
        h3 = _mm512_fmadd_ps(s, v1, h3);
        s = _mm512_set1_ps(w4[k]);
        a4 = _mm512_fmadd_ps(s, v0, a4);
        h4 = _mm512_fmadd_ps(s, v1, h4);
        s = _mm512_set1_ps(w5[k]);
        a5 = _mm512_fmadd_ps(s, v0, a5);
        h5 = _mm512_fmadd_ps(s, v1, h5);
      }
      const __m512 lo[6] = {a0, a1, a2, a3, a4, a5}, hi[6] = {h0, h1, h2, h3, h4, h5};
      for (int64_t i = 0; i < mr; ++i) {
        _mm512_mask_storeu_ps(y + (o + i) * P + p, m0, lo[i]);
        _mm512_mask_storeu_ps(y + (o + i) * P + p + 16, m1, hi[i]);
      }
    }
    if (ep != NULL)
      for (int64_t i = 0; i < mr; ++i) byoc_epilogue_run_(ep, o + i, y + (o + i) * P, P);
  }
}

/*
 * The channel-lane path (byoc_conv1d_lanes_part_) on AVX-512F CPUs, for the 1-D convs with
 * short rows the contiguous-axis path does not take (fewer than 32 pixels a row, or a
 * stride): 32 output channels in two 16-lane registers, 12 pixels at a time in 24
 * accumulators. The pixels are those of every image in a row (n, p), so a batch of short
 * rows fills the tiles (64 rows of 14 pixels: 75 tiles of 12, rather than 64 x 2 tiles with
 * 10 of 24 lanes empty). Each output is the same chain of fused multiply-adds in order of k
 * as in byoc_conv1d_tile_fma_, so the results equal the AVX2 path's. A unit of work is one
 * (panel of 32 channels, tile of 12 pixels); threads split the units, tile-major within a
 * panel; the weights of a panel are transposed once per claim. The epilogue runs on each
 * tile's outputs of a channel before they are stored.
 */
#define BYOC_CONV1D_L512_NR 32
#define BYOC_CONV1D_L512_PR 12

/* Whether a conv takes the AVX-512 channel-lane path (byoc_conv1d_lanes512_part_). */
static inline int byoc_conv1d_lanes512_(const byoc_conv_geom_* g, int direct) {
#ifdef BYOC_NO_AVX512 /* through BYOC_CFLAGS: the AVX2 channel lanes, as on a CPU without it */
  (void)g, (void)direct;
  return 0;
#else
  if (!direct || g->G != 1 || (g->OH != 1 && g->OW != 1) || g->WS > BYOC_CONV1D_MAX_WS ||
      g->O < 16 || byoc_conv1d_wide_(g))
    return 0;
  return BYOC_HAS_AVX512_("avx512f");
#endif
}

#define BYOC_L512_FMA_(i)                                \
  do {                                                   \
    const __m512 s = _mm512_set1_ps(p##i[o]);            \
    a##i = _mm512_fmadd_ps(s, v0, a##i);                 \
    h##i = _mm512_fmadd_ps(s, v1, h##i);                 \
  } while (0)

/* Units [u0, u1) (u = panel * tiles + tile) of N images read in place. */
static BYOC_CONV1D_AVX512 BYOC_MAYBE_UNUSED void byoc_conv1d_lanes512_part_(
    const byoc_conv_geom_* g, const float* restrict x, const float* restrict w,
    float* restrict y, int64_t N, int64_t u0, int64_t u1, const byoc_epilogue_* ep) {
  enum { NR = BYOC_CONV1D_L512_NR, PR = BYOC_CONV1D_L512_PR };
  float wp[BYOC_CONV1D_MAX_WS * NR] __attribute__((aligned(64)));
  int64_t off[BYOC_CONV1D_MAX_WS];
  float acc[PR * NR] __attribute__((aligned(64)));
  float out[NR * PR];
  const int64_t WS = g->WS, O = g->O, P = g->P, OW = g->OW, KH = g->KH, KW = g->KW;
  const int64_t plane = g->HP * g->WP, image = g->C * g->H * g->W, T = N * P;
  const int64_t tiles = (T + PR - 1) / PR;
  for (int64_t k = 0; k < WS; ++k) {
    const int64_t c = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
    off[k] = c * plane + kh * g->DH * g->WP + kw * g->DW;
  }
  int64_t packed = -1;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t q = u / tiles, t0 = u % tiles * PR;
    const int64_t o0 = q * NR, nr = O - o0 < NR ? O - o0 : NR;
    const int64_t np = T - t0 < PR ? T - t0 : PR;
    if (q != packed) {
      for (int64_t k = 0; k < WS; ++k)
        for (int64_t j = 0; j < NR; ++j) wp[k * NR + j] = j < nr ? w[(o0 + j) * WS + k] : 0.0f;
      packed = q;
    }
    int64_t base[PR], ybase[PR];
    for (int64_t i = 0; i < PR; ++i) {
      const int64_t t = t0 + (i < np ? i : 0), n = t / P, p = t % P;
      base[i] = n * image + p / OW * g->SH * g->WP + p % OW * g->SW;
      ybase[i] = n * O * P + p;
    }
    const float *p0 = x + base[0], *p1 = x + base[1], *p2 = x + base[2], *p3 = x + base[3];
    const float *p4 = x + base[4], *p5 = x + base[5], *p6 = x + base[6], *p7 = x + base[7];
    const float *p8 = x + base[8], *p9 = x + base[9], *p10 = x + base[10], *p11 = x + base[11];
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    __m512 a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    __m512 h0 = a0, h1 = a0, h2 = a0, h3 = a0, h4 = a0, h5 = a0;
    __m512 h6 = a0, h7 = a0, h8 = a0, h9 = a0, h10 = a0, h11 = a0;
    const float* wk = wp;
    for (int64_t k = 0; k < WS; ++k, wk += NR) {
      const int64_t o = off[k];
      const __m512 v0 = _mm512_load_ps(wk), v1 = _mm512_load_ps(wk + 16);
      BYOC_L512_FMA_(0);
      BYOC_L512_FMA_(1);
      BYOC_L512_FMA_(2);
      BYOC_L512_FMA_(3);
      BYOC_L512_FMA_(4);
      BYOC_L512_FMA_(5);
      BYOC_L512_FMA_(6);
      BYOC_L512_FMA_(7);
      BYOC_L512_FMA_(8);
      BYOC_L512_FMA_(9);
      BYOC_L512_FMA_(10);
      BYOC_L512_FMA_(11);
    }
    const __m512 lo[PR] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
    const __m512 hi[PR] = {h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11};
    for (int64_t i = 0; i < PR; ++i) {
      _mm512_store_ps(acc + i * NR, lo[i]);
      _mm512_store_ps(acc + i * NR + 16, hi[i]);
    }
    for (int64_t j = 0; j < nr; ++j) {
      float* r = out + j * PR;
      for (int64_t i = 0; i < np; ++i) r[i] = acc[i * NR + j];
      if (ep != NULL) byoc_epilogue_run_(ep, o0 + j, r, np);
      float* yj = y + (o0 + j) * P;
      for (int64_t i = 0; i < np; ++i) yj[ybase[i]] = r[i];
    }
  }
}
#undef BYOC_L512_FMA_
#endif

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

#endif /* BYOC_KERNELS_CONV1D_H_ */
