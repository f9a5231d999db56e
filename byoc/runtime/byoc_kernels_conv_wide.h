/*
 * byoc_kernels_conv_wide.h — conv2d on AVX-512F CPUs as a GEMM over the image itself: no
 * im2col panel, 12 or 8 output channels x 32 pixels in 16-lane registers. Part of byoc_kernels.h
 * (through byoc_kernels_conv.h, which calls it).
 *
 * The padded image is stored as SH x SW phase planes per channel, plane (ph, pw) holding
 * padded rows SH * r + ph and columns SW * s + pw (r < HQ, s < WQ; stride 1: the padded image
 * itself, and no copy at all when the windows never leave the image). Tap (kh, kw) of output
 * (oh, ow) is then element (oh + kh*DH / SH, ow + kw*DW / SW) of plane (kh*DH % SH, kw*DW % SW),
 * so with q = oh * WQ + ow and k = (c, kh, kw),
 *   y[o, oh, ow] = sum_k w[o, k] * xq[off[k] + q]
 * over a run of q: a row of the GEMM's right operand is the planes from off[k] on. The
 * columns ow >= OW of each row of q (WQ - OW of them: (KW - 1) * DW / SW) are computed and not
 * stored. Each output is the chain of fused multiply-adds in order of k from 0 that the AVX2
 * tile computes (byoc_conv2d_tile_fma_, continued across its k blocks), so the results equal
 * its results bit for bit, at any thread count.
 */
#ifndef BYOC_KERNELS_CONV_WIDE_H_
#define BYOC_KERNELS_CONV_WIDE_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"

/* The most taps (C/G * KH * KW) the path takes (its offset table is on the stack). */
#define BYOC_CONV2D_WIDE_MAX_WS 8192

/* Floats of scratch the phase planes need (lower-to-c sizes a conv's scratch as the larger
 * of this and BYOC_CONV2D_SCRATCH). */
#define BYOC_CONV2D_WIDE_SCRATCH(C, KH, KW, OH, OW, SH, SW, DH, DW) \
  ((C) * (SH) * (SW) * ((OH) + ((KH)-1) * (DH) / (SH)) * ((OW) + ((KW)-1) * (DW) / (SW)))

typedef struct {
  int64_t C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, G;
  int64_t CG, OG, WS, HQ, WQ, P, Q; /* Q: the q of the last stored output, plus one */
  int64_t plane;                    /* floats of one phase plane */
  int direct;                       /* the planes are the image itself */
} byoc_conv_wide_;

/* -DBYOC_NO_AVX512 (through BYOC_CFLAGS) compiles this path out: the AVX2 tile then runs on
 * AVX-512 CPUs too, which is how the tests compare the two there. */
#if defined(BYOC_FMA) && !defined(BYOC_NO_AVX512)
#define BYOC_CONV2D_WIDE 1
#define BYOC_WIDE_AVX512 __attribute__((target("avx512f,avx2,fma")))

/* The shape of the path for a conv (see above); 0 when it does not take it. */
static inline int byoc_conv2d_wide_of_(byoc_conv_wide_* g, int64_t C, int64_t H, int64_t W,
                                       int64_t O, int64_t KH, int64_t KW, int64_t OH, int64_t OW,
                                       int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                       int64_t DW, int64_t G) {
  g->C = C, g->H = H, g->W = W, g->O = O, g->KH = KH, g->KW = KW, g->OH = OH, g->OW = OW;
  g->SH = SH, g->SW = SW, g->PT = PT, g->PL = PL, g->DH = DH, g->DW = DW, g->G = G;
  g->CG = C / G, g->OG = O / G, g->WS = g->CG * KH * KW;
  if (g->CG == 1 && g->OG == 1) return 0; /* depthwise: its own kernel */
  if (g->WS > BYOC_CONV2D_WIDE_MAX_WS || OH * OW < 16) return 0;
  g->HQ = OH + (KH - 1) * DH / SH;
  g->WQ = OW + (KW - 1) * DW / SW;
  g->P = OH * OW;
  g->direct = SH == 1 && SW == 1 && PT == 0 && PL == 0 && g->HQ <= H && g->WQ <= W;
  if (g->direct) g->HQ = H, g->WQ = W;
  g->plane = g->HQ * g->WQ;
  g->Q = (OH - 1) * g->WQ + OW;
  if (2 * OW < g->WQ) return 0; /* more than half of each row of q not stored */
  return BYOC_HAS_AVX512_("avx512f") && __builtin_cpu_supports("fma");
}

