/*
 * byoc_math.h — scalar f32 functions the generated pointwise loops call where libm is slow.
 * byoc_tanhf: libm's tanhf goes through expm1f (about 14 ns a value on an AVX-512 server);
 * this one is Cephes' formula on libm's expf (about 4 ns), the formula of the recurrent
 * kernels' 8-lane tanh (byoc_rnn_tanh8_ in byoc_kernels_recurrent.h). Inline, so a fused
 * loop keeps its values in registers. Accuracy: a few ulp (within ULPS of
 * byoc/conformance/bounds.py).
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

#endif /* BYOC_MATH_H_ */
