"""The `cblas` target: GEMM-shaped composites offloaded to OpenBLAS (a vendor library).

The seed's first scenario: the vendor already has an optimised C library and
only wants its heavy ops offloaded, each together with the cheap ops around it
(TVM's DNNL target did this with a pattern table). This target takes no single
op: its support is its pattern table, and every match becomes a composite
whose kernel calls `scipy_cblas_sgemm` (OpenBLAS as shipped in the
scipy-openblas32 wheel) and applies the rest in one pass over the GEMM output.

    byoc-opt model.onnx -p 'byoc{targets=cblas,ccompiler}'       # GEMMs on cblas, the rest on C
    exe = byoc.build(module, targets=["cblas", "ccompiler"])

Pattern table (earlier entries win; `<epilogue>` is any of, in this order and
each optional: `nn.bias_add` or `nn.add` of a per-channel value, an inference
`nn.batch_norm`, `nn.multiply` by a per-channel value, `nn.add` of a
per-channel value — at least one of them):

| composite                | matches                                 |
|--------------------------|-----------------------------------------|
| `cblas.conv2d_bias_relu` | conv2d -> <epilogue> -> relu             |
| `cblas.conv2d_bias`      | conv2d -> <epilogue>                     |
| `cblas.conv2d_relu`      | conv2d -> relu                           |
| `cblas.conv2d`           | conv2d                                   |
| `cblas.dense_bias_relu`, `cblas.dense_bias`, `cblas.dense_relu`, `cblas.dense` | the same over nn.dense |
| `cblas.matmul`           | nn.matmul (batched, numpy broadcasting)  |

"Per-channel" is the output channel: axis 1 of a conv2d (a value of shape
(O,), broadcast as (O, 1, 1) or (1, O, 1, 1), or a single element), the last
axis of a dense ((N,) or (1, N)). Each entry's check (`gemm_chain`) accepts
f32 only (every operand and result), conv2d with groups == 1 and strides up
to MAX_STRIDE (depthwise and grouped convolutions stay on ccompiler or the
host), bias_add and batch_norm on the channel axis, and no interior value
used outside the match (a kernel yields one value, so `extra-results` does
not apply). The whole epilogue becomes one `y * scale + shift`
(constants folded at compile time; values computed at run time are combined
per call, over the channels only), then ReLU.

Codegen: the target's lowering is `lower-to-c`, with ccompiler's machinery;
its `composite_lowering` ("cblas", byoc/lowering/nn_to_c/cblas.py) makes each
composite one kernel node calling `byoc_cblas.h`; intermediates, padded
images and im2col blocks live in the per-thread workspace. All cblas
partitions go into one C library linked with the wheel's OpenBLAS
(`build_options`); OpenBLAS runs on `$BYOC_CBLAS_THREADS` threads (default
1), set when a library is loaded, or `set_num_threads(n)`.

Files: `chain.py` (what a composite computes, the pattern table),
`openblas.py` (linking OpenBLAS, its threads).
"""

from __future__ import annotations

from byoc.targets.base import Target
from byoc.targets.cblas.chain import (
    GEMM_OPS,
    MAX_STRIDE,
    EpilogueStep,
    GemmChain,
    gemm_chain,
    pattern_table,
)
from byoc.targets.cblas.openblas import (
    THREADS_ENV,
    build_options,
    get_num_threads,
    set_num_threads,
    unavailable_reason,
)

NAME = "cblas"

C_INCLUDES = ("byoc_cblas.h",)
"""Headers (in byoc/runtime) the kernels of cblas composites need; lower-to-c includes them."""

CBLAS = Target(
    name=NAME,
    patterns=pattern_table(),
    lowering="lower-to-c",
    component="c",
    c_includes=C_INCLUDES,
    c_build_options=build_options,
    composite_lowering="cblas",
    availability=unavailable_reason,  # the scipy-openblas32 wheel is installed
    description="GEMM-shaped composites on OpenBLAS (cblas_sgemm) with fused epilogues",
)
"""No single op is supported: only the composites of the pattern table."""


__all__ = [
    "CBLAS",
    "C_INCLUDES",
    "GEMM_OPS",
    "MAX_STRIDE",
    "NAME",
    "THREADS_ENV",
    "EpilogueStep",
    "GemmChain",
    "build_options",
    "gemm_chain",
    "get_num_threads",
    "pattern_table",
    "set_num_threads",
]
