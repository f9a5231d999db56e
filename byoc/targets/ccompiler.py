"""The `ccompiler` target: partitions become C source (seed part 1), built into one library.

Its support is what `lower-to-c` can emit, stated once here: the tables below
(op -> element types), static non-empty shapes, rank <= 16. lower-to-c
imports them (`unsupported_reason`) to reject what it cannot lower, and the
predicates registered as `target.ccompiler` are the same check, so an op is
tagged for ccompiler exactly when lower-to-c can emit it. An unsupported form
is left to the host, never miscompiled; `HOST_REASONS` says why for each op
without a C lowering (docs/c-codegen.md lists the ops, their element types and
how each is lowered).

The C codegen fuses elementwise chains itself, so the pattern table holds only the
quantized (QDQ) blocks, which become int8 kernels (byoc/targets/qdq.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Operation

from byoc.dialects.nn.layers import layout_of
from byoc.dialects.nn.types import DTYPE_NAMES
from byoc.targets.base import Target
from byoc.targets.predicates import Predicate, value_reason
from byoc.targets.qdq import pattern_table as qdq_pattern_table

NAME = "ccompiler"

F32 = ("f32",)
F32_I32 = ("f32", "i32")
INTS = ("i64", "i32", "i8", "ui8")
"""The integer element types the C codegen holds (int64_t, int32_t, int8_t, uint8_t)."""
NUMS = ("f32", *INTS)
"""Every number type the C codegen holds."""
ALL = (*NUMS, "i1")
"""Every element type the C codegen holds (i1 is C `bool`): data movement takes them all."""
BOOL = ("i1",)

POINTWISE_OPS: dict[str, tuple[str, ...]] = {
    "nn.add": NUMS,
    "nn.subtract": NUMS,
    "nn.multiply": NUMS,
    "nn.maximum": NUMS,
    "nn.minimum": NUMS,
    "nn.divide": F32,
    "nn.power": F32,
    "nn.prelu": F32,
    "nn.relu": F32_I32,
    "nn.negative": (*F32_I32, "i64"),
    "nn.abs": (*F32_I32, "i64"),
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
    "nn.cast": ALL,
    "nn.bias_add": F32,
    "nn.batch_norm": F32,
    # comparisons take numbers (equal also bools) and give i1
    "nn.equal": ALL,
    "nn.less": ALL,
    "nn.greater": ALL,
    "nn.less_equal": ALL,
    "nn.greater_equal": ALL,
    "nn.logical_and": BOOL,
    "nn.logical_or": BOOL,
    "nn.logical_xor": BOOL,
    "nn.logical_not": BOOL,
    "nn.where": ALL,
    "nn.is_nan": (*F32, "i1"),
    "nn.is_inf": (*F32, "i1"),
}
"""Elementwise and broadcast ops: generated as (fused) loops."""

VIEW_OPS: dict[str, tuple[str, ...]] = {
    "nn.broadcast_to": ALL,
    "nn.strided_slice": ALL,
    "nn.split": ALL,
    "nn.take": ALL,
    "nn.tile": ALL,
}
"""Data movement expressed as index arithmetic: each result is an element-for-element read
of its operand through a strided view (a gather adds the clamped index value times the
axis stride), so it fuses into the pointwise loop that reads it like any elementwise op."""

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
    "nn.reduce_sum": (*F32_I32, "i64"),
    "nn.reduce_mean": F32,
    "nn.reduce_max": (*F32_I32, "i64"),
    "nn.reduce_min": (*F32_I32, "i64"),
    "nn.reduce_prod": (*F32_I32, "i64"),
    "nn.reduce_log_sum_exp": F32,
    "nn.argmax": NUMS,
    "nn.argmin": NUMS,
    "nn.cumsum": (*F32_I32, "i64"),
    "nn.cumprod": (*F32_I32, "i64"),
    "nn.reduce_l1": F32,
    "nn.reduce_l2": F32,
    "nn.reduce_sum_square": F32,
    "nn.reduce_log_sum": F32,
    "nn.rms_norm": F32,
    "nn.log_softmax": F32,
    "nn.layer_norm": F32,
    "nn.einsum": F32,
    "nn.one_hot": ALL,
    "nn.transpose": ALL,
    "nn.concatenate": ALL,
    "nn.pad": ALL,
    "nn.conv2d_transpose": F32,
    "nn.resize2d": F32,
    "nn.lrn": F32,
    # the recurrent cells: their whole time loop in one call (byoc_kernels_recurrent.h)
    "nn.lstm": F32_I32,
    "nn.gru": F32_I32,
    "nn.rnn": F32_I32,
}
"""Ops lowered to a call of a byoc_kernels.h kernel."""

ALIAS_OPS: dict[str, tuple[str, ...]] = {"nn.reshape": ALL, "nn.flatten": ALL}
"""Ops that only reinterpret the shape: the result shares its operand's buffer."""

