"""nn ops for ONNX's comparison and logical operators, and `where` (ONNX Where).

Comparisons take two operands of one element type (numpy broadcasting) and give
an i1 (bool) tensor; the logical ops take and give i1. The numpy kernels are in
`byoc.interpreters.kernels_logic`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.nn.base import (
    AnyTypes,
    BoolTypes,
    NNOp,
    NumberTypes,
    OneResultOp,
    broadcast_shapes,
    tensor_operands,
)
from byoc.dialects.nn.elementwise import BinaryOp, UnaryOp
from byoc.dialects.nn.types import ANY, BOOL, shape_of, tensor

I1 = BOOL[0]


class CompareOp(BinaryOp):
    """An elementwise comparison: the result is i1 of the broadcast shape."""

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        a, b = types
        return [tensor(broadcast_shapes(shape_of(a), shape_of(b)), I1)]


@irdl_op_definition
class EqualOp(AnyTypes, CompareOp):
    name = "nn.equal"


@irdl_op_definition
class LessOp(NumberTypes, CompareOp):
    name = "nn.less"


@irdl_op_definition
class GreaterOp(NumberTypes, CompareOp):
    name = "nn.greater"


@irdl_op_definition
class LessEqualOp(NumberTypes, CompareOp):
    name = "nn.less_equal"


@irdl_op_definition
class GreaterEqualOp(NumberTypes, CompareOp):
    name = "nn.greater_equal"


@irdl_op_definition
class LogicalAndOp(BoolTypes, BinaryOp):
    name = "nn.logical_and"


@irdl_op_definition
class LogicalOrOp(BoolTypes, BinaryOp):
    name = "nn.logical_or"


@irdl_op_definition
class LogicalXorOp(BoolTypes, BinaryOp):
    name = "nn.logical_xor"


@irdl_op_definition
class LogicalNotOp(BoolTypes, UnaryOp):
    name = "nn.logical_not"


@irdl_op_definition
class WhereOp(OneResultOp):
    """x where cond else y; the three operands broadcast (numpy.where)."""

    name = "nn.where"
    cond, x, y = tensor_operands(3)
    KIND: ClassVar[str] = "broadcast"
    SAME_DTYPE: ClassVar[bool] = False
    DTYPES: ClassVar[tuple[Attribute, ...]] = BOOL

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        c, x, y = types
        if x.element_type != y.element_type:
            raise VerifyException(
                f"x and y must have the same element type, got {x.element_type} and {y.element_type}"
            )
        if x.element_type not in ANY:
            raise VerifyException(f"element type {x.element_type} is not supported")
        out = broadcast_shapes(shape_of(c), shape_of(x), shape_of(y))
        return [tensor(out, x.element_type)]


OPS: tuple[type[NNOp], ...] = (
    EqualOp, LessOp, GreaterOp, LessEqualOp, GreaterEqualOp, LogicalAndOp, LogicalOrOp,
    LogicalXorOp, LogicalNotOp, WhereOp,
)  # fmt: skip
"""The ops of this module, in the order the Nn dialect lists them."""
