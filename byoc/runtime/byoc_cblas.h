/*
 * byoc_cblas.h — the kernels `lower-to-c` calls for `cblas.*` composites.
 *
 * GEMM-shaped ops run on OpenBLAS as shipped in the scipy-openblas32 wheel
 * (its symbols carry the wheel's `scipy_` prefix: `scipy_cblas_sgemm`), and
 * the composite's epilogue — a per-channel `y * scale + shift` (bias, folded
 * batch norm, scale) and an optional ReLU — is applied in one pass over each
 * block of the GEMM output, while that block is still in cache.
 *
 *   conv2d (NCHW / OIHW, groups == 1): the image is copied once into zero-padded
 *     "phase planes" (one per stride phase, so every kernel tap reads a stride-1
 *     window); then either one GEMM per kernel tap reads its window in place
 *     ("taps", weights rearranged tap by tap at compile time), or the windows
 *     are gathered by memcpy into an im2col block and one GEMM of depth
 *     C*KH*KW runs; R output rows at a time, with scratch from the per-thread
 *     workspace. A 1x1 convolution with unit strides and no padding reads the
 *     image directly (no copy, no scratch).
 *   dense (y = x . w^T): sgemv for one row, sgemm (w transposed) otherwise,
 *     in blocks of `T` rows.
 *   matmul (numpy batching): one sgemm per batch entry, or a single sgemm when
 *     the right operand is shared by the whole batch.
 *
 * Compile with -D_GNU_SOURCE (the wheel's cblas.h names cpu_set_t) and
 * `-I<scipy_openblas32.get_include_dir()>`; link `-lscipy_openblas`.
 *
 * Threads: OpenBLAS stays on one thread (set when the library is loaded;
 * $BYOC_CBLAS_THREADS overrides it, for experiments only) and every GEMM/GEMV
 * is split by byoc into column (or row) blocks run across the OpenMP team of
 * the thread setting (`byoc_cblas_sgemm_`, `byoc_cblas_sgemv_`): one pool in
 * the process, sized per call, so concurrent runs and models with different
 * settings never resize a process-wide OpenBLAS pool, and no OpenBLAS pool
 * spins against byoc's threads.
 */
#ifndef BYOC_CBLAS_H_
#define BYOC_CBLAS_H_

#include <cblas.h>

#include "byoc_runtime.h"

#define BYOC_CBLAS_MAX_BATCH_RANK_ 16 /* BYOC_MAX_RANK of byoc_kernels.h */

/* ---- threads ----------------------------------------------------------------- */

/* Run once when the library is loaded: OpenBLAS single-threaded (byoc splits GEMMs across its
 * own threads), unless $BYOC_CBLAS_THREADS asks otherwise. */
__attribute__((constructor)) static void byoc_cblas_init_threads_(void) {
  const char* s = getenv("BYOC_CBLAS_THREADS");
  long n = s != NULL && *s != '\0' ? strtol(s, NULL, 10) : 1;
  scipy_openblas_set_num_threads(n > 0 && n <= 1024 ? (int)n : 1);
}

/* Multiply-adds a thread must get before a GEMM is split (~50-100 us of work). */
#define BYOC_CBLAS_GRAIN (1 << 21)

/*
 * C (M x N, row stride ldc) = A (M x K) . op(B) + beta * C, row-major, op(B) = B (K x N,
 * row stride ldb) or B^T (B: N x K). Split across byoc_threads_for(M*N*K) threads into
 * blocks of columns (whole rows when N is the smaller side), each one OpenBLAS call on
 * the thread that runs it.
 */
