/*
 * byoc_kernels_pool.h — max, average and global pooling (NCHW), threads split over
 * channels. Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_POOL_H_
#define BYOC_KERNELS_POOL_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"
#include "byoc_kernels_conv.h" /* the depthwise padded plane the average pool reuses */

/* ---- pooling --------------------------------------------------------------- */

/* Window rows/cols outside the input are skipped (they are -inf padding). */
static inline float byoc_max_window_(const float* restrict xc, int64_t H, int64_t W, int64_t KH,
                                     int64_t KW, int64_t DH, int64_t DW, int64_t top,
                                     int64_t left) {
  float m = -INFINITY;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    if (ih < 0 || ih >= H) continue;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = left + kw * DW;
      if (iw < 0 || iw >= W) continue;
      const float v = xc[ih * W + iw];
      m = (v > m || v != v) && m == m ? v : m;
    }
  }
  return m;
}

/* *m = max(*m, *v) per lane with the scalar rule of byoc_max_window_ (a NaN wins, the first stays). */
static inline __attribute__((always_inline)) void byoc_vmax_(byoc_v8f_* m, const byoc_v8f_* v) {
  const byoc_v8i_ take = ((*v > *m) | (*v != *v)) & (*m == *m);
  *m = (byoc_v8f_)(((byoc_v8i_)*v & take) | ((byoc_v8i_)*m & ~take));
}

/*
 * p[0], p[s], ..., p[7s] as a vector, reading nothing past p[7s]: stride 1 is
 * one load; stride 2 two overlapping loads (p[0..7], p[7..14]) and a shuffle.
 */
static inline __attribute__((always_inline)) void byoc_load8_(const float* p, int64_t s,
                                                              byoc_v8f_* out) {
  byoc_v8f_ v;
  if (s == 1) {
    memcpy(&v, p, sizeof v);
  } else if (s == 2) {
    byoc_v8f_ a, b;
    memcpy(&a, p, sizeof a);
    memcpy(&b, p + 7, sizeof b);
#if defined(__clang__)
    v = __builtin_shufflevector(a, b, 0, 2, 4, 6, 9, 11, 13, 15);
#else
    v = __builtin_shuffle(a, b, (byoc_v8i_){0, 2, 4, 6, 9, 11, 13, 15});
#endif
  } else {
    v = (byoc_v8f_){p[0], p[s], p[2 * s], p[3 * s], p[4 * s], p[5 * s], p[6 * s], p[7 * s]};
  }
  *out = v;
}

/*
 * The output columns whose window lies inside the input: [lo, hi), clamped
 * to [0, OW]. Every bound is computed once and each loop counts up from a
 * start it cannot pass: no loop's trip count depends on an index that could
 * overflow (gcc derived one from `ow + 8 <= hi` and rejected a 1x8x2x96 2x2/2
 * pool with -Waggressive-loop-optimizations).
 */
static inline void byoc_pool_inner_cols_(int64_t W, int64_t OW, int64_t KW, int64_t SW,
                                         int64_t PL, int64_t DW, int64_t* lo_out,
                                         int64_t* hi_out) {
  const int64_t last = W - 1 - (KW - 1) * DW + PL; /* the last column's window start, shifted */
  int64_t lo = (PL + SW - 1) / SW, hi = last >= 0 ? last / SW + 1 : 0;
  hi = hi < OW ? hi : OW;
  lo = lo < hi ? lo : hi;
  *lo_out = lo;
  *hi_out = hi;
}

/*
 * Max pooling of channels [c0, c1): 8 output columns at a time over the
 * columns whose window lies inside the input, one at a time elsewhere. Each
 * lane visits its window in the order byoc_max_window_ does: the same
 * results as the scalar code, and in the AVX2 clone as in the baseline one.
 */
/* The 8 outputs of row `top` from column ow (their windows inside the input) into y. */
static inline __attribute__((always_inline)) void byoc_max_pool8_(
    const float* restrict xc, float* restrict y, int64_t H, int64_t W, int64_t KH, int64_t KW,
    int64_t SW, int64_t PL, int64_t DH, int64_t DW, int64_t top, int64_t ow) {
  byoc_v8f_ m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                 -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    if (ih < 0 || ih >= H) continue;
    const float* xr = xc + ih * W + ow * SW - PL;
    for (int64_t kw = 0; kw < KW; ++kw) {
      byoc_v8f_ v;
      byoc_load8_(xr + kw * DW, SW, &v);
      byoc_vmax_(&m, &v);
    }
  }
  memcpy(y, &m, sizeof m);
}

