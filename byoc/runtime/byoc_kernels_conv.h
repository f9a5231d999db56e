/*
 * byoc_kernels_conv.h — conv2d (grouped and depthwise): im2col panels through a register
 * tile, a padded-plane path for depthwise, shares of output tiles or channels across threads.
 * Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_CONV_H_
#define BYOC_KERNELS_CONV_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"
#include "byoc_kernels_conv_wide.h"

/* Rows of the im2col panel one k block holds when a piece has many tiles (see
 * byoc_conv2d_part_). */
#define BYOC_CONV2D_KC 1024
/* A piece of at most this many tiles packs them all per k block ... */
#define BYOC_CONV2D_TB 4
/* ... in panels of at most this many rows in all (16 floats each: 256 KB of stack). */
#define BYOC_CONV2D_PANEL 4096

/* Floats of scratch `byoc_conv2d_f32` needs: one zero-padded image (the panels live on the stack). */
#define BYOC_CONV2D_SCRATCH(C, G, KH, KW, OH, OW, SH, SW, DH, DW)                               \
  ((C) * (((OH)-1) * (SH) + ((KH)-1) * (DH) + 1) *                                              \
   ((((OW) + 7) / 8 * 8 - 1) * (SW) + ((KW)-1) * (DW) + 1))

/*
 * One tile of 6 output channels x 16 pixels in 12 vector registers:
 * y[t * plane + j] = (first ? 0 : y[t * plane + j]) + sum_k wt[t][k] * panel[k][j]
 * for t < to, j < np, summed in order of k. Inlined into the (cloned) caller.
 */
static inline __attribute__((always_inline)) void byoc_conv2d_tile_(
    const float* restrict panel, const float* const* wt, int64_t kc, float* restrict y,
    int64_t plane, int64_t to, int64_t np, int first) {
  byoc_v8f_ a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0};
  byoc_v8f_ b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0}, b4 = {0}, b5 = {0};
  if (!first) {
    byoc_load16_(y, np, &a0, &b0);
    if (to > 1) byoc_load16_(y + plane, np, &a1, &b1);
    if (to > 2) byoc_load16_(y + 2 * plane, np, &a2, &b2);
    if (to > 3) byoc_load16_(y + 3 * plane, np, &a3, &b3);
    if (to > 4) byoc_load16_(y + 4 * plane, np, &a4, &b4);
    if (to > 5) byoc_load16_(y + 5 * plane, np, &a5, &b5);
  }
  const float *w0 = wt[0], *w1 = wt[1], *w2 = wt[2], *w3 = wt[3], *w4 = wt[4], *w5 = wt[5];
  for (int64_t k = 0; k < kc; ++k, panel += 16) {
    byoc_v8f_ v0, v1;
    memcpy(&v0, panel, sizeof v0);
    memcpy(&v1, panel + 8, sizeof v1);
    a0 += w0[k] * v0;
    b0 += w0[k] * v1;
    a1 += w1[k] * v0;
    b1 += w1[k] * v1;
    a2 += w2[k] * v0;
    b2 += w2[k] * v1;
    a3 += w3[k] * v0;
    b3 += w3[k] * v1;
    a4 += w4[k] * v0;
    b4 += w4[k] * v1;
    a5 += w5[k] * v0;
    b5 += w5[k] * v1;
  }
  byoc_store16_(y, np, &a0, &b0);
  if (to > 1) byoc_store16_(y + plane, np, &a1, &b1);
  if (to > 2) byoc_store16_(y + 2 * plane, np, &a2, &b2);
  if (to > 3) byoc_store16_(y + 3 * plane, np, &a3, &b3);
  if (to > 4) byoc_store16_(y + 4 * plane, np, &a4, &b4);
  if (to > 5) byoc_store16_(y + 5 * plane, np, &a5, &b5);
}

#ifdef BYOC_FMA
/* byoc_conv2d_tile_ with fused multiply-adds (AVX2 + FMA); called, not inlined. */
static BYOC_FMA BYOC_MAYBE_UNUSED void byoc_conv2d_tile_fma_(
    const float* restrict panel, const float* const* wt, int64_t kc, float* restrict y,
    int64_t plane, int64_t to, int64_t np, int first) {
  __m256 a[6], b[6];
  float tmp[16];
  for (int t = 0; t < 6; ++t) {
    if (first || t >= to) {
      a[t] = _mm256_setzero_ps();
      b[t] = _mm256_setzero_ps();
    } else if (np == 16) {
      a[t] = _mm256_loadu_ps(y + t * plane);
      b[t] = _mm256_loadu_ps(y + t * plane + 8);
    } else {
      memset(tmp, 0, sizeof tmp);
      memcpy(tmp, y + t * plane, (size_t)np * sizeof(float));
      a[t] = _mm256_loadu_ps(tmp);
      b[t] = _mm256_loadu_ps(tmp + 8);
    }
  }
  __m256 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5];
  __m256 b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3], b4 = b[4], b5 = b[5];
  const float *w0 = wt[0], *w1 = wt[1], *w2 = wt[2], *w3 = wt[3], *w4 = wt[4], *w5 = wt[5];
  for (int64_t k = 0; k < kc; ++k, panel += 16) {
    const __m256 v0 = _mm256_loadu_ps(panel), v1 = _mm256_loadu_ps(panel + 8);
    __m256 s = _mm256_broadcast_ss(w0 + k);
    a0 = _mm256_fmadd_ps(s, v0, a0);
    b0 = _mm256_fmadd_ps(s, v1, b0);
    s = _mm256_broadcast_ss(w1 + k);
    a1 = _mm256_fmadd_ps(s, v0, a1);
    b1 = _mm256_fmadd_ps(s, v1, b1);
    s = _mm256_broadcast_ss(w2 + k);
    a2 = _mm256_fmadd_ps(s, v0, a2);
    b2 = _mm256_fmadd_ps(s, v1, b2);
    s = _mm256_broadcast_ss(w3 + k);
    a3 = _mm256_fmadd_ps(s, v0, a3);
    b3 = _mm256_fmadd_ps(s, v1, b3);
    s = _mm256_broadcast_ss(w4 + k);
    a4 = _mm256_fmadd_ps(s, v0, a4);
    b4 = _mm256_fmadd_ps(s, v1, b4);
    s = _mm256_broadcast_ss(w5 + k);
    a5 = _mm256_fmadd_ps(s, v0, a5);
    b5 = _mm256_fmadd_ps(s, v1, b5);
  }
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5;
  b[0] = b0, b[1] = b1, b[2] = b2, b[3] = b3, b[4] = b4, b[5] = b5;
  for (int t = 0; t < to; ++t) {
    if (np == 16) {
      _mm256_storeu_ps(y + t * plane, a[t]);
      _mm256_storeu_ps(y + t * plane + 8, b[t]);
      continue;
    }
    _mm256_storeu_ps(tmp, a[t]);
    _mm256_storeu_ps(tmp + 8, b[t]);
    memcpy(y + t * plane, tmp, (size_t)np * sizeof(float));
  }
}
#endif

