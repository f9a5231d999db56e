"""The `ccompiler` target: partitions become C source (seed part 1), built into one library.

Its support is what `lower-to-c` can emit, stated once here: the tables below
(op -> element types), static non-empty shapes, rank <= 16. lower-to-c
imports them (`unsupported_reason`) to reject what it cannot lower, and the
predicates registered as `target.ccompiler` are the same check, so an op is
tagged for ccompiler exactly when lower-to-c can emit it. An unsupported form
is left to the host, never miscompiled.

The C codegen fuses elementwise chains itself, so the pattern table holds only the
quantized (QDQ) blocks, which become int8 kernels (byoc/targets/qdq.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.ir import Attribute, Operation

from byoc.dialects.nn.layers import layout_of
from byoc.targets.base import Target
from byoc.targets.predicates import Predicate
from byoc.targets.qdq import pattern_table as qdq_pattern_table

NAME = "ccompiler"

F32 = ("f32",)
F32_I32 = ("f32", "i32")

POINTWISE_OPS: dict[str, tuple[str, ...]] = {
    "nn.add": F32_I32,
    "nn.subtract": F32_I32,
    "nn.multiply": F32_I32,
    "nn.maximum": F32_I32,
    "nn.minimum": F32_I32,
    "nn.divide": F32,
    "nn.power": F32,
    "nn.prelu": F32,
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
    "nn.clip": F32_I32,
    "nn.leaky_relu": F32,
    "nn.hard_sigmoid": F32,
    "nn.cast": F32_I32,
    "nn.bias_add": F32,
    "nn.batch_norm": F32,
}
"""Elementwise and broadcast ops: generated as (fused) loops."""

MATH_POINTWISE_OPS: dict[str, tuple[str, ...]] = dict.fromkeys(
    [
        "nn.sin", "nn.cos", "nn.tan", "nn.asin", "nn.acos", "nn.atan", "nn.sinh", "nn.cosh",
        "nn.asinh", "nn.acosh", "nn.atanh", "nn.floor", "nn.ceil", "nn.round", "nn.softplus",
        "nn.softsign", "nn.mish", "nn.gelu", "nn.elu", "nn.selu", "nn.celu",
        "nn.thresholded_relu", "nn.swish", "nn.shrink", "nn.sign", "nn.mod",
    ],
    F32,
)  # fmt: skip
"""The f32 pointwise ops of nn.math_ops: lowering/nn_to_c/math_scalar.py."""
POINTWISE_OPS.update(MATH_POINTWISE_OPS)

KERNEL_OPS: dict[str, tuple[str, ...]] = {
    "nn.conv2d": F32,
    "nn.dense": F32,
    "nn.matmul": F32,
    "nn.max_pool2d": F32,
    "nn.avg_pool2d": F32,
    "nn.global_avg_pool2d": F32,
    "nn.global_max_pool2d": F32,
    "nn.softmax": F32,
    "nn.reduce_sum": F32_I32,
    "nn.reduce_mean": F32,
    "nn.reduce_max": F32_I32,
    "nn.transpose": F32_I32,
    "nn.concatenate": F32_I32,
    "nn.pad": F32_I32,
    "nn.conv2d_transpose": F32,
    "nn.resize2d": F32,
    "nn.lrn": F32,
    # the recurrent cells: their whole time loop in one call (byoc_kernels_recurrent.h)
    "nn.lstm": F32_I32,
    "nn.gru": F32_I32,
    "nn.rnn": F32_I32,
}
"""Ops lowered to a call of a byoc_kernels.h kernel."""

ALIAS_OPS: dict[str, tuple[str, ...]] = {"nn.reshape": F32_I32, "nn.flatten": F32_I32}
"""Ops that only reinterpret the shape: the result shares its operand's buffer."""

SUPPORTED_OPS: dict[str, tuple[str, ...]] = {
    **POINTWISE_OPS,
    **KERNEL_OPS,
    **ALIAS_OPS,
    "nn.constant": (*F32_I32, "i8", "ui8"),  # i8/ui8: operands of the QDQ composites
}

CCOMPILER_LAYOUTS = ("NCHW", "OIHW")
"""The layouts byoc_kernels.h implements."""

MAX_RANK = 16
"""BYOC_MAX_RANK of byoc_kernels.h."""


def dtype_name(t: Attribute) -> str:
    return {f32: "f32", i32: "i32"}.get(t, str(t))  # type: ignore[arg-type]


def unsupported_reason(op: Operation) -> str | None:
    """Why the C codegen cannot lower `op`, or None if it can.

    The single source of truth: the ccompiler predicates are
    `unsupported_reason(op) is None`, and lower-to-c reports this reason at an
    op it cannot lower, so an op the predicate accepts is an op lower-to-c emits.
    """
    allowed = SUPPORTED_OPS.get(op.name)
    if allowed is None:
        return f"'{op.name}' has no C lowering"
    for key, value in layout_of(op).items():
        if value not in CCOMPILER_LAYOUTS:
            return f"'{op.name}' with {key} {value} is not supported by the C codegen (NCHW/OIHW only)"
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            t = v.type
            if not isinstance(t, TensorType):
                return f"{kind} #{i} of '{op.name}' is not a ranked tensor"
            if dtype_name(t.element_type) not in allowed:
                return (
                    f"'{op.name}' on {t.element_type} is not supported by the C codegen "
                    f"(supported: {', '.join(allowed)})"
                )
            shape = t.get_shape()
            if _absent_operand(op, kind, i, shape):
                continue
            if any(d <= 0 for d in shape):
                return f"{kind} #{i} of '{op.name}' has a dynamic or zero-size shape {t}"
            if len(shape) > MAX_RANK:
                return f"{kind} #{i} of '{op.name}' has rank {len(shape)} (at most {MAX_RANK})"
    return None


def _absent_operand(op: Operation, kind: str, index: int, shape: tuple[int, ...]) -> bool:
    """An optional operand of nn.lstm / nn.gru / nn.rnn left out: a tensor with no elements
    (the constant the importer makes for it, and the op's operand), which the kernel does not
    read; any other op on an empty tensor is still refused."""
    if shape != (0,):
        return False
    if kind == "result":
        return op.name == "nn.constant"
    return op.name in ("nn.lstm", "nn.gru", "nn.rnn") and index >= 3


def is_supported(op: Operation) -> bool:
    return unsupported_reason(op) is None


def _predicate(op_name: str) -> Predicate:
    types = ", ".join(SUPPORTED_OPS[op_name])
    return Predicate(is_supported, f"lower-to-c emits it (element types {types}, static shapes)")




CCOMPILER = Target(
    name=NAME,
    support={name: _predicate(name) for name in SUPPORTED_OPS if name != "nn.constant"},
    # the QDQ blocks as int8 kernels (byoc/targets/qdq.py, byoc_qkernels.h)
    patterns=qdq_pattern_table(fused=True),
    composite_lowering="qnn",
    lowering="lower-to-c",
    component="c",
    description="C source (fused loops and byoc_kernels.h calls), one shared library",
)


__all__ = [
    "ALIAS_OPS",
    "MATH_POINTWISE_OPS",
    "CCOMPILER",
    "F32",
    "F32_I32",
    "KERNEL_OPS",
    "MAX_RANK",
    "NAME",
    "POINTWISE_OPS",
    "SUPPORTED_OPS",
    "dtype_name",
    "is_supported",
    "unsupported_reason",
]
