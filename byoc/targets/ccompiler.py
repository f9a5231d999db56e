"""The `ccompiler` target: partitions become C source (seed part 1), built into one library.

Support is the table `SUPPORT` below: op name -> predicate on the typed op
(see `byoc.support`). The C codegen owns this table: an op is listed exactly
when `lower-to-c` can emit it, with the element types and attributes it
handles. `register()` puts each predicate in the op registry as
`target.ccompiler`; annotate-target reads it from there.

The C codegen fuses elementwise chains itself, so the pattern table is empty:
regions of single ops are what it wants.
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32, i32

from byoc.support import Predicate, dtypes, register_support

NAME = "ccompiler"

F32 = dtypes(f32)
F32_I32 = dtypes(f32, i32)

SUPPORT: dict[str, Predicate] = {
    # elementwise and broadcasting binary ops
    "nn.add": F32_I32,
    "nn.subtract": F32_I32,
    "nn.multiply": F32_I32,
    "nn.divide": F32,
    "nn.maximum": F32_I32,
    "nn.minimum": F32_I32,
    "nn.power": F32,
    "nn.prelu": F32,
    # unary elementwise ops
    "nn.relu": F32_I32,
    "nn.negative": F32_I32,
    "nn.abs": F32_I32,
    "nn.sigmoid": F32,
    "nn.tanh": F32,
    "nn.exp": F32,
    "nn.log": F32,
    "nn.sqrt": F32,
    "nn.erf": F32,
    "nn.reciprocal": F32,
    "nn.hard_swish": F32,
    "nn.hard_sigmoid": F32,
    "nn.clip": F32,
    "nn.leaky_relu": F32,
    # neural-network ops
    "nn.bias_add": F32,
    "nn.batch_norm": F32,
    "nn.dense": F32,
    "nn.matmul": F32,
    "nn.conv2d": F32,  # any groups (depthwise included)
    "nn.max_pool2d": F32,
    "nn.avg_pool2d": F32,
    "nn.global_avg_pool2d": F32,
    "nn.global_max_pool2d": F32,
    "nn.softmax": F32,
    # layout ops
    "nn.reshape": F32_I32,
    "nn.flatten": F32_I32,
    "nn.transpose": F32_I32,
    "nn.concatenate": F32_I32,
    "nn.pad": F32_I32,
    # reductions
    "nn.reduce_mean": F32,
    "nn.reduce_sum": F32_I32,
    "nn.reduce_max": F32_I32,
}


def register() -> None:
    register_support(NAME, SUPPORT)


def pattern_table() -> list[tuple[object, ...]]:
    return []
