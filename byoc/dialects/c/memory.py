"""Memory: loads, stores, pointers, globals' addresses and the per-thread workspace."""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    IntegerAttr,
    IntegerType,
    SymbolRefAttr,
)
from xdsl.ir import (
    Attribute,
    Operation,
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
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.c.format import parse_attrs_and_type, print_attrs_and_type
from byoc.dialects.c.types import PtrType, i64_attr, index, init_op, int_prop, symbol_ref
from byoc.dialects.c.unit import CanFail, FuncOp, lookup_global


def _pointee(op: Operation, t: Attribute) -> Attribute:
    if not isinstance(t, PtrType):
        raise VerifyException(f"'{op.name}' needs a !c.ptr, got {t}")
    return t.pointee



def _print_element(printer: Printer, op: LoadOp | StoreOp) -> None:
    """`%p[%i] {attrs} : !c.ptr<...>`, the element a load or a store accesses."""
    printer.print_operand(op.ptr)
    printer.print_string("[")
    printer.print_operand(op.index)
    printer.print_string("]")
    print_attrs_and_type(printer, op, op.ptr.type)


def _parse_element(
    parser: Parser, op_name: str
) -> tuple[UnresolvedOperand, UnresolvedOperand, dict[str, Attribute], PtrType]:
    """The text `_print_element` prints: pointer and index (unresolved), attributes, type."""
    p = parser.parse_unresolved_operand()
    parser.parse_punctuation("[")
    i = parser.parse_unresolved_operand()
    parser.parse_punctuation("]")
    attrs, t = parse_attrs_and_type(parser, PtrType, f"{op_name} needs a !c.ptr type")
    return p, i, attrs, t


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`p[i]`: `%v = c.load %p[%i] : !c.ptr<f32, const>`."""

    name = "c.load"
    ptr = operand_def()
    index = operand_def(index)
    result = result_def()

    def __init__(self, ptr_: SSAValue, idx: SSAValue):
        t = ptr_.type
        assert isinstance(t, PtrType)
        init_op(self, operands=[ptr_, idx], result_types=[t.pointee])

    def verify_(self) -> None:
        if _pointee(self, self.ptr.type) != self.result.type:
            raise VerifyException(f"loads {self.result.type} from {self.ptr.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_element(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        p, i, attrs, t = _parse_element(parser, "c.load")
        op = LoadOp(parser.resolve_operand(p, t), parser.resolve_operand(i, index))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`p[i] = v;`: `c.store %v, %p[%i] : !c.ptr<f32>`."""

    name = "c.store"
    value = operand_def()
    ptr = operand_def()
    index = operand_def(index)

    def __init__(self, value: SSAValue, ptr_: SSAValue, idx: SSAValue):
        init_op(self, operands=[value, ptr_, idx])

    def verify_(self) -> None:
        t = self.ptr.type
        if _pointee(self, t) != self.value.type:
            raise VerifyException(f"stores {self.value.type} through {t}")
        assert isinstance(t, PtrType)
        if t.const:
            raise VerifyException(f"cannot store through a const pointer {t}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        _print_element(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        v = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        p, i, attrs, t = _parse_element(parser, "c.store")
        op = StoreOp(
            parser.resolve_operand(v, t.pointee),
            parser.resolve_operand(p, t),
            parser.resolve_operand(i, index),
        )
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class PtrOffsetOp(IRDLOperation):
    """`p + i`: `%q = c.ptr_offset %p, %i : !c.ptr<f32>`."""

    name = "c.ptr_offset"
    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(T)
    offset = operand_def(index)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$ptr `,` $offset attr-dict `:` type($result)"

    def __init__(self, ptr_: SSAValue, offset: SSAValue):
        init_op(self, operands=[ptr_, offset], result_types=[ptr_.type])

    def verify_(self) -> None:
        if self.ptr.type != self.result.type:
            raise VerifyException("result must have the pointer's type")


@irdl_op_definition
class GetGlobalOp(IRDLOperation):
    """The address of a `c.global`: `%w = c.get_global @w : !c.ptr<f32, const>`."""

    name = "c.get_global"
    global_name = prop_def(SymbolRefAttr)
    result = result_def(PtrType)
    traits = traits_def(Pure())
    assembly_format = "$global_name attr-dict `:` type($result)"

    def __init__(self, name: str, type_: PtrType):
        init_op(self, properties={"global_name": symbol_ref(name)}, result_types=[type_])

    def verify_(self) -> None:
        g = lookup_global(self, self.global_name)
        t = self.result.type
        assert isinstance(t, PtrType)
        if not t.const or t.pointee != g.element_type:
            raise VerifyException(
                f"'@{g.sym_name.data}' holds {g.element_type}; its address is "
                f"!c.ptr<{g.element_type}, const>, not {t}"
            )


@irdl_op_definition
class BindGlobalOp(IRDLOperation):
    """Point an `init` global at its data (only in the init entry point).

        c.bind_global @big, %p : !c.ptr<f32, const>
    """

    name = "c.bind_global"
    global_name = prop_def(SymbolRefAttr)
    value = operand_def(PtrType)
    assembly_format = "$global_name `,` $value attr-dict `:` type($value)"

    def __init__(self, name: str, value: SSAValue):
        init_op(self, properties={"global_name": symbol_ref(name)}, operands=[value])

    def verify_(self) -> None:
        g = lookup_global(self, self.global_name)
        if g.init_index is None:
            raise VerifyException(f"'@{g.sym_name.data}' has its data in the source; only `init` globals are bound")
        t = self.value.type
        assert isinstance(t, PtrType)
        if t.pointee != g.element_type:
            raise VerifyException(f"'@{g.sym_name.data}' holds {g.element_type}, got {t}")


@irdl_op_definition
class WorkspaceOp(IRDLOperation):
    """The calling thread's scratch area of `size` bytes, 64-byte aligned.

        %ws = c.workspace 800 : !c.ptr<i8>

    Allocated on the thread's first call only; fails (returns -1) when out of memory.
    """

    name = "c.workspace"
    traits = traits_def(HasAncestor(FuncOp), CanFail())
    size = prop_def(IntegerAttr)
    result = result_def(PtrType)

    def __init__(self, size: int):
        super().__init__(properties={"size": i64_attr(size)}, result_types=[PtrType(IntegerType(8))])

    def verify_(self) -> None:
        if int_prop(self, "size") <= 0:
            raise VerifyException("workspace size must be positive")
        if self.result.type != PtrType(IntegerType(8)):
            raise VerifyException("a workspace is a !c.ptr<i8>")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {int_prop(self, 'size')}")
        print_attrs_and_type(printer, self, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> WorkspaceOp:
        size = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_type()
        op = WorkspaceOp(size)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class BufferOp(IRDLOperation):
    """A buffer carved out of a workspace: bytes [offset, offset + size).

        %buf_0 = c.buffer %ws[0, 400] : !c.ptr<f32>
    """

    name = "c.buffer"
    workspace = operand_def(PtrType)
    offset = prop_def(IntegerAttr)
    size = prop_def(IntegerAttr)
    result = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, workspace: SSAValue, offset: int, size: int, type_: PtrType):
        init_op(
            self,
            operands=[workspace],
            properties={"offset": i64_attr(offset), "size": i64_attr(size)},
            result_types=[type_],
        )

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, PtrType)
        if t.const:
            raise VerifyException("a buffer is writable: its type has no const")
        off, size = int_prop(self, "offset"), int_prop(self, "size")
        if off < 0 or size <= 0:
            raise VerifyException("a buffer needs offset >= 0 and size > 0")
        width = getattr(t.pointee, "bitwidth", None)
        if isinstance(width, int) and width >= 8 and off % (width // 8):
            raise VerifyException(f"offset {off} is not aligned to {t.pointee}")
        source = self.workspace.owner
        if isinstance(source, WorkspaceOp) and off + size > int_prop(source, "size"):
            raise VerifyException(
                f"buffer [{off}, {off + size}) exceeds the workspace of {int_prop(source, 'size')} bytes"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.workspace)
        printer.print_string(f"[{int_prop(self, 'offset')}, {int_prop(self, 'size')}]")
        print_attrs_and_type(printer, self, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        ws = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        off = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        size = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation("]")
        attrs, t = parse_attrs_and_type(parser, PtrType, "c.buffer has a !c.ptr type")
        op = BufferOp(parser.resolve_operand(ws, PtrType(IntegerType(8))), off, size, t)
        op.attributes.update(attrs)
        return op

