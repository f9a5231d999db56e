/*
 * byoc_cblas.h — the kernels `lower-to-c` calls for `cblas.*` composites.
 *
 * GEMM-shaped ops run on OpenBLAS as shipped in the scipy-openblas32 wheel
 * (its symbols carry the wheel's `scipy_` prefix: `scipy_cblas_sgemm`), and
 * the composite's epilogue — a per-channel `y * scale + shift` (bias, folded
 * batch norm, scale) and an optional ReLU — is applied in one pass over each
 * block of the GEMM output, while that block is still in cache.
 *
 *   conv2d (NCHW / OIHW, groups == 1): per image, the output columns are cut
 *     into tiles of `T` pixels; each tile is expanded (im2col) into the
 *     scratch buffer `col` (C*KH*KW x T floats, from the per-thread
 *     workspace), multiplied by the weight matrix (O x C*KH*KW) straight into
 *     the output, and finished by the epilogue. A 1x1 convolution with unit
 *     strides and no padding reads the image directly (no im2col, no scratch).
 *   dense (y = x . w^T): sgemv for one row, sgemm (w transposed) otherwise,
 *     in blocks of `T` rows.
 *   matmul (numpy batching): one sgemm per batch entry, or a single sgemm when
 *     the right operand is shared by the whole batch.
 *
 * Compile with -D_GNU_SOURCE (the wheel's cblas.h names cpu_set_t) and
 * `-I<scipy_openblas32.get_include_dir()>`; link `-lscipy_openblas`.
 * Loading a library that includes this header sets OpenBLAS's thread count
 * from $BYOC_CBLAS_THREADS, default 1.
 */
#ifndef BYOC_CBLAS_H_
#define BYOC_CBLAS_H_

#include <cblas.h>

#include "byoc_runtime.h"

#define BYOC_CBLAS_MAX_BATCH_RANK_ 16 /* BYOC_MAX_RANK of byoc_kernels.h */

/* ---- threads ----------------------------------------------------------------- */

/* Run once when the library is loaded: OpenBLAS single-threaded unless asked otherwise. */
__attribute__((constructor)) static void byoc_cblas_init_threads_(void) {
  const char* s = getenv("BYOC_CBLAS_THREADS");
  long n = s != NULL && *s != '\0' ? strtol(s, NULL, 10) : 1;
  scipy_openblas_set_num_threads(n > 0 && n <= 1024 ? (int)n : 1);
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
 * Columns [p0, p0 + T) of the im2col matrix of image `x` (C x H x W) into
 * `col` (C*KH*KW rows of T floats): col[(c, kh, kw), p] = x[c, ih, iw] with
 * ih = oh*SH - PT + kh*DH, iw = ow*SW - PL + kw*DW for output pixel
 * p = oh*OW + ow, and 0 outside the image (the padding).
 */
static inline void byoc_cblas_im2col_(const float* restrict x, float* restrict col, int64_t C,
                                      int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t OW,
                                      int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH,
                                      int64_t DW, int64_t p0, int64_t T) {
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t kw = 0; kw < KW; ++kw) {
        float* restrict dst = col + ((c * KH + kh) * KW + kw) * T;
        const int64_t off_w = kw * DW - PL;
        /* the output columns whose input column is inside the image: [lo, hi) */
        int64_t lo = off_w >= 0 ? 0 : (-off_w + SW - 1) / SW;
        int64_t hi = W - 1 - off_w >= 0 ? (W - 1 - off_w) / SW + 1 : 0;
        if (hi > OW) hi = OW;
        if (lo > hi) lo = hi;
        int64_t p = p0;
        const int64_t end = p0 + T;
        while (p < end) {
          const int64_t oh = p / OW;
          const int64_t ow0 = p - oh * OW;
          const int64_t ow1 = OW < ow0 + (end - p) ? OW : ow0 + (end - p);
          const int64_t ih = oh * SH - PT + kh * DH;
          if (ih < 0 || ih >= H) {
            memset(dst, 0, (size_t)(ow1 - ow0) * sizeof(float));
          } else {
            const float* restrict src = x + (c * H + ih) * W;
            const int64_t a = ow0 > lo ? ow0 : lo;
            const int64_t b = ow1 < hi ? ow1 : hi;
            int64_t ow = ow0;
            for (; ow < a && ow < ow1; ++ow) dst[ow - ow0] = 0.0f;
            if (SW == 1) {
              if (b > a) memcpy(dst + (a - ow0), src + a + off_w, (size_t)(b - a) * sizeof(float));
              ow = b > a ? b : ow;
            } else if (SW == 2) { /* blocks of 8 with a constant stride: vectorized */
              for (; ow + 8 <= b; ow += 8)
                for (int j = 0; j < 8; ++j) dst[ow - ow0 + j] = src[(ow + j) * 2 + off_w];
              for (; ow < b; ++ow) dst[ow - ow0] = src[ow * 2 + off_w];
            } else {
              for (; ow < b; ++ow) dst[ow - ow0] = src[ow * SW + off_w];
            }
            for (; ow < ow1; ++ow) dst[ow - ow0] = 0.0f;
          }
          dst += ow1 - ow0;
          p += ow1 - ow0;
        }
      }
    }
  }
}

