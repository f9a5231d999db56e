/*
 * conv_split.c — an f32 conv2d layer (byoc_conv2d_ep_f32, bias + relu) under two versions
 * of byoc_kernels.h in one process: each version is built into its own shared library from
 * this file, the driver (this file again) loads both and runs them interleaved, call by call.
 * "old" is another version of the header (below: the one at 035231d, tile-by-tile packing on
 * small maps), "new" this tree's. Figures: benchmarks/results/conv_split.md.
 *
 *   mkdir -p /tmp/old && git show 035231d:byoc/runtime/byoc_kernels.h > /tmp/old/byoc_kernels.h
 *   for v in old:/tmp/old new:byoc/runtime; do
 *     cc -std=c11 -O2 -fopenmp -fPIC -shared -DCONV_SPLIT_LIB -I${v#*:} -Ibyoc/runtime \
 *        benchmarks/conv_split.c -o /tmp/conv_split_${v%%:*}.so -lm -pthread; done
 *   cc -std=c11 -O2 benchmarks/conv_split.c -o /tmp/conv_split -ldl -lm
 *   /tmp/conv_split /tmp/conv_split_old.so /tmp/conv_split_new.so [--quick] [--hot] [--rounds N]
 *                   [C H O K S PAD ...]      # layers; default: LAYERS below
 *
 * Per layer, the CPU time of the calling thread (best of `rounds`, each call on the next of
 * several copies of the weights, 64 MB in all, so they come from memory as in a model whose
 * weights exceed the L3; --hot: one copy):
 *   - 1 thread: the whole conv2d at 1 thread;
 *   - 2 threads, modelled: each thread's share of the tiles run on this thread one after the
 *     other (no waits for a core, no wake-up), plus the padding copy (split as the kernel
 *     splits it); the modelled time is the padding plus the larger share;
 *   - 2 threads, run: the CPU time of each share when the two run at once on the library's
 *     team (so they meet each other in the caches and the memory), the larger one; and the
 *     wall time of the whole 2-thread conv2d (median), which on a shared machine includes
 *     the waits for a core.
 * Then whether the outputs of both versions at 1 and at 2 threads are the same bits.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static __attribute__((unused)) double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static __attribute__((unused)) double wall_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct cs_layer cs_layer;

#ifdef CONV_SPLIT_LIB
#include "byoc_kernels.h"

struct cs_layer {
  int64_t C, H, O, K, S, PD, G, OH;
  float *x, *y, *b, *scratch;
  float** w;
  int copies, next;
  byoc_conv_geom_ g;
  int direct;
  byoc_epilogue_ ep;
};

#define CS_EXPORT __attribute__((visibility("default")))

CS_EXPORT cs_layer* cs_new(int64_t C, int64_t H, int64_t O, int64_t K, int64_t S, int64_t PD,
                           int64_t G, int hot);
CS_EXPORT cs_layer* cs_new(int64_t C, int64_t H, int64_t O, int64_t K, int64_t S, int64_t PD,
                           int64_t G, int hot) {
  cs_layer* L = calloc(1, sizeof *L);
  L->C = C, L->H = H, L->O = O, L->K = K, L->S = S, L->PD = PD, L->G = G;
  L->OH = (H + 2 * PD - K) / S + 1;
  const int64_t OH = L->OH, nw = O * (C / G) * K * K;
  L->copies = hot ? 1 : (int)(((int64_t)64 << 20) / (nw * 4) + 1);
  L->w = malloc(sizeof(float*) * (size_t)L->copies);
  for (int i = 0; i < L->copies; ++i) {
    L->w[i] = malloc(sizeof(float) * (size_t)nw);
    for (int64_t j = 0; j < nw; ++j) L->w[i][j] = (float)((j * 7 + i) % 13 - 6) * 0.01f;
  }
  L->x = malloc(sizeof(float) * (size_t)(C * H * H));
  for (int64_t i = 0; i < C * H * H; ++i) L->x[i] = (float)(i % 17 - 8) * 0.1f;
  L->y = malloc(sizeof(float) * (size_t)(O * OH * OH));
  L->b = malloc(sizeof(float) * (size_t)O);
  for (int64_t i = 0; i < O; ++i) L->b[i] = 0.1f;
  L->scratch = malloc(sizeof(float) * (size_t)BYOC_CONV2D_SCRATCH(C, G, K, K, OH, OH, S, S, 1, 1));
  L->ep = byoc_epilogue_of_(BYOC_EP_BIAS, L->b, L->b, L->b, BYOC_ACT_RELU, 0, 0);
  byoc_conv_geom_* g = &L->g; /* as byoc_conv2d_run_ derives it */
#ifdef BYOC_CONV2D_TB
  L->direct = byoc_conv2d_geom_(g, C, H, H, O, K, K, OH, OH, S, S, PD, PD, 1, 1, G);