static inline void byoc_cblas_sgemm_(int32_t trans_b, int64_t M, int64_t N, int64_t K,
                                     const float* a, int64_t lda, const float* b, int64_t ldb,
                                     float beta, float* c, int64_t ldc) {
  const enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  const int32_t nt = byoc_threads_for(M * N * K, BYOC_CBLAS_GRAIN);
  if (nt <= 1) {
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, (blasint)M, (blasint)N, (blasint)K, 1.0f,
                      a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    return;
  }
  const int32_t by_rows = N < M;
  const int64_t extent = by_rows ? M : N;
  const int64_t align = by_rows ? 1 : 16; /* column blocks: whole vector registers */
  BYOC_PARALLEL(nt) {
    const int64_t T = byoc_team_size(), t = byoc_thread_id();
    const int64_t chunk = ((extent + T - 1) / T + align - 1) / align * align;
    const int64_t lo = t * chunk, hi = lo + chunk < extent ? lo + chunk : extent;
    if (lo < hi) {
      if (by_rows)
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, (blasint)(hi - lo), (blasint)N,
                          (blasint)K, 1.0f, a + lo * lda, (blasint)lda, b, (blasint)ldb, beta,
                          c + lo * ldc, (blasint)ldc);
      else
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, (blasint)M, (blasint)(hi - lo),
                          (blasint)K, 1.0f, a, (blasint)lda, trans_b ? b + lo * ldb : b + lo,
                          (blasint)ldb, beta, c + lo, (blasint)ldc);
    }
  }
}

/* y (N) = w (N x K, row stride ldw) . x (K): rows of w split across threads. */
static inline void byoc_cblas_sgemv_(int64_t N, int64_t K, const float* w, int64_t ldw,
                                     const float* x, float* y) {
  const int32_t nt = byoc_threads_for(N * K, BYOC_CBLAS_GRAIN);
  if (nt <= 1) {
    scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)N, (blasint)K, 1.0f, w, (blasint)ldw,
                      x, 1, 0.0f, y, 1);
    return;
  }
  BYOC_PARALLEL(nt) {
    const int64_t T = byoc_team_size(), t = byoc_thread_id();
    const int64_t chunk = ((N + T - 1) / T + 15) / 16 * 16;
    const int64_t lo = t * chunk, hi = lo + chunk < N ? lo + chunk : N;
    if (lo < hi)
      scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)(hi - lo), (blasint)K, 1.0f,
                        w + lo * ldw, (blasint)ldw, x, 1, 0.0f, y + lo, 1);
  }
}

/* ---- epilogues ----------------------------------------------------------------- */

/* The epilogue loops work in blocks of 8 floats with a constant trip count, which gcc -O2
 * vectorizes (it leaves loops of run-time length scalar); relu keeps NaN, as the reference. */
#define BYOC_CBLAS_RELU_(v) ((v) < 0.0f ? 0.0f : (v))

/* dst[i] = relu?(src[i] * s + t) for i < L; dst may be src. */
static inline void byoc_cblas_affine_row_(float* dst, const float* src, int64_t L, float s, float t,
                                          int32_t relu) {
  const int64_t L8 = L - L % 8;
  for (int64_t i = 0; i < L8; i += 8) {
    float v[8];
    for (int j = 0; j < 8; ++j) v[j] = src[i + j] * s + t;
    if (relu)
      for (int j = 0; j < 8; ++j) v[j] = BYOC_CBLAS_RELU_(v[j]);
    for (int j = 0; j < 8; ++j) dst[i + j] = v[j];
  }
  for (int64_t i = L8; i < L; ++i) {
    const float v = src[i] * s + t;
    dst[i] = relu ? BYOC_CBLAS_RELU_(v) : v;
  }
}

/* Rows r < R of `y` (row stride `ld`, L columns): y = relu?(y * scale[r] + shift[r]).
 * scale and shift may be NULL (1 and 0). */
static inline void byoc_cblas_rows_epilogue_(float* y, int64_t R, int64_t L, int64_t ld,
                                             const float* scale, const float* shift,
                                             int32_t relu) {
  if (scale == NULL && shift == NULL && !relu) return;
  const int32_t nt = byoc_threads_for(R * L, BYOC_PAR_GRAIN);
  BYOC_PARALLEL_FOR(nt)
  for (int64_t r = 0; r < R; ++r)
    byoc_cblas_affine_row_(y + r * ld, y + r * ld, L, scale != NULL ? scale[r] : 1.0f,
                           shift != NULL ? shift[r] : 0.0f, relu);
}