/* The widest padded row the stride-2 copy deinterleaves on the stack (floats). */
#define BYOC_CONV2D_WIDE_ROW 8192

/* Stride 2 along rows: each padded row of channels [c0, c1) (zeros, the image row, zeros, in
 * `row`) split into its even columns (plane pw = 0) and its odd ones (pw = 1), 16 of each from
 * 32 floats by two permutes. */
static BYOC_WIDE_AVX512 void byoc_conv2d_wide_pad2_(const byoc_conv_wide_* g,
                                                    const float* restrict x, float* restrict xq,
                                                    int64_t c0, int64_t c1) {
  float row[BYOC_CONV2D_WIDE_ROW + 32] __attribute__((aligned(64)));
  const int64_t H = g->H, W = g->W, SH = g->SH, HQ = g->HQ, WQ = g->WQ, PL = g->PL;
  const int64_t RW = 2 * WQ; /* padded columns j = iw + PL in [0, RW) */
  const int64_t j0 = PL < RW ? PL : RW, j1 = PL + W < RW ? PL + W : RW;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  memset(row, 0, sizeof row);
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t ph = 0; ph < SH; ++ph) {
      float* d0 = xq + ((c * SH + ph) * 2 + 0) * g->plane;
      float* d1 = xq + ((c * SH + ph) * 2 + 1) * g->plane;
      for (int64_t r = 0; r < HQ; ++r) {
        const int64_t ih = SH * r + ph - g->PT;
        if (ih < 0 || ih >= H || j1 <= j0) {
          memset(d0 + r * WQ, 0, (size_t)WQ * sizeof(float));
          memset(d1 + r * WQ, 0, (size_t)WQ * sizeof(float));
          continue;
        }
        memcpy(row + j0, x + (c * H + ih) * W + (j0 - PL), (size_t)(j1 - j0) * sizeof(float));
        for (int64_t s = 0; s < WQ; s += 16) {
          const __m512 a = _mm512_loadu_ps(row + 2 * s), b = _mm512_loadu_ps(row + 2 * s + 16);
          const __mmask16 m = WQ - s >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (WQ - s)) - 1u);
          _mm512_mask_storeu_ps(d0 + r * WQ + s, m, _mm512_permutex2var_ps(a, even, b));
          _mm512_mask_storeu_ps(d1 + r * WQ + s, m, _mm512_permutex2var_ps(a, odd, b));
        }
      }
    }
}

/* Channels [c0, c1) of image x into their phase planes xq (zeros outside the image). */
static inline void byoc_conv2d_wide_pad_(const byoc_conv_wide_* g, const float* restrict x,
                                         float* restrict xq, int64_t c0, int64_t c1) {
  const int64_t H = g->H, W = g->W, SH = g->SH, SW = g->SW, HQ = g->HQ, WQ = g->WQ;
  if (SW == 2 && 2 * WQ <= BYOC_CONV2D_WIDE_ROW) {
    byoc_conv2d_wide_pad2_(g, x, xq, c0, c1);
    return;
  }
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t ph = 0; ph < SH; ++ph)
      for (int64_t pw = 0; pw < SW; ++pw) {
        float* dst = xq + ((c * SH + ph) * SW + pw) * g->plane;
        /* columns s whose image column SW * s + pw - PL is in [0, W): [s0, s1) */
        int64_t s0 = g->PL - pw > 0 ? (g->PL - pw + SW - 1) / SW : 0;
        int64_t s1 = W + g->PL - pw > 0 ? (W + g->PL - pw + SW - 1) / SW : 0;
        s0 = s0 < WQ ? s0 : WQ;
        s1 = s1 < WQ ? s1 : WQ;
        s1 = s1 > s0 ? s1 : s0;
        for (int64_t r = 0; r < HQ; ++r) {
          float* d = dst + r * WQ;
          const int64_t ih = SH * r + ph - g->PT;
          if (ih < 0 || ih >= H || s1 == s0) {
            memset(d, 0, (size_t)WQ * sizeof(float));
            continue;
          }
          const float* src = x + (c * H + ih) * W + (SW * s0 + pw - g->PL);
          memset(d, 0, (size_t)s0 * sizeof(float));
          if (SW == 1) {
            memcpy(d + s0, src, (size_t)(s1 - s0) * sizeof(float));
          } else {
            for (int64_t s = s0; s < s1; ++s) d[s] = src[(s - s0) * SW];
          }
          memset(d + s1, 0, (size_t)(WQ - s1) * sizeof(float));
        }
      }
}

