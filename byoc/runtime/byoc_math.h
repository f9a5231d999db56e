/*
 * byoc_math.h — scalar f32 functions the generated pointwise loops call where libm is slow.
 * byoc_tanhf: libm's tanhf goes through expm1f (about 14 ns a value on an AVX-512 server);
 * this one is Cephes' formula, the formula of the recurrent kernels' 8-lane tanh
 * (byoc_rnn_tanh8_ in byoc_kernels_recurrent.h), on an inline Cephes expf without a branch
 * or a call, so a fused loop that calls it (`omp simd`) is vectorised: a GELU's 1x512x508
 * loop went from 1.7 ms (libm's expf a value, about 4 ns) to 0.2 ms. Accuracy: a few ulp
 * (within ULPS of byoc/conformance/bounds.py).
 */
#ifndef BYOC_MATH_H_
#define BYOC_MATH_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^x for the tanh below (Cephes' expf, as byoc_rnn_exp8_: x = n ln2 + r in two parts, a
 * degree-6 polynomial in r, times 2^n built in the exponent bits in two factors; about 1 ulp).
 * x is clamped to [-87.3, 88.7], so the result saturates near FLT_MIN / FLT_MAX rather than
 * reaching 0 or inf: right for tanh, not a general exp. NaN gives NaN. */
/* c ? a : b by a bit mask (a branch would stop the loop's vectorisation, and mispredict). */
static inline __attribute__((always_inline)) float byoc_sel_(int c, float a, float b) {
  const uint32_t m = 0u - (uint32_t)(c != 0);
  uint32_t ab, bb;
  memcpy(&ab, &a, sizeof ab);
  memcpy(&bb, &b, sizeof bb);
  const uint32_t rb = (ab & m) | (bb & ~m);
  float r;
  memcpy(&r, &rb, sizeof r);
  return r;
}

static inline __attribute__((always_inline)) float byoc_tanh_expf_(float x0) {
  const int nan = x0 != x0;
  float x = byoc_sel_(nan, 0.0f, x0);
  x = byoc_sel_(x < -87.3f, -87.3f, x);
  x = byoc_sel_(x > 88.7f, 88.7f, x);
  const float fx = x * 1.44269504088896341f + 0.5f;
  int32_t n = (int32_t)fx; /* truncates: floor below */
  n -= (float)n > fx;
  const float nf = (float)n;
  x = x - nf * 0.693359375f;
  x = x - nf * -2.12194440e-4f;
  const float z = x * x;
  float p = 1.9875691500e-4f * x + 1.3981999507e-3f;
  p = p * x + 8.3334519073e-3f;
  p = p * x + 4.1665795894e-2f;
  p = p * x + 1.6666665459e-1f;
  p = p * x + 5.0000001201e-1f;
  p = p * z + x + 1.0f;
  const int32_t half = n >> 1;
  const uint32_t b1 = (uint32_t)(half + 127) << 23, b2 = (uint32_t)(n - half + 127) << 23;
  float e1, e2;
  memcpy(&e1, &b1, sizeof e1);
  memcpy(&e2, &b2, sizeof e2);
  return byoc_sel_(nan, x0, p * e1 * e2);
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
  const float big = 1.0f - 2.0f / (byoc_tanh_expf_(a + a) + 1.0f);
  uint32_t pb, bb;
  memcpy(&pb, &poly, sizeof pb);
  memcpy(&bb, &big, sizeof bb);
  const uint32_t small = 0u - (uint32_t)(a < 0.625f);
  const uint32_t rb = (pb & small) | (bb & ~small);
  float r;
  memcpy(&r, &rb, sizeof r);
  return copysignf(r, x);
}

#endif /* BYOC_MATH_H_ */