/* Rows of `y` (M x N, compact): y[m, n] = relu?(y[m, n] * scale[n] + shift[n]). */
static inline void byoc_cblas_cols_epilogue_(float* y, int64_t M, int64_t N, const float* scale,
                                             const float* shift, int32_t relu) {
  if (scale == NULL && shift == NULL && !relu) return;
  const int64_t N8 = N - N % 8;
  for (int64_t m = 0; m < M; ++m) {
    float* row = y + m * N;
    for (int64_t n = 0; n < N8; n += 8) {
      float v[8];
      for (int j = 0; j < 8; ++j) v[j] = row[n + j];
      if (scale != NULL)
        for (int j = 0; j < 8; ++j) v[j] *= scale[n + j];
      if (shift != NULL)
        for (int j = 0; j < 8; ++j) v[j] += shift[n + j];
      if (relu)
        for (int j = 0; j < 8; ++j) v[j] = BYOC_CBLAS_RELU_(v[j]);
      for (int j = 0; j < 8; ++j) row[n + j] = v[j];
    }
    for (int64_t n = N8; n < N; ++n) {
      float v = row[n];
      if (scale != NULL) v *= scale[n];
      if (shift != NULL) v += shift[n];
      row[n] = relu ? BYOC_CBLAS_RELU_(v) : v;
    }
  }
}

/* ---- conv2d ------------------------------------------------------------------- */

/*
 * Every conv2d but the direct 1x1 one starts from "phase planes": the image,
 * zero-padded, split by stride phase. Plane (ph, pw) holds
 *     xq[c, r, q] = xpad[c, r*SH + ph, q*SW + pw]      (Hq x Wq per channel)
 * so that kernel tap (kh, kw) reads, for output pixel (oh, ow), plane
 * ((kh*DH) % SH, (kw*DW) % SW) at (oh + (kh*DH) / SH, ow + (kw*DW) / SW): a
 * stride-1 window, whatever the strides. With Hq = OH + ((KH-1)*DH) / SH and
 * Wq = OW + ((KW-1)*DW) / SW, every window lies inside its plane. Only the
 * phases some tap reads are built; each is C*Hq*Wq floats plus `slack` zeros
 * (the largest column shift), so a window read row after row may run past its
 * plane's last row without leaving initialised memory.
 *
 * Then either
 *  - taps: one GEMM per tap, accumulated. Computed on the plane's width Wq,
 *    tap (kh, kw)'s operand for output rows [oh0, oh0+R) is the plain
 *    C x (R*Wq) matrix starting at (oh0 + dkh)*Wq + dkw of its plane, row stride
 *    Hq*Wq: no copy at all. The wide tile `acc` (O x R*Wq) is written to y by
 *    the epilogue, which drops the Wq - OW extra columns. Needs the weights tap
 *    by tap, KH*KW matrices O x C (rearranged at compile time);
 *  - im2col: for output rows [oh0, oh0+R), col[(c, kh, kw), (i, ow)] is a
 *    memcpy of OW floats of a plane row per (c, kh, kw, i); one GEMM of depth
 *    C*KH*KW writes straight into y, then the epilogue.
 */
static inline void byoc_cblas_phase_geometry_(int64_t KH, int64_t KW, int64_t SH, int64_t SW,
                                              int64_t DH, int64_t DW, int64_t* nph, int64_t* npw,
                                              int64_t* ph_index, int64_t* pw_index) {
  *nph = 0;
  *npw = 0;
  for (int64_t i = 0; i < SH; ++i) ph_index[i] = -1;
  for (int64_t i = 0; i < SW; ++i) pw_index[i] = -1;
  for (int64_t kh = 0; kh < KH; ++kh)
    if (ph_index[(kh * DH) % SH] < 0) ph_index[(kh * DH) % SH] = (*nph)++;
  for (int64_t kw = 0; kw < KW; ++kw)
    if (pw_index[(kw * DW) % SW] < 0) pw_index[(kw * DW) % SW] = (*npw)++;
}

