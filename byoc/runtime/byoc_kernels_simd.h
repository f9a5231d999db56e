/*
 * byoc_kernels_simd.h — GNU C vector types and the x86-64 multiversioning attributes
 * (BYOC_CLONES, BYOC_FMA, BYOC_KERNEL) the float kernels are written with.
 * Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_SIMD_H_
#define BYOC_KERNELS_SIMD_H_

#include "byoc_runtime.h"

/*
 * GNU C vectors of 8 floats: two SSE registers on baseline x86-64, one AVX
 * register in the AVX2 clone below, NEON pairs on ARM. Never passed by value
 * across a call (that would change the ABI), only used inside kernels.
 */
typedef float byoc_v8f_ __attribute__((vector_size(32)));

/*
 * Kernels marked BYOC_CLONES are also compiled for AVX2 and picked at load
 * time (GCC/Clang function multiversioning on x86-64 ELF); the arithmetic
 * and its order are the same in both versions, so are the results. The one
 * exception is conv2d's register tile: on CPUs with FMA (BYOC_FMA, checked at
 * run time) it fuses each multiply-add, so its sums differ from the baseline's
 * by rounding only (same products, same order, one rounding per step fewer).
 */
/* -DBYOC_BASELINE_ONLY (BYOC_CPU_DISPATCH=baseline) keeps every kernel on baseline x86-64. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target_clones) && !defined(__SANITIZE_ADDRESS__)
#define BYOC_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#if __has_attribute(target) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>
#define BYOC_FMA __attribute__((target("avx2,fma")))
#endif
#endif
#ifndef BYOC_CLONES
#define BYOC_CLONES
#endif
/* A big kernel: not inlined (it may be cloned), fine to leave unused. */
#define BYOC_KERNEL static BYOC_CLONES BYOC_MAYBE_UNUSED

/* The other vector shapes the kernels use (same rules as byoc_v8f_). */
typedef int32_t byoc_v8i_ __attribute__((vector_size(32)));
typedef double byoc_v4d_ __attribute__((vector_size(32)));
typedef float byoc_v4f_ __attribute__((vector_size(16)));
typedef int32_t byoc_v4i_ __attribute__((vector_size(16)));


/* 16 floats at y, of which np are valid, into two vectors (zeros past np), and back. */
static inline __attribute__((always_inline)) void byoc_load16_(const float* y, int64_t np,
                                                               byoc_v8f_* lo, byoc_v8f_* hi) {
  if (np == 16) { /* a whole tile: no staging copy (a memcpy of run-time length is a call) */
    memcpy(lo, y, sizeof *lo);
    memcpy(hi, y + 8, sizeof *hi);
    return;
  }
  float tmp[16] = {0};
  memcpy(tmp, y, (size_t)np * sizeof(float));
  memcpy(lo, tmp, sizeof *lo);
  memcpy(hi, tmp + 8, sizeof *hi);
}

/* The np valid of 16 floats in two vectors to y. */
static inline __attribute__((always_inline)) void byoc_store16_(float* y, int64_t np,
                                                                const byoc_v8f_* lo,
                                                                const byoc_v8f_* hi) {
  if (np == 16) {
    memcpy(y, lo, sizeof *lo);
    memcpy(y + 8, hi, sizeof *hi);
    return;
  }
  float tmp[16];
  memcpy(tmp, lo, sizeof *lo);
  memcpy(tmp + 8, hi, sizeof *hi);
  memcpy(y, tmp, (size_t)np * sizeof(float));
}

#endif /* BYOC_KERNELS_SIMD_H_ */
