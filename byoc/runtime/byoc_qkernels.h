/*
 * byoc_qkernels.h — int8 kernels of the quantized (QDQ) composites of the ccompiler target
 * (lowering in byoc/lowering/nn_to_c/quant.py, docs/quantization.md).
 *
 * Every product and sum is exact integer arithmetic: the weights arrive centred and widened
 * (int16 w - w_zp, laid out [O][Kp], Kp = K rounded up to 16, zero-padded; also as int8 with
 * their row sums when they fit), the activations are packed per block of pixels, and the dot
 * products accumulate in int32. The GEMM paths — baseline C and AVX2 (vpmaddwd) on the int16
 * form, AVX-512 VNNI (vpdpbusd on 512-bit vectors) on the u8 x s8 form, corrected by
 * x_zp * sum(w) — therefore give identical integers; the path is chosen at run time
 * (__builtin_cpu_supports), and -DBYOC_BASELINE_ONLY (BYOC_CPU_DISPATCH=baseline) keeps the
 * baseline. vpmaddubsw is never used (it saturates int16 pair sums).
 *
 * The only floating point is the requantization of each accumulator, done as onnxruntime's
 * MLAS does it (MlasRequantizeOutput): v = (float)(acc + bias) * mult, clamped to
 * [lo, hi] (the output type's range minus the zero point, raised to 0 by a fused ReLU),
 * rounded half to even (byoc_q_round_), plus the output zero point. The fused elementwise,
 * pooling and concatenation kernels at the end (qlut, qadd, qmaxpool) give the integers of
 * their float QDQ blocks; why each is exact is in byoc/targets/qdq.py.
 */
#ifndef BYOC_QKERNELS_H_
#define BYOC_QKERNELS_H_

#include "byoc_qkernels_base.h"
#include "byoc_qkernels_gemm.h"
#include "byoc_qkernels_conv.h"
#include "byoc_qkernels_quant.h"
#include "byoc_qkernels_fused.h"

#endif /* BYOC_QKERNELS_H_ */
