/*
 * The recurrent product of byoc_kernels_recurrent.h in its forms: byoc_rnn_gemv_fma_ (AVX2 +
 * FMA) and byoc_rnn_gemv_avx512_ (AVX-512F), called gate by gate as a step calls them, give
 * the same bits for every shape, batch and split of each gate's rows (the ranges a step's
 * threads take: units in multiples of 8), within gamma(H) * sum |h * r| of a
 * double-precision sum.
 * The AVX-512 form is compared only on a CPU that has it; the FMA form needs AVX2 + FMA.
 * Built and run by tests/runtime/test_recurrent_product.py. Prints "ok" or what failed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "byoc_kernels.h"

static float* rnd(int64_t n) {
  float* p = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  return p;
}

int main(void) {
#ifdef BYOC_FMA
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    printf("ok\n");
    return 0;
  }
  const int wide = __builtin_cpu_supports("avx512f") != 0;
  const int64_t sizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 24, 37, 40, 63, 64, 100, 255, 256};
  int failed = 0;
  srand(7);
  for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; ++a) {
    for (int64_t B = 1; B <= 3; ++B) {
      const int64_t H = sizes[a], G = 4, GH = G * H;
      float* h = rnd(B * H);
      float* r = rnd(GH * H);
      float* one = malloc((size_t)(B * GH) * sizeof(float));
      float* other = malloc((size_t)(B * GH) * sizeof(float));
      /* as a step computes it: gate by gate (byoc_rnn_gates_product_) */
      for (int64_t g = 0; g < G; ++g) byoc_rnn_gemv_fma_(h, r, one, B, H, GH, g * H, g * H + H);
      for (int64_t m = 0; m < B; ++m)
        for (int64_t n = 0; n < GH; ++n) {
          double exact = 0.0, mag = 0.0;
          for (int64_t k = 0; k < H; ++k) {
            exact += (double)h[m * H + k] * r[n * H + k];
            mag += fabs((double)h[m * H + k] * r[n * H + k]);
          }
          const double u = 0x1p-24, gamma = H * u / (1.0 - H * u);
          if (fabs(one[m * GH + n] - exact) > gamma * mag) {
            printf("H %ld B %ld: FMA form off by %g (bound %g)\n", (long)H, (long)B,
                   fabs(one[m * GH + n] - exact), gamma * mag);
            failed = 1;
          }
        }
      /* every split of each gate's units in multiples of 8, as the step's threads take
       * them, in each form */
      for (int form = 0; form <= wide; ++form)
        for (int64_t cut = 0; cut <= H; cut += 8) {
          for (int64_t i = 0; i < B * GH; ++i) other[i] = NAN;
          for (int64_t g = 0; g < G; ++g) {
            if (form) {
              byoc_rnn_gemv_avx512_(h, r, other, B, H, GH, g * H, g * H + cut);
              byoc_rnn_gemv_avx512_(h, r, other, B, H, GH, g * H + cut, g * H + H);
            } else {
              byoc_rnn_gemv_fma_(h, r, other, B, H, GH, g * H, g * H + cut);
              byoc_rnn_gemv_fma_(h, r, other, B, H, GH, g * H + cut, g * H + H);
            }
          }
          for (int64_t i = 0; i < B * GH; ++i)
            if (memcmp(&one[i], &other[i], sizeof(float)) != 0) {
              printf("H %ld B %ld cut %ld: the %s form differs at %ld\n", (long)H, (long)B,
                     (long)cut, form ? "AVX-512" : "FMA", (long)i);
              failed = 1;
              break;
            }
        }
      free(h), free(r), free(one), free(other);
    }
  }
  printf(failed ? "failed\n" : "ok\n");
  return failed;
#else
  printf("ok\n");
  return 0;
#endif
}