#include "byoc_kernels_conv_dot.h" /* byoc_conv_geom_, the conv of a handful of pixels */

/*
 * Channels [c0, c1) of image x (C x H x W) into the zero-padded copy xp
 * (C x HP x WP). With `split`, each padded row is stored as its even
 * columns, then its odd ones (for stride-2 depthwise windows).
 */
static inline void byoc_conv2d_pad_(const byoc_conv_geom_* g, const float* restrict x,
                                    float* restrict xp, int64_t c0, int64_t c1, int split) {
  const int64_t HP = g->HP, WP = g->WP, H = g->H, W = g->W, PT = g->PT, PL = g->PL;
  const int64_t end = PL + W < WP ? PL + W : WP;
  const int64_t half = (WP + 1) / 2;
  for (int64_t c = c0; c < c1; ++c) {
    for (int64_t r = 0; r < HP; ++r) {
      float* dst = xp + (c * HP + r) * WP;
      const int64_t ih = r - PT;
      if (ih < 0 || ih >= H || end <= PL) {
        memset(dst, 0, (size_t)WP * sizeof(float));
        continue;
      }
      const float* src = x + (c * H + ih) * W; /* padded column j is src[j - PL] */
      if (split) { /* zeros, then the image's columns: no select per element */
        memset(dst, 0, (size_t)WP * sizeof(float));
        for (int64_t j = PL + (PL & 1); j < end; j += 2) dst[j / 2] = src[j - PL];
        for (int64_t j = PL + !(PL & 1); j < end; j += 2) dst[half + j / 2] = src[j - PL];
        continue;
      }
      memset(dst, 0, (size_t)PL * sizeof(float));
      memcpy(dst + PL, src, (size_t)(end - PL) * sizeof(float));
      memset(dst + end, 0, (size_t)(WP - end) * sizeof(float));
    }
  }
}

/*
 * Depthwise (one input and one output channel per group), channels [c0, c1) of one image.
 * Each channel is padded into `plane` (one padded channel, HP x WP, reused for every
 * channel: its zeros are written once, then only the image's part changes, so the plane
 * stays in L1), then computed from it. An output vector is 8 columns of one output row;
 * the vectors of a channel (rows x vectors per row, numbered row-major) go six at a time
 * through the taps, so six independent sums are in flight (one vector at a time would wait
 * on each add). Each output is still summed in
 * order of (kh, kw) from 0, a product and an add per tap (no FMA, at either dispatch level):
 * the results do not depend on the grouping, the dispatch level or the threads. With
 * stride 2 the padded rows hold their even columns, then their odd ones, so every tap
 * reads 8 contiguous floats: tap column 2m is even column m + ow, 2m + 1 is odd column
 * m + ow. Other strides gather their 8 columns (one vector at a time).
 */
enum { BYOC_DW_JOBS = 6 };

/* Zeros where the padded plane has no image, once per call. */
static inline void byoc_conv2d_dw_zero_(const byoc_conv_geom_* g, float* restrict plane) {
  memset(plane, 0, (size_t)(g->HP * g->WP) * sizeof(float));
}