#define BYOC_WIDE_FMA_(i)                         \
  do {                                            \
    const __m512 s_ = _mm512_set1_ps(w##i[k]);    \
    a##i = _mm512_fmadd_ps(s_, v0, a##i);         \
    b##i = _mm512_fmadd_ps(s_, v1, b##i);         \
  } while (0)

/*
 * Output channels [o, o + mr) (mr <= MR, MR 8 or 12, a constant where it is inlined) of one
 * group over q in [q0, q0 + 32) (clamped to Q):
 * wg the group's weights (OG x WS), xg its planes, yg its outputs (OG x P), off the taps'
 * offsets. The stores go row by row of q, masked to the columns ow < OW.
 */
static BYOC_WIDE_AVX512 inline __attribute__((always_inline)) void byoc_conv2d_wide_tile_(
    const byoc_conv_wide_* g, const float* restrict xg, const float* restrict wg,
    float* restrict yg, const int64_t* restrict off, int64_t o, int64_t mr, int64_t q0,
    const int MR) {
  const int64_t WS = g->WS, WQ = g->WQ, OW = g->OW, P = g->P;
  const int64_t nq = g->Q - q0 < 32 ? g->Q - q0 : 32;
  const __mmask16 m0 = nq >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nq) - 1u);
  const __mmask16 m1 = nq >= 32   ? (__mmask16)0xFFFF
                       : nq <= 16 ? (__mmask16)0
                                  : (__mmask16)((1u << (nq - 16)) - 1u);
  const float* w0 = wg + o * WS;
  const float* w1 = mr > 1 ? w0 + WS : w0;
  const float* w2 = mr > 2 ? w0 + 2 * WS : w0;
  const float* w3 = mr > 3 ? w0 + 3 * WS : w0;
  const float* w4 = mr > 4 ? w0 + 4 * WS : w0;
  const float* w5 = mr > 5 ? w0 + 5 * WS : w0;
  const float* w6 = mr > 6 ? w0 + 6 * WS : w0;
  const float* w7 = mr > 7 ? w0 + 7 * WS : w0;
  const float* w8 = mr > 8 ? w0 + 8 * WS : w0;
  const float* w9 = mr > 9 ? w0 + 9 * WS : w0;
  const float* w10 = mr > 10 ? w0 + 10 * WS : w0;
  const float* w11 = mr > 11 ? w0 + 11 * WS : w0;
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0;
  __m512 a8 = a0, a9 = a0, a10 = a0, a11 = a0, b8 = a0, b9 = a0, b10 = a0, b11 = a0;
  const float* xp = xg + q0;
  if (nq == 32) {
    for (int64_t k = 0; k < WS; ++k) {
      const float* p = xp + off[k];
      const __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
      BYOC_WIDE_FMA_(0); BYOC_WIDE_FMA_(1); BYOC_WIDE_FMA_(2); BYOC_WIDE_FMA_(3);
      BYOC_WIDE_FMA_(4); BYOC_WIDE_FMA_(5); BYOC_WIDE_FMA_(6); BYOC_WIDE_FMA_(7);
      if (MR > 8) {
        BYOC_WIDE_FMA_(8); BYOC_WIDE_FMA_(9); BYOC_WIDE_FMA_(10); BYOC_WIDE_FMA_(11);
      }
    }
  } else { /* the last run of q: nothing read past it */
    for (int64_t k = 0; k < WS; ++k) {
      const float* p = xp + off[k];
      const __m512 v0 = _mm512_maskz_loadu_ps(m0, p), v1 = _mm512_maskz_loadu_ps(m1, p + 16);
      BYOC_WIDE_FMA_(0); BYOC_WIDE_FMA_(1); BYOC_WIDE_FMA_(2); BYOC_WIDE_FMA_(3);
      BYOC_WIDE_FMA_(4); BYOC_WIDE_FMA_(5); BYOC_WIDE_FMA_(6); BYOC_WIDE_FMA_(7);
      if (MR > 8) {
        BYOC_WIDE_FMA_(8); BYOC_WIDE_FMA_(9); BYOC_WIDE_FMA_(10); BYOC_WIDE_FMA_(11);
      }
    }
  }
  const __m512 lo[12] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
  const __m512 hi[12] = {b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11};
  /* lanes [l0, l1) of a row of q: outputs p0 .. p0 + (l1 - l0) */
  for (int64_t l0 = 0; l0 < nq;) {
    const int64_t q = q0 + l0, oh = q / WQ, ow = q % WQ;
    const int64_t row_end = l0 + (WQ - ow) < nq ? l0 + (WQ - ow) : nq; /* next row's lane */
    const int64_t l1 = ow < OW ? (l0 + (OW - ow) < row_end ? l0 + (OW - ow) : row_end) : l0;
    if (l1 > l0) {
      const uint32_t bits = (uint32_t)(((uint64_t)1 << l1) - ((uint64_t)1 << l0));
      const __mmask16 k0 = (__mmask16)(bits & 0xFFFFu), k1 = (__mmask16)(bits >> 16);
      const int64_t shift = oh * OW + ow - l0; /* output of lane l: shift + l */
      for (int64_t i = 0; i < mr; ++i) {
        /* lane l goes to yg + (o + i) * P + shift + l; only the masked lanes are written */
        float* base = (float*)((uintptr_t)(yg + (o + i) * P) + (uintptr_t)(shift * (int64_t)sizeof(float)));
        if (k0) _mm512_mask_storeu_ps(base, k0, lo[i]);
        if (k1) _mm512_mask_storeu_ps(base + 16, k1, hi[i]);
      }
    }
    l0 = row_end;
  }
}

