/*
 * byoc_math.h — scalar f32 functions the generated pointwise loops call where libm is slow.
 * byoc_tanhf: libm's tanhf goes through expm1f (about 14 ns a value on an AVX-512 server);
 * this one is Cephes' formula on libm's expf (about 4 ns), the formula of the recurrent
 * kernels' 8-lane tanh (byoc_rnn_tanh8_ in byoc_kernels_recurrent.h). Inline, so a fused
 * loop keeps its values in registers. Accuracy: a few ulp (within ULPS of
 * byoc/conformance/bounds.py).
 * byoc_expf / byoc_sigmoidf: exp without a call (libm's expf is a call per value, which no
 * loop around it can vectorize): plain float and integer arithmetic that gcc turns into
 * vector code, 4 values an SSE instruction in the glue, 8 in the kernels' AVX2 clones. A
 * YOLO detector's SiLU layers (x * sigmoid(x)) went from about 1.9 ns a value to the cost
 * of the memory pass. Accuracy: exp within 1 ulp, sigmoid 2.5 (docs/c-codegen.md).
 */
#ifndef BYOC_MATH_H_
#define BYOC_MATH_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

/* tanh: Cephes' tanhf (an odd polynomial below |x| = 0.625, else 1 - 2 / (e^(2|x|) + 1)),
 * on |x|, then the sign of x. Both branches are computed and one is picked by a bit mask:
 * a data-dependent branch would mispredict on about every other value of a layer's
 * activations. NaN gives NaN (|x| < 0.625 is false, the exp branch is NaN); -0 gives -0. */
static inline __attribute__((always_inline)) float byoc_tanhf(float x) {
  const float a = fabsf(x);
  const float s = a * a;
  float poly = -5.70498872745e-3f * s + 2.06390887954e-2f;
  poly = poly * s - 5.37397155531e-2f;
  poly = poly * s + 1.33314422036e-1f;
  poly = poly * s - 3.33332819422e-1f;
  poly = poly * s * a + a;
  const float big = 1.0f - 2.0f / (expf(a + a) + 1.0f);
  uint32_t pb, bb;
  memcpy(&pb, &poly, sizeof pb);
  memcpy(&bb, &big, sizeof bb);
  const uint32_t small = 0u - (uint32_t)(a < 0.625f);
  const uint32_t rb = (pb & small) | (bb & ~small);
  float r;
  memcpy(&r, &rb, sizeof r);
  return copysignf(r, x);
}

/* exp: n = round(x / ln 2) (by the 1.5 * 2^23 trick: no rounding call, which baseline
 * x86-64 cannot vectorize), r = x - n ln 2 in two steps (Cody and Waite), Cephes' expf
 * polynomial for e^r on |r| <= ln 2 / 2, times 2^n as two powers of two built from their
 * exponent bits (n may be 128, or far below -126 where the result is subnormal). x is first
 * clamped to [-104, 89]: beyond, e^x rounds to 0 or overflows to inf anyway, as it does
 * here through the scaling; a NaN passes through (both comparisons are false). */
static inline __attribute__((always_inline)) float byoc_expf(float x) {
  /* the clamps as bit masks: a select gcc might turn into a branch would not vectorize */
  uint32_t xb, lob, hib;
  const float lo = -104.0f, hi = 89.0f;
  memcpy(&xb, &x, sizeof xb);
  memcpy(&lob, &lo, sizeof lob);
  memcpy(&hib, &hi, sizeof hib);
  const uint32_t below = 0u - (uint32_t)(x < lo), above = 0u - (uint32_t)(x > hi);
  xb = (xb & ~(below | above)) | (lob & below) | (hib & above);
  memcpy(&x, &xb, sizeof x);
  const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  const float j = x * 1.44269504088896341f + magic;
  const float n = j - magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  uint32_t jb, mb;
  memcpy(&jb, &j, sizeof jb);
  memcpy(&mb, &magic, sizeof mb);
  const int32_t ni = (int32_t)(jb - mb); /* n: the low bits of j */
  const int32_t n1 = ni >> 1, n2 = ni - n1; /* (arithmetic shift: a vector op on SSE2) */
  const uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
  float s1, s2;
  memcpy(&s1, &b1, sizeof s1);
  memcpy(&s2, &b2, sizeof s2);
  return p * s1 * s2;
}

/* sigmoid: 1 / (1 + e^-x), the formula of the reference (and of onnxruntime). */
static inline __attribute__((always_inline)) float byoc_sigmoidf(float x) {
  return 1.0f / (1.0f + byoc_expf(-x));
}

#endif /* BYOC_MATH_H_ */
