/*
 * byoc_kernels_glue.h — what the kernel families share: the largest rank a kernel
 * takes, NaN-propagating max, big copies split across threads, and the epilogues
 * (bias, per-channel scale and shift, activation) conv2d and dense apply to their outputs.
 * Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_GLUE_H_
#define BYOC_KERNELS_GLUE_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_math.h"
#include "byoc_kernels_simd.h"

#define BYOC_MAX_RANK 16

/* NaN-propagating maximum (numpy.maximum). */
static inline float byoc_maxf_(float a, float b) { return (a >= b || a != a) ? a : b; }

/* ---- strided walks --------------------------------------------------------- */

/* The multi-index over dims [0, last] (extents ext) of row-major position q, into idx; the
 * result is its offset, the sum of idx[d] * str[d]. */
static inline int64_t byoc_index_at_(int64_t q, int64_t* idx, const int64_t* ext,
                                     const int64_t* str, int32_t last) {
  int64_t off = 0;
  for (int32_t d = last; d >= 0; --d) {
    idx[d] = q % ext[d];
    q /= ext[d];
    off += idx[d] * str[d];
  }
  return off;
}

/* One row-major step of the multi-index idx over dims [0, last], *off (its offset under
 * the strides str) moved along. */
static inline void byoc_index_step_(int64_t* idx, const int64_t* ext, const int64_t* str,
                                    int32_t last, int64_t* off) {
  for (int32_t d = last; d >= 0; --d) {
    *off += str[d];
    if (++idx[d] < ext[d]) return;
    *off -= str[d] * ext[d];
    idx[d] = 0;
  }
}

/* ---- copies ---------------------------------------------------------------- */

/* Bytes a thread copies at least: below 2 x this a copy stays on the calling thread. */
#define BYOC_COPY_GRAIN ((int64_t)1 << 18)

/* Bytes [lo, hi) of a copy of n bytes split into nt pieces, piece t, 64-byte aligned. */
static inline void byoc_copy_piece_(int64_t n, int32_t nt, int32_t t, int64_t* lo, int64_t* hi) {
  const int64_t lines = (n + 63) / 64;
  *lo = 64 * (lines * t / nt);
  *hi = t == nt - 1 ? n : 64 * (lines * (t + 1) / nt);
}

static inline void byoc_copy_part_(const char* restrict s, char* restrict d, int64_t n, int32_t nt,
                                   int32_t t) {
  int64_t lo, hi;
  byoc_copy_piece_(n, nt, t, &lo, &hi);
  if (hi > lo) memcpy(d + lo, s + lo, (size_t)(hi - lo));
}

/* A copy of nbytes; a big one (a concatenation's input, a reshape's copy) is split across
 * the threads (a copy is the same bytes however it is split). */
static inline void byoc_copy(const void* restrict src, void* restrict dst, int64_t nbytes) {
  if (nbytes <= 0) return;
  const int32_t nt = byoc_threads_for(nbytes, BYOC_COPY_GRAIN);
  BYOC_SPLIT_(nt, t, byoc_copy_part_((const char*)src, (char*)dst, nbytes, nt, t));
}

static inline void byoc_copy_blocks_part_(const char* restrict s, char* restrict d,
                                          int64_t block, int64_t dst_stride, int64_t b0,
                                          int64_t b1) {
  for (int64_t i = b0; i < b1; ++i) memcpy(d + i * dst_stride, s + i * block, (size_t)block);
}

/* `nblocks` blocks of `block` bytes, read contiguously, written every `dst_stride` bytes;
 * split across the threads by blocks, or (one block) by bytes. */
static inline void byoc_copy_blocks(const void* restrict src, void* restrict dst, int64_t nblocks,
                                    int64_t block, int64_t dst_stride) {
  const char* s = (const char*)src;
  char* d = (char*)dst;
  if (nblocks <= 0 || block <= 0) return;
  if (nblocks == 1) {
    byoc_copy(s, d, block);
    return;
  }
  const int32_t nt0 = byoc_threads_for(nblocks * block, BYOC_COPY_GRAIN);
  const int32_t nt = nt0 < nblocks ? nt0 : (int32_t)nblocks;
  BYOC_SPLIT_(nt, t, byoc_copy_blocks_part_(s, d, block, dst_stride, nblocks * t / nt,
                                            nblocks * (t + 1) / nt));
}

