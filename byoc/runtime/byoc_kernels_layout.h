/*
 * byoc_kernels_layout.h — transposes and pads (constant, edge, reflect).
 * Part of byoc_kernels.h.
 */
#ifndef BYOC_KERNELS_LAYOUT_H_
#define BYOC_KERNELS_LAYOUT_H_

#include "byoc_runtime.h"
#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"

/* ---- layout ---------------------------------------------------------------- */

/*
 * Transpose: walk the output (rank `nd`, extents `oshape`) in row-major order;
 * `istr[d]` is how far the input moves per step of output dim d. The output's rows
 * (its last dim) are split across the threads when the copy is big (shufflenet's channel
 * shuffles: whole rows of 784-3136 floats); a copy is the same bytes however it is split.
 */
#define BYOC_DEFINE_TRANSPOSE(NAME, T)                                                         \
  static inline void NAME##_rows_(const T* restrict x, T* restrict y, int32_t nd,              \
                                  const int64_t* oshape, const int64_t* istr, int64_t r0,       \
                                  int64_t r1) {                                                 \
    int64_t idx[BYOC_MAX_RANK] = {0};                                                         \
    const int64_t inner = nd > 0 ? oshape[nd - 1] : 1;                                        \
    const int64_t step = nd > 0 ? istr[nd - 1] : 0;                                           \
    int64_t off = byoc_index_at_(r0, idx, oshape, istr, nd - 2); /* row r0's index */         \
    for (int64_t t = r0 * inner; t < r1 * inner; t += inner) {                                \
      if (step == 1) /* a run of whole rows (e.g. a channel shuffle): one copy */             \
        memcpy(y + t, x + off, (size_t)inner * sizeof(T));                                    \
      else                                                                                    \
        for (int64_t i = 0; i < inner; ++i) y[t + i] = x[off + i * step];                     \
      byoc_index_step_(idx, oshape, istr, nd - 2, &off);                                      \
    }                                                                                         \
  }                                                                                           \
  static inline void NAME(const T* restrict x, T* restrict y, int32_t nd, const int64_t* oshape, \
                          const int64_t* istr) {                                               \
    int64_t total = 1;                                                                        \
    for (int32_t d = 0; d < nd; ++d) total *= oshape[d];                                      \
    if (total == 0) return;                                                                   \
    const int64_t inner = nd > 0 ? oshape[nd - 1] : 1;                                        \
    const int64_t rows = total / inner;                                                       \
    const int32_t nt0 = byoc_threads_for(total * (int64_t)sizeof(T), BYOC_COPY_GRAIN);        \
    const int32_t nt = nt0 < rows ? nt0 : (int32_t)rows;                                      \
    BYOC_SPLIT_(nt, t, NAME##_rows_(x, y, nd, oshape, istr, rows * t / nt, rows * (t + 1) / nt)); \
  }

BYOC_DEFINE_TRANSPOSE(byoc_transpose_f32, float)
BYOC_DEFINE_TRANSPOSE(byoc_transpose_i32, int32_t)

/*
 * Pad (numpy.pad): `before[d]` elements are added in front of dim d; mode 0
 * fills with `value`, 1 repeats the edge, 2 reflects (without the edge), 3 wraps.
 */
static inline int64_t byoc_pad_source_(int64_t c, int64_t n, int32_t mode) {
  if (c >= 0 && c < n) return c;
  if (mode == 0) return -1;
  if (mode == 1) return c < 0 ? 0 : n - 1;
  if (mode == 3) return ((c % n) + n) % n;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = c % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

#define BYOC_DEFINE_PAD(NAME, T)                                                              \
  static inline void NAME(const T* restrict x, T* restrict y, int32_t nd, const int64_t* ishape, \
                          const int64_t* oshape, const int64_t* before, int32_t mode, T value) { \
    int64_t idx[BYOC_MAX_RANK] = {0}, istr[BYOC_MAX_RANK];                                    \
    int64_t total = 1, s = 1;                                                                 \
    for (int32_t d = nd - 1; d >= 0; --d) {                                                   \
      istr[d] = s;                                                                            \
      s *= ishape[d];                                                                         \
      total *= oshape[d];                                                                     \
    }                                                                                         \
    for (int64_t t = 0; t < total; ++t) {                                                     \
      int64_t off = 0;                                                                        \
      int inside = 1;                                                                         \
      for (int32_t d = 0; d < nd; ++d) {                                                      \
        const int64_t c = byoc_pad_source_(idx[d] - before[d], ishape[d], mode);              \
        if (c < 0) {                                                                          \
          inside = 0;                                                                         \
          break;                                                                              \
        }                                                                                     \
        off += c * istr[d];                                                                   \
      }                                                                                       \
      y[t] = inside ? x[off] : value;                                                         \
      for (int32_t d = nd - 1; d >= 0; --d) {                                                 \
        if (++idx[d] < oshape[d]) break;                                                      \
        idx[d] = 0;                                                                           \
      }                                                                                       \
    }                                                                                         \
  }

BYOC_DEFINE_PAD(byoc_pad_f32, float)
BYOC_DEFINE_PAD(byoc_pad_i32, int32_t)

#endif /* BYOC_KERNELS_LAYOUT_H_ */
