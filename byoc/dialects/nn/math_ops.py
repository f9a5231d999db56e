"""nn ops for ONNX's math, activation, reduction, arg, scan and tensor-building operators.

Unary float functions (trigonometric, rounding, the activations Gelu, Mish,
Softplus, Softsign, Elu, Selu, Celu, ThresholdedRelu, Swish, Shrink), `sign`,
`is_nan`/`is_inf` (bool results), `mod` and the bitwise ops, the reductions
beyond mean/sum/max, `argmax`/`argmin`, `cumsum`, `topk`, `einsum`, `tile` and
`broadcast_to` (ONNX Expand). Each op's `infer` is its type relation; the
numpy kernels are in `byoc.interpreters.kernels_math`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import BoolAttr, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.nn.base import (
    AnyTypes,
    AxisOp,
    DataOp,
    FloatTypes,
    IntegerTypes,
    NNOp,
    NumberTypes,
    OneResultOp,
    broadcast_shapes,
    check_one_of,
    norm_axis,
)
from byoc.dialects.nn.elementwise import BinaryOp, UnaryOp
from byoc.dialects.nn.props import array_prop, bool_prop, float_prop, int_prop, str_prop
from byoc.dialects.nn.shape_ops import ReduceOp
from byoc.dialects.nn.types import (
    BOOL,
    FLOATS,
    NUMBERS,
    element_type_named,
    numpy_dtype,
    shape_of,
    tensor,
)

I1 = BOOL[0]


def _bool(value: bool) -> IntegerAttr[Any]:
    return BoolAttr.from_bool(value)


# ---- unary float functions ------------------------------------------------------------


@irdl_op_definition
class SinOp(FloatTypes, UnaryOp):
    name = "nn.sin"


@irdl_op_definition
class CosOp(FloatTypes, UnaryOp):
    name = "nn.cos"


@irdl_op_definition
class TanOp(FloatTypes, UnaryOp):
    name = "nn.tan"


@irdl_op_definition
class AsinOp(FloatTypes, UnaryOp):
    name = "nn.asin"


@irdl_op_definition
class AcosOp(FloatTypes, UnaryOp):
    name = "nn.acos"


@irdl_op_definition
class AtanOp(FloatTypes, UnaryOp):
    name = "nn.atan"


@irdl_op_definition
class SinhOp(FloatTypes, UnaryOp):
    name = "nn.sinh"


@irdl_op_definition
class CoshOp(FloatTypes, UnaryOp):
    name = "nn.cosh"


@irdl_op_definition
class AsinhOp(FloatTypes, UnaryOp):
    name = "nn.asinh"


@irdl_op_definition
class AcoshOp(FloatTypes, UnaryOp):
    name = "nn.acosh"


@irdl_op_definition
class AtanhOp(FloatTypes, UnaryOp):
    name = "nn.atanh"


@irdl_op_definition
class FloorOp(FloatTypes, UnaryOp):
    name = "nn.floor"


@irdl_op_definition
class CeilOp(FloatTypes, UnaryOp):
    name = "nn.ceil"


@irdl_op_definition
class RoundOp(FloatTypes, UnaryOp):
    """Round half to even (ONNX Round, numpy.round)."""

    name = "nn.round"


@irdl_op_definition
class SoftplusOp(FloatTypes, UnaryOp):
    """log(1 + exp(x))."""

    name = "nn.softplus"


@irdl_op_definition
class SoftsignOp(FloatTypes, UnaryOp):
    """x / (1 + |x|)."""

    name = "nn.softsign"


@irdl_op_definition
class MishOp(FloatTypes, UnaryOp):
    """x * tanh(softplus(x))."""

    name = "nn.mish"


@irdl_op_definition
class GeluOp(FloatTypes, UnaryOp):
    """x * Phi(x); `approximate` is none (erf) or tanh."""

    name = "nn.gelu"
    approximate = str_prop("none")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        check_one_of(attrs, "approximate", ("none", "tanh"))
        return [types[0]]


class AlphaUnaryOp(UnaryOp):
    """The activations with an `alpha` property of default 1 (ONNX Elu, Celu,
    ThresholdedRelu, Swish)."""

    alpha = float_prop(1.0)


@irdl_op_definition
class EluOp(FloatTypes, AlphaUnaryOp):
    """x if x > 0 else alpha * (exp(x) - 1)."""

    name = "nn.elu"


@irdl_op_definition
class CeluOp(FloatTypes, AlphaUnaryOp):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha must be non-zero."""

    name = "nn.celu"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if attrs["alpha"] == 0:
            raise VerifyException("celu alpha must be non-zero")
        return [types[0]]