/* Build the phase planes of image x (C x H x W) into xq (see above). */
static inline void byoc_cblas_phases_(const float* restrict x, float* restrict xq, int64_t C,
                                      int64_t H, int64_t W, int64_t SH, int64_t SW, int64_t PT,
                                      int64_t PL, int64_t Hq, int64_t Wq, int64_t slack,
                                      int64_t npw, const int64_t* ph_index,
                                      const int64_t* pw_index) {
  const int64_t block = C * Hq * Wq + slack;
  for (int64_t ph = 0; ph < SH; ++ph) {
    if (ph_index[ph] < 0) continue;
    for (int64_t pw = 0; pw < SW; ++pw) {
      if (pw_index[pw] < 0) continue;
      float* restrict base = xq + (ph_index[ph] * npw + pw_index[pw]) * block;
      /* columns q whose input column q*SW + pw - PL is inside the image: [lo, hi) */
      const int64_t first = PL - pw; /* q*SW >= first */
      int64_t lo = first > 0 ? (first + SW - 1) / SW : 0;
      int64_t hi = W - 1 + PL - pw >= 0 ? (W - 1 + PL - pw) / SW + 1 : 0;
      if (hi > Wq) hi = Wq;
      if (lo > hi) lo = hi;
      const int32_t nt = byoc_threads_for(C * Hq * Wq, BYOC_PAR_GRAIN);
      BYOC_PARALLEL_FOR(nt)
      for (int64_t c = 0; c < C; ++c) {
        for (int64_t r = 0; r < Hq; ++r) {
          float* restrict dst = base + (c * Hq + r) * Wq;
          const int64_t ih = r * SH + ph - PT;
          if (ih < 0 || ih >= H || lo == hi) {
            memset(dst, 0, (size_t)Wq * sizeof(float));
            continue;
          }
          const float* restrict src = x + (c * H + ih) * W + (pw - PL); /* src[q*SW], q >= lo */
          if (lo > 0) memset(dst, 0, (size_t)lo * sizeof(float));
          if (SW == 1) {
            memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
          } else {
            /* trip counts fixed up front, as in byoc_pool_inner_cols_ */
            const int64_t nblocks = (hi - lo) / 8, tail = lo + 8 * nblocks;
            for (int64_t b = 0; b < nblocks; ++b) {
              const int64_t q = lo + 8 * b;
              for (int j = 0; j < 8; ++j) dst[q + j] = src[(q + j) * SW];
            }
            for (int64_t q = tail; q < hi; ++q) dst[q] = src[q * SW];
          }
          if (hi < Wq) memset(dst + hi, 0, (size_t)(Wq - hi) * sizeof(float));
        }
      }
      if (slack > 0) memset(base + C * Hq * Wq, 0, (size_t)slack * sizeof(float));
    }
  }
}

/*
 * y[n, o, oh, ow] = epilogue(sum_{c, kh, kw} w[o, c, kh, kw] * xpad[n, c, oh*SH + kh*DH,
 * ow*SW + kw*DW]) for groups == 1, through phase planes (`taps` or im2col, above),
 * R output rows at a time. Strides up to 64. Scratch: the phase planes, then acc
 * (taps: O*R*Wq floats) or col (im2col: C*KH*KW*R*OW floats).
 */