/* ---- epilogues ----------------------------------------------------------------- */

/*
 * What a conv2d or dense kernel applies to its results before storing them
 * (the elementwise ops lower-to-c fuses into the producing kernel): a bias per
 * channel, then a scale and shift per channel (an inference batch_norm with
 * constant statistics), then an activation. Each step is computed exactly as
 * the fused loop would (`scalar_op` in byoc/lowering/nn_to_c/emission.py), so
 * fusing changes no result.
 */
enum {
  BYOC_ACT_NONE = 0,
  BYOC_ACT_RELU = 1,
  BYOC_ACT_CLIP = 2,         /* alpha = min, beta = max; a NaN bound makes every result NaN */
  BYOC_ACT_LEAKY_RELU = 3,   /* alpha */
  BYOC_ACT_SIGMOID = 4,
  BYOC_ACT_HARD_SWISH = 5,
  BYOC_ACT_HARD_SIGMOID = 6, /* alpha, beta */
  BYOC_ACT_TANH = 7,
  BYOC_ACT_SILU = 8          /* x * sigmoid(x): a Sigmoid and a Mul reading the same value */
};

/* `parts` of a kernel's epilogue arguments: which per-channel arrays are real. */
enum { BYOC_EP_BIAS = 1, BYOC_EP_SCALE_SHIFT = 2 };

typedef struct {
  const float* bias;  /* NULL: none */
  const float* scale; /* with shift; NULL: none */
  const float* shift;
  int32_t act;
  float alpha, beta;
} byoc_epilogue_;

static inline byoc_epilogue_ byoc_epilogue_of_(int32_t parts, const float* bias, const float* scale,
                                               const float* shift, int32_t act, float alpha,
                                               float beta) {
  byoc_epilogue_ ep = {(parts & BYOC_EP_BIAS) ? bias : NULL,
                       (parts & BYOC_EP_SCALE_SHIFT) ? scale : NULL,
                       (parts & BYOC_EP_SCALE_SHIFT) ? shift : NULL, act, alpha, beta};
  return ep;
}

/*
 * `for (i = 0; i < n; ++i) STMT` in blocks of 8 with a constant trip count, then the rest:
 * gcc -O2 vectorizes only loops whose trip count is a known multiple of the vector length
 * (its "very cheap" cost model), and leaves a loop of run-time length scalar, with a branch
 * per element for a select such as relu's (mispredicted half the time on real data). STMT
 * must touch element i only; the results are those of the plain loop.
 */
#define BYOC_EACH8_(n, i, STMT)                                         \
  do {                                                                 \
    const int64_t byoc_n8_ = (n) - (n) % 8;                            \
    for (int64_t byoc_b_ = 0; byoc_b_ < byoc_n8_; byoc_b_ += 8) {      \
      for (int64_t byoc_j_ = 0; byoc_j_ < 8; ++byoc_j_) {              \
        const int64_t i = byoc_b_ + byoc_j_;                           \
        STMT;                                                          \
      }                                                                \
    }                                                                  \
    for (int64_t i = byoc_n8_; i < (n); ++i) {                         \
      STMT;                                                            \
    }                                                                  \
  } while (0)

/* byoc_sigmoidf (byoc_math.h) on 4 lanes, the same operations lane by lane, so the same bits.
 * Written on vectors because gcc leaves a loop of the scalar function scalar inside a kernel's
 * epilogue; 4 lanes because baseline x86-64 (SSE2) compares and shifts 4 lanes natively, while
 * on 8-lane vectors it falls back to scalar code for them. */