@irdl_op_definition
class ThresholdedReluOp(FloatTypes, AlphaUnaryOp):
    """x if x > alpha else 0."""

    name = "nn.thresholded_relu"


@irdl_op_definition
class SwishOp(FloatTypes, AlphaUnaryOp):
    """x * sigmoid(alpha * x)."""

    name = "nn.swish"


@irdl_op_definition
class SeluOp(FloatTypes, UnaryOp):
    """gamma * (x if x > 0 else alpha * (exp(x) - 1))."""

    name = "nn.selu"
    alpha = float_prop(1.67326319217681884765625)
    gamma = float_prop(1.05070102214813232421875)


@irdl_op_definition
class ShrinkOp(NumberTypes, UnaryOp):
    """x - bias if x > lambd, x + bias if x < -lambd, else 0 (ONNX Shrink)."""

    name = "nn.shrink"
    bias = float_prop(0.0)
    lambd = float_prop(0.5)


@irdl_op_definition
class SignOp(NumberTypes, UnaryOp):
    """-1, 0 or 1 (NaN stays NaN)."""

    name = "nn.sign"


class FloatPredicateOp(UnaryOp):
    """A float test per element: the result is i1 of the operand's shape."""

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        return [tensor(shape_of(types[0]), I1)]


@irdl_op_definition
class IsNanOp(FloatTypes, FloatPredicateOp):
    name = "nn.is_nan"


@irdl_op_definition
class IsInfOp(FloatTypes, FloatPredicateOp):
    """True at +inf (if detect_positive) and -inf (if detect_negative)."""

    name = "nn.is_inf"
    detect_positive = bool_prop(True)
    detect_negative = bool_prop(True)


# ---- binary -------------------------------------------------------------------------


@irdl_op_definition
class ModOp(NumberTypes, BinaryOp):
    """Remainder: with `fmod` the sign of the dividend (C fmod), else of the divisor
    (Python %, numpy.mod; on floats too, as ONNX Mod allows from opset 28). Integer
    division by zero gives 0."""

    name = "nn.mod"
    fmod = bool_prop(False)


@irdl_op_definition
class BitwiseAndOp(IntegerTypes, BinaryOp):
    name = "nn.bitwise_and"


@irdl_op_definition
class BitwiseOrOp(IntegerTypes, BinaryOp):
    name = "nn.bitwise_or"


@irdl_op_definition
class BitwiseXorOp(IntegerTypes, BinaryOp):
    name = "nn.bitwise_xor"


@irdl_op_definition
class BitwiseNotOp(IntegerTypes, UnaryOp):
    name = "nn.bitwise_not"


@irdl_op_definition
class BitShiftOp(IntegerTypes, BinaryOp):
    """Shift integers `direction` (left or right) by the second operand (ONNX BitShift); a
    shift by a negative count or the bit width or more gives 0, or -1 for a negative value
    shifted right."""

    name = "nn.bit_shift"
    direction = str_prop()

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        check_one_of(attrs, "direction", ("left", "right"))
        return super().infer(types, attrs)


# ---- reductions ----------------------------------------------------------------------


@irdl_op_definition
class ReduceMinOp(AnyTypes, ReduceOp):
    name = "nn.reduce_min"


@irdl_op_definition
class ReduceProdOp(NumberTypes, ReduceOp):
    name = "nn.reduce_prod"


@irdl_op_definition
class ReduceL1Op(NumberTypes, ReduceOp):
    """sum(|x|)."""

    name = "nn.reduce_l1"


@irdl_op_definition
class ReduceL2Op(NumberTypes, ReduceOp):
    """sqrt(sum(x * x))."""

    name = "nn.reduce_l2"