static inline void byoc_cblas_conv2d_planes_(const float* restrict x, const float* restrict w,
                                             const float* scale, const float* shift,
                                             float* restrict y, float* restrict scratch,
                                             int64_t N, int64_t C, int64_t H, int64_t W,
                                             int64_t O, int64_t KH, int64_t KW, int64_t OH,
                                             int64_t OW, int64_t SH, int64_t SW, int64_t PT,
                                             int64_t PL, int64_t DH, int64_t DW, int64_t R,
                                             int32_t relu, int32_t taps) {
  int64_t ph_index[64], pw_index[64], nph, npw;
  byoc_cblas_phase_geometry_(KH, KW, SH, SW, DH, DW, &nph, &npw, ph_index, pw_index);
  const int64_t Hq = OH + (KH - 1) * DH / SH, Wq = OW + (KW - 1) * DW / SW;
  const int64_t slack = (KW - 1) * DW / SW;
  const int64_t plane = Hq * Wq, block = C * plane + slack;
  const int64_t K = C * KH * KW;
  float* restrict xq = scratch;
  float* restrict work = scratch + nph * npw * block;
  /* One region per image: every thread takes its share of the rows of each block (the
   * GEMMs' columns), runs the block's GEMMs on them and their epilogue, and goes on to the
   * next block without waiting. So that a thread ahead never writes scratch another still
   * reads, a thread owns the same rows [i0, i1) of every block (the last, shorter block
   * clips them) and the scratch keeps the full block's row stride (R*Wq, R*OW). */
  const int32_t nt = byoc_threads_for(O * K * OH * OW, BYOC_CBLAS_GRAIN);
  for (int64_t n = 0; n < N; ++n) {
    float* yn = y + n * O * OH * OW;
    byoc_cblas_phases_(x + n * C * H * W, xq, C, H, W, SH, SW, PT, PL, Hq, Wq, slack, npw,
                       ph_index, pw_index);
    BYOC_PARALLEL(nt) {
      const int64_t team = byoc_team_size(), me = byoc_thread_id();
      for (int64_t oh0 = 0; oh0 < OH; oh0 += R) {
        const int64_t rows = OH - oh0 < R ? OH - oh0 : R;
        const int64_t i0 = R * me / team, i1_full = R * (me + 1) / team;
        const int64_t i1 = i1_full < rows ? i1_full : rows;
        if (i0 >= i1) continue;
        if (taps) {
          const int64_t q = R * Wq; /* row stride of the tile, the same for every block */
          for (int64_t k = 0; k < KH * KW; ++k) {
            const int64_t kh = k / KW, kw = k - kh * KW;
            const float* b = xq +
                             (ph_index[(kh * DH) % SH] * npw + pw_index[(kw * DW) % SW]) * block +
                             (oh0 + kh * DH / SH) * Wq + kw * DW / SW;
            byoc_cblas_sgemm_(0, O, (i1 - i0) * Wq, C, w + k * O * C, C, b + i0 * Wq, plane,
                              k ? 1.0f : 0.0f, work + i0 * Wq, q);
          }
          for (int64_t o = 0; o < O; ++o) {
            const float s = scale != NULL ? scale[o] : 1.0f;
            const float t = shift != NULL ? shift[o] : 0.0f;
            for (int64_t i = i0; i < i1; ++i)
              byoc_cblas_affine_row_(yn + (o * OH + oh0 + i) * OW, work + o * q + i * Wq, OW, s,
                                     t, relu);
          }
        } else {
          const int64_t t = R * OW; /* row stride of the im2col block, the same for every block */
          for (int64_t c = 0; c < C; ++c) {
            for (int64_t kh = 0; kh < KH; ++kh) {
              for (int64_t kw = 0; kw < KW; ++kw) {
                float* restrict dst = work + ((c * KH + kh) * KW + kw) * t;
                const float* src = xq +
                                   (ph_index[(kh * DH) % SH] * npw + pw_index[(kw * DW) % SW]) *
                                       block +
                                   c * plane + (oh0 + kh * DH / SH) * Wq + kw * DW / SW;
                for (int64_t i = i0; i < i1; ++i)
                  memcpy(dst + i * OW, src + i * Wq, (size_t)OW * sizeof(float));
              }
            }
          }
          byoc_cblas_sgemm_(0, O, (i1 - i0) * OW, K, w, K, work + i0 * OW, t, 0.0f,
                            yn + (oh0 + i0) * OW, OH * OW);
          byoc_cblas_rows_epilogue_(yn + (oh0 + i0) * OW, O, (i1 - i0) * OW, OH * OW, scale,
                                    shift, relu);
        }
      }
    }
  }
}

/*
 * A 1x1 convolution with unit strides and no padding: each image is its own
 * im2col matrix (C x OH*OW); T output pixels at a time, no scratch.
 */