/* byoc_sigmoidf (byoc_math.h) on 16 lanes: the same operations lane by lane (no fused
 * multiply-add), so the same bits. */
static BYOC_WIDE_AVX512 inline __attribute__((always_inline)) __m512 byoc_wide_sigmoid16_(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-104.0f), hi = _mm512_set1_ps(89.0f);
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  __m512 t = _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int32_t)0x80000000u)));
  const __mmask16 below = _mm512_cmp_ps_mask(t, lo, _CMP_LT_OQ);
  const __mmask16 above = _mm512_cmp_ps_mask(t, hi, _CMP_GT_OQ);
  t = _mm512_mask_mov_ps(_mm512_mask_mov_ps(t, below, lo), above, hi);
  const __m512 j = _mm512_add_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)), magic);
  const __m512 n = _mm512_sub_ps(j, magic);
  __m512 r = _mm512_sub_ps(t, _mm512_mul_ps(n, _mm512_set1_ps(0.693359375f)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(-2.12194440e-4f)));
  __m512 p = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(1.9875691500e-4f), r),
                           _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201e-1f));
  const __m512 one = _mm512_set1_ps(1.0f);
  p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), one);
  const __m512i ni = _mm512_sub_epi32(_mm512_castps_si512(j), _mm512_castps_si512(magic));
  const __m512i n1 = _mm512_srai_epi32(ni, 1), n2 = _mm512_sub_epi32(ni, n1);
  const __m512i e127 = _mm512_set1_epi32(127);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, e127), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, e127), 23));
  return _mm512_div_ps(one, _mm512_add_ps(one, _mm512_mul_ps(_mm512_mul_ps(p, s1), s2)));
}