/* byoc_max_pool8_ for the 32 outputs from column ow: four vectors through the window
 * together (one at a time, each waited on the maximum before it). */
static inline __attribute__((always_inline)) void byoc_max_pool8x4_(
    const float* restrict xc, float* restrict y, int64_t H, int64_t W, int64_t KH, int64_t KW,
    int64_t SW, int64_t PL, int64_t DH, int64_t DW, int64_t top, int64_t ow) {
  byoc_v8f_ m0 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  byoc_v8f_ m1 = m0, m2 = m0, m3 = m0;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    if (ih < 0 || ih >= H) continue;
    const float* xr = xc + ih * W + ow * SW - PL;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const float* p = xr + kw * DW;
      byoc_v8f_ v0, v1, v2, v3;
      byoc_load8_(p, SW, &v0);
      byoc_load8_(p + 8 * SW, SW, &v1);
      byoc_load8_(p + 16 * SW, SW, &v2);
      byoc_load8_(p + 24 * SW, SW, &v3);
      byoc_vmax_(&m0, &v0);
      byoc_vmax_(&m1, &v1);
      byoc_vmax_(&m2, &v2);
      byoc_vmax_(&m3, &v3);
    }
  }
  memcpy(y, &m0, sizeof m0);
  memcpy(y + 8, &m1, sizeof m1);
  memcpy(y + 16, &m2, sizeof m2);
  memcpy(y + 24, &m3, sizeof m3);
}

BYOC_KERNEL void byoc_max_pool2d_part_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                       int64_t DW, int64_t c0, int64_t c1) {
  int64_t lo, hi;
  byoc_pool_inner_cols_(W, OW, KW, SW, PL, DW, &lo, &hi);
  const int64_t nvec = (hi - lo) / 8, tail = lo + 8 * nvec;
  /* The inner columns past the last whole group of 8: one more group ending at hi, which
   * overlaps the previous one (its lanes compute the same windows again, the same way),
   * instead of one window at a time. */
  const int64_t overlap = nvec > 0 && tail < hi;
  const int64_t scalar_from = overlap ? hi : tail;
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * H * W;
    float* yc = y + c * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t top = oh * SH - PT;
      for (int64_t ow = 0; ow < lo; ++ow)
        yc[oh * OW + ow] = byoc_max_window_(xc, H, W, KH, KW, DH, DW, top, ow * SW - PL);
      int64_t b = 0;
      for (; b + 4 <= nvec; b += 4) {
        const int64_t ow = lo + 8 * b;
        byoc_max_pool8x4_(xc, yc + oh * OW + ow, H, W, KH, KW, SW, PL, DH, DW, top, ow);
      }
      for (; b < nvec; ++b) {
        const int64_t ow = lo + 8 * b;
        byoc_max_pool8_(xc, yc + oh * OW + ow, H, W, KH, KW, SW, PL, DH, DW, top, ow);
      }
      if (overlap)
        byoc_max_pool8_(xc, yc + oh * OW + hi - 8, H, W, KH, KW, SW, PL, DH, DW, top, hi - 8);
      for (int64_t ow = scalar_from; ow < OW; ++ow)
        yc[oh * OW + ow] = byoc_max_window_(xc, H, W, KH, KW, DH, DW, top, ow * SW - PL);
    }
  }
}