static inline void byoc_cblas_conv2d_direct_(const float* restrict x, const float* restrict w,
                                             const float* scale, const float* shift,
                                             float* restrict y, int64_t N, int64_t C, int64_t O,
                                             int64_t P, int64_t T, int32_t relu) {
  /* one region: every thread takes its share (16-aligned) of each block's pixels */
  const int32_t nt = byoc_threads_for(O * C * N * P, BYOC_CBLAS_GRAIN);
  BYOC_PARALLEL(nt) {
    const int64_t team = byoc_team_size(), me = byoc_thread_id();
    for (int64_t n = 0; n < N; ++n) {
      const float* xn = x + n * C * P;
      float* yn = y + n * O * P;
      for (int64_t p0 = 0; p0 < P; p0 += T) {
        const int64_t t = P - p0 < T ? P - p0 : T;
        const int64_t chunk = ((t + team - 1) / team + 15) / 16 * 16;
        const int64_t lo = me * chunk, hi = lo + chunk < t ? lo + chunk : t;
        if (lo >= hi) continue;
        byoc_cblas_sgemm_(0, O, hi - lo, C, w, C, xn + p0 + lo, P, 0.0f, yn + p0 + lo, P);
        byoc_cblas_rows_epilogue_(yn + p0 + lo, O, hi - lo, P, scale, shift, relu);
      }
    }
  }
}

/*
 * The entry points lower-to-c calls: pointers (x, w, [scale,] [shift,] y[, scratch]), then
 * N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, T, relu. T is output rows per
 * block for _taps and the im2col form, output pixels for _1x1.
 */
#define BYOC_CBLAS_CONV2D_SIZES                                                                \
  int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,   \
      int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW,      \
      int64_t T, int32_t relu
#define BYOC_CBLAS_CONV2D_ARGS N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, T, relu
#define BYOC_CBLAS_CONV2D_UNUSED_                                                              \
  (void)H, (void)W, (void)KH, (void)KW, (void)OH, (void)OW, (void)SH, (void)SW, (void)PT,      \
      (void)PL, (void)DH, (void)DW

#define BYOC_CBLAS_CONV2D_VARIANTS_(suffix, taps)                                              \
  static inline void byoc_cblas_conv2d##suffix##_f32(const float* x, const float* w, float* y, \
                                                     float* scratch, BYOC_CBLAS_CONV2D_SIZES) { \
    byoc_cblas_conv2d_planes_(x, w, NULL, NULL, y, scratch, BYOC_CBLAS_CONV2D_ARGS, taps);      \
  }                                                                                            \
  static inline void byoc_cblas_conv2d##suffix##_bias_f32(const float* x, const float* w,      \
                                                          const float* shift, float* y,        \
                                                          float* scratch,                      \
                                                          BYOC_CBLAS_CONV2D_SIZES) {           \
    byoc_cblas_conv2d_planes_(x, w, NULL, shift, y, scratch, BYOC_CBLAS_CONV2D_ARGS, taps);     \
  }                                                                                            \
  static inline void byoc_cblas_conv2d##suffix##_affine_f32(                                   \
      const float* x, const float* w, const float* scale, const float* shift, float* y,        \
      float* scratch, BYOC_CBLAS_CONV2D_SIZES) {                                               \
    byoc_cblas_conv2d_planes_(x, w, scale, shift, y, scratch, BYOC_CBLAS_CONV2D_ARGS, taps);    \
  }
BYOC_CBLAS_CONV2D_VARIANTS_(, 0)
BYOC_CBLAS_CONV2D_VARIANTS_(_taps, 1)

static inline void byoc_cblas_conv2d_1x1_f32(const float* x, const float* w, float* y,
                                             BYOC_CBLAS_CONV2D_SIZES) {
  BYOC_CBLAS_CONV2D_UNUSED_;
  byoc_cblas_conv2d_direct_(x, w, NULL, NULL, y, N, C, O, OH * OW, T, relu);
}
static inline void byoc_cblas_conv2d_1x1_bias_f32(const float* x, const float* w,
                                                  const float* shift, float* y,
                                                  BYOC_CBLAS_CONV2D_SIZES) {
  BYOC_CBLAS_CONV2D_UNUSED_;
  byoc_cblas_conv2d_direct_(x, w, NULL, shift, y, N, C, O, OH * OW, T, relu);
}
static inline void byoc_cblas_conv2d_1x1_affine_f32(const float* x, const float* w,
                                                    const float* scale, const float* shift,
                                                    float* y, BYOC_CBLAS_CONV2D_SIZES) {
  BYOC_CBLAS_CONV2D_UNUSED_;
  byoc_cblas_conv2d_direct_(x, w, scale, shift, y, N, C, O, OH * OW, T, relu);
}