static inline __attribute__((always_inline)) void byoc_sigmoid4_(const byoc_v4f_* xp,
                                                                 byoc_v4f_* out) {
  const byoc_v4f_ lo = {-104.0f, -104.0f, -104.0f, -104.0f};
  const byoc_v4f_ hi = {89.0f, 89.0f, 89.0f, 89.0f};
  const byoc_v4f_ magic = {12582912.0f, 12582912.0f, 12582912.0f, 12582912.0f};
  byoc_v4f_ t = -*xp;
  const byoc_v4i_ below = t < lo, above = t > hi;
  t = (byoc_v4f_)(((byoc_v4i_)t & ~(below | above)) | ((byoc_v4i_)lo & below) |
                  ((byoc_v4i_)hi & above));
  const byoc_v4f_ j = t * 1.44269504088896341f + magic;
  const byoc_v4f_ n = j - magic;
  byoc_v4f_ r = t - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  byoc_v4f_ p = 1.9875691500e-4f * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const byoc_v4i_ ni = (byoc_v4i_)j - (byoc_v4i_)magic;
  const byoc_v4i_ n1 = ni >> 1, n2 = ni - n1;
  const byoc_v4f_ s1 = (byoc_v4f_)((n1 + 127) << 23), s2 = (byoc_v4f_)((n2 + 127) << 23);
  *out = 1.0f / (1.0f + p * s1 * s2);
}

/* v[i] = sigmoid(v[i]) (silu: v[i] * sigmoid(v[i])), 4 at a time, then one at a time. */
static inline __attribute__((always_inline)) void byoc_sigmoid_run_(float* restrict v, int64_t n,
                                                                    int silu) {
  const int64_t n4 = n - n % 4;
  for (int64_t b = 0; b < n4; b += 4) {
    byoc_v4f_ x, s;
    memcpy(&x, v + b, sizeof x);
    byoc_sigmoid4_(&x, &s);
    const byoc_v4f_ r = silu ? x * s : s;
    memcpy(v + b, &r, sizeof r);
  }
  for (int64_t i = n4; i < n; ++i) v[i] = silu ? v[i] * byoc_sigmoidf(v[i]) : byoc_sigmoidf(v[i]);
}

/* Lanes where `keep` is set from `a`, the others from `b` (a select on bit masks). */
static inline __attribute__((always_inline)) byoc_v4f_ byoc_pick4_(byoc_v4i_ keep, byoc_v4f_ a,
                                                                   byoc_v4f_ b) {
  return (byoc_v4f_)(((byoc_v4i_)a & keep) | ((byoc_v4i_)b & ~keep));
}

/* leaky_relu and hard_swish are selects whose discarded side is a multiply or a division:
 * with floating-point traps observable (gcc's default -ftrapping-math) gcc will not compute
 * that side for every lane, so it leaves the plain loop scalar with a branch per element,
 * mispredicted on real data (16x slower on a 1x32x112x112 conv's output). These compute both
 * sides on 4 lanes and pick with a mask; every lane sees the operations of the scalar
 * formula, so the results are the same bits. */
static inline float byoc_hard_swish1_(float x) {
  float c = x + 3.0f;
  c = c < 0.0f ? 0.0f : c;
  c = c > 6.0f ? 6.0f : c;
  return x >= 3.0f ? x : (x * c) / 6.0f; /* x * 6 / 6 overflows near FLT_MAX */
}

static inline void byoc_hard_swish_run_(float* restrict v, int64_t n) {
  const byoc_v4f_ zero = {0.0f, 0.0f, 0.0f, 0.0f}, three = {3.0f, 3.0f, 3.0f, 3.0f};
  const byoc_v4f_ six = {6.0f, 6.0f, 6.0f, 6.0f};
  const int64_t n4 = n - n % 4;
  for (int64_t b = 0; b < n4; b += 4) {
    byoc_v4f_ x;
    memcpy(&x, v + b, sizeof x);
    byoc_v4f_ c = x + three;
    c = byoc_pick4_(c < zero, zero, c);
    c = byoc_pick4_(c > six, six, c);
    const byoc_v4f_ r = byoc_pick4_(x >= three, x, (x * c) / six);
    memcpy(v + b, &r, sizeof r);
  }
  for (int64_t i = n4; i < n; ++i) v[i] = byoc_hard_swish1_(v[i]);
}