/*
 * Large windows (at least BYOC_POOL_SEP_TAPS taps, e.g. the 5x5, 9x9 and 13x13 stride-1
 * pools of a YOLO detector's SPP block) in two passes per channel, a row pass then a column
 * pass: r[h][ow] = max over kw of x[h][ow * SW - PL + kw * DW], then
 * y[oh][ow] = max over kh of r[oh * SH - PT + kh * DH][ow], KH + KW steps an output instead of
 * KH * KW. Outside the input is -inf, which the rule of byoc_max_window_ never takes over a
 * value it holds, so it equals skipping. The result is the same element the one-window code
 * picks: that code keeps the first of the maximal elements (or the first NaN) in (kh, kw)
 * order; the row pass keeps each row's first, the column pass the first row holding one,
 * which is that element. Both passes run over 8 output columns at a time (a padded row of
 * BYOC_POOL_SEP_ROW floats, r of BYOC_POOL_SEP_PLANE, on the stack); a larger map takes the
 * one-window path.
 */
#define BYOC_POOL_SEP_TAPS 16
#define BYOC_POOL_SEP_ROW 2048
#define BYOC_POOL_SEP_PLANE 16384

/* Whether a max pool takes the two-pass path (above). */
static inline int byoc_max_pool2d_sep_(int64_t H, int64_t OW, int64_t KH, int64_t KW, int64_t SW,
                                       int64_t DW) {
  const int64_t OW8 = (OW + 7) / 8 * 8;
  return KH * KW >= BYOC_POOL_SEP_TAPS && H * OW8 <= BYOC_POOL_SEP_PLANE &&
         (OW8 - 1) * SW + (KW - 1) * DW + 1 <= BYOC_POOL_SEP_ROW;
}

BYOC_KERNEL void byoc_max_pool2d_sep_part_(const float* restrict x, float* restrict y, int64_t H,
                                           int64_t W, int64_t OH, int64_t OW, int64_t KH,
                                           int64_t KW, int64_t SH, int64_t SW, int64_t PT,
                                           int64_t PL, int64_t DH, int64_t DW, int64_t c0,
                                           int64_t c1) {
  float row[BYOC_POOL_SEP_ROW] __attribute__((aligned(32)));
  float r[BYOC_POOL_SEP_PLANE] __attribute__((aligned(32)));
  const int64_t OW8 = (OW + 7) / 8 * 8, nv = OW8 / 8;
  const int64_t RW = (OW8 - 1) * SW + (KW - 1) * DW + 1; /* the padded row's width */
  const int64_t i0 = PL < RW ? PL : RW;                  /* its first image column */
  const int64_t i1 = PL + W < RW ? PL + W : RW;          /* one past its last */
  for (int64_t i = 0; i < RW; ++i) row[i] = -INFINITY;
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * H * W;
    float* yc = y + c * OH * OW;
    for (int64_t h = 0; h < H; ++h) { /* the row pass */
      if (i1 > i0) memcpy(row + i0, xc + h * W + (i0 - PL), (size_t)(i1 - i0) * sizeof(float));
      float* rh = r + h * OW8;
      for (int64_t v = 0; v < nv; ++v) {
        byoc_v8f_ m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                       -INFINITY, -INFINITY};
        const float* p = row + 8 * v * SW;
        for (int64_t kw = 0; kw < KW; ++kw) {
          byoc_v8f_ t;
          byoc_load8_(p + kw * DW, SW, &t);
          byoc_vmax_(&m, &t);
        }
        memcpy(rh + 8 * v, &m, sizeof m);
      }
    }
    for (int64_t oh = 0; oh < OH; ++oh) { /* the column pass */
      const int64_t top = oh * SH - PT;
      for (int64_t v = 0; v < nv; ++v) {
        byoc_v8f_ m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                       -INFINITY, -INFINITY};
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = top + kh * DH;
          if (ih < 0 || ih >= H) continue;
          byoc_v8f_ t;
          memcpy(&t, r + ih * OW8 + 8 * v, sizeof t);
          byoc_vmax_(&m, &t);
        }
        const int64_t n = OW - 8 * v < 8 ? OW - 8 * v : 8;
        if (n == 8) {
          memcpy(yc + oh * OW + 8 * v, &m, sizeof m);
        } else {
          float tmp[8];
          memcpy(tmp, &m, sizeof tmp);
          for (int64_t l = 0; l < n; ++l) yc[oh * OW + 8 * v + l] = tmp[l];
        }
      }
    }
  }
}