/*
 * y[n, o, oh, ow] = epilogue(sum_{c, kh, kw} w[o, c, kh, kw] * x[n, c, ih, iw]) for
 * groups == 1. `col` holds C*KH*KW*T floats (unused, may be NULL, when `direct`:
 * a 1x1 kernel with unit strides and no padding, whose image is its own im2col
 * matrix). Output pixels are processed in tiles of T.
 */
static inline void byoc_cblas_conv2d_(const float* restrict x, const float* restrict w,
                                      const float* scale, const float* shift, float* restrict y,
                                      float* restrict col, int64_t N, int64_t C, int64_t H,
                                      int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,
                                      int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL,
                                      int64_t DH, int64_t DW, int64_t T, int32_t relu,
                                      int32_t direct) {
  const int64_t K = C * KH * KW;
  const int64_t P = OH * OW;
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * C * H * W;
    float* yn = y + n * O * P;
    for (int64_t p0 = 0; p0 < P; p0 += T) {
      const int64_t t = P - p0 < T ? P - p0 : T;
      const float* b;
      int64_t ldb;
      if (direct) {
        b = xn + p0;
        ldb = P;
      } else {
        byoc_cblas_im2col_(xn, col, C, H, W, KH, KW, OW, SH, SW, PT, PL, DH, DW, p0, t);
        b = col;
        ldb = t;
      }
      scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)O, (blasint)t,
                        (blasint)K, 1.0f, w, (blasint)K, b, (blasint)ldb, 0.0f, yn + p0,
                        (blasint)P);
      byoc_cblas_rows_epilogue_(yn + p0, O, t, P, scale, shift, relu);
    }
  }
}

/*
 * Stride-1 convolution without im2col: one GEMM per kernel tap, accumulated.
 * `xp` is the image zero-padded to Hp x Wp (Hp = OH + (KH-1)*DH, Wp = OW +
 * (KW-1)*DW). Computed on the padded width Wp, output pixel q = oh*Wp + ow of
 * tap (kh, kw) reads xp[c, q + kh*DH*Wp + kw*DW]: every tap's operand is a
 * plain C x (rows*Wp) matrix inside xp (row stride Hp*Wp), so each tap is one
 * sgemm with K = C into a wide tile `acc` (O x R*Wp), and the epilogue drops
 * the Wp - OW extra columns while it writes y. `wt` holds the weights tap by
 * tap, KH*KW matrices O x C (rearranged at compile time).
 * Scratch: C*Hp*Wp + (KW-1)*DW floats for xp, then O*R*Wp for acc.
 */