@irdl_op_definition
class ReduceSumSquareOp(NumberTypes, ReduceOp):
    name = "nn.reduce_sum_square"


@irdl_op_definition
class ReduceLogSumOp(FloatTypes, ReduceOp):
    """log(sum(x))."""

    name = "nn.reduce_log_sum"


@irdl_op_definition
class ReduceLogSumExpOp(FloatTypes, ReduceOp):
    """log(sum(exp(x))), computed stably."""

    name = "nn.reduce_log_sum_exp"


# ---- arg reductions, scans, top-k --------------------------------------------------------


class ArgReduceOp(DataOp):
    """The index (i64) of the extreme element along `axis`; ties take the first index, or
    the last with `select_last_index`."""

    axis = int_prop(0)
    keepdims = bool_prop(True)
    select_last_index = bool_prop(False)
    KIND: ClassVar[str] = "reduce"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = norm_axis(attrs["axis"], len(s))
        if not s or s[axis] == 0:
            raise VerifyException(f"cannot take the arg extreme of the empty axis {axis}")
        out = [1 if i == axis else d for i, d in enumerate(s)] if attrs["keepdims"] else [
            d for i, d in enumerate(s) if i != axis
        ]
        return [tensor(out, i64)]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    name = "nn.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    name = "nn.argmin"


class ScanOp(AxisOp):
    """A running reduction along `axis`; `exclusive` leaves each element out, `reverse` runs
    from the end."""

    axis = int_prop(0)
    exclusive = bool_prop(False)
    reverse = bool_prop(False)
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS


@irdl_op_definition
class CumSumOp(ScanOp):
    """Running sum (ONNX CumSum)."""

    name = "nn.cumsum"


@irdl_op_definition
class CumProdOp(ScanOp):
    """Running product (ONNX CumProd)."""

    name = "nn.cumprod"


@irdl_op_definition
class TopKOp(NNOp):
    """The `k` largest (or smallest) elements along `axis`, sorted, and their i64 indices;
    equal values keep the lower index first (ONNX TopK)."""

    name = "nn.topk"
    data = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = int_prop()
    axis = int_prop(-1)
    largest = bool_prop(True)
    KIND: ClassVar[str] = "opaque"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = list(shape_of(types[0]))
        axis = norm_axis(attrs["axis"], len(s))
        k = attrs["k"]
        if not 0 <= k <= s[axis]:
            raise VerifyException(f"k {k} is out of range [0, {s[axis]}] for axis {axis}")
        s[axis] = k
        return [tensor(s, types[0].element_type), tensor(s, i64)]


_EINSUM_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


