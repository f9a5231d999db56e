/*
 * byoc_kernels.h — the kernels `lower-to-c` calls for ops that are not
 * elementwise (elementwise chains are generated as fused loops instead).
 *
 * Every kernel is `static inline` (one translation unit, no unused-function
 * warnings), takes compact row-major buffers through `restrict` pointers and
 * its sizes as int64_t. Layouts follow the nn dialect: NCHW data, OIHW
 * weights, padding given as (top, left[, bottom, right]). Semantics match the
 * numpy reference kernels in byoc/kernels.py; float sums of pooling and
 * reductions accumulate in double, as the reference does.
 */
#ifndef BYOC_KERNELS_H_
#define BYOC_KERNELS_H_

#include "byoc_runtime.h"

#include "byoc_kernels_threads.h"
#include "byoc_kernels_glue.h"
#include "byoc_kernels_simd.h"
#include "byoc_kernels_conv.h"
#include "byoc_kernels_image.h"
#include "byoc_kernels_dense.h"
#include "byoc_kernels_pool.h"
#include "byoc_kernels_reduce.h"
#include "byoc_kernels_layout.h"
#include "byoc_kernels_index.h"
#include "byoc_kernels_recurrent.h"

#endif /* BYOC_KERNELS_H_ */