/* Threads split the channels (the results do not depend on the split). */
static inline void byoc_max_pool2d_f32(const float* restrict x, float* restrict y, int64_t NC,
                                       int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t KH,
                                       int64_t KW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                                       int64_t DH, int64_t DW) {
  if (byoc_max_pool2d_sep_(H, OW, KH, KW, SW, DW)) {
    const int32_t nt = byoc_threads_for(NC * (H + OH) * OW * (KH + KW), 2 * BYOC_PAR_GRAIN);
    BYOC_STEAL_(nt, NC, byoc_steal_grain_(nt, NC, 1), 1, c0, c1,
                byoc_max_pool2d_sep_part_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, DH, DW, c0, c1));
    return;
  }
  const int32_t nt = byoc_threads_for(NC * OH * OW * KH * KW, 2 * BYOC_PAR_GRAIN);
  BYOC_STEAL_(nt, NC, byoc_steal_grain_(nt, NC, 1), 1, c0, c1,
              byoc_max_pool2d_part_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, DH, DW, c0, c1));
}

/*
 * Average over the window. The divisor counts the input elements in the
 * window, or with `include_pad` also those in the user padding
 * (PT, PL, PB, PR), never the extra rows ceil_mode adds.
 */
static inline float byoc_avg_window_(const float* restrict xc, int64_t H, int64_t W, int64_t KH,
                                     int64_t KW, int64_t PT, int64_t PL, int64_t PB, int64_t PR,
                                     int64_t DH, int64_t DW, int32_t include_pad, int64_t top,
                                     int64_t left) {
  double sum = 0.0;
  int64_t count = 0;
  for (int64_t kh = 0; kh < KH; ++kh) {
    const int64_t ih = top + kh * DH;
    const int in_h = ih >= 0 && ih < H;
    const int pad_h = ih >= -PT && ih < H + PB;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = left + kw * DW;
      const int in_w = iw >= 0 && iw < W;
      if (in_h && in_w) {
        sum += (double)xc[ih * W + iw];
        ++count;
      } else if (include_pad && pad_h && iw >= -PL && iw < W + PR) {
        ++count;
      }
    }
  }
  return (float)(sum / (double)(count > 0 ? count : 1));
}


/*
 * Channels [c0, c1) from the input itself. Where a window lies inside the input (its rows
 * and its columns), 4 output columns are summed at a time in double, each lane in the
 * window order of byoc_avg_window_ and divided by KH*KW as it would be: the same results.
 */
static inline void byoc_avg_pool2d_rows_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t PB,
                                       int64_t PR, int64_t DH, int64_t DW, int32_t include_pad,
                                       int64_t c0, int64_t c1) {
  int64_t lo, hi;
  byoc_pool_inner_cols_(W, OW, KW, SW, PL, DW, &lo, &hi);
  const int64_t nvec = (hi - lo) / 4;
  /* the inner columns past the last whole group of 4: one more group ending at hi,
   * overlapping the one before it (its lanes compute the same windows the same way) */
  const int64_t tail = nvec > 0 ? hi : lo;
  const double area = (double)(KH * KW);
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = x + c * H * W;
    float* yc = y + c * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t top = oh * SH - PT;
      const int rows_inside = top >= 0 && top + (KH - 1) * DH < H;
      const int64_t vec_end = rows_inside ? tail : 0, scalar_from = rows_inside ? lo : 0;
      for (int64_t ow = 0; ow < scalar_from; ++ow)
        yc[oh * OW + ow] = byoc_avg_window_(xc, H, W, KH, KW, PT, PL, PB, PR, DH, DW,
                                            include_pad, top, ow * SW - PL);
      for (int64_t ow0 = scalar_from; ow0 < vec_end; ow0 += 4) {
        const int64_t ow = ow0 + 4 <= vec_end ? ow0 : vec_end - 4;
        byoc_v4d_ s = {0.0, 0.0, 0.0, 0.0};
        for (int64_t kh = 0; kh < KH; ++kh) {
          const float* xr = xc + (top + kh * DH) * W + ow * SW - PL;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const float* p = xr + kw * DW;
            byoc_v4d_ v;
            if (SW == 1) { /* 4 consecutive floats: one load, one conversion */
              byoc_v4f_ f;
              memcpy(&f, p, sizeof f);
              v = __builtin_convertvector(f, byoc_v4d_);
            } else {
              v = (byoc_v4d_){(double)p[0], (double)p[SW], (double)p[2 * SW], (double)p[3 * SW]};
            }
            s += v;
          }
        }
        s /= area;
        for (int j = 0; j < 4; ++j) yc[oh * OW + ow + j] = (float)s[j];
      }
      for (int64_t ow = vec_end > scalar_from ? vec_end : scalar_from; ow < OW; ++ow)
        yc[oh * OW + ow] = byoc_avg_window_(xc, H, W, KH, KW, PT, PL, PB, PR, DH, DW,
                                            include_pad, top, ow * SW - PL);
    }
  }
}

