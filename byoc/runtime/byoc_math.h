/*
 * byoc_math.h — scalar f32 functions the generated pointwise loops call where libm is slow.
 * byoc_tanhf: libm's tanhf goes through expm1f (about 14 ns a value on an AVX-512 server);
 * this one is Cephes' formula, the formula of the recurrent kernels' 8-lane tanh
 * (byoc_rnn_tanh8_ in byoc_kernels_recurrent.h), on byoc_expf. Inline, so a fused loop
 * keeps its values in registers. Accuracy: a few ulp (within ULPS of
 * byoc/conformance/bounds.py). byoc_expf, byoc_tanhf, byoc_sigmoidf and byoc_gelu_erff (the
 * erf-form GELU) are branch-free and call nothing, so a fused loop of them (`omp simd`)
 * vectorises, where libm's expf and erff are a call per element: a GELU's 1x512x508 loop
 * takes 0.2 ms against 1.7 ms with libm's expf, and a YOLO detector's SiLU layers
 * (x * sigmoid(x)) cost about a memory pass.
 */
#ifndef BYOC_MATH_H_
#define BYOC_MATH_H_

#include <math.h>
#include <stdint.h>
#include <string.h>


/* exp(x): Cephes' expf polynomial on r = x - n ln 2, scaled by 2^n in two factors (so
 * results below FLT_MIN underflow gradually, as libm's do), within 2 ulp of libm's expf.
 * x is clamped to [-104, 89]: exp(-104 and below) is 0, and from 88.73 on (89 included)
 * the scaling overflows to infinity, as libm's does; NaN gives NaN. The clamps are bit
 * masks, so a loop of it vectorises where expf is a call per element. */
static inline __attribute__((always_inline)) float byoc_expf(float x) {
  const float lo_lim = -104.0f, hi_lim = 89.0f;
  const uint32_t low = 0u - (uint32_t)(x < lo_lim), high = 0u - (uint32_t)(x > hi_lim);
  uint32_t xb, lb, hb;
  memcpy(&xb, &x, sizeof xb);
  memcpy(&lb, &lo_lim, sizeof lb);
  memcpy(&hb, &hi_lim, sizeof hb);
  xb = (xb & ~low & ~high) | (lb & low) | (hb & high);
  float xc;
  memcpy(&xc, &xb, sizeof xc);
  const float t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: rounds to an int */
  const float n = t - 12582912.0f;
  uint32_t ni;
  memcpy(&ni, &t, sizeof ni);
  ni -= 0x4B400000u;
  const uint32_t half = (uint32_t)((int32_t)ni >> 1);
  const uint32_t lo_b = (half + 127u) << 23, hi_b = (ni - half + 127u) << 23;
  float lo, hi;
  memcpy(&lo, &lo_b, sizeof lo);
  memcpy(&hi, &hi_b, sizeof hi);
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return ((p * (r * r) + r + 1.0f) * lo) * hi; /* the order byoc_sigmoid4_ and the AVX-512 epilogue repeat */
}

/* c ? a : b by a bit mask: a select gcc might turn into a branch would stop a loop's
 * vectorisation (and mispredict on a layer's activations). */
static inline __attribute__((always_inline)) float byoc_pick_(int c, float a, float b) {
  const uint32_t m = 0u - (uint32_t)(c != 0);
  uint32_t ab, bb;
  memcpy(&ab, &a, sizeof ab);
  memcpy(&bb, &b, sizeof bb);
  const uint32_t rb = (ab & m) | (bb & ~m);
  float r;
  memcpy(&r, &rb, sizeof r);
  return r;
}

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
  const float big = 1.0f - 2.0f / (byoc_expf(a + a) + 1.0f);
  return copysignf(byoc_pick_(a < 0.625f, poly, big), x);
}

/*
 * GELU, erf form: x * Phi(x), Phi the normal distribution function, through
 * erfc(z) = t exp(-z^2 - 1.26551223 + t P(t)), t = 1 / (1 + z / 2), z = |x| / sqrt(2)
 * (Numerical Recipes' erfcc, relative error below 1.2e-7 for every z >= 0): Phi(x) is
 * erfc(z) / 2 for x < 0 and 1 - erfc(z) / 2 otherwise. Unlike 0.5 x (1 + erff(x / sqrt 2)),
 * nothing cancels where x is negative, so the result keeps its relative accuracy into the
 * tail; docs/c-codegen.md gives the measured error. Branch-free (the side is a bit mask):
 * a fused loop of it vectorises, where libm's erff is a call per element.
 */
static inline __attribute__((always_inline)) float byoc_gelu_erff(float x) {
  const float z = fabsf(x) * 0.707106781186547524f;
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  const float tail = 0.5f * (t * byoc_expf(t * p - 1.26551223f - z * z));
  return x * byoc_pick_(x < 0.0f, tail, 1.0f - tail);
}

/* sigmoid: 1 / (1 + e^-x), the formula of the reference (and of onnxruntime). */
static inline __attribute__((always_inline)) float byoc_sigmoidf(float x) {
  return 1.0f / (1.0f + byoc_expf(-x));
}

#endif /* BYOC_MATH_H_ */