/* The epilogue of channel ch on v[0..n), 16 lanes at a time when it is a bias, a scale and
 * shift, then none, a sigmoid or a SiLU (each step the operations of byoc_epilogue_run_, so
 * the same bits); otherwise byoc_epilogue_run_ itself. */
static BYOC_WIDE_AVX512 void byoc_conv2d_wide_ep_(const byoc_epilogue_* ep, int64_t ch,
                                                  float* restrict v, int64_t n) {
  const int32_t act = ep->act;
  if (act != BYOC_ACT_NONE && act != BYOC_ACT_SIGMOID && act != BYOC_ACT_SILU) {
    byoc_epilogue_run_(ep, ch, v, n);
    return;
  }
  const __m512 b = _mm512_set1_ps(ep->bias != NULL ? ep->bias[ch] : 0.0f);
  const __m512 s = _mm512_set1_ps(ep->scale != NULL ? ep->scale[ch] : 1.0f);
  const __m512 t = _mm512_set1_ps(ep->scale != NULL ? ep->shift[ch] : 0.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
    __m512 x = _mm512_maskz_loadu_ps(m, v + i);
    if (ep->bias != NULL) x = _mm512_add_ps(x, b);
    if (ep->scale != NULL) x = _mm512_add_ps(_mm512_mul_ps(x, s), t);
    if (act == BYOC_ACT_SIGMOID) x = byoc_wide_sigmoid16_(x);
    if (act == BYOC_ACT_SILU) x = _mm512_mul_ps(x, byoc_wide_sigmoid16_(x));
    _mm512_mask_storeu_ps(v + i, m, x);
  }
}

/* Output channels a tile computes: 12 when they divide a group's (24 accumulators, each run of
 * the image read once for 12 channels), else 8 (a 16-, 32- or 64-channel layer would compute
 * 8 channels of a last block of 12 for nothing). */
static inline int64_t byoc_conv2d_wide_mr_(const byoc_conv_wide_* g) {
  return g->OG % 12 == 0 ? 12 : 8;
}

/* The stored outputs of q in [q0, q1): [*p0, *p1) of each channel's plane. */
static inline void byoc_conv2d_wide_pixels_(const byoc_conv_wide_* g, int64_t q0, int64_t q1,
                                            int64_t* p0, int64_t* p1) {
  const int64_t WQ = g->WQ, OW = g->OW;
  const int64_t a = q0 / WQ, b = q0 % WQ, c = (q1 - 1) / WQ, d = (q1 - 1) % WQ;
  *p0 = a * OW + (b < OW ? b : OW);
  *p1 = c * OW + (d < OW ? d + 1 : OW);
  if (*p1 < *p0) *p1 = *p0;
}

/*
 * Units [u0, u1) of one image: a unit is a run of 32 q (a tile) times a block of MR output
 * channels of one group, numbered group-major, then tile, then block (`by_tile`), or
 * group-major, then block, then tile (when a group's weights are too many to stay in L2
 * while every block runs over a tile). After each unit, the epilogue on its outputs, still
 * in cache.
 */