/*
 * Channels [c0, c1), by the first of these that applies (all give the results of
 * byoc_avg_window_: each window's elements summed in double in (kh, kw) order from 0, then
 * divided by its count):
 *   - one output whose window lies inside the input (an average over the whole map, e.g.
 *     shufflenet's 7x7 pool): 8 channels at a time, a lane each, in window order;
 *   - stride 1 or 2, and a padded channel that fits BYOC_POOL_PLANE floats: each channel is
 *     padded with zeros into a plane on the stack (stride 2: even columns, then odd ones, as
 *     the depthwise conv does), and 4 output vectors of 4 columns go through the window at
 *     a time. A padded zero adds +0.0 to a sum that is never -0.0 (it starts at +0.0): no
 *     sum changes. Each vector is divided lane by lane by its windows' counts;
 *   - otherwise, byoc_avg_pool2d_rows_.
 */
#define BYOC_POOL_PLANE 4096

/* How many k in [0, K) put start + k * D in [lo, hi). */
static inline int64_t byoc_pool_taps_(int64_t start, int64_t K, int64_t D, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t k = 0; k < K; ++k) n += start + k * D >= lo && start + k * D < hi;
  return n;
}

/* Four output vectors (4 columns each) whose first taps are at plane + off[k], summed. */
static inline __attribute__((always_inline)) void byoc_avg_four_(
    const float* restrict plane, const int64_t* off, int64_t KH, int64_t KW, int64_t DH,
    int64_t DW, int64_t WP, int64_t half, int split, byoc_v4d_* out) {
  byoc_v4d_ a0 = {0.0, 0.0, 0.0, 0.0}, a1 = a0, a2 = a0, a3 = a0;
  const int64_t o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3];
  for (int64_t kh = 0; kh < KH; ++kh) {
    const float* xr = plane + kh * DH * WP;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t col = kw * DW;
      const float* p = split ? xr + (col & 1 ? half : 0) + col / 2 : xr + col;
      byoc_v4f_ f0, f1, f2, f3;
      memcpy(&f0, p + o0, sizeof f0);
      memcpy(&f1, p + o1, sizeof f1);
      memcpy(&f2, p + o2, sizeof f2);
      memcpy(&f3, p + o3, sizeof f3);
      a0 += __builtin_convertvector(f0, byoc_v4d_);
      a1 += __builtin_convertvector(f1, byoc_v4d_);
      a2 += __builtin_convertvector(f2, byoc_v4d_);
      a3 += __builtin_convertvector(f3, byoc_v4d_);
    }
  }
  out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
}

/* The 4 averages s / d (as floats) at y, count of them (the rest are not stored). */
static inline __attribute__((always_inline)) void byoc_avg_store_(float* restrict y,
                                                                  const byoc_v4d_* s,
                                                                  const byoc_v4d_* d,
                                                                  int64_t count) {
  const byoc_v4f_ r = __builtin_convertvector(*s / *d, byoc_v4f_);
  if (count >= 4) {
    memcpy(y, &r, sizeof r);
    return;
  }
  float tmp[4];
  memcpy(tmp, &r, sizeof tmp);
  for (int64_t l = 0; l < count; ++l) y[l] = tmp[l];
}

