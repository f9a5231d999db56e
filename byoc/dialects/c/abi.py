"""The DLTensor ABI: argument checks and the data pointer of a checked tensor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import (
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.c.format import parse_attrs_and_type, print_attrs_and_type
from byoc.dialects.c.types import DLTENSOR_PTR, PtrType, i64_attr, init_op, int_prop, symbol_ref
from byoc.dialects.c.unit import CanFail, FuncOp, lookup_global


@irdl_op_definition
class CheckArgCountOp(IRDLOperation):
    """Fail unless `%n` equals inputs + outputs: `c.check_arg_count %n, 4 inputs, 1 outputs`."""

    name = "c.check_arg_count"
    traits = traits_def(HasAncestor(FuncOp), CanFail())
    count = operand_def(i32)
    num_inputs = prop_def(IntegerAttr)
    num_outputs = prop_def(IntegerAttr)

    def __init__(self, count: SSAValue, num_inputs: int, num_outputs: int):
        super().__init__(
            operands=[count],
            properties={"num_inputs": i64_attr(num_inputs), "num_outputs": i64_attr(num_outputs)},
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.count)
        printer.print_string(
            f", {int_prop(self, 'num_inputs')} inputs, {int_prop(self, 'num_outputs')} outputs"
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> CheckArgCountOp:
        n = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        ins = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("inputs")
        parser.parse_punctuation(",")
        outs = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("outputs")
        op = CheckArgCountOp(parser.resolve_operand(n, i32), ins, outs)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


ARG_ROLES = ("input", "output")


@irdl_op_definition
class CheckTensorOp(IRDLOperation):
    """Fail unless the DLTensor is a CPU, compact, aligned tensor of the given type.

        c.check_tensor %a, input 0 "a" : tensor<10x10xf32>
    """

    name = "c.check_tensor"
    traits = traits_def(HasAncestor(FuncOp), CanFail())
    tensor = operand_def(PtrType)
    role = prop_def(StringAttr)
    position = prop_def(IntegerAttr)
    arg_name = prop_def(StringAttr)
    expected = prop_def(TensorType)

    def __init__(self, tensor: SSAValue, role: str, position: int, arg_name: str, expected: TensorType[Any]):
        super().__init__(
            operands=[tensor],
            properties={
                "role": StringAttr(role),
                "position": i64_attr(position),
                "arg_name": StringAttr(arg_name),
                "expected": expected,
            },
        )

    @property
    def description(self) -> str:
        """How messages name the argument: `input 'a' (#0)`."""
        return f"{self.role.data} '{self.arg_name.data}' (#{int_prop(self, 'position')})"

    def verify_(self) -> None:
        if self.tensor.type != DLTENSOR_PTR:
            raise VerifyException(f"checks a {DLTENSOR_PTR}, got {self.tensor.type}")
        if self.role.data not in ARG_ROLES:
            raise VerifyException(f"role must be input or output, got '{self.role.data}'")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        printer.print_string(f", {self.role.data} {int_prop(self, 'position')} ")
        printer.print_string_literal(self.arg_name.data)
        print_attrs_and_type(printer, self, self.expected)

    @classmethod
    def parse(cls, parser: Parser) -> CheckTensorOp:
        t = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        role = parser.parse_keyword_in(ARG_ROLES)
        position = parser.parse_integer(allow_boolean=False, allow_negative=False)
        name = parser.parse_str_literal("argument name")
        attrs, expected = parse_attrs_and_type(parser, TensorType, "expected a tensor type")
        op = CheckTensorOp(parser.resolve_operand(t, DLTENSOR_PTR), role, position, name, expected)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CheckDisjointOp(IRDLOperation):
    """Fail if an output's bytes overlap any other argument's.

        c.check_disjoint(%a, %b, %out) {names = ["a", "b", "out0"], nbytes = array<i64: 400, 400, 400>, num_outputs = 1 : i64}

    Operands are all arguments, inputs first; the last `num_outputs` are outputs.
    """

    name = "c.check_disjoint"
    traits = traits_def(HasAncestor(FuncOp), CanFail())
    tensors = var_operand_def(DLTENSOR_PTR)
    names = prop_def(ArrayAttr[StringAttr])
    nbytes = prop_def(DenseArrayBase)
    num_outputs = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $tensors `)` attr-dict"

    def __init__(self, tensors: Sequence[SSAValue], names: Sequence[str], nbytes: Sequence[int], num_outputs: int):
        super().__init__(
            operands=[list(tensors)],
            properties={
                "names": ArrayAttr([StringAttr(n) for n in names]),
                "nbytes": DenseArrayBase.from_list(i64, list(nbytes)),
                "num_outputs": i64_attr(num_outputs),
            },
        )

    def verify_(self) -> None:
        n = len(self.tensors)
        if len(self.names.data) != n or len(self.nbytes.get_values()) != n:
            raise VerifyException("one name and one size per tensor")
        if not 0 < int_prop(self, "num_outputs") <= n:
            raise VerifyException("num_outputs must be between 1 and the number of tensors")
        for v in self.tensors:
            if v.type != DLTENSOR_PTR:
                raise VerifyException(f"checks {DLTENSOR_PTR} values, got {v.type}")


@irdl_op_definition
class CheckBoundOp(IRDLOperation):
    """Fail unless an `init` global has been bound (the library's init entry point ran).

        c.check_bound @big
    """

    name = "c.check_bound"
    traits = traits_def(HasAncestor(FuncOp), CanFail())
    global_name = prop_def(SymbolRefAttr)
    assembly_format = "$global_name attr-dict"

    def __init__(self, name: str):
        init_op(self, properties={"global_name": symbol_ref(name)})

    def verify_(self) -> None:
        g = lookup_global(self, self.global_name)
        if g.init_index is None:
            raise VerifyException(f"'@{g.sym_name.data}' is not an `init` global")


@irdl_op_definition
class TensorDataOp(IRDLOperation):
    """The first element of a (checked) DLTensor: `%p = c.tensor_data %a : !c.ptr<f32>`."""

    name = "c.tensor_data"
    tensor = operand_def(PtrType)
    result = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue, type_: PtrType):
        super().__init__(operands=[tensor], result_types=[type_])

    def verify_(self) -> None:
        if self.tensor.type != DLTENSOR_PTR:
            raise VerifyException(f"reads a {DLTENSOR_PTR}, got {self.tensor.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        print_attrs_and_type(printer, self, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> TensorDataOp:
        t = parser.parse_unresolved_operand()
        attrs, type_ = parse_attrs_and_type(parser, PtrType, "expected a !c.ptr type")
        op = TensorDataOp(parser.resolve_operand(t, DLTENSOR_PTR), type_)
        op.attributes.update(attrs)
        return op