static BYOC_WIDE_AVX512 BYOC_MAYBE_UNUSED void byoc_conv2d_wide_part_(
    const byoc_conv_wide_* g, const float* restrict xq, const float* restrict w,
    float* restrict y, int64_t u0, int64_t u1, int by_tile, const byoc_epilogue_* ep) {
  int64_t off[BYOC_CONV2D_WIDE_MAX_WS];
  const int64_t KH = g->KH, KW = g->KW, SH = g->SH, SW = g->SW, DH = g->DH, DW = g->DW;
  for (int64_t k = 0; k < g->WS; ++k) {
    const int64_t c = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
    const int64_t ph = kh * DH % SH, pw = kw * DW % SW;
    off[k] = ((c * SH + ph) * SW + pw) * g->plane + kh * DH / SH * g->WQ + kw * DW / SW;
  }
  const int64_t MR = byoc_conv2d_wide_mr_(g);
  const int64_t tiles = (g->Q + 31) / 32, blocks = (g->OG + MR - 1) / MR;
  const int64_t per_group = tiles * blocks;
  const int64_t group_x = g->CG * SH * SW * g->plane;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t grp = u / per_group, r = u % per_group;
    const int64_t tile = by_tile ? r / blocks : r % tiles;
    const int64_t blk = by_tile ? r % blocks : r / tiles;
    const int64_t o = MR * blk, mr = g->OG - o < MR ? g->OG - o : MR;
    float* yg = y + grp * g->OG * g->P;
    if (MR == 12)
      byoc_conv2d_wide_tile_(g, xq + grp * group_x, w + grp * g->OG * g->WS, yg, off, o, mr,
                             32 * tile, 12);
    else
      byoc_conv2d_wide_tile_(g, xq + grp * group_x, w + grp * g->OG * g->WS, yg, off, o, mr,
                             32 * tile, 8);
    if (ep != NULL) {
      int64_t p0, p1;
      const int64_t q1 = 32 * tile + 32 < g->Q ? 32 * tile + 32 : g->Q;
      byoc_conv2d_wide_pixels_(g, 32 * tile, q1, &p0, &p1);
      for (int64_t i = 0; i < mr; ++i)
        byoc_conv2d_wide_ep_(ep, grp * g->OG + o + i, yg + (o + i) * g->P + p0, p1 - p0);
    }
  }
}

/*
 * conv2d by this path (byoc_conv2d_wide_of_ said it takes it): per image, the phase planes
 * (split across threads over channels, as a copy is), then the units in equal shares with
 * stealing (BYOC_STEAL_); every output is computed by one unit, the same way at any count.
 */
static inline void byoc_conv2d_wide_run_(const byoc_conv_wide_* g, const float* restrict x,
                                         const float* restrict w, float* restrict y,
                                         float* restrict scratch, int64_t N,
                                         const byoc_epilogue_* ep) {
  const int64_t MR = byoc_conv2d_wide_mr_(g);
  const int64_t tiles = (g->Q + 31) / 32, blocks = (g->OG + MR - 1) / MR;
  const int64_t units = g->G * tiles * blocks;
  /* tile-major while a group's weights stay in L2 for the next tile */
  const int by_tile = g->OG * g->WS * (int64_t)sizeof(float) <= 512 * 1024 || tiles == 1;
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * g->C * g->H * g->W;
    float* yn = y + n * g->O * g->P;
    const float* xq = xn;
    if (!g->direct) {
      const int64_t bytes = g->C * g->SH * g->SW * g->plane * (int64_t)sizeof(float);
      const int32_t nt = byoc_threads_for(bytes, BYOC_COPY_GRAIN);
      BYOC_SPLIT_(nt, t, byoc_conv2d_wide_pad_(g, xn, scratch, g->C * t / nt, g->C * (t + 1) / nt));
      xq = scratch;
    }
    const int32_t nt = byoc_threads_for(g->G * g->Q * g->OG * g->WS, BYOC_PAR_GRAIN);
    if (nt <= 1) {
      byoc_conv2d_wide_part_(g, xq, w, yn, 0, units, by_tile, ep);
      continue;
    }
    BYOC_STEAL_(nt, units, byoc_steal_grain_(nt, units, by_tile ? blocks : tiles),
                by_tile ? blocks : tiles, u0, u1,
                byoc_conv2d_wide_part_(g, xq, w, yn, u0, u1, by_tile, ep));
  }
}
#endif /* BYOC_FMA && !BYOC_NO_AVX512 */

#endif /* BYOC_KERNELS_CONV_WIDE_H_ */