static inline __attribute__((always_inline)) void byoc_avg_pool2d_planes_(
    const float* restrict x, float* restrict y, int64_t H, int64_t W, int64_t OH, int64_t OW,
    int64_t KH, int64_t KW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t PB,
    int64_t PR, int64_t DH, int64_t DW, int32_t include_pad, int64_t c0, int64_t c1) {
  float plane[BYOC_POOL_PLANE] __attribute__((aligned(64)));
  double div[BYOC_POOL_PLANE + 4]; /* per output: its window's count (as a double) */
  const int split = SW == 2;
  const int64_t OWV = OW < 4 ? 4 : OW;
  byoc_conv_geom_ g; /* the padded plane's shape, as byoc_conv2d_dw_fill_ reads it */
  g.H = H, g.W = W, g.PT = PT, g.PL = PL;
  g.HP = (OH - 1) * SH + (KH - 1) * DH + 1;
  g.WP = (OWV - 1) * SW + (KW - 1) * DW + 1;
  const int64_t WP = g.WP, half = (WP + 1) / 2, SWP = split ? 1 : SW;
  const int64_t rlo = include_pad ? -PT : 0, rhi = include_pad ? H + PB : H;
  const int64_t clo = include_pad ? -PL : 0, chi = include_pad ? W + PR : W;
  const int64_t nv = (OW + 3) / 4, jobs = OH * nv, P = OH * OW;
  const int64_t last = OW >= 4 ? OW - 4 : 0, count = OW >= 4 ? 4 : OW;
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t rows = byoc_pool_taps_(oh * SH - PT, KH, DH, rlo, rhi);
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t cnt = rows * byoc_pool_taps_(ow * SW - PL, KW, DW, clo, chi);
      div[oh * OW + ow] = (double)(cnt > 0 ? cnt : 1);
    }
  }
  for (int64_t i = P; i < P + 4; ++i) div[i] = 1.0; /* the lanes past the last output */
  memset(plane, 0, (size_t)(g.HP * WP) * sizeof(float));
  for (int64_t c = c0; c < c1; ++c) {
    byoc_conv2d_dw_fill_(&g, x + c * H * W, plane, split);
    float* yc = y + c * P;
    int64_t r = 0, v = 0;
    for (int64_t j0 = 0; j0 < jobs; j0 += 4) {
      if (j0 + 4 > jobs && jobs >= 4) r = (jobs - 4) / nv, v = (jobs - 4) % nv; /* overlap */
      const int64_t n = jobs - j0 < 4 ? jobs - j0 : 4;
      int64_t off[4], yo[4];
      for (int k = 0; k < 4; ++k) {
        const int64_t ow = v == nv - 1 ? last : 4 * v, rr = r < OH ? r : OH - 1;
        off[k] = rr * SH * WP + ow * SWP;
        yo[k] = rr * OW + ow;
        if (++v == nv) v = 0, ++r;
      }
      byoc_v4d_ s[4];
      byoc_avg_four_(plane, off, KH, KW, DH, DW, WP, half, split, s);
      for (int k = 0; k < (jobs >= 4 ? 4 : n); ++k) { /* whole stores stay inside the plane (see the dw conv) */
        byoc_v4d_ d;
        memcpy(&d, div + yo[k], sizeof d);
        byoc_avg_store_(yc + yo[k], &s[k], &d, yo[k] + 4 <= P ? 4 : count);
      }
    }
  }
}

/* One output per channel, its window inside the input: 8 channels at a time. */
static inline __attribute__((always_inline)) void byoc_avg_pool2d_whole_(
    const float* restrict x, float* restrict y, int64_t H, int64_t W, int64_t KH, int64_t KW,
    int64_t top, int64_t left, int64_t DH, int64_t DW, int64_t c0, int64_t c1) {
  const int64_t HW = H * W;
  const double area = (double)(KH * KW);
  int64_t c = c0;
  for (; c + 8 <= c1; c += 8) {
    byoc_v4d_ a = {0.0, 0.0, 0.0, 0.0}, b = a;
    const float* xc = x + c * HW + top * W + left;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float* p = xc + kh * DH * W + kw * DW;
        a += (byoc_v4d_){(double)p[0], (double)p[HW], (double)p[2 * HW], (double)p[3 * HW]};
        b += (byoc_v4d_){(double)p[4 * HW], (double)p[5 * HW], (double)p[6 * HW], (double)p[7 * HW]};
      }
    a /= area, b /= area;
    for (int l = 0; l < 4; ++l) y[c + l] = (float)a[l], y[c + 4 + l] = (float)b[l];
  }
  for (; c < c1; ++c) {
    double s = 0.0;
    const float* xc = x + c * HW + top * W + left;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) s += (double)xc[kh * DH * W + kw * DW];
    y[c] = (float)(s / area);
  }
}