SUPPORTED_OPS: dict[str, tuple[str, ...]] = {
    **POINTWISE_OPS,
    **VIEW_OPS,
    **KERNEL_OPS,
    **ALIAS_OPS,
    "nn.constant": ALL,
}

HOST_REASONS: dict[str, str] = {
    **dict.fromkeys(
        ["nn.quantize", "nn.dequantize", "nn.requantize", "nn.qconv2d", "nn.qdense", "nn.qmatmul"],
        "lowered only as part of a QDQ composite (byoc_qkernels.h)",
    ),
    "nn.dynamic_quantize": "its scale is computed from the values at run time; no C kernel",
    **dict.fromkeys(
        ["nn.bitwise_and", "nn.bitwise_or", "nn.bitwise_xor", "nn.bitwise_not", "nn.bit_shift", "nn.bitcast"],
        "bit operations: no C lowering",
    ),
    **dict.fromkeys(
        ["nn.gather_elements", "nn.gather_nd"],
        "the reference raises on an out-of-range index; the C codegen has no error path from a loop",
    ),
    **dict.fromkeys(
        ["nn.scatter_elements", "nn.scatter_nd", "nn.tensor_scatter", "nn.reverse_sequence", "nn.trilu"],
        "index ops beyond take: no C lowering",
    ),
    "nn.topk": "a sort along an axis: no C kernel",
    "nn.hardmax": "no C kernel",
    **dict.fromkeys(
        ["nn.attention", "nn.linear_attention", "nn.rotary_embedding", "nn.det", "nn.nll_loss",
         "nn.grid_sample", "nn.col2im", "nn.resize", "nn.roi_align", "nn.deform_conv2d"],
        "composite layers without a C kernel",
    ),  # fmt: skip
}
"""Why each nn op outside SUPPORTED_OPS stays on the host (docs/c-codegen.md lists them).
No nn op has an output shape that depends on values (nonzero, unique); any op with a
dynamic (`?`) or zero-size dim stays on the host too."""

CCOMPILER_LAYOUTS = ("NCHW", "OIHW")
"""The layouts byoc_kernels.h implements."""

MAX_RANK = 16
"""BYOC_MAX_RANK of byoc_kernels.h."""


def dtype_name(t: Attribute) -> str:
    """The short name of element type `t` (f32, i64, i1, ui8...)."""
    name = DTYPE_NAMES.get(t)
    return name if name is not None else str(t)  # printing a type costs ~100 us: only if unnamed


@dataclass(frozen=True)
class EinsumMatmul:
    """A two-operand einsum as one batched matmul. Each label is a batch label (in both
    operands and the output), an m label (first operand and output), an n label (second
    operand and output) or a k label (both operands, summed). The first operand is read in
    the order batch, m, k (`perm_a`: its dims in that order), the second as batch, k, n
    (`perm_b`); their product, of shape `product_shape` (batch, m, n labels), gives
    output dim j from its dim `perm_out[j]`."""

    perm_a: tuple[int, ...]
    perm_b: tuple[int, ...]
    perm_out: tuple[int, ...]
    product_shape: tuple[int, ...]
    batch: int
    m: int
    k: int
    n: int