/* The image's part of channel xc into the plane (whose other positions hold zeros). */
static inline __attribute__((always_inline)) void byoc_conv2d_dw_fill_(
    const byoc_conv_geom_* g, const float* restrict xc, float* restrict plane, int split) {
  const int64_t HP = g->HP, WP = g->WP, H = g->H, W = g->W, PT = g->PT, PL = g->PL;
  const int64_t end = PL + W < WP ? PL + W : WP, n = end - PL; /* image columns used */
  const int64_t r1 = PT + H < HP ? PT + H : HP;
  const int64_t half = (WP + 1) / 2;
  if (n <= 0) return;
  for (int64_t r = PT; r < r1; ++r) {
    const float* restrict src = xc + (r - PT) * W;
    float* restrict dst = plane + r * WP;
    /* blocks of 8 (16) columns, the last one ending at column n (overlapping the one
     * before it: the same values again), one at a time only in a row narrower than 8 */
    if (!split) {
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) memcpy(dst + PL + i, src + i, 8 * sizeof(float));
      if (i < n && n >= 8) memcpy(dst + PL + n - 8, src + n - 8, 8 * sizeof(float));
      if (n >= 4 && n < 8) {
        memcpy(dst + PL, src, 4 * sizeof(float));
        memcpy(dst + PL + n - 4, src + n - 4, 4 * sizeof(float));
        continue;
      }
      for (; i < n && n < 4; ++i) dst[PL + i] = src[i];
      continue;
    }
    /* image column i is padded column j = PL + i: even j at j / 2, odd j at half + j / 2;
     * columns i0, i0 + 2, ... land at consecutive places, as do i0 + 1, i0 + 3, ... */
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      byoc_v8f_ a, b;
      memcpy(&a, src + i, sizeof a);
      memcpy(&b, src + i + 8, sizeof b);
#if defined(__clang__)
      const byoc_v8f_ ev = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
      const byoc_v8f_ od = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
      const byoc_v8f_ ev = __builtin_shuffle(a, b, (byoc_v8i_){0, 2, 4, 6, 8, 10, 12, 14});
      const byoc_v8f_ od = __builtin_shuffle(a, b, (byoc_v8i_){1, 3, 5, 7, 9, 11, 13, 15});
#endif
      const int64_t je = PL + i, jo = PL + i + 1;
      memcpy(dst + (je & 1 ? half : 0) + je / 2, &ev, sizeof ev);
      memcpy(dst + (jo & 1 ? half : 0) + jo / 2, &od, sizeof od);
    }
    while (i < n && n >= 8) {
      const int64_t i0 = i + 8 <= n ? i : n - 8;
      byoc_v4f_ a, b;
      memcpy(&a, src + i0, sizeof a);
      memcpy(&b, src + i0 + 4, sizeof b);
#if defined(__clang__)
      const byoc_v4f_ ev = __builtin_shufflevector(a, b, 0, 2, 4, 6);
      const byoc_v4f_ od = __builtin_shufflevector(a, b, 1, 3, 5, 7);
#else
      const byoc_v4f_ ev = __builtin_shuffle(a, b, (byoc_v4i_){0, 2, 4, 6});
      const byoc_v4f_ od = __builtin_shuffle(a, b, (byoc_v4i_){1, 3, 5, 7});
#endif
      const int64_t je = PL + i0, jo = PL + i0 + 1;
      memcpy(dst + (je & 1 ? half : 0) + je / 2, &ev, sizeof ev);
      memcpy(dst + (jo & 1 ? half : 0) + jo / 2, &od, sizeof od);
      i = i0 + 8;
    }
    for (; i < n; ++i) {
      const int64_t j = PL + i;
      dst[(j & 1 ? half : 0) + j / 2] = src[i];
    }
  }
}

/* The 8 output columns at y (count of them valid: the rest are not stored). */
static inline __attribute__((always_inline)) void byoc_dw_store_(float* restrict y,
                                                                 const byoc_v8f_* a,
                                                                 int64_t count) {
  if (count >= 8) {
    memcpy(y, a, sizeof *a);
    return;
  }
  float tmp[8];
  memcpy(tmp, a, sizeof tmp);
  for (int64_t l = 0; l < count; ++l) y[l] = tmp[l];
}

#define BYOC_DW_TAP_(k)                          \
  do {                                           \
    byoc_v8f_ v_;                                \
    memcpy(&v_, p + o##k, sizeof v_);            \
    a##k += s * v_;                              \
  } while (0)

/* Six output vectors whose first taps are at plane + off[k] (stride 1, or 2 split). */
static inline __attribute__((always_inline)) void byoc_dw_six_(
    const float* restrict plane, const float* restrict wc, const int64_t* off, int64_t KH,
    int64_t KW, int64_t DH, int64_t DW, int64_t WP, int64_t half, int split, byoc_v8f_* out) {
  const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3], o4 = off[4], o5 = off[5];
  byoc_v8f_ a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0};
  if (KH == 3 && KW == 3 && DW == 1) { /* the common window, unrolled along its rows */
    for (int64_t kh = 0; kh < 3; ++kh) {
      const float* xr = plane + kh * DH * WP;
      const float* p = xr;
      float s = wc[3 * kh];
      BYOC_DW_TAP_(0); BYOC_DW_TAP_(1); BYOC_DW_TAP_(2); BYOC_DW_TAP_(3); BYOC_DW_TAP_(4); BYOC_DW_TAP_(5);
      p = split ? xr + half : xr + 1;
      s = wc[3 * kh + 1];
      BYOC_DW_TAP_(0); BYOC_DW_TAP_(1); BYOC_DW_TAP_(2); BYOC_DW_TAP_(3); BYOC_DW_TAP_(4); BYOC_DW_TAP_(5);
      p = split ? xr + 1 : xr + 2;
      s = wc[3 * kh + 2];
      BYOC_DW_TAP_(0); BYOC_DW_TAP_(1); BYOC_DW_TAP_(2); BYOC_DW_TAP_(3); BYOC_DW_TAP_(4); BYOC_DW_TAP_(5);
    }
    out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3, out[4] = a4, out[5] = a5;
    return;
  }
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = plane + kh * DH * WP;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t col = kw * DW;
      const float* p = split ? xr + (col & 1 ? half : 0) + col / 2 : xr + col;
      const float s = wc[kh * KW + kw];
      BYOC_DW_TAP_(0);
      BYOC_DW_TAP_(1);
      BYOC_DW_TAP_(2);
      BYOC_DW_TAP_(3);
      BYOC_DW_TAP_(4);
      BYOC_DW_TAP_(5);
    }
  }
  out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3, out[4] = a4, out[5] = a5;
}

