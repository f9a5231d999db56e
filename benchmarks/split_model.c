/*
 * split_model.c — how evenly conv2d's 2-thread decomposition divides the work, measured
 * without a second thread (so without the wake-ups and the waits for a core that a shared
 * machine adds): each thread's share runs on the calling thread, one after the other, timed
 * with the thread's CPU clock (best of 30); the modelled 2-thread time is the larger share.
 *
 *   cc -std=c11 -O2 -fopenmp -Ibyoc/runtime benchmarks/split_model.c -o /tmp/split_model -lm
 *   /tmp/split_model conv C H O K S PAD [G]     # conv2d C -> O channels, H x H, K x K, stride S
 *   /tmp/split_model dw C H K S PAD              # depthwise, with its padding
 *
 * conv: "old" is a split into chunks of pixel tiles (or channel chunks x tiles below 8
 * tiles), the alternative the current one is measured against; "new" the current one
 * (byoc_kernels.h: byoc_conv2d_units_). A 1x1 conv with 8+ output channels a pixel splits by
 * channel chunks instead, and the conv geometry (the tiles' blocking, an unpadded conv reading
 * the image in place) is the header's: benchmarks/conv_split.c compares two headers.
 * dw: the whole layer on one thread, then each thread's half of the channels (padding
 * included: byoc_conv2d_dw_pad_part_); build it against another tree's byoc/runtime to
 * compare kernels. Figures: benchmarks/results/split_model.md.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "byoc_kernels.h"

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define BEST(expr)                                    \
  ({                                                  \
    double b_ = 1e9;                                  \
    for (int r_ = 0; r_ < 30; r_++) {                 \
      const double t0_ = cpu_now();                   \
      expr;                                           \
      const double t_ = cpu_now() - t0_;              \
      b_ = t_ < b_ ? t_ : b_;                         \
    }                                                 \
    b_;                                               \
  })

/* The pieces of the pixel-tile-chunk decomposition ("old"). */
static void old_pieces(const byoc_conv_geom_* g, const float* xs, const float* w, float* yn,
                       int64_t tiles, int64_t oc_chunks, int64_t tile_chunks, int64_t p0,
                       int64_t p1, const byoc_epilogue_* ep) {
  const int64_t per_group = oc_chunks * tile_chunks, ocu = (g->OG + 5) / 6;
  for (int64_t piece = p0; piece < p1; ++piece) {
    const int64_t grp = piece / per_group, rest = piece % per_group;
    const int64_t oc_i = rest / tile_chunks, tc = rest % tile_chunks;
    const int64_t oc0 = 6 * (ocu * oc_i / oc_chunks);
    int64_t oc1 = 6 * (ocu * (oc_i + 1) / oc_chunks);
    oc1 = oc1 < g->OG ? oc1 : g->OG;
    const int64_t t0 = tiles * tc / tile_chunks, t1 = tiles * (tc + 1) / tile_chunks;
    if (oc0 >= oc1 || t0 >= t1) continue;
    byoc_conv2d_part_(g, xs + grp * g->CG * g->HP * g->WP, w + grp * g->OG * g->WS,
                      yn + grp * g->OG * g->P, t0, t1, oc0, oc1, ep, grp * g->OG);
  }
}