static inline void byoc_cblas_conv2d_taps_(const float* restrict x, const float* restrict wt,
                                           const float* scale, const float* shift,
                                           float* restrict y, float* restrict scratch, int64_t N,
                                           int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH,
                                           int64_t KW, int64_t OH, int64_t OW, int64_t PT,
                                           int64_t PL, int64_t DH, int64_t DW, int64_t R,
                                           int32_t relu) {
  const int64_t Hp = OH + (KH - 1) * DH, Wp = OW + (KW - 1) * DW;
  const int64_t plane = Hp * Wp, slack = (KW - 1) * DW;
  float* restrict xp = scratch;
  float* restrict acc = scratch + C * plane + slack;
  for (int64_t n = 0; n < N; ++n) {
    const float* xn = x + n * C * H * W;
    float* yn = y + n * O * OH * OW;
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t r = 0; r < Hp; ++r) {
        float* dst = xp + c * plane + r * Wp;
        const int64_t ih = r - PT;
        if (ih < 0 || ih >= H) {
          memset(dst, 0, (size_t)Wp * sizeof(float));
          continue;
        }
        const int64_t right = Wp - PL - W; /* >= 0: stride 1 */
        if (PL > 0) memset(dst, 0, (size_t)PL * sizeof(float));
        memcpy(dst + PL, xn + (c * H + ih) * W, (size_t)W * sizeof(float));
        if (right > 0) memset(dst + PL + W, 0, (size_t)right * sizeof(float));
      }
    }
    if (slack > 0) memset(xp + C * plane, 0, (size_t)slack * sizeof(float));
    for (int64_t oh0 = 0; oh0 < OH; oh0 += R) {
      const int64_t rows = OH - oh0 < R ? OH - oh0 : R;
      const int64_t q = rows * Wp;
      for (int64_t k = 0; k < KH * KW; ++k) {
        const int64_t kh = k / KW, kw = k - kh * KW;
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)O, (blasint)q,
                          (blasint)C, 1.0f, wt + k * O * C, (blasint)C,
                          xp + (oh0 + kh * DH) * Wp + kw * DW, (blasint)plane, k ? 1.0f : 0.0f,
                          acc, (blasint)q);
      }
      for (int64_t o = 0; o < O; ++o) {
        const float s = scale != NULL ? scale[o] : 1.0f;
        const float t = shift != NULL ? shift[o] : 0.0f;
        for (int64_t i = 0; i < rows; ++i)
          byoc_cblas_affine_row_(yn + (o * OH + oh0 + i) * OW, acc + o * q + i * Wp, OW, s, t, relu);
      }
    }
  }
}

/* The entry points lower-to-c calls: pointers (inputs, output, scratch), then sizes. */
#define BYOC_CBLAS_CONV2D_SIZES                                                                \
  int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,   \
      int64_t OW, int64_t SH, int64_t SW, int64_t PT, int64_t PL, int64_t DH, int64_t DW,      \
      int64_t T, int32_t relu
#define BYOC_CBLAS_CONV2D_ARGS N, C, H, W, O, KH, KW, OH, OW, SH, SW, PT, PL, DH, DW, T, relu

static inline void byoc_cblas_conv2d_f32(const float* x, const float* w, float* y, float* col,
                                         BYOC_CBLAS_CONV2D_SIZES) {
  byoc_cblas_conv2d_(x, w, NULL, NULL, y, col, BYOC_CBLAS_CONV2D_ARGS, 0);
}
static inline void byoc_cblas_conv2d_bias_f32(const float* x, const float* w, const float* shift,
                                              float* y, float* col, BYOC_CBLAS_CONV2D_SIZES) {
  byoc_cblas_conv2d_(x, w, NULL, shift, y, col, BYOC_CBLAS_CONV2D_ARGS, 0);
}
static inline void byoc_cblas_conv2d_affine_f32(const float* x, const float* w, const float* scale,
                                                const float* shift, float* y, float* col,
                                                BYOC_CBLAS_CONV2D_SIZES) {
  byoc_cblas_conv2d_(x, w, scale, shift, y, col, BYOC_CBLAS_CONV2D_ARGS, 0);
}
static inline void byoc_cblas_conv2d_1x1_f32(const float* x, const float* w, float* y,
                                             BYOC_CBLAS_CONV2D_SIZES) {
  byoc_cblas_conv2d_(x, w, NULL, NULL, y, NULL, BYOC_CBLAS_CONV2D_ARGS, 1);
}
static inline void byoc_cblas_conv2d_1x1_bias_f32(const float* x, const float* w,
                                                  const float* shift, float* y,
                                                  BYOC_CBLAS_CONV2D_SIZES) {
  byoc_cblas_conv2d_(x, w, NULL, shift, y, NULL, BYOC_CBLAS_CONV2D_ARGS, 1);
}
static inline void byoc_cblas_conv2d_1x1_affine_f32(const float* x, const float* w,
                                                    const float* scale, const float* shift,
                                                    float* y, BYOC_CBLAS_CONV2D_SIZES) {
  byoc_cblas_conv2d_(x, w, scale, shift, y, NULL, BYOC_CBLAS_CONV2D_ARGS, 1);
}