/* One output vector: row oh, columns from ow (any stride). */
static inline __attribute__((always_inline)) void byoc_dw_one_(
    const byoc_conv_geom_* g, const float* restrict plane, const float* restrict wc, int64_t oh,
    int64_t ow, int split, byoc_v8f_* out) {
  const int64_t WP = g->WP, KH = g->KH, KW = g->KW, SH = g->SH, SW = g->SW, DH = g->DH, DW = g->DW;
  const int64_t half = (WP + 1) / 2;
  byoc_v8f_ a = {0};
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = plane + (oh * SH + kh * DH) * WP;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t col = kw * DW;
      byoc_v8f_ v;
      if (split) {
        memcpy(&v, xr + (col & 1 ? half : 0) + col / 2 + ow, sizeof v);
      } else if (SW == 1) {
        memcpy(&v, xr + ow + col, sizeof v);
      } else {
        const float* p = xr + ow * SW + col;
        v = (byoc_v8f_){p[0], p[SW], p[2 * SW], p[3 * SW], p[4 * SW], p[5 * SW], p[6 * SW],
                        p[7 * SW]};
      }
      a += wc[kh * KW + kw] * v;
    }
  }
  *out = a;
}

/* One channel from its padded plane into yc (OH x OW). */
static inline __attribute__((always_inline)) void byoc_dw_channel_(
    const byoc_conv_geom_* g, const float* restrict plane, const float* restrict wc,
    float* restrict yc, int split) {
  const int64_t OH = g->OH, OW = g->OW, nv = (OW + 7) / 8, jobs = OH * nv;
  const int64_t WP = g->WP, SH = g->SH, SW = split ? 1 : g->SW;
  const int64_t half = (WP + 1) / 2;
  if (!(split || g->SW == 1) || jobs < BYOC_DW_JOBS) {
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ow += 8) {
        byoc_v8f_ a;
        byoc_dw_one_(g, plane, wc, oh, ow, split, &a);
        byoc_dw_store_(yc + oh * OW + ow, &a, OW - ow);
      }
    return;
  }
  /* A row's vectors start at columns 0, 8, 16, ..., the last at OW - 8 (overlapping the one
   * before it when 8 does not divide OW: its columns are computed again, the same way), so
   * every store is whole unless the row is narrower than 8. Vectors go six at a time in
   * row-major order; the last group ends at the last vector, overlapping the group before.
   * A row narrower than 8 is stored whole too, its extra lanes into the rows after it, which
   * are all stored later (in this group or a later one), except where they would leave the
   * channel's plane: there only its OW columns. */
  const int64_t last = OW >= 8 ? OW - 8 : 0, count = OW >= 8 ? 8 : OW, P = OH * OW;
  /* one or two vectors left over: one at a time (a group costs about three) */
  const int64_t rest = jobs % BYOC_DW_JOBS, grouped = rest <= 2 ? jobs - rest : jobs;
  int64_t r = 0, v = 0;
  for (int64_t j0 = 0; j0 < grouped; j0 += BYOC_DW_JOBS) {
    if (j0 + BYOC_DW_JOBS > jobs) { /* the overlapping last group */
      r = (jobs - BYOC_DW_JOBS) / nv, v = (jobs - BYOC_DW_JOBS) % nv;
    }
    int64_t off[BYOC_DW_JOBS], yo[BYOC_DW_JOBS];
    for (int k = 0; k < BYOC_DW_JOBS; ++k) {
      const int64_t ow = v == nv - 1 ? last : 8 * v;
      off[k] = r * SH * WP + ow * SW;
      yo[k] = r * OW + ow;
      if (++v == nv) v = 0, ++r;
    }
    byoc_v8f_ a[BYOC_DW_JOBS];
    byoc_dw_six_(plane, wc, off, g->KH, g->KW, g->DH, g->DW, WP, half, split, a);
    for (int k = 0; k < BYOC_DW_JOBS; ++k)
      byoc_dw_store_(yc + yo[k], &a[k], yo[k] + 8 <= P ? 8 : count);
  }
  for (int64_t j = grouped; j < jobs; ++j) {
    const int64_t oh = j / nv, ow = j % nv == nv - 1 ? last : 8 * (j % nv);
    byoc_v8f_ a;
    byoc_dw_one_(g, plane, wc, oh, ow, split, &a);
    byoc_dw_store_(yc + oh * OW + ow, &a, oh * OW + ow + 8 <= P ? 8 : count);
  }
}

BYOC_KERNEL void byoc_conv2d_dw_part_(const byoc_conv_geom_* g, const float* restrict x,
                                      float* restrict plane, const float* restrict w,
                                      float* restrict y, int64_t c0, int64_t c1, int split,
                                      const byoc_epilogue_* ep) {
  if (c1 <= c0) return;
  byoc_conv2d_dw_zero_(g, plane);
  const int64_t KK = g->KH * g->KW, HW = g->H * g->W, P = g->OH * g->OW;
  for (int64_t c = c0; c < c1; ++c) {
    byoc_conv2d_dw_fill_(g, x + c * HW, plane, split);
    float* yc = y + c * P;
    if (split)
      byoc_dw_channel_(g, plane, w + c * KK, yc, 1);
    else
      byoc_dw_channel_(g, plane, w + c * KK, yc, 0);
    if (ep != NULL) byoc_epilogue_run_(ep, c, yc, P); /* the channel's plane, in cache */
  }
}

/*
 * One group of one image (xg: its padded channels, wg: its weights, yg: its
 * output channels), pixel tiles [t0, t1) x output channels [oc0, oc1) of the
 * group. The reduction index k = (c, kh, kw) is cut into blocks; per block, the
 * block's rows of each tile's im2col are packed into a panel (on the stack: per
 * thread), and every tile of 6 output channels is accumulated over it in
 * registers, continuing the sums of the previous blocks from y. Two orders:
 *
 *   - at most BYOC_CONV2D_TB tiles (a small map, or a thread's share of one): the
 *     panels of all the tiles, then per chunk of 6 channels every tile, so the
 *     chunk's weight rows come from memory once and from L1 for the other tiles,
 *     in blocks of up to BYOC_CONV2D_PANEL / tiles rows (long contiguous runs of
 *     each row: the prefetchers follow them). The weights are the bytes there;
 *     one tile after the other, each streamed the whole weights from L2 or memory.
 *   - more tiles: per tile, its panel, then every chunk of channels, in blocks
 *     whose weights, (oc1 - oc0) x rows, stay in L2 (at most 512 KB) for the next
 *     tile.
 *
 * Either way each output is summed in order of k, with the same operations: the
 * blocking changes no result. Then the epilogue (channels from ch0), over the
 * piece's pixels of each channel while they are in cache: applied inside the
 * register tile it made the compiler spill the accumulators.
 */