def einsum_as_matmul(equation: str, shapes: Sequence[Sequence[int]]) -> EinsumMatmul | None:
    """The batched-matmul form of `equation` on operands of `shapes`, or None when it has
    none (not two operands, an ellipsis, a label repeated within an operand or summed over
    one operand only)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != 2 or "." in eq:
        return None
    ta, tb = terms
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return None
    if not arrow:
        rhs = "".join(sorted(ch for ch in set(ta + tb) if (ta + tb).count(ch) == 1))
    size = dict(zip(ta, shapes[0], strict=True)) | dict(zip(tb, shapes[1], strict=True))
    batch = [ch for ch in rhs if ch in ta and ch in tb]
    ms = [ch for ch in rhs if ch in ta and ch not in tb]
    ns = [ch for ch in rhs if ch in tb and ch not in ta]
    ks = [ch for ch in ta if ch in tb and ch not in rhs]
    if len(batch) + len(ms) + len(ks) != len(ta) or len(batch) + len(ns) + len(ks) != len(tb):
        return None  # a label summed over one operand only
    product = [*batch, *ms, *ns]
    return EinsumMatmul(
        perm_a=tuple(ta.index(ch) for ch in [*batch, *ms, *ks]),
        perm_b=tuple(tb.index(ch) for ch in [*batch, *ks, *ns]),
        perm_out=tuple(product.index(ch) for ch in rhs),
        product_shape=tuple(size[ch] for ch in product),
        batch=math.prod(size[ch] for ch in batch),
        m=math.prod(size[ch] for ch in ms),
        k=math.prod(size[ch] for ch in ks),
        n=math.prod(size[ch] for ch in ns),
    )


def _op_reason(op: Operation) -> str | None:
    """What rules out this op beyond its element types and shapes."""
    if op.name == "nn.einsum":
        equation = op.properties["equation"]
        assert isinstance(equation, StringAttr)
        shapes = [v.type.get_shape() for v in op.operands if isinstance(v.type, TensorType)]
        if einsum_as_matmul(equation.data, shapes) is None:
            return (
                f"'nn.einsum' with equation '{equation.data}' is not a batched matmul (two operands, "
                "each label in both and the output, or in one and the output, or summed over both)"
            )
    return None


_REASONS: dict[tuple[Any, ...], tuple[str | None, tuple[Any, ...]]] = {}
"""`unsupported_reason` by op signature: the pipeline asks it of every op in annotate-target,
again in partition and in lower-to-c. Keyed by the name and the identities of the operand
and result types and property values (hashing them costs as much as the check); each entry
keeps those objects alive, so that no other object takes their ids."""

_REASONS_LIMIT = 1 << 16


def unsupported_reason(op: Operation) -> str | None:
    """Why the C codegen cannot lower `op`, or None if it can.

    The single source of truth: the ccompiler predicates are
    `unsupported_reason(op) is None`, and lower-to-c reports this reason at an
    op it cannot lower, so an op the predicate accepts is an op lower-to-c emits.
    The answer reads nothing but the op's name, its operand and result types and its
    properties (immutable attributes), so it is kept per signature (`_REASONS`); not an
    `nn.constant`'s, whose value (its weights) the cache would keep alive.
    """
    if op.name == "nn.constant":
        return _unsupported_reason(op)
    types = (*[v.type for v in op.operands], None, *[r.type for r in op.results])
    props = tuple(op.properties.items())
    key = (op.name, *[id(t) for t in types], *[(k, id(a)) for k, a in props])
    found = _REASONS.get(key)
    if found is not None:
        return found[0]
    why = _unsupported_reason(op)
    if len(_REASONS) < _REASONS_LIMIT:
        _REASONS[key] = (why, (types, props))
    return why


def _unsupported_reason(op: Operation) -> str | None:
    allowed = SUPPORTED_OPS.get(op.name)
    if allowed is None:
        why = HOST_REASONS.get(op.name)
        return f"'{op.name}' has no C lowering" + (f" ({why})" if why else "")
    for key, value in layout_of(op).items():
        if value not in CCOMPILER_LAYOUTS:
            return f"'{op.name}' with {key} {value} is not supported by the C codegen (NCHW/OIHW only)"

    def tensor_reason(kind: str, i: int, t: TensorType[Any]) -> str | None:
        if dtype_name(t.element_type) not in allowed:
            return (
                f"'{op.name}' on {t.element_type} is not supported by the C codegen "
                f"(supported: {', '.join(allowed)})"
            )
        shape = t.get_shape()
        if _absent_operand(op, kind, i, shape):
            return None
        if any(d <= 0 for d in shape):
            return f"{kind} #{i} of '{op.name}' has a dynamic or zero-size shape {t}"
        if len(shape) > MAX_RANK:
            return f"{kind} #{i} of '{op.name}' has rank {len(shape)} (at most {MAX_RANK})"
        return None

    return value_reason(op, tensor_reason) or _op_reason(op)


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
    # an unrolled recurrent net's per-step input projections as one dense before partitioning
    prepare=("batch-take-dense",),
    description="C source (fused loops and byoc_kernels.h calls), one shared library",
)


__all__ = [
    "ALIAS_OPS",
    "ALL",
    "EinsumMatmul",
    "HOST_REASONS",
    "VIEW_OPS",
    "einsum_as_matmul",
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