BYOC_KERNEL void byoc_avg_pool2d_part_(const float* restrict x, float* restrict y, int64_t H,
                                       int64_t W, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t PB,
                                       int64_t PR, int64_t DH, int64_t DW, int32_t include_pad,
                                       int64_t c0, int64_t c1) {
  if (OH == 1 && OW == 1 && PT <= 0 && PL <= 0 && (KH - 1) * DH - PT < H &&
      (KW - 1) * DW - PL < W) {
    byoc_avg_pool2d_whole_(x, y, H, W, KH, KW, -PT, -PL, DH, DW, c0, c1);
    return;
  }
  const int64_t OWV = OW < 4 ? 4 : OW;
  const int64_t HP = (OH - 1) * SH + (KH - 1) * DH + 1, WP = (OWV - 1) * SW + (KW - 1) * DW + 1;
  if ((SW == 1 || SW == 2) && HP * WP <= BYOC_POOL_PLANE) {
    byoc_avg_pool2d_planes_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW,
                            include_pad, c0, c1);
    return;
  }
  byoc_avg_pool2d_rows_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, include_pad,
                        c0, c1);
}

static inline void byoc_avg_pool2d_f32(const float* restrict x, float* restrict y, int64_t NC,
                                       int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t KH,
                                       int64_t KW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                                       int64_t PB, int64_t PR, int64_t DH, int64_t DW,
                                       int32_t include_pad) {
  /* a window element costs about what a conv2d multiply-add does (a load, a conversion to
   * double, an add, 4 lanes a vector): split from 2 x BYOC_PAR_GRAIN, like a convolution
   * (so that a 272 x 14 x 14 -> 7 x 7 pool, 120 K elements, is split) */
  const int32_t nt = byoc_threads_for(NC * OH * OW * KH * KW, BYOC_PAR_GRAIN);
  BYOC_STEAL_(nt, NC, byoc_steal_grain_(nt, NC, 1), 1, c0, c1,
              byoc_avg_pool2d_part_(x, y, H, W, OH, OW, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, include_pad, c0, c1));
}

/* Each channel's sum in double in order of i, 8 channels at a time (a lane each: one sum
 * at a time waited on each add), then divided by HW. */
BYOC_KERNEL void byoc_global_avg_pool2d_part_(const float* restrict x, float* restrict y,
                                              int64_t HW, int64_t c0, int64_t c1) {
  byoc_avg_pool2d_whole_(x, y, 1, HW, 1, HW, 0, 0, 1, 1, c0, c1);
}

static inline void byoc_global_avg_pool2d_f32(const float* restrict x, float* restrict y,
                                              int64_t NC, int64_t HW) {
  /* a read of each input once: split as a copy is (squeezenet's 1000 x 13 x 13) */
  const int32_t nt = byoc_threads_for(NC * HW * (int64_t)sizeof(float), BYOC_COPY_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_global_avg_pool2d_part_(x, y, HW, NC * t / nt, NC * (t + 1) / nt));
}

static inline void byoc_global_max_pool2d_part_(const float* restrict x, float* restrict y,
                                                 int64_t HW, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; ++c) {
    float m = -INFINITY;
    for (int64_t i = 0; i < HW; ++i) m = m == m ? byoc_maxf_(m, x[c * HW + i]) : m;
    y[c] = m;
  }
}

static inline void byoc_global_max_pool2d_f32(const float* restrict x, float* restrict y,
                                              int64_t NC, int64_t HW) {
  /* a read of each input once: split as a copy is (squeezenet's 1000 x 13 x 13) */
  const int32_t nt = byoc_threads_for(NC * HW * (int64_t)sizeof(float), BYOC_COPY_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_global_max_pool2d_part_(x, y, HW, NC * t / nt, NC * (t + 1) / nt));
}

#endif /* BYOC_KERNELS_POOL_H_ */