/* Rows [k0, k0 + kc) of the im2col of pixel tile `tile` (16 pixels) into pk, 16 floats a row. */
static inline __attribute__((always_inline)) void byoc_conv2d_pack_(const byoc_conv_geom_* g,
                                                                    const float* restrict xg,
                                                                    int64_t tile, int64_t k0,
                                                                    int64_t kc, float* restrict pk) {
  enum { TP = 16 };
  const int64_t HP = g->HP, WP = g->WP, OW = g->OW, P = g->P;
  const int64_t KH = g->KH, KW = g->KW, SH = g->SH, SW = g->SW, DH = g->DH, DW = g->DW;
  int64_t off[TP];
  const int64_t p0 = tile * TP;
  const int64_t np = P - p0 < TP ? P - p0 : TP;
  for (int64_t j = 0; j < TP; ++j) {
    const int64_t p = p0 + (j < np ? j : np - 1);
    off[j] = (p / OW) * SH * WP + (p % OW) * SW;
  }
  /* Every offset one past the previous one: the tile is one run of the image. (Comparing only
   * the ends is not enough: the clamped offsets of a last, partial tile can span TP - 1 while
   * crossing a row.) */
  int contiguous = 1;
  for (int64_t j = 1; j < TP; ++j) contiguous &= off[j] == off[j - 1] + 1;
  int64_t ic = k0 / (KH * KW), kh = k0 / KW % KH, kw = k0 % KW;
  for (int64_t k = 0; k < kc; ++k, pk += TP) {
    const float* b = xg + (ic * HP + kh * DH) * WP + kw * DW;
    if (contiguous) {
      memcpy(pk, b + off[0], TP * sizeof(float));
    } else {
      for (int64_t j = 0; j < TP; ++j) pk[j] = b[off[j]];
    }
    if (++kw == KW) {
      kw = 0;
      if (++kh == KH) {
        kh = 0;
        ++ic;
      }
    }
  }
}

#ifdef BYOC_FMA
#define BYOC_CONV2D_TILE_(panel, wt, kc, yt, P, to, np, first)         \
  do {                                                                \
    if (use_fma) {                                                    \
      byoc_conv2d_tile_fma_(panel, wt, kc, yt, P, to, np, first);     \
    } else {                                                          \
      byoc_conv2d_tile_(panel, wt, kc, yt, P, to, np, first);         \
    }                                                                 \
  } while (0)
#else
#define BYOC_CONV2D_TILE_(panel, wt, kc, yt, P, to, np, first) \
  byoc_conv2d_tile_(panel, wt, kc, yt, P, to, np, first)
#endif

BYOC_KERNEL void byoc_conv2d_part_(const byoc_conv_geom_* g, const float* restrict xg,
                                   const float* restrict wg, float* restrict yg, int64_t t0,
                                   int64_t t1, int64_t oc0, int64_t oc1, const byoc_epilogue_* ep,
                                   int64_t ch0) {
  enum { TO = 6, TP = 16 };
  float panel[TP * BYOC_CONV2D_PANEL] __attribute__((aligned(64)));
  const int64_t P = g->P, WS = g->WS;
  if (t1 <= t0 || oc1 <= oc0) return;
#ifdef BYOC_FMA
  const int use_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  if (t1 - t0 > BYOC_CONV2D_TB) { /* tile by tile */
    int64_t KC = 131072 / (oc1 - oc0); /* a block's weights: at most 512 KB */
    KC = KC < 64 ? 64 : KC > BYOC_CONV2D_KC ? BYOC_CONV2D_KC : KC;
    KC = KC > WS ? WS : KC;
    for (int64_t k0 = 0; k0 < WS; k0 += KC) {
      const int64_t kc = WS - k0 < KC ? WS - k0 : KC;
      for (int64_t tile = t0; tile < t1; ++tile) {
        const int64_t p0 = tile * TP;
        const int64_t np = P - p0 < TP ? P - p0 : TP;
        byoc_conv2d_pack_(g, xg, tile, k0, kc, panel);
        for (int64_t oc = oc0; oc < oc1; oc += TO) {
          const int64_t to = oc1 - oc < TO ? oc1 - oc : TO;
          const float* wt[TO];
          for (int64_t t = 0; t < TO; ++t) wt[t] = wg + (oc + (t < to ? t : 0)) * WS + k0;
          BYOC_CONV2D_TILE_(panel, wt, kc, yg + oc * P + p0, P, to, np, k0 == 0);
        }
      }
    }
  } else { /* the tiles together */
    int64_t KC = BYOC_CONV2D_PANEL / (t1 - t0);
    KC = KC > WS ? WS : KC;
    for (int64_t k0 = 0; k0 < WS; k0 += KC) {
      const int64_t kc = WS - k0 < KC ? WS - k0 : KC;
      for (int64_t tile = t0; tile < t1; ++tile) byoc_conv2d_pack_(g, xg, tile, k0, kc, panel + (tile - t0) * kc * TP);
      for (int64_t oc = oc0; oc < oc1; oc += TO) {
        const int64_t to = oc1 - oc < TO ? oc1 - oc : TO;
        const float* wt[TO];
        for (int64_t t = 0; t < TO; ++t) wt[t] = wg + (oc + (t < to ? t : 0)) * WS + k0;
        for (int64_t tile = t0; tile < t1; ++tile) {
          const int64_t p0 = tile * TP;
          const int64_t np = P - p0 < TP ? P - p0 : TP;
          BYOC_CONV2D_TILE_(panel + (tile - t0) * kc * TP, wt, kc, yg + oc * P + p0, P, to, np, k0 == 0);
        }
      }
    }
  }
  if (ep != NULL) { /* the piece's pixels of each channel: one contiguous run, still in cache */
    const int64_t p0 = t0 * TP, p1 = t1 * TP < P ? t1 * TP : P;
    for (int64_t oc = oc0; oc < oc1; ++oc) byoc_epilogue_run_(ep, ch0 + oc, yg + oc * P + p0, p1 - p0);
  }
}