int main(int argc, char** argv) {
  const int dw = argc > 1 && strcmp(argv[1], "dw") == 0;
  if (argc < (dw ? 7 : 8)) {
    fprintf(stderr, "usage: %s conv C H O K S PAD [G] | dw C H K S PAD\n", argv[0]);
    return 2;
  }
  const int64_t C = atoi(argv[2]), H = atoi(argv[3]);
  const int64_t O = dw ? C : atoi(argv[4]);
  const int64_t K = atoi(argv[dw ? 4 : 5]), S = atoi(argv[dw ? 5 : 6]), PD = atoi(argv[dw ? 6 : 7]);
  const int64_t G = dw ? C : (argc > 8 ? atoi(argv[8]) : 1);
  const int64_t W = H, OH = (H + 2 * PD - K) / S + 1, OW = OH;
  float* x = malloc(sizeof(float) * C * H * W);
  float* w = malloc(sizeof(float) * O * (C / G) * K * K);
  float* y = malloc(sizeof(float) * O * OH * OW);
  float* b = malloc(sizeof(float) * O);
  float* xp = malloc(sizeof(float) * (C * (H + 2 * PD + 16) * (2 * W + 2 * PD + 32) + 4096));
  for (int64_t i = 0; i < C * H * W; i++) x[i] = (float)(i % 17) * 0.1f;
  for (int64_t i = 0; i < O * (C / G) * K * K; i++) w[i] = (float)(i % 13) * 0.01f;
  for (int64_t i = 0; i < O; i++) b[i] = 0.1f;
  const byoc_epilogue_ ep = byoc_epilogue_of_(BYOC_EP_BIAS, b, b, b, BYOC_ACT_RELU, 0, 0);
  byoc_conv_geom_ g; /* as byoc_conv2d_run_ derives it */
  const int direct = byoc_conv2d_geom_(&g, C, H, W, O, K, K, OH, OW, S, S, PD, PD, 1, 1, G);
  if (dw) { /* the kernel's own decomposition: each thread pads and computes its channels */
    const int split = S == 2;
    const double one = BEST(byoc_conv2d_dw_pad_part_(&g, x, xp, w, y, 0, C, split, &ep));
    const double n0 = BEST(byoc_conv2d_dw_pad_part_(&g, x, xp, w, y, 0, C / 2, split, &ep));
    const double n1 = BEST(byoc_conv2d_dw_pad_part_(&g, x, xp, w, y, C / 2, C, split, &ep));
    const double two = n0 > n1 ? n0 : n1;
    const double flops = 2.0 * (double)(C * OH * OW * K * K);
    printf("dw C=%ld H=%ld K=%ld S=%ld: 1 thread %.1f us (%.1f GFLOP/s); 2 threads %.1f / %.1f us (%.2fx)\n",
           (long)C, (long)H, (long)K, (long)S, one * 1e6, flops / one * 1e-9, n0 * 1e6, n1 * 1e6, one / two);
    return 0;
  }
  if (!direct) byoc_conv2d_pad_(&g, x, xp, 0, C, 0);
  const float* xs = direct ? x : xp;
  const int64_t tiles = (g.P + 15) / 16, ocu = (g.OG + 5) / 6, units = G * tiles * ocu;
  const int32_t nt = 2;
  int64_t oa = 1;
  if (tiles < 4 * nt) oa = (4 * nt + tiles - 1) / tiles, oa = oa < ocu ? oa : ocu;
  const int64_t ob = tiles < 4 * nt ? tiles : 4 * nt, pieces = G * oa * ob;
  int64_t chunk = (tiles + 4 * nt - 1) / (4 * nt);
  chunk = chunk > 4096 / g.OG ? chunk : 4096 / g.OG;
  const double one = BEST(byoc_conv2d_units_(&g, xs, w, y, tiles, 0, units, tiles, &ep));
  double o[2], n[2];
  for (int t = 0; t < nt; ++t) {
    o[t] = BEST(old_pieces(&g, xs, w, y, tiles, oa, ob, pieces * t / nt, pieces * (t + 1) / nt, &ep));
    n[t] = BEST(byoc_conv2d_units_(&g, xs, w, y, tiles, units * t / nt, units * (t + 1) / nt, chunk, &ep));
  }
  const double old2 = o[0] > o[1] ? o[0] : o[1], new2 = n[0] > n[1] ? n[0] : n[1];
  printf("conv C=%ld H=%ld O=%ld K=%ld S=%ld G=%ld (%ld tiles): 1 thread %.1f us; 2 threads old %.1f / %.1f us (%.2fx), new %.1f / %.1f us (%.2fx)\n",
         (long)C, (long)H, (long)O, (long)K, (long)S, (long)G, (long)tiles, one * 1e6, o[0] * 1e6, o[1] * 1e6,
         one / old2, n[0] * 1e6, n[1] * 1e6, one / new2);
  return 0;
}