#else
  g->C = C, g->H = H, g->W = H, g->O = O, g->KH = K, g->KW = K, g->OH = OH, g->OW = OH;
  g->SH = S, g->SW = S, g->PT = PD, g->PL = PD, g->DH = 1, g->DW = 1, g->G = G;
  g->CG = C / G, g->OG = O / G, g->WS = g->CG * K * K;
  g->HP = (OH - 1) * S + K;
  g->OW8 = (OH + 7) / 8 * 8;
  g->P = OH * OH;
  int64_t KC = 131072 / g->OG;
  KC = KC < 64 ? 64 : KC > BYOC_CONV2D_KC ? BYOC_CONV2D_KC : KC;
  g->KC = KC > g->WS ? g->WS : KC;
  g->WP = (OH - 1) * S + K;
  L->direct = PD == 0 && g->HP <= H && g->WP == H;
  if (L->direct) g->HP = H;
#endif
  return L;
}

static const float* cs_weights(cs_layer* L) {
  const float* w = L->w[L->next];
  L->next = (L->next + 1) % L->copies;
  return w;
}

/* The whole conv2d at nt threads. */
CS_EXPORT void cs_conv(cs_layer* L, int32_t nt);
CS_EXPORT void cs_conv(cs_layer* L, int32_t nt) {
  byoc_set_num_threads(nt);
  const int64_t OH = L->OH;
  byoc_conv2d_ep_f32(L->x, cs_weights(L), L->b, L->b, L->b, L->y, L->scratch, 1, L->C, L->H, L->H,
                     L->O, L->K, L->K, OH, OH, L->S, L->S, L->PD, L->PD, 1, 1, L->G, BYOC_EP_BIAS,
                     BYOC_ACT_RELU, 0, 0);
}

CS_EXPORT const float* cs_out(cs_layer* L, int64_t* n);
CS_EXPORT const float* cs_out(cs_layer* L, int64_t* n) {
  *n = L->O * L->OH * L->OH;
  return L->y;
}

/* The padding copy (CPU time; 0 when the tiles read the image), and whether 2 threads split it. */
CS_EXPORT double cs_pad(cs_layer* L, int* split);
CS_EXPORT double cs_pad(cs_layer* L, int* split) {
  const byoc_conv_geom_* g = &L->g;
  *split = L->C * g->HP * g->WP * (int64_t)sizeof(float) >= 2 * BYOC_COPY_GRAIN;
  if (L->direct) return 0;
  const double t0 = cpu_now();
  byoc_conv2d_pad_(g, L->x, L->scratch, 0, L->C, 0);
  return cpu_now() - t0;
}

/* Thread t's share of nt, as the kernel's region runs it (after the padding). */
static void cs_share_run(cs_layer* L, const float* w, int32_t nt, int32_t t) {
  const byoc_conv_geom_* g = &L->g;
  const float* xs = L->direct ? L->x : L->scratch;
#if defined(BYOC_STEAL_CLAIMS) /* shares with stealing: share t as its owner claims it */
  const int64_t tiles = (g->P + 15) / 16, units = g->G * tiles * ((g->OG + 5) / 6);
  int64_t chunk = (tiles + 4 * nt - 1) / (4 * (int64_t)nt);
  chunk = chunk > 4096 / g->OG ? chunk : 4096 / g->OG;
  byoc_conv2d_claim_(g, xs, w, L->y, units * t / nt, units * (t + 1) / nt, chunk, &L->ep);
#elif defined(BYOC_CONV2D_TB)
  byoc_conv2d_share_(g, xs, w, L->y, nt, t, &L->ep);
#else
  const int64_t tiles = (g->P + 15) / 16, units = g->G * tiles * ((g->OG + 5) / 6);
  int64_t chunk = (tiles + 4 * nt - 1) / (4 * (int64_t)nt);
  chunk = chunk > 4096 / g->OG ? chunk : 4096 / g->OG;
  byoc_conv2d_units_(g, xs, w, L->y, tiles, units * t / nt, units * (t + 1) / nt, chunk, &L->ep);
#endif
}

CS_EXPORT double cs_share(cs_layer* L, int32_t nt, int32_t t);
CS_EXPORT double cs_share(cs_layer* L, int32_t nt, int32_t t) {
  const float* w = cs_weights(L);
  const double t0 = cpu_now();
  cs_share_run(L, w, nt, t);
  return cpu_now() - t0;
}

/* Both shares at once on the library's team: each one's CPU time. */
CS_EXPORT void cs_concurrent(cs_layer* L, double* cpu);
CS_EXPORT void cs_concurrent(cs_layer* L, double* cpu) {
  byoc_set_num_threads(2);
  const float* w = cs_weights(L);
  cpu[0] = cpu[1] = 0;
  BYOC_PARALLEL_FOR(2)
  for (int32_t t = 0; t < 2; ++t) {
    const double t0 = cpu_now();
    cs_share_run(L, w, 2, t);
    cpu[t] = cpu_now() - t0;
  }
}