/* ---- dense ---------------------------------------------------------------------- */

/* y (M x N) = epilogue(x (M x K) . w^T), w: N x K; rows in blocks of T. */
static inline void byoc_cblas_dense_(const float* restrict x, const float* restrict w,
                                     const float* scale, const float* shift, float* restrict y,
                                     int64_t M, int64_t N, int64_t K, int64_t T, int32_t relu) {
  if (M == 1) {
    byoc_cblas_sgemv_(N, K, w, K, x, y);
    byoc_cblas_cols_epilogue_(y, 1, N, scale, shift, relu);
    return;
  }
  for (int64_t m0 = 0; m0 < M; m0 += T) {
    const int64_t t = M - m0 < T ? M - m0 : T;
    byoc_cblas_sgemm_(1, t, N, K, x + m0 * K, K, w, K, 0.0f, y + m0 * N, N);
    byoc_cblas_cols_epilogue_(y + m0 * N, t, N, scale, shift, relu);
  }
}

static inline void byoc_cblas_dense_f32(const float* x, const float* w, float* y, int64_t M,
                                        int64_t N, int64_t K, int64_t T, int32_t relu) {
  byoc_cblas_dense_(x, w, NULL, NULL, y, M, N, K, T, relu);
}
static inline void byoc_cblas_dense_bias_f32(const float* x, const float* w, const float* shift,
                                             float* y, int64_t M, int64_t N, int64_t K, int64_t T,
                                             int32_t relu) {
  byoc_cblas_dense_(x, w, NULL, shift, y, M, N, K, T, relu);
}
static inline void byoc_cblas_dense_affine_f32(const float* x, const float* w, const float* scale,
                                               const float* shift, float* y, int64_t M, int64_t N,
                                               int64_t K, int64_t T, int32_t relu) {
  byoc_cblas_dense_(x, w, scale, shift, y, M, N, K, T, relu);
}

/* ---- matmul --------------------------------------------------------------------- */

/*
 * numpy matmul with broadcast batch dims, as byoc_matmul_f32: `nb` batch dims
 * `bshape`; `astr`/`bstr` step a and b per batch dim (0 where it broadcasts).
 * When b is shared by every batch entry and a is compact, the batch is one
 * (batch*M) x K by K x N product.
 */
static inline void byoc_cblas_matmul_f32(const float* a, const float* b, float* y, int64_t M,
                                         int64_t K, int64_t N, int32_t nb, const int64_t* bshape,
                                         const int64_t* astr, const int64_t* bstr) {
  int64_t total = 1;
  int32_t b_shared = 1, a_compact = 1;
  int64_t expect = M * K;
  for (int32_t d = nb - 1; d >= 0; --d) {
    total *= bshape[d];
    if (bshape[d] != 1 && bstr[d] != 0) b_shared = 0;
    if (bshape[d] != 1 && astr[d] != expect) a_compact = 0;
    expect *= bshape[d];
  }
  if (b_shared && a_compact) {
    byoc_cblas_sgemm_(0, total * M, N, K, a, K, b, N, 0.0f, y, N);
    return;
  }
  int64_t idx[BYOC_CBLAS_MAX_BATCH_RANK_] = {0};
  int64_t ao = 0, bo = 0;
  for (int64_t t = 0; t < total; ++t) {
    byoc_cblas_sgemm_(0, M, N, K, a + ao, K, b + bo, N, 0.0f, y + t * M * N, N);
    for (int32_t d = nb - 1; d >= 0; --d) {
      ao += astr[d];
      bo += bstr[d];
      if (++idx[d] < bshape[d]) break;
      ao -= astr[d] * bshape[d];
      bo -= bstr[d] * bshape[d];
      idx[d] = 0;
    }
  }
}

#endif /* BYOC_CBLAS_H_ */