def einsum_output_shape(equation: str, shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The result shape of numpy.einsum(equation, *operands of `shapes`); raises
    VerifyException on a malformed equation or inconsistent dimensions."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise VerifyException(f"equation '{equation}' has {len(terms)} inputs, got {len(shapes)} operands")
    dims: dict[str, int] = {}
    ell_shapes: list[tuple[int, ...]] = []
    counts: dict[str, int] = {}
    for term, shape in zip(terms, shapes, strict=True):
        if not _EINSUM_TERM.match(term):
            raise VerifyException(f"equation '{equation}' has a malformed term '{term}'")
        head, ell, tail = term.partition("...")
        letters = head + tail
        n_ell = len(shape) - len(letters)
        if n_ell < 0 or (n_ell and not ell):
            raise VerifyException(f"term '{term}' does not match an operand of rank {len(shape)}")
        ell_shapes.append(tuple(shape[len(head) : len(head) + n_ell]))
        for ch, d in zip(letters, [*shape[: len(head)], *shape[len(head) + n_ell :]], strict=True):
            counts[ch] = counts.get(ch, 0) + 1
            if dims.setdefault(ch, d) != d:
                raise VerifyException(f"label '{ch}' has sizes {dims[ch]} and {d}")
    ell_out = broadcast_shapes(*ell_shapes) if ell_shapes else ()
    if arrow:
        if not _EINSUM_TERM.match(rhs):
            raise VerifyException(f"equation '{equation}' has a malformed output '{rhs}'")
        head, ell, tail = rhs.partition("...")
        out_letters = head + tail
        if any(ch not in dims for ch in out_letters) or len(set(out_letters)) != len(out_letters):
            raise VerifyException(f"output '{rhs}' names a label no input has, or repeats one")
        return (*[dims[c] for c in head], *(ell_out if ell else ()), *[dims[c] for c in tail])
    implicit = sorted(c for c, n in counts.items() if n == 1)
    return (*ell_out, *[dims[c] for c in implicit])


@irdl_op_definition
class EinsumOp(OneResultOp):
    """numpy.einsum(equation, *operands) (ONNX Einsum)."""

    name = "nn.einsum"
    inputs = var_operand_def(TensorType)
    equation = str_prop()
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if not types:
            raise VerifyException("einsum needs at least one operand")
        out = einsum_output_shape(attrs["equation"], [shape_of(t) for t in types])
        return [tensor(out, types[0].element_type)]


# ---- tensor building ------------------------------------------------------------------


@irdl_op_definition
class TileOp(AnyTypes, DataOp):
    """Repeat the tensor `reps[i]` times along each axis i (numpy.tile, ONNX Tile)."""

    name = "nn.tile"
    reps = array_prop()
    KIND: ClassVar[str] = "injective"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        reps = attrs["reps"]
        if len(reps) != len(s) or any(r < 0 for r in reps):
            raise VerifyException(f"reps {list(reps)} must be {len(s)} non-negative values")
        return [tensor([d * r for d, r in zip(s, reps, strict=True)], types[0].element_type)]


@irdl_op_definition
class BroadcastToOp(AnyTypes, DataOp):
    """Broadcast to numpy's broadcast of the operand's shape and `shape` (ONNX Expand)."""

    name = "nn.broadcast_to"
    shape = array_prop()
    KIND: ClassVar[str] = "broadcast"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if any(d < 0 for d in attrs["shape"]):
            raise VerifyException(f"shape {list(attrs['shape'])} must be non-negative")
        out = broadcast_shapes(shape_of(types[0]), attrs["shape"])
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class BitcastOp(AnyTypes, UnaryOp):
    """Reinterpret the bits as the element type `dtype` of the same width (ONNX BitCast)."""

    name = "nn.bitcast"
    dtype = str_prop()
    SAME_DTYPE: ClassVar[bool] = False
    KIND: ClassVar[str] = "elementwise"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        target = element_type_named(attrs["dtype"])
        if target is None:
            raise VerifyException(f"bitcast to '{attrs['dtype']}': no such element type")
        if numpy_dtype(target).itemsize != numpy_dtype(types[0].element_type).itemsize:
            raise VerifyException(
                f"bitcast from {types[0].element_type} to {target} changes the element width"
            )
        return [tensor(shape_of(types[0]), target)]


@irdl_op_definition
class DetOp(DataOp):
    """The determinant of each square matrix in the last two dims (ONNX Det)."""

    name = "nn.det"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        if len(s) < 2 or s[-1] != s[-2]:
            raise VerifyException(f"det needs square matrices in the last two dims, got {list(s)}")
        return [tensor(s[:-2], types[0].element_type)]


OPS: tuple[type[NNOp], ...] = (
    SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp,
    FloorOp, CeilOp, RoundOp, SoftplusOp, SoftsignOp, MishOp, GeluOp, EluOp, SeluOp, CeluOp,
    ThresholdedReluOp, SwishOp, ShrinkOp, SignOp, IsNanOp, IsInfOp, ModOp, BitwiseAndOp,
    BitwiseOrOp, BitwiseXorOp, BitwiseNotOp, BitShiftOp, ReduceMinOp, ReduceProdOp, ReduceL1Op,
    ReduceL2Op, ReduceSumSquareOp, ReduceLogSumOp, ReduceLogSumExpOp, ArgMaxOp, ArgMinOp,
    CumSumOp, CumProdOp, TopKOp, EinsumOp, TileOp, BroadcastToOp, BitcastOp, DetOp,
)  # fmt: skip
"""The ops of this module, in the order the Nn dialect lists them."""
