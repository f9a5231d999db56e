/*
 * byoc_qkernels_base.h — what every int8 kernel uses: the ISA attributes of its run-time
 * dispatch (BYOC_Q_AVX2, BYOC_Q_VNNI), the K block, thread grains, and the
 * scalar requantization (rounding half to even). Part of byoc_qkernels.h.
 */
#ifndef BYOC_QKERNELS_BASE_H_
#define BYOC_QKERNELS_BASE_H_

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byoc_runtime.h"
#include "byoc_kernels_simd.h"
#include "byoc_kernels_threads.h"

#if defined(__SSE2__)
#include <emmintrin.h> /* part of the x86-64 baseline */
#endif

#ifndef BYOC_MAYBE_UNUSED
#define BYOC_MAYBE_UNUSED __attribute__((unused))
#endif

#if defined(__x86_64__) && defined(__has_attribute) && !defined(BYOC_BASELINE_ONLY)
#if __has_attribute(target) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>
#define BYOC_Q_AVX2 __attribute__((target("avx2")))
#define BYOC_Q_VNNI __attribute__((target("avx2,avx512f,avx512vl,avx512bw,avx512vnni")))
#endif
#endif

/* K is packed in blocks of this many int16 (one 256-bit vector). */
#define BYOC_QK 16

/*
 * Threads: kernels split with BYOC_SPLIT_ (byoc_kernels_threads.h) over their outputs
 * (conv2d tiles of pixels, planes, elements), and each output is computed by the same code
 * whatever thread runs it, so the integers are identical at any thread count.
 */
#define BYOC_Q_GEMM_GRAIN ((int64_t)1 << 20) /* multiply-adds per thread, at least */
#define BYOC_Q_EW_GRAIN 32768                /* elements per thread, at least */
#define BYOC_Q_MAX_THREADS 64                /* threads a conv2d shares its tiles among, at most */

/* Integer kernels the compiler vectorises itself are BYOC_CLONES (byoc_kernels_simd.h): also
 * compiled for AVX2 and picked at load time; integer arithmetic, so identical results. */

/*
 * Round half to even of a float already clamped to |v| < 2^22: adding and subtracting
 * 1.5 * 2^23 rounds in the FPU's default mode (nearest even) — what nearbyintf does, without
 * its call and its saving of the floating-point environment (10+ ns an element).
 */
static inline float byoc_q_round_(float v) {
  return (v + 12582912.0f) - 12582912.0f;
}

static inline int32_t byoc_q_requant_(int32_t acc, float mult, float lo, float hi, int32_t zp) {
  float v = (float)acc * mult;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return (int32_t)byoc_q_round_(v) + zp;
}

#endif /* BYOC_QKERNELS_BASE_H_ */
