/*
 * byoc_qmaxpool_u8 / _i8 (byoc_qkernels.h) against a plain max over each window, on random
 * shapes: widths 1 to 330 (the AVX-512 VBMI path takes rows up to 128 bytes, the AVX2 and SSE2
 * paths the rest), kernels 1 to 4, strides 1 to 3, dilations 1 and 2, padding on each side,
 * ceil mode, u8 and i8, one to ten planes; the byte after the output is checked untouched.
 * Windows without an input element are skipped (ONNX pads are smaller than the window, and
 * the kernels assume one). Built by tests/runtime/test_qmaxpool_paths.py at both dispatch
 * levels (-DBYOC_BASELINE_ONLY) and run at 1 and 2 threads. Prints "cases N bad M".
 */
#include <stdio.h>

#include "byoc_qkernels.h"

static uint32_t seed_ = 12345;
static uint32_t rnd(void) {
  seed_ = seed_ * 1664525u + 1013904223u;
  return seed_ >> 8;
}

static uint8_t x[400000], y[400000], r[400000];

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 3000;
  if (argc > 2) byoc_set_call_threads(atoi(argv[2]));
  long bad = 0, cases = 0;
  for (int it = 0; it < iters; ++it) {
    const int64_t N = 1 + rnd() % 2, C = 1 + rnd() % 5, H = 1 + rnd() % 40;
    const int64_t W = 1 + rnd() % (it % 2 ? 140 : 330);
    const int64_t KH = 1 + rnd() % 4, KW = 1 + rnd() % 4, SH = 1 + rnd() % 3, SW = 1 + rnd() % 3;
    const int64_t DH = 1 + rnd() % 2, DW = 1 + rnd() % 2;
    const int64_t PT = rnd() % KH, PL = rnd() % KW, PB = rnd() % KH, PR = rnd() % KW;
    const int ceil_mode = rnd() % 2, sgn = rnd() % 2;
    const int64_t eh = (KH - 1) * DH + 1, ew = (KW - 1) * DW + 1;
    if (H + PT + PB < eh || W + PL + PR < ew) continue;
    int64_t OH = (H + PT + PB - eh + (ceil_mode ? SH - 1 : 0)) / SH + 1;
    int64_t OW = (W + PL + PR - ew + (ceil_mode ? SW - 1 : 0)) / SW + 1;
    if (ceil_mode) { /* the last window starts inside the input or its leading padding */
      if ((OH - 1) * SH >= H + PT) OH--;
      if ((OW - 1) * SW >= W + PL) OW--;
    }
    int empty = 0;
    for (int64_t oh = 0; oh < OH; ++oh) {
      int any = 0;
      for (int64_t i = 0; i < KH; ++i) any |= oh * SH - PT + i * DH >= 0 && oh * SH - PT + i * DH < H;
      empty |= !any;
    }
    for (int64_t ow = 0; ow < OW; ++ow) {
      int any = 0;
      for (int64_t j = 0; j < KW; ++j) any |= ow * SW - PL + j * DW >= 0 && ow * SW - PL + j * DW < W;
      empty |= !any;
    }
    if (empty) continue;
    for (int64_t i = 0; i < N * C * H * W; ++i) x[i] = (uint8_t)rnd();
    const int64_t n = N * C * OH * OW;
    memset(y, 0x5A, (size_t)n + 64);
    if (sgn)
      byoc_qmaxpool_i8((const int8_t*)x, (int8_t*)y, N, C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW);
    else
      byoc_qmaxpool_u8(x, y, N, C, H, W, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW);
    for (int64_t nc = 0; nc < N * C; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int m = -1000;
          for (int64_t i = 0; i < KH; ++i)
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t ih = oh * SH - PT + i * DH, iw = ow * SW - PL + j * DW;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const uint8_t b = x[nc * H * W + ih * W + iw];
              const int v = sgn ? (int)(int8_t)b : (int)b;
              if (v > m) m = v;
            }
          r[nc * OH * OW + oh * OW + ow] = (uint8_t)m;
        }
    cases++;
    if (memcmp(y, r, (size_t)n) != 0 || y[n] != 0x5A) {
      if (bad < 5)
        printf("bad: N%ld C%ld H%ld W%ld k%ldx%ld s%ldx%ld p%ld,%ld d%ldx%ld out %ldx%ld %s\n", (long)N,
               (long)C, (long)H, (long)W, (long)KH, (long)KW, (long)SH, (long)SW, (long)PT, (long)PL,
               (long)DH, (long)DW, (long)OH, (long)OW, sgn ? "i8" : "u8");
      bad++;
    }
  }
  printf("cases %ld bad %ld\n", cases, bad);
  return bad != 0;
}