CS_EXPORT void cs_hold(int32_t on);
CS_EXPORT void cs_hold(int32_t on) { byoc_team_hold(on); }

#else /* the driver */
#include <dlfcn.h>

typedef struct {
  cs_layer* (*new_)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int);
  void (*conv)(cs_layer*, int32_t);
  const float* (*out)(cs_layer*, int64_t*);
  double (*pad)(cs_layer*, int*);
  double (*share)(cs_layer*, int32_t, int32_t);
  void (*concurrent)(cs_layer*, double*);
  void (*hold)(int32_t);
} cs_lib;

static void load(const char* path, cs_lib* lib) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    exit(2);
  }
  *(void**)&lib->new_ = dlsym(h, "cs_new");
  *(void**)&lib->conv = dlsym(h, "cs_conv");
  *(void**)&lib->out = dlsym(h, "cs_out");
  *(void**)&lib->pad = dlsym(h, "cs_pad");
  *(void**)&lib->share = dlsym(h, "cs_share");
  *(void**)&lib->concurrent = dlsym(h, "cs_concurrent");
  *(void**)&lib->hold = dlsym(h, "cs_hold");
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double best(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[0];
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

/* C H O K S PAD (G 1): the weight-heavy and small-map layers of the light models */
static const int64_t LAYERS[][7] = {
    /* resnet50 */
    {1024, 14, 2048, 1, 2, 0, 1}, {512, 14, 512, 3, 2, 1, 1}, {512, 7, 2048, 1, 1, 0, 1},
    {512, 7, 512, 3, 1, 1, 1}, {2048, 7, 512, 1, 1, 0, 1}, {256, 14, 256, 3, 1, 1, 1},
    {1024, 14, 512, 1, 1, 0, 1}, {512, 28, 1024, 1, 2, 0, 1}, {64, 56, 64, 3, 1, 1, 1},
    /* inception_v2 */
    {256, 14, 256, 3, 2, 1, 1}, {224, 7, 224, 3, 1, 1, 1}, {192, 7, 320, 3, 1, 1, 1},
    {128, 14, 128, 3, 1, 1, 1}, {96, 28, 96, 3, 1, 1, 1}, {96, 28, 96, 3, 2, 1, 1},
    /* squeezenet */
    {64, 13, 256, 3, 1, 1, 1}, {48, 13, 192, 3, 1, 1, 1}, {512, 13, 1000, 1, 1, 0, 1},
    {64, 13, 256, 1, 1, 0, 1},
    /* vgg19, densenet121's classifier-sized 1x1, shufflenet's grouped 1x1 on 7x7 */
    {512, 14, 512, 3, 1, 1, 1}, {1024, 1, 1000, 1, 1, 0, 1}, {544, 7, 544, 1, 1, 0, 4},
};
static const int QUICK[] = {0, 1, 2, 3, 5, 10, 15, 17};

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s old.so new.so [--quick] [--hot] [--rounds N] [C H O K S PAD ...]\n", argv[0]);
    return 2;
  }
  cs_lib lib[2];
  load(argv[1], &lib[0]);
  load(argv[2], &lib[1]);
  int quick = 0, hot = 0, rounds = 15;
  int64_t custom[64][7];
  int ncustom = 0;
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      quick = 1;
    } else if (strcmp(argv[i], "--hot") == 0) {
      hot = 1;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = atoi(argv[++i]);
    } else if (i + 5 < argc && ncustom < 64) {
      for (int j = 0; j < 6; ++j) custom[ncustom][j] = atoi(argv[i + j]);
      custom[ncustom++][6] = 1;
      i += 5;
    }
  }
  if (rounds < 3) rounds = 3;
  int nl = ncustom;
  const int64_t(*layers)[7] = custom;
  int idx[64];
  if (ncustom == 0) {
    layers = LAYERS;
    nl = quick ? (int)(sizeof QUICK / sizeof *QUICK) : (int)(sizeof LAYERS / sizeof *LAYERS);
  }
  for (int i = 0; i < nl; ++i) idx[i] = ncustom == 0 && quick ? QUICK[i] : i;
  double* s = malloc(sizeof(double) * (size_t)rounds * 16);
  printf("| layer | 1t old us | 1t new us | new/old 1t | model 2t old us | model 2t new us | model old 1t/2t | model new 1t/2t | run 2t old us | run 2t new us | run old 1t/2t | run new 1t/2t | wall 2t old/new us | same bits |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  double gm_model[2] = {0, 0}, gm_run[2] = {0, 0}, gm_one = 0;
  for (int li = 0; li < nl; ++li) {
    const int64_t* l = layers[idx[li]];
    cs_layer* L[2];
    for (int v = 0; v < 2; ++v) L[v] = lib[v].new_(l[0], l[1], l[2], l[3], l[4], l[5], l[6], hot);
    /* same bits: 1 and 2 threads, both versions (weights copy 0 for all: reset by new) */
    int same = 1;
    {
      const float* ref = NULL;
      int64_t n = 0;
      float* keep = NULL;
      for (int v = 0; v < 2; ++v) {
        for (int32_t nt = 1; nt <= 2; ++nt) {
          cs_layer* fresh = lib[v].new_(l[0], l[1], l[2], l[3], l[4], l[5], l[6], 1);
          lib[v].conv(fresh, nt);
          ref = lib[v].out(fresh, &n);
          if (keep == NULL) {
            keep = malloc(sizeof(float) * (size_t)n);
            memcpy(keep, ref, sizeof(float) * (size_t)n);
          } else if (memcmp(keep, ref, sizeof(float) * (size_t)n) != 0) {
            same = 0;
          }
        }
      }
      free(keep);
    }
    double one[2], model[2], run[2], wall[2], pad[2];
    int split[2];
    for (int v = 0; v < 2; ++v) pad[v] = lib[v].pad(L[v], &split[v]);
    /* interleaved: per round, each measurement of old then new */
    double* s1[2] = {s, s + rounds};
    double* sh[2][2] = {{s + 2 * rounds, s + 3 * rounds}, {s + 4 * rounds, s + 5 * rounds}};
    double* sp[2] = {s + 6 * rounds, s + 7 * rounds};
    double* sr[2] = {s + 8 * rounds, s + 9 * rounds};
    double* sw[2] = {s + 10 * rounds, s + 11 * rounds};
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < 2; ++i) { /* old first in even rounds, new first in odd ones */
        const int v = i ^ (r & 1);
        const double t0 = cpu_now();
        lib[v].conv(L[v], 1);
        s1[v][r] = cpu_now() - t0;
      }
      for (int i = 0; i < 2; ++i) {
        const int v = i ^ (r & 1);
        int sp_;
        sp[v][r] = lib[v].pad(L[v], &sp_);
        for (int t = 0; t < 2; ++t) sh[v][t][r] = lib[v].share(L[v], 2, t);
      }
      for (int i = 0; i < 2; ++i) {
        const int v = i ^ (r & 1);
        lib[v].hold(1);
        lib[v].conv(L[v], 2); /* the team awake */
        double c[2];
        lib[v].concurrent(L[v], c);
        sr[v][r] = c[0] > c[1] ? c[0] : c[1];
        const double t0 = wall_now();
        lib[v].conv(L[v], 2);
        sw[v][r] = wall_now() - t0;
        lib[v].hold(0);
      }
    }
    for (int v = 0; v < 2; ++v) {
      one[v] = best(s1[v], rounds);
      pad[v] = best(sp[v], rounds);
      const double a = best(sh[v][0], rounds), b = best(sh[v][1], rounds);
      const double p2 = split[v] ? pad[v] / 2 : pad[v];
      model[v] = p2 + (a > b ? a : b);
      run[v] = p2 + best(sr[v], rounds);
      wall[v] = median(sw[v], rounds);
    }
    char name[96];
    snprintf(name, sizeof name, "%ld->%ld %ldx%ld %ldx%ld/%ld%s", (long)l[0], (long)l[2], (long)l[1],
             (long)l[1], (long)l[3], (long)l[3], (long)l[4], l[6] > 1 ? " g4" : "");
    printf("| %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %.2fx | %.0f | %.0f | %.2fx | %.2fx | %.0f / %.0f | %s |\n", name,
           one[0] * 1e6, one[1] * 1e6, one[1] / one[0], model[0] * 1e6, model[1] * 1e6, one[0] / model[0],
           one[1] / model[1], run[0] * 1e6, run[1] * 1e6, one[0] / run[0], one[1] / run[1], wall[0] * 1e6,
           wall[1] * 1e6, same ? "yes" : "NO");
    fflush(stdout);
    gm_one += __builtin_log(one[1] / one[0]);
    for (int v = 0; v < 2; ++v) {
      gm_model[v] += __builtin_log(one[v] / model[v]);
      gm_run[v] += __builtin_log(one[v] / run[v]);
    }
  }
  printf("geometric means over %d layers: 1 thread new/old %.3fx; modelled 1t/2t old %.2fx new %.2fx; run 1t/2t old %.2fx new %.2fx\n",
         nl, __builtin_exp(gm_one / nl), __builtin_exp(gm_model[0] / nl), __builtin_exp(gm_model[1] / nl),
         __builtin_exp(gm_run[0] / nl), __builtin_exp(gm_run[1] / nl));
  return 0;
}
#endif