#define BYOC_CBLAS_TAPS_SIZES                                                                  \
  int64_t N, int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH, int64_t KW, int64_t OH,   \
      int64_t OW, int64_t PT, int64_t PL, int64_t DH, int64_t DW, int64_t R, int32_t relu
#define BYOC_CBLAS_TAPS_ARGS N, C, H, W, O, KH, KW, OH, OW, PT, PL, DH, DW, R, relu

static inline void byoc_cblas_conv2d_taps_f32(const float* x, const float* wt, float* y,
                                              float* scratch, BYOC_CBLAS_TAPS_SIZES) {
  byoc_cblas_conv2d_taps_(x, wt, NULL, NULL, y, scratch, BYOC_CBLAS_TAPS_ARGS);
}
static inline void byoc_cblas_conv2d_taps_bias_f32(const float* x, const float* wt,
                                                   const float* shift, float* y, float* scratch,
                                                   BYOC_CBLAS_TAPS_SIZES) {
  byoc_cblas_conv2d_taps_(x, wt, NULL, shift, y, scratch, BYOC_CBLAS_TAPS_ARGS);
}
static inline void byoc_cblas_conv2d_taps_affine_f32(const float* x, const float* wt,
                                                     const float* scale, const float* shift,
                                                     float* y, float* scratch,
                                                     BYOC_CBLAS_TAPS_SIZES) {
  byoc_cblas_conv2d_taps_(x, wt, scale, shift, y, scratch, BYOC_CBLAS_TAPS_ARGS);
}

/* ---- dense ---------------------------------------------------------------------- */

/* y (M x N) = epilogue(x (M x K) . w^T), w: N x K; rows in blocks of T. */
static inline void byoc_cblas_dense_(const float* restrict x, const float* restrict w,
                                     const float* scale, const float* shift, float* restrict y,
                                     int64_t M, int64_t N, int64_t K, int64_t T, int32_t relu) {
  if (M == 1) {
    scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)N, (blasint)K, 1.0f, w, (blasint)K,
                      x, 1, 0.0f, y, 1);
    byoc_cblas_cols_epilogue_(y, 1, N, scale, shift, relu);
    return;
  }
  for (int64_t m0 = 0; m0 < M; m0 += T) {
    const int64_t t = M - m0 < T ? M - m0 : T;
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)t, (blasint)N,
                      (blasint)K, 1.0f, x + m0 * K, (blasint)K, w, (blasint)K, 0.0f, y + m0 * N,
                      (blasint)N);
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
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(total * M),
                      (blasint)N, (blasint)K, 1.0f, a, (blasint)K, b, (blasint)N, 0.0f, y,
                      (blasint)N);
    return;
  }
  int64_t idx[BYOC_CBLAS_MAX_BATCH_RANK_] = {0};
  int64_t ao = 0, bo = 0;
  for (int64_t t = 0; t < total; ++t) {
    scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)M, (blasint)N,
                      (blasint)K, 1.0f, a + ao, (blasint)K, b + bo, (blasint)N, 0.0f,
                      y + t * M * N, (blasint)N);
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
