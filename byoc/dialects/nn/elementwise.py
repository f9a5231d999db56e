"""The elementwise and broadcasting nn ops: binary ops (`BinaryOp`), unary ops (`UnaryOp`),
clip, cast and the activation functions of TVM Relay."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def

from byoc.dialects.nn.base import (
    AnyTypes,
    FloatTypes,
    NNOp,
    NumberTypes,
    OneResultOp,
    _fail,
    broadcast_shapes,
    tensor_operands,
)
from byoc.dialects.nn.props import float_prop, str_prop
from byoc.dialects.nn.types import (
    ELEMENT_TYPES,
    FLOATS,
    NUMBERS,
    element_type_named,
    shape_of,
    tensor,
)

# --------------------------------------------------------------------------
# Elementwise and broadcasting ops
# --------------------------------------------------------------------------


class BinaryOp(OneResultOp):
    """numpy-broadcasting ops of two operands of one element type."""

    lhs, rhs = tensor_operands(2)
    KIND: ClassVar[str] = "broadcast"
    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        a, b = types
        return [tensor(broadcast_shapes(shape_of(a), shape_of(b)), a.element_type)]


class UnaryOp(OneResultOp):
    """Elementwise ops of one operand, `x`."""

    x = operand_def(TensorType)
    KIND: ClassVar[str] = "elementwise"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        return [types[0]]


@irdl_op_definition
class AddOp(NumberTypes, BinaryOp):
    name = "nn.add"


@irdl_op_definition
class SubtractOp(NumberTypes, BinaryOp):
    name = "nn.subtract"


@irdl_op_definition
class MultiplyOp(NumberTypes, BinaryOp):
    name = "nn.multiply"


@irdl_op_definition
class DivideOp(NumberTypes, BinaryOp):
    """Integers divide truncating toward zero (ONNX Div)."""

    name = "nn.divide"


@irdl_op_definition
class MaximumOp(NumberTypes, BinaryOp):
    name = "nn.maximum"


@irdl_op_definition
class MinimumOp(NumberTypes, BinaryOp):
    name = "nn.minimum"


@irdl_op_definition
class PowerOp(FloatTypes, BinaryOp):
    name = "nn.power"


@irdl_op_definition
class PReluOp(FloatTypes, BinaryOp):
    """x if x >= 0 else slope * x; slope broadcasts against x (ONNX PRelu)."""

    name = "nn.prelu"


@irdl_op_definition
class ReluOp(NumberTypes, UnaryOp):
    name = "nn.relu"


@irdl_op_definition
class SigmoidOp(FloatTypes, UnaryOp):
    name = "nn.sigmoid"


@irdl_op_definition
class TanhOp(FloatTypes, UnaryOp):
    name = "nn.tanh"


@irdl_op_definition
class ExpOp(FloatTypes, UnaryOp):
    name = "nn.exp"


@irdl_op_definition
class LogOp(FloatTypes, UnaryOp):
    name = "nn.log"


@irdl_op_definition
class SqrtOp(FloatTypes, UnaryOp):
    name = "nn.sqrt"


@irdl_op_definition
class NegativeOp(NumberTypes, UnaryOp):
    name = "nn.negative"


@irdl_op_definition
class AbsOp(NumberTypes, UnaryOp):
    name = "nn.abs"


@irdl_op_definition
class ErfOp(FloatTypes, UnaryOp):
    name = "nn.erf"


@irdl_op_definition
class ReciprocalOp(FloatTypes, UnaryOp):
    name = "nn.reciprocal"


@irdl_op_definition
class HardSwishOp(FloatTypes, UnaryOp):
    """x * relu6(x + 3) / 6."""

    name = "nn.hard_swish"


@irdl_op_definition
class ClipOp(FloatTypes, UnaryOp):
    name = "nn.clip"
    a_min = float_prop(-math.inf)
    a_max = float_prop(math.inf)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if attrs["a_min"] > attrs["a_max"]:
            raise _fail(f"a_min {attrs['a_min']} is greater than a_max {attrs['a_max']}")
        return [types[0]]


@irdl_op_definition
class LeakyReluOp(FloatTypes, UnaryOp):
    name = "nn.leaky_relu"
    alpha = float_prop(0.01)


@irdl_op_definition
class HardSigmoidOp(FloatTypes, UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "nn.hard_sigmoid"
    alpha = float_prop(0.2)
    beta = float_prop(0.5)


@irdl_op_definition
class CastOp(AnyTypes, UnaryOp):
    """Convert the element type: `dtype` is the short name of an element type (f32, i64, i1...)."""

    name = "nn.cast"
    dtype = str_prop()
    SAME_DTYPE: ClassVar[bool] = False
    TARGETS: ClassVar[tuple[str, ...]] = tuple(d.name for d in ELEMENT_TYPES)
    """The element types `dtype` may name (short names of types.ELEMENT_TYPES)."""

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        target = element_type_named(attrs["dtype"])
        if attrs["dtype"] not in cls.TARGETS or target is None:
            raise _fail(f"cast to '{attrs['dtype']}' is not supported ({', '.join(cls.TARGETS)})")
        return [tensor(shape_of(types[0]), target)]


OPS: tuple[type[NNOp], ...] = (
    AddOp,
    SubtractOp,
    MultiplyOp,
    DivideOp,
    MaximumOp,
    MinimumOp,
    PowerOp,
    PReluOp,
    ReluOp,
    SigmoidOp,
    TanhOp,
    ExpOp,
    LogOp,
    SqrtOp,
    NegativeOp,
    AbsOp,
    ErfOp,
    ReciprocalOp,
    HardSwishOp,
    ClipOp,
    LeakyReluOp,
    HardSigmoidOp,
    CastOp,
)
"""The ops of this module, registered in the nn dialect."""