static inline void byoc_leaky_relu_run_(float* restrict v, int64_t n, float a) {
  const byoc_v4f_ zero = {0.0f, 0.0f, 0.0f, 0.0f}, alpha = {a, a, a, a};
  const int64_t n4 = n - n % 4;
  for (int64_t b = 0; b < n4; b += 4) {
    byoc_v4f_ x;
    memcpy(&x, v + b, sizeof x);
    const byoc_v4f_ r = byoc_pick4_(x >= zero, x, x * alpha);
    memcpy(v + b, &r, sizeof r);
  }
  for (int64_t i = n4; i < n; ++i) v[i] = v[i] >= 0.0f ? v[i] : v[i] * a;
}

/* The activation on v[0..n). */
static inline void byoc_act_run_(int32_t act, float a, float b, float* restrict v, int64_t n) {
  switch (act) {
    case BYOC_ACT_RELU:
      BYOC_EACH8_(n, i, v[i] = v[i] < 0.0f ? 0.0f : v[i]);
      break;
    case BYOC_ACT_CLIP:
      if (a != a || b != b) {
        BYOC_EACH8_(n, i, v[i] = v[i] + NAN);
      } else {
        BYOC_EACH8_(n, i, {
          const float t = v[i] < a ? a : v[i];
          v[i] = t > b ? b : t;
        });
      }
      break;
    case BYOC_ACT_LEAKY_RELU:
      byoc_leaky_relu_run_(v, n, a);
      break;
    case BYOC_ACT_SIGMOID: /* as the fused loops' sigmoid (byoc_math.h) */
      byoc_sigmoid_run_(v, n, 0);
      break;
    case BYOC_ACT_SILU: /* as the fused loop of nn.sigmoid then nn.multiply */
      byoc_sigmoid_run_(v, n, 1);
      break;
    case BYOC_ACT_HARD_SWISH:
      byoc_hard_swish_run_(v, n);
      break;
    case BYOC_ACT_HARD_SIGMOID:
      BYOC_EACH8_(n, i, {
        float t = v[i] * a + b;
        t = t < 0.0f ? 0.0f : t;
        v[i] = t > 1.0f ? 1.0f : t;
      });
      break;
    case BYOC_ACT_TANH:
      for (int64_t i = 0; i < n; ++i) v[i] = byoc_tanhf(v[i]); /* as the fused loops' tanh */
      break;
    default:
      break;
  }
}

/* The epilogue on v[0..n), all of channel `ch`. */
static inline void byoc_epilogue_run_(const byoc_epilogue_* ep, int64_t ch, float* restrict v,
                                      int64_t n) {
  if (ep->bias != NULL) {
    const float b = ep->bias[ch];
    BYOC_EACH8_(n, i, v[i] = v[i] + b);
  }
  if (ep->scale != NULL) {
    const float s = ep->scale[ch], t = ep->shift[ch];
    BYOC_EACH8_(n, i, v[i] = v[i] * s + t);
  }
  byoc_act_run_(ep->act, ep->alpha, ep->beta, v, n);
}

/* The epilogue on a row v[0..n) whose element j is of channel ch0 + j (dense). */
static inline void byoc_epilogue_row_(const byoc_epilogue_* ep, int64_t ch0, float* restrict v,
                                      int64_t n) {
  if (ep->bias != NULL) {
    const float* restrict bias = ep->bias + ch0;
    BYOC_EACH8_(n, i, v[i] = v[i] + bias[i]);
  }
  if (ep->scale != NULL) {
    const float* restrict scale = ep->scale + ch0;
    const float* restrict shift = ep->shift + ch0;
    BYOC_EACH8_(n, i, v[i] = v[i] * scale[i] + shift[i]);
  }
  byoc_act_run_(ep->act, ep->alpha, ep->beta, v, n);
}

#endif /* BYOC_KERNELS_GLUE_H_ */