/* Depthwise: channels [c0, c1), padded one at a time into the piece of the scratch that
 * holds channel c0's padded plane (each thread its own, so no thread waits for another's
 * padding, and a plane stays in L1 while its channel is computed). */
static inline void byoc_conv2d_dw_pad_part_(const byoc_conv_geom_* g, const float* restrict x,
                                            float* restrict xp, const float* restrict w,
                                            float* restrict y, int64_t c0, int64_t c1, int split,
                                            const byoc_epilogue_* ep) {
  byoc_conv2d_dw_part_(g, x, xp + c0 * g->HP * g->WP, w, y, c0, c1, split, ep);
}

/*
 * Work units [u0, u1) of one image for one thread. A unit is one 16-pixel tile times one
 * chunk of 6 output channels of one group, numbered group-major, then tile, then channel
 * chunk; thread t of nt takes units [U * t / nt, U * (t + 1) / nt) of the U in all, so the
 * threads' shares differ by one unit at most, whatever the map size. (Cutting only the
 * pixel tiles would leave 13 tiles of a 14x14 map as 6 and 7 on two threads; cutting
 * channel chunks too would repack the tiles' panels in every chunk.) Runs of whole tiles go in
 * chunks of at most `chunk` tiles, each chunk's epilogue while its outputs are in cache; a
 * tile shared with the next thread is split between their channel chunks (both pack it).
 */
static inline void byoc_conv2d_units_(const byoc_conv_geom_* g, const float* restrict xs,
                                      const float* restrict w, float* restrict yn, int64_t tiles,
                                      int64_t u0, int64_t u1, int64_t chunk,
                                      const byoc_epilogue_* ep) {
  const int64_t ocu = (g->OG + 5) / 6, per_group = tiles * ocu;
  for (int64_t u = u0; u < u1;) {
    const int64_t grp = u / per_group, r = u % per_group;
    const int64_t tile = r / ocu, unit = r % ocu;
    const float* xg = xs + grp * g->CG * g->HP * g->WP;
    const float* wg = w + grp * g->OG * g->WS;
    float* yg = yn + grp * g->OG * g->P;
    if (unit != 0 || u1 - u < ocu) { /* part of one tile's channel chunks */
      const int64_t end = unit + (u1 - u) < ocu ? unit + (u1 - u) : ocu;
      const int64_t oc1 = 6 * end < g->OG ? 6 * end : g->OG;
      byoc_conv2d_part_(g, xg, wg, yg, tile, tile + 1, 6 * unit, oc1, ep, grp * g->OG);
      u += end - unit;
      continue;
    }
    int64_t n = (u1 - u) / ocu; /* whole tiles, all channels */
    n = n < tiles - tile ? n : tiles - tile;
    n = n < chunk ? n : chunk;
    byoc_conv2d_part_(g, xg, wg, yg, tile, tile + n, 0, g->OG, ep, grp * g->OG);
    u += n * ocu;
  }
}

/*
 * The same units numbered group-major, then channel chunk, then tile: thread t's share
 * [u0, u1) is a run of whole chunks of channels over every tile, with at most a part of
 * one chunk's tiles at each end. Each thread streams only its channels' weights (and packs
 * every tile's panels): the split for layers whose weights outweigh their pixels.
 */
static inline void byoc_conv2d_chunks_(const byoc_conv_geom_* g, const float* restrict xs,
                                       const float* restrict w, float* restrict yn,
                                       int64_t tiles, int64_t u0, int64_t u1,
                                       const byoc_epilogue_* ep) {
  const int64_t ocu = (g->OG + 5) / 6, per_group = tiles * ocu;
  for (int64_t u = u0; u < u1;) {
    const int64_t grp = u / per_group, r = u % per_group;
    const int64_t unit = r / tiles, tile = r % tiles;
    const float* xg = xs + grp * g->CG * g->HP * g->WP;
    const float* wg = w + grp * g->OG * g->WS;
    float* yg = yn + grp * g->OG * g->P;
    if (tile != 0 || u1 - u < tiles) { /* part of one chunk's tiles */
      const int64_t end = tile + (u1 - u) < tiles ? tile + (u1 - u) : tiles;
      const int64_t oc1 = 6 * unit + 6 < g->OG ? 6 * unit + 6 : g->OG;
      byoc_conv2d_part_(g, xg, wg, yg, tile, end, 6 * unit, oc1, ep, grp * g->OG);
      u += end - tile;
      continue;
    }
    int64_t n = (u1 - u) / tiles; /* whole chunks, every tile */
    n = n < ocu - unit ? n : ocu - unit;
    const int64_t oc1 = 6 * (unit + n) < g->OG ? 6 * (unit + n) : g->OG;
    byoc_conv2d_part_(g, xg, wg, yg, 0, tiles, 6 * unit, oc1, ep, grp * g->OG);
    u += n * tiles;
  }
}

/*
 * The geometry of a conv2d (see byoc_conv2d_run_); returns whether the tiles read the image
 * itself (no padded copy: no padding, and every window inside the image).
 */
