"""Scalar expressions: literals, arithmetic, comparison, select and cast."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    i1,
)
from xdsl.ir import (
    Attribute,
    SSAValue,
)
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.irdl.constraints import VarConstraint
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.c.format import parse_attrs_and_type, print_attrs_and_type, print_scalar
from byoc.dialects.c.types import OpaqueType, PtrType, init_op, int_attr


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A literal: `%0 = c.constant 1.5 : f32`, `%1 = c.constant 100 : index`."""

    name = "c.constant"
    value = prop_def(Attribute)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: IntegerAttr[Any] | FloatAttr[Any]):
        init_op(self, properties={"value": value}, result_types=[value.type])

    @staticmethod
    def of(v: float | int, type_: Attribute) -> ConstantOp:
        if isinstance(type_, IntegerType | IndexType):
            return ConstantOp(int_attr(int(v), type_))
        return ConstantOp(FloatAttr(float(v), type_))  # type: ignore[arg-type]

    def verify_(self) -> None:
        if not isinstance(self.value, IntegerAttr | FloatAttr):
            raise VerifyException("c.constant holds an integer or float literal")
        if self.value.type != self.result.type:
            raise VerifyException(f"literal type {self.value.type} differs from the result type {self.result.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        assert isinstance(self.value, IntegerAttr | FloatAttr)
        print_scalar(printer, self.value)
        print_attrs_and_type(printer, self, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        number = parser.parse_number(allow_boolean=True)
        attrs, type_ = parse_attrs_and_type(parser, Attribute, "")
        if isinstance(type_, IntegerType | IndexType):
            if not isinstance(number, int):
                parser.raise_error(f"{type_} literal must be an integer", pos, parser.pos)
            value: Any = IntegerAttr(number, type_)
        else:
            width = getattr(type_, "bitwidth", None)
            if isinstance(number, int) and width in (32, 64):
                bits = np.array([number], dtype=np.uint64).astype(np.uint32 if width == 32 else np.uint64)
                number = float(bits.view(np.float32 if width == 32 else np.float64)[0])
            try:
                value = FloatAttr(float(number), type_)  # type: ignore[arg-type]
            except Exception as e:
                parser.raise_error(f"invalid literal of type {type_}: {e}", pos, parser.pos)
        op = ConstantOp(value)
        op.attributes.update(attrs)
        return op


class BinaryOp(IRDLOperation):
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"
    C_OP: ClassVar[str] = ""

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        init_op(self, operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        if not self.lhs.type == self.rhs.type == self.result.type:
            raise VerifyException(
                f"operands and result must have one type, got {self.lhs.type}, {self.rhs.type} "
                f"-> {self.result.type}"
            )
        if isinstance(self.result.type, PtrType | OpaqueType):
            raise VerifyException(f"'{self.name}' takes scalars, got {self.result.type}")


@irdl_op_definition
class AddOp(BinaryOp):
    """`a + b` (integers wrap)."""

    name = "c.add"
    C_OP: ClassVar[str] = "+"


@irdl_op_definition
class SubOp(BinaryOp):
    """`a - b` (integers wrap)."""

    name = "c.sub"
    C_OP: ClassVar[str] = "-"


@irdl_op_definition
class MulOp(BinaryOp):
    """`a * b` (integers wrap)."""

    name = "c.mul"
    C_OP: ClassVar[str] = "*"


@irdl_op_definition
class DivOp(BinaryOp):
    """`a / b`."""

    name = "c.div"
    C_OP: ClassVar[str] = "/"


@irdl_op_definition
class RemOp(BinaryOp):
    """`a % b` (integers only)."""

    name = "c.rem"
    C_OP: ClassVar[str] = "%"

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.result.type, IntegerType | IndexType):
            raise VerifyException("'c.rem' takes integers")


@irdl_op_definition
class LogicalAndOp(BinaryOp):
    """`a && b` on i1."""

    name = "c.logical_and"
    C_OP: ClassVar[str] = "&&"

    def verify_(self) -> None:
        super().verify_()
        if self.result.type != i1:
            raise VerifyException(f"'{self.name}' takes i1 operands")


@irdl_op_definition
class LogicalOrOp(BinaryOp):
    """`a || b` on i1."""

    name = "c.logical_or"
    C_OP: ClassVar[str] = "||"

    def verify_(self) -> None:
        super().verify_()
        if self.result.type != i1:
            raise VerifyException(f"'{self.name}' takes i1 operands")


@irdl_op_definition
class NegOp(IRDLOperation):
    """`-a` (integers wrap)."""

    name = "c.neg"
    T: ClassVar = VarConstraint("T", AnyAttr())
    operand = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue):
        init_op(self, operands=[operand], result_types=[operand.type])

    def verify_(self) -> None:
        if self.operand.type != self.result.type:
            raise VerifyException("operand and result must have one type")


CMP_PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_PREDICATE_ATTRS = {p: StringAttr(p) for p in CMP_PREDICATES}


def _predicate(predicate: str) -> StringAttr:
    return _PREDICATE_ATTRS.get(predicate) or StringAttr(predicate)  # an unknown one fails verify


@irdl_op_definition
class CmpOp(IRDLOperation):
    """`%c = c.cmp lt, %a, %b : f32` is `a < b` (an i1). NaN compares false except `ne`."""

    name = "c.cmp"
    predicate = prop_def(StringAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def(i1)
    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue):
        init_op(self, properties={"predicate": _predicate(predicate)}, operands=[lhs, rhs], result_types=[i1])

    def verify_(self) -> None:
        if self.predicate.data not in CMP_PREDICATES:
            raise VerifyException(
                f"unknown predicate '{self.predicate.data}' (expected one of {', '.join(CMP_PREDICATES)})"
            )
        if self.lhs.type != self.rhs.type:
            raise VerifyException("compared values must have one type")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate.data}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        print_attrs_and_type(printer, self, self.lhs.type)

    @classmethod
    def parse(cls, parser: Parser) -> CmpOp:
        pred = parser.parse_keyword_in(tuple(CMP_PREDICATES), " as a comparison predicate")
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs, type_ = parse_attrs_and_type(parser, Attribute, "")
        op = CmpOp(pred, parser.resolve_operand(lhs, type_), parser.resolve_operand(rhs, type_))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`cond ? a : b` (EmitC's conditional)."""

    name = "c.select"
    condition = operand_def(i1)
    T: ClassVar = VarConstraint("T", AnyAttr())
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$condition `,` $true_value `,` $false_value attr-dict `:` type($result)"

    def __init__(self, condition: SSAValue, true_value: SSAValue, false_value: SSAValue):
        init_op(self, operands=[condition, true_value, false_value], result_types=[true_value.type])

    def verify_(self) -> None:
        if not self.true_value.type == self.false_value.type == self.result.type:
            raise VerifyException("both alternatives and the result must have one type")


@irdl_op_definition
class CastOp(IRDLOperation):
    """`(T)x`: `%y = c.cast %x : f32 to i32`. Float to integer must be in range."""

    name = "c.cast"
    operand = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($operand) `to` type($result)"

    def __init__(self, operand: SSAValue, type_: Attribute):
        init_op(self, operands=[operand], result_types=[type_])

    def verify_(self) -> None:
        a, b = self.operand.type, self.result.type
        if isinstance(a, PtrType) != isinstance(b, PtrType):
            raise VerifyException(f"cannot cast between pointer and scalar ({a} to {b})")

