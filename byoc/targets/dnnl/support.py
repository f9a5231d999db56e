"""Which nn ops the dnnl engine runs: one function saying why not, the predicates from it.

The engine (byoc/runtime/engines/dnnl_engine.c) computes in f32 on static, non-empty
shapes of rank <= 7. Per op, the forms oneDNN has no primitive for are rejected here,
so an op tagged `dnnl` is one the engine plans; what it does not take stays on the next
target (ccompiler) or the host, never a wrong answer.
"""

from __future__ import annotations

import math
from typing import Any

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation, OpResult, SSAValue

from byoc.dialects import nn
from byoc.targets.predicates import Predicate, value_reason

MAX_RANK = 7
"""Ranks the engine takes (oneDNN's DNNL_MAX_NDIMS is 12; grouped weights add one)."""

ELTWISE_OPS = (
    "nn.relu",
    "nn.leaky_relu",
    "nn.clip",
    "nn.sigmoid",
    "nn.tanh",
    "nn.exp",
    "nn.sqrt",
    "nn.abs",
    "nn.negative",
    "nn.reciprocal",
    "nn.hard_swish",
    "nn.hard_sigmoid",
)
"""Unary ops: one oneDNN eltwise algorithm each (a post-op after a conv/dense/matmul). Not
nn.log: oneDNN 3.2's log has an absolute error up to ~1.4e-6 near 1 (relative error
unbounded there) and 56-58 ulps away from 1, outside tests/bounds.py's ULPS; it stays on
ccompiler or the host (docs/dnnl.md)."""

BINARY_OPS = ("nn.add", "nn.subtract", "nn.multiply", "nn.divide", "nn.maximum", "nn.minimum")
COMMUTATIVE = ("nn.add", "nn.multiply", "nn.maximum", "nn.minimum")
NAN_GUARDED_BINARY = ("nn.maximum", "nn.minimum")
"""oneDNN's max/min lose a NaN operand; the engine restores it elementwise after the
primitive (dnnl_guard.c), which needs both operands of the result's shape."""

ANCHOR_OPS = ("nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.matmul")
"""Primitives whose chain of per-channel affine ops and activations becomes post-ops."""

OTHER_OPS = (
    "nn.bias_add",
    "nn.batch_norm",
    "nn.max_pool2d",
    "nn.avg_pool2d",
    "nn.global_avg_pool2d",
    "nn.global_max_pool2d",
    "nn.softmax",
    "nn.lrn",
    "nn.layer_norm",
    "nn.concatenate",
    "nn.reshape",
    "nn.flatten",
    "nn.transpose",
)

SUPPORTED_OPS = (*ANCHOR_OPS, *ELTWISE_OPS, *BINARY_OPS, *OTHER_OPS)

MAX_CONCAT_INPUTS = 30


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def is_constant(v: SSAValue) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, nn.ConstantOp)


def unsupported_reason(op: Operation) -> str | None:
    """Why the dnnl engine does not take `op`, or None if it does."""
    if op.name not in SUPPORTED_OPS:
        return f"'{op.name}' has no oneDNN primitive in the dnnl engine"

    def tensor_reason(kind: str, i: int, t: TensorType[Any]) -> str | None:
        if t.element_type != f32:
            return f"'{op.name}' on {t.element_type} (the dnnl engine computes in f32)"
        shape = t.get_shape()
        if any(d <= 0 for d in shape):
            return f"{kind} #{i} of '{op.name}' has a dynamic or empty shape {list(shape)}"
        if len(shape) > MAX_RANK:
            return f"{kind} #{i} of '{op.name}' has rank {len(shape)} (at most {MAX_RANK})"
        return None

    why = value_reason(op, tensor_reason)
    if why is not None:
        return why
    attrs = op.attr_values() if isinstance(op, nn.NNOp) else {}
    name = op.name
    out = _shape(op.results[0])
    if name in ("nn.conv2d", "nn.conv2d_transpose"):
        if not is_constant(op.operands[1]):
            return f"'{name}' with a computed weight (the engine reorders constant weights at init)"
        if name == "nn.conv2d_transpose":
            pad, opad = attrs["padding"], attrs["output_padding"]
            if opad[0] > pad[2] or opad[1] > pad[3]:
                return "conv2d_transpose with output_padding larger than the bottom/right padding"
    elif name == "nn.matmul":
        if any(len(_shape(v)) < 2 for v in op.operands):
            return "matmul of a rank-1 operand"
    elif name in BINARY_OPS:
        lhs, rhs = _shape(op.operands[0]), _shape(op.operands[1])
        if lhs != out and not (name in COMMUTATIVE and rhs == out):
            return f"'{name}' broadcasting its first operand (oneDNN broadcasts the second only)"
        if name in NAN_GUARDED_BINARY and (lhs != out or rhs != out):
            return f"'{name}' broadcasting an operand (its NaN guard is elementwise)"
    elif name in ("nn.max_pool2d", "nn.avg_pool2d"):
        if name == "nn.avg_pool2d" and attrs["count_include_pad"] and attrs["ceil_mode"]:
            h, w = _shape(op.operands[0])[2:]
            for i, size in enumerate((h, w)):
                k, s, d = attrs["pool_size"][i], attrs["strides"][i], attrs["dilation"][i]
                lo, hi = attrs["padding"][i], attrs["padding"][i + 2]
                need = (out[2 + i] - 1) * s + (k - 1) * d + 1 - size - lo
                if need != hi:
                    return "avg_pool2d counting padding with ceil_mode's extra window"
    elif name == "nn.lrn":
        rank = len(out)
        if attrs["axis"] % rank != 1 or rank < 3:
            return "lrn across an axis other than 1 (oneDNN normalises across channels)"
        if attrs["size"] % 2 == 0:
            return "lrn with an even size (oneDNN centres an odd window)"
    elif name == "nn.batch_norm":
        if attrs["axis"] % len(out) != 1:
            return "batch_norm on an axis other than 1"
        if not all(is_constant(v) for v in op.operands[1:]):
            return "batch_norm with computed parameters"
    elif name == "nn.layer_norm":
        inner = out[attrs["axis"] % len(out) :]
        for which, v in (("gamma", op.operands[1]), ("beta", op.operands[2])):
            if not is_constant(v) and math.prod(_shape(v)) != math.prod(inner):
                return f"layer_norm with a computed {which} that broadcasts (oneDNN takes one value a position)"
    elif name == "nn.concatenate":
        if len(op.operands) > MAX_CONCAT_INPUTS:
            return f"concatenate of more than {MAX_CONCAT_INPUTS} inputs"
    return None


def is_supported(op: Operation) -> bool:
    return unsupported_reason(op) is None


def predicate(op_name: str) -> Predicate:
    return Predicate(is_supported, "the dnnl engine plans it (f32, static shapes, oneDNN forms)")


SUPPORT = {name: predicate(name) for name in SUPPORTED_OPS}
"""op name -> predicate: the `support` of the dnnl target."""


__all__ = [
    "ANCHOR_OPS",
    "BINARY_OPS",
    "ELTWISE_OPS",
    "MAX_RANK",
    "SUPPORT",
    "SUPPORTED_OPS",
    "is_constant",
    "is_supported",
    "unsupported_reason",
]