static inline int byoc_conv2d_geom_(byoc_conv_geom_* g, int64_t C, int64_t H, int64_t W,
                                    int64_t O, int64_t KH, int64_t KW, int64_t OH, int64_t OW,
                                    int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                    int64_t DW, int64_t G) {
  g->C = C, g->H = H, g->W = W, g->O = O, g->KH = KH, g->KW = KW, g->OH = OH, g->OW = OW;
  g->SH = SH, g->SW = SW, g->PT = PT, g->PL = PL, g->DH = DH, g->DW = DW, g->G = G;
  g->CG = C / G, g->OG = O / G, g->WS = g->CG * KH * KW;
  g->HP = (OH - 1) * SH + (KH - 1) * DH + 1;
  g->OW8 = (OW + 7) / 8 * 8;
  g->WP = (g->OW8 - 1) * SW + (KW - 1) * DW + 1;
  g->P = OH * OW;
  if (g->CG == 1 && g->OG == 1) return 0; /* depthwise: its own padded rows */
  /* The tiles need no room past the last output column: rows just wide enough; and when
   * the windows never leave the image (no padding, e.g. 1x1 at any stride), no copy at all:
   * the tiles read the image, its rows W apart. */
  g->WP = (OW - 1) * SW + (KW - 1) * DW + 1;
  const int direct = PT == 0 && PL == 0 && g->HP <= H && g->WP <= W;
  if (direct) g->HP = H, g->WP = W;
  return direct;
}

/* Whether a conv2d's threads split its output channels (byoc_conv2d_chunks_) rather than
 * its pixel tiles: when a group's weights are the bigger stream, at least 2 output channels
 * per pixel (each tile-split thread would stream all of them for its share of the pixels). */
#define BYOC_CONV2D_BY_CHANNEL 8
static inline int byoc_conv2d_by_channel_(const byoc_conv_geom_* g) {
  return g->KH * g->KW == 1 && g->OG >= BYOC_CONV2D_BY_CHANNEL * g->P;
}

/* Units [u0, u1) of one image's (xs: the padded image, or the image): a claim of a split
 * (BYOC_STEAL_); runs of whole tiles in chunks of at most `chunk` tiles. */
static inline void byoc_conv2d_claim_(const byoc_conv_geom_* g, const float* restrict xs,
                                      const float* restrict w, float* restrict yn, int64_t u0,
                                      int64_t u1, int64_t chunk, const byoc_epilogue_* ep) {
  const int64_t tiles = (g->P + 15) / 16;
  if (byoc_conv2d_by_channel_(g))
    byoc_conv2d_chunks_(g, xs, w, yn, tiles, u0, u1, ep);
  else
    byoc_conv2d_units_(g, xs, w, yn, tiles, u0, u1, chunk, ep);
}

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
 * y[n, o, oh, ow] = sum_{c in group(o), kh, kw} x[n, c, oh*SH - PT + kh*DH, ow*SW - PL + kw*DW]
 *                                                * w[o, c - group_start, kh, kw]
 * then the epilogue `ep` (NULL: none). Each image is first copied into the
 * scratch with its zero padding made explicit (and, depthwise, room for whole
 * 8-column tiles), so nothing below checks bounds; a conv without padding whose
 * windows stay inside the image reads it in place. Then, per group,
 * byoc_conv2d_part_ computes tiles of 16 pixels x 6 output channels, the
 * reduction index k = (c, kh, kw) in blocks. Each output is summed in order of
 * k, so the result depends neither on the blocking nor on the threads (with
 * FMA, the tile fuses each step: see BYOC_CLONES). With several threads, the
 * padding copy is split over channels, and the (tile, 6-channel chunk) units
 * into equal shares, runs of pixel tiles or, when the weights outweigh the
 * pixels, of channel chunks (byoc_conv2d_claim_ under BYOC_STEAL_; depthwise: over channels).
 */
