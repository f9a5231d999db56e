/*
 * Microbenchmark of the fused int8 blocks of byoc_qkernels.h / byoc_qpool.h: the
 * calling thread's CPU time, best of many calls, one thread, for the shapes that cost most in
 * squeezenet and resnet50. Build and run from the repository root:
 *
 *   cc -std=c11 -O2 -fopenmp -Ibyoc/runtime benchmarks/qkernels_micro.c -o /tmp/qmicro -lm && /tmp/qmicro
 *
 * (add -DBYOC_BASELINE_ONLY for the baseline kernels).
 */
#include <stdio.h>
#include <time.h>

#include "byoc_qpool.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define BEST(R, CALL)                                    \
  do {                                                   \
    double best_ = 1e9;                                  \
    for (int r_ = 0; r_ < (R); ++r_) {                   \
      const double t0_ = now();                          \
      CALL;                                              \
      const double t1_ = now();                          \
      if (t1_ - t0_ < best_) best_ = t1_ - t0_;          \
    }                                                    \
    us = best_ * 1e6;                                    \
  } while (0)

static uint8_t x[256 * 111 * 111 + 64], x2[256 * 111 * 111], y[256 * 111 * 111], tab[256 * 256];
static float xf[65536];
static int64_t sums[256];
static int32_t one[1];

int main(void) {
  double us = 0;
  for (int i = 0; i < (int)sizeof x; i++) x[i] = (uint8_t)(i * 37 + (i >> 7));
  for (int i = 0; i < (int)sizeof x2; i++) x2[i] = (uint8_t)(i * 11);
  for (int i = 0; i < (int)sizeof tab; i++) tab[i] = (uint8_t)(i * 13);
  for (int i = 0; i < 65536; i++) xf[i] = (float)((i % 611) - 300) * 0.0071f;
  for (int i = 0; i < 256; i++) sums[i] = (int64_t)(i - 3) * 13421773;
  const int mp[3][3] = {{64, 111, 55}, {128, 55, 27}, {256, 27, 13}};
  for (int k = 0; k < 3; k++) {
    const int C = mp[k][0], H = mp[k][1], O = mp[k][2];
    BEST(100, byoc_qmaxpool_u8(x, y, 1, C, H, H, 3, 3, O, O, 2, 2, 0, 0, 1, 1));
    printf("qmaxpool 3x3/2 %dx%dx%d: %.1f us\n", C, H, H, us);
  }
  float s = 0.0123f;
  uint8_t z = 3;
  BEST(200, byoc_qadd_u8_u8_u8(x, x2, y, 65536, 0.026f, 0, 0.0203f, 0, 0.0361f, 0, 0, 0));
  printf("qadd 65536: %.1f us\n", us);
  BEST(200, byoc_quantize_u8(xf, &s, &z, y, 65536, 65536, 1));
  printf("quantize 65536: %.1f us\n", us);
  const int lc[3] = {256, 512, 2048}, lhw[3] = {3136, 784, 49};
  for (int k = 0; k < 3; k++) {
    const int64_t n = (int64_t)lc[k] * lhw[k];
    BEST(100, byoc_qlut_u8_u8(x, tab, y, n, lhw[k], 256));
    printf("qlut per channel %dx%d: %.1f us\n", lc[k], lhw[k], us);
  }
  one[0] = 1024;
  BEST(200, byoc_qavgpool_u8_u8(x, sums, one, tab, y, 1, 64, 32, 32, 32, 32, 1, 1, 1, 1, 0, 0, 1, 1, -28, 0.012f, 0, 0, 0, 0));
  printf("qavgpool global 64x32x32 (scalar sums): %.1f us\n", us);
  return 0;
}