static inline void byoc_conv2d_run_(const float* restrict x, const float* restrict w,
                                    float* restrict y, float* restrict scratch, int64_t N,
                                    int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH,
                                    int64_t KW, int64_t OH, int64_t OW, int64_t SH, int64_t SW,
                                    int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G,
                                    const byoc_epilogue_* ep) {
  byoc_conv_geom_ g;
  const int direct = byoc_conv2d_geom_(&g, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G);
  if (byoc_conv_dot_(&g, N)) { /* a few pixels in all: dot products, no panels */
    const int32_t nt = byoc_threads_for(N * g.P * O * g.WS, BYOC_MAC_GRAIN);
    BYOC_STEAL_(nt, O, byoc_steal_grain_(nt, O, 1), 1, o0, o1,
                byoc_conv_dot_part_(&g, x, w, y, N, o0, o1, ep));
    return;
  }
#ifdef BYOC_FMA
  if (byoc_conv1d_lanes512_(&g, direct)) { /* short 1-D rows, AVX-512: channels in the lanes */
    const int64_t tiles = (N * g.P + BYOC_CONV1D_L512_PR - 1) / BYOC_CONV1D_L512_PR;
    const int64_t units = (O + BYOC_CONV1D_L512_NR - 1) / BYOC_CONV1D_L512_NR * tiles;
    const int32_t nt = byoc_threads_for(N * g.P * O * g.WS, BYOC_MAC_GRAIN);
    if (nt <= 1) {
      byoc_conv1d_lanes512_part_(&g, x, w, y, N, 0, units, ep);
      return;
    }
    BYOC_STEAL_(nt, units, byoc_steal_grain_(nt, units, 1), 1, u0, u1,
                byoc_conv1d_lanes512_part_(&g, x, w, y, N, u0, u1, ep));
    return;
  }
#endif
  if (byoc_conv1d_lanes_(&g, direct)) { /* short 1-D rows: output channels in the lanes */
    const int64_t panels = (O + 15) / 16;
    const int32_t nt = byoc_threads_for(N * g.P * O * g.WS, BYOC_PAR_GRAIN);
    if (nt <= 1) {
      byoc_conv1d_lanes_part_(&g, x, w, y, N, 0, panels, ep);
      return;
    }
    BYOC_STEAL_(nt, panels, byoc_steal_grain_(nt, panels, 1), 1, q0, q1,
                byoc_conv1d_lanes_part_(&g, x, w, y, N, q0, q1, ep));
    return;
  }
#ifdef BYOC_CONV2D_WIDE
  { /* AVX-512: the GEMM over the image itself (byoc_kernels_conv_wide.h) */
    byoc_conv_wide_ gw;
    if (byoc_conv2d_wide_of_(&gw, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G) &&
        !byoc_conv1d_wide_(&g)) {
      byoc_conv2d_wide_run_(&gw, x, w, y, scratch, N, ep);
      return;
    }
  }
#endif
  const int depthwise = g.CG == 1 && g.OG == 1;
  const int split = depthwise && SW == 2;
  float* xp = scratch;
  const int64_t tiles = (g.P + 15) / 16;
  const int64_t macs = g.P * g.OG * g.WS; /* per group and image */
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * C * H * W;
    float* yn = y + n * O * g.P;
    if (depthwise) { /* each thread pads its own channels, then computes them: one region */
      const int32_t nt = byoc_threads_for(macs * C, BYOC_PAR_GRAIN);
      BYOC_STEAL_(nt, C, byoc_steal_grain_(nt, C, 1), 1, c0, c1,
                  byoc_conv2d_dw_pad_part_(&g, xn, xp, w, yn, c0, c1, split, ep));
      continue;
    }
    const float* xs = direct ? xn : xp; /* what the tiles read */
    if (!direct) { /* split as a copy is: at least BYOC_COPY_GRAIN bytes a thread */
      const int32_t nt = byoc_threads_for(C * g.HP * g.WP * (int64_t)sizeof(float), BYOC_COPY_GRAIN);
      BYOC_SPLIT_(nt, t, byoc_conv2d_pad_(&g, xn, xp, C * t / nt, C * (t + 1) / nt, split));
    }
    const int32_t nt = byoc_threads_for(macs * G, BYOC_PAR_GRAIN);
#ifdef BYOC_FMA
    if (byoc_conv1d_wide_(&g)) { /* a 1-D conv along a contiguous axis, AVX-512 */
      const int64_t tiles6 = (O + 5) / 6;
      if (nt <= 1) {
        byoc_conv1d_wide_part_(&g, xs, w, yn, 0, O, ep);
        continue;
      }
      BYOC_STEAL_(nt, tiles6, byoc_steal_grain_(nt, tiles6, 1), 1, t0, t1,
                  byoc_conv1d_wide_part_(&g, xs, w, yn, 6 * t0, 6 * t1 < O ? 6 * t1 : O, ep));
      continue;
    }
#endif
    if (nt <= 1) { /* no OpenMP region at all (see BYOC_SPLIT_) */
      for (int64_t grp = 0; grp < G; ++grp)
        byoc_conv2d_part_(&g, xs + grp * g.CG * g.HP * g.WP, w + grp * g.OG * g.WS,
                          yn + grp * g.OG * g.P, 0, tiles, 0, g.OG, ep, grp * g.OG);
      continue;
    }
    /* The (tile, channel chunk) units in equal shares, claimed in runs of `chunk` tiles:
     * up to 4 runs a thread, or 256 KB of outputs if larger (a call per chunk is a
     * large overhead on a small layer such as a grouped 1x1 conv); claims end on
     * whole tiles. Split by channel (byoc_conv2d_chunks_): claims of whole channel chunks
     * over every tile, about a quarter of a share. */
    const int64_t ocu = (g.OG + 5) / 6, units = G * tiles * ocu;
    int64_t chunk = (tiles + 4 * nt - 1) / (4 * (int64_t)nt);
    chunk = chunk > 4096 / g.OG ? chunk : 4096 / g.OG;
    const int by_channel = byoc_conv2d_by_channel_(&g);
    const int64_t align = by_channel ? tiles : ocu;
    const int64_t grain = by_channel ? byoc_steal_grain_(nt, units, tiles) : chunk * ocu;
    BYOC_STEAL_(nt, units, grain, align, u0, u1, byoc_conv2d_claim_(&g, xs, w, yn, u0, u1, chunk, ep));
  }
}

/* conv2d (NCHW, OIHW), no epilogue; `scratch`: BYOC_CONV2D_SCRATCH floats. */
static inline BYOC_MAYBE_UNUSED void byoc_conv2d_f32(
    const float* restrict x, const float* restrict w, float* restrict y, float* restrict scratch,
    int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,
    int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G) {
  byoc_conv2d_run_(x, w, y, scratch, N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G, NULL);
}

/*
 * conv2d with an epilogue: `parts` (BYOC_EP_*) says which of bias (O), scale
 * and shift (O each) are real (the others are never read: any pointer does),
 * `act` (BYOC_ACT_*) with alpha, beta the activation.
 */
static inline BYOC_MAYBE_UNUSED void byoc_conv2d_ep_f32(
    const float* restrict x, const float* restrict w, const float* bias, const float* scale,
    const float* shift, float* restrict y, float* restrict scratch, int64_t N, int64_t C, int64_t H,
    int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t SH, int64_t SW,
    int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t G, int32_t parts, int32_t act,
    float alpha, float beta) {
  const byoc_epilogue_ ep = byoc_epilogue_of_(parts, bias, scale, shift, act, alpha, beta);
  byoc_conv2d_run_(x, w, y, scratch, N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G, &ep);
}

#endif /* BYOC_KERNELS_CONV_H_ */
