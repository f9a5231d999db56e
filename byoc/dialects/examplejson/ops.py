"""The `examplejson` dialect: one op per line of an ExampleJSON graph (seed part 2).

The graph the seed writes as

    examplejson_main_0
      input 0 10 10
      input 1 10 10
      add 2 inputs: 0 1 shape: 10 10

is, in this dialect,

    examplejson.module {
      examplejson.subgraph @examplejson_main_0 {
        %0 = examplejson.input : tensor<10x10xf32>
        %1 = examplejson.input : tensor<10x10xf32>
        %2 = examplejson.node add %0, %1 : tensor<10x10xf32>
        examplejson.output %2 : tensor<10x10xf32>
      }
    }

Values are SSA values; the text's integer ids are given when it is printed
(`byoc.dialects.examplejson.text`): the n-th line that defines a value gets id
n, unless the subgraph carries the ids its text was read with (`ids(...)`).
A node runs the `nn` op its name stands for (`OPS`: the seed's `add`, `sub`,
`mul`, and the `nn` name otherwise), with that op's properties as `attrs`, and
verifies as that op does: the subgraph builds the `nn` op on the node's
operands and runs the `nn` verifier on it.

`examplejson.module` holds the subgraphs of one runtime module. It is its own
symbol table, so a subgraph keeps the name of the partition function it came
from while the host still calls the (bodiless) `func.func` of that name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarOperandDef,
    VarResultDef,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.dense import format_dense, parse_dense
from byoc.dialects.nn import NN_OPS, NNOp, numpy_dtype, shape_of
from byoc.dialects.nn.types import array_of, dense_of, dense_value

# --------------------------------------------------------------------------
# Node names: ExampleJSON name <-> nn op
# --------------------------------------------------------------------------

_RENAMED: dict[str, str] = {
    "nn.subtract": "sub",
    "nn.multiply": "mul",
    "nn.divide": "div",
}
"""The seed's short names; every other op keeps its nn name without `nn.`."""


def _one_result(cls: type[NNOp]) -> bool:
    results = cls.get_irdl_definition().results
    return len(results) == 1 and not isinstance(results[0][1], VarResultDef)


OPS: dict[str, type[NNOp]] = {
    _RENAMED.get(name, name.removeprefix("nn.")): cls
    for name, cls in NN_OPS.items()
    if name != "nn.constant" and _one_result(cls)
}
"""ExampleJSON op name -> nn op class: every op the ExampleJSON runtime executes.

A line defines one id, so ops with several results (nn.split) have no line;
constants are `const` lines."""

NAME_OF: dict[str, str] = {cls.name: name for name, cls in OPS.items()}
"""nn op name -> ExampleJSON op name."""

KEYWORDS = ("input", "const", "output")
"""Line kinds that are not ops."""


class LineError(VerifyException):
    """A line is wrong; `field` ("id", "inputs", "shape", "attrs", "data", "op") and
    `index` say which word, so the text reader can point at it."""

    def __init__(self, msg: str, field: str = "op", index: int = 0):
        super().__init__(msg)
        self.field = field
        self.index = index


def check_tensor_type(t: Attribute, field: str = "shape") -> TensorType[Any]:
    """A line's type: a static tensor of an element type the runtime holds."""
    if not isinstance(t, TensorType):
        raise LineError(f"expected a tensor type, got {t}", field)
    if any(d < 0 for d in t.get_shape()):
        raise LineError(f"shape {list(t.get_shape())} must be static", field)
    try:
        numpy_dtype(t.element_type)
    except VerifyException:
        raise LineError(f"element type {t.element_type} is not supported", field) from None
    return t


def _print_extra_attributes(printer: Printer, op: Operation) -> None:
    if op.attributes:
        printer.print_string(" attributes ")
        printer.print_attr_dict(op.attributes)


def _parse_extra_attributes(parser: Parser) -> dict[str, Attribute]:
    extra = parser.parse_optional_attr_dict_with_keyword()
    return dict(extra.data) if extra is not None else {}


# --------------------------------------------------------------------------
# Lines
# --------------------------------------------------------------------------


class ValueOp(IRDLOperation):
    """A line that defines one value (an id in the text): input, const or node."""

    result = result_def(TensorType)

    @property
    def tensor_type(self) -> TensorType[Any]:
        ty = self.result.type
        assert isinstance(ty, TensorType)
        return ty

    def check(self) -> None:
        """The line's own rules (the subgraph checks where its operands come from)."""
        check_tensor_type(self.result.type)


@irdl_op_definition
class InputOp(ValueOp):
    """`input <id> <shape>`: an argument of the subgraph (arguments follow line order)."""

    name = "examplejson.input"
    traits = lazy_traits_def(lambda: (HasParent(SubgraphOp),))
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, tensor_type: TensorType[Any]):
        super().__init__(result_types=[tensor_type])


HEX_CONSTANTS_LARGER_THAN = 16
"""Constants with more elements (or any inf/nan) print their payload as little-endian hex."""


@irdl_op_definition
class ConstOp(ValueOp):
    """`const <id> <shape> data: 0x<hex>`: a tensor bound into the subgraph."""

    name = "examplejson.const"
    value = prop_def(DenseIntOrFPElementsAttr)
    traits = lazy_traits_def(lambda: (HasParent(SubgraphOp),))

    def __init__(self, value: DenseIntOrFPElementsAttr[Any]):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def from_array(array: Any) -> ConstOp:
        return ConstOp(dense_of(array))

    def payload(self) -> bytes:
        """The raw little-endian bytes of the tensor."""
        return self.value.data.data

    def ndarray(self) -> np.ndarray[Any, Any]:
        """The value as a read-only numpy array (a view of the stored bytes)."""
        return array_of(self.value)

    def check(self) -> None:
        ty = check_tensor_type(self.value.type)
        if ty != self.result.type:
            raise LineError(f"the value is {ty}, the result {self.result.type}", "shape")
        need = math.prod(shape_of(ty)) * numpy_dtype(ty.element_type).itemsize
        if len(self.payload()) != need:
            raise LineError(f"data holds {len(self.payload())} bytes, {ty} needs {need}", "data")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string(format_dense(self.ndarray(), self.payload(), HEX_CONSTANTS_LARGER_THAN))
        _print_extra_attributes(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor_type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        start = parser.pos
        parser.parse_keyword("dense")
        payload = parse_dense(parser, start)
        extra = _parse_extra_attributes(parser)
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        try:
            value = dense_value(payload, ty, "examplejson.const")
        except ValueError as e:
            parser.raise_error(str(e), start, parser.pos)
        return cls.create(properties={"value": value}, result_types=[ty], attributes=extra)


@irdl_op_definition
class NodeOp(ValueOp):
    """`<op> <id> inputs: <ids> shape: <dims>`: the nn op named `op` on earlier values.

    Printed like that nn op, with its ExampleJSON name after `examplejson.node`:
    `%2 = examplejson.node leaky_relu %1 {alpha = 0.1 : f64} : tensor<4xf32>`.
    """

    name = "examplejson.node"
    op = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    attrs = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    """The nn op's properties, as given (the lowering gives the non-default ones)."""
    traits = lazy_traits_def(lambda: (HasParent(SubgraphOp),))

    def __init__(
        self,
        op: str,
        inputs: Sequence[SSAValue],
        tensor_type: TensorType[Any],
        attrs: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[tensor_type],
            properties={"op": StringAttr(op), "attrs": DictionaryAttr(dict(attrs or {}))},
        )

    @property
    def nn_class(self) -> type[NNOp]:
        cls = OPS.get(self.op.data)
        if cls is None:
            raise LineError(
                f"unknown op '{self.op.data}'; ExampleJSON ops are: {', '.join(sorted(OPS))}"
            )
        return cls

    def kernel_attrs(self) -> dict[str, Any]:
        """The nn op's properties, defaults filled in, as the kernel's keyword arguments."""
        return self.nn_class.python_attrs(self.attrs.data)

    def check(self) -> None:
        """The nn op's rules: arity, attribute names and values, and its verifier."""
        cls = self.nn_class
        check_tensor_type(self.result.type)
        name = self.op.data
        n = len(self.inputs)
        operands = cls.get_irdl_definition().operands
        if any(isinstance(d, VarOperandDef) for _, d in operands):
            if not n:
                raise LineError(f"'{name}' needs at least one input", "inputs")
        elif n != len(operands):
            raise LineError(
                f"'{name}' takes {len(operands)} inputs, got {n}", "inputs", min(n, len(operands))
            )
        props = cls.get_irdl_definition().properties
        for key, attr in self.attrs.data.items():
            pdef = props.get(key)
            if pdef is None:
                known = ", ".join(props) or "none"
                raise LineError(f"'{name}' has no attribute '{key}' (attributes: {known})", "attrs")
            try:
                pdef.constr.verify(attr, VerificationContext())
            except VerifyException as e:
                raise LineError(f"attribute '{key}': {e}", "attrs") from None
        self._verify_as_nn_op(cls)

    def _verify_as_nn_op(self, cls: type[NNOp]) -> None:
        """Infer the result type as the nn op does, then run the nn op's own verifier."""
        name = self.op.data
        types = [v.type for v in self.inputs]
        blame = "attrs" if self.attrs.data else "inputs"
        try:
            (expected,) = cls.infer(types, cls.python_attrs(self.attrs.data))  # type: ignore[arg-type]
        except VerifyException as e:
            raise LineError(f"'{name}': {e}", blame) from None
        if expected != self.result.type:
            raise LineError(
                f"'{name}' of {', '.join(map(str, types))} gives {expected}, "
                f"the line declares {self.result.type}",
                "shape",
            )
        # The nn op reads stand-ins of the inputs, so verifying changes no use list.
        stand_ins = Block(arg_types=types).args
        nn_op = cls.create(
            operands=stand_ins, result_types=[expected], properties=dict(self.attrs.data)
        )
        try:
            nn_op.verify()
        except VerifyException as e:
            raise LineError(f"'{name}': {e}", "inputs") from None

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.op.data}")
        if self.inputs:
            printer.print_string(" ")
            printer.print_list(self.inputs, printer.print_operand)
        if self.attrs.data:
            printer.print_string(" ")
            printer.print_attr_dict(self.attrs.data)
        _print_extra_attributes(printer, self)
        printer.print_string(" : ")
        in_types = [v.type for v in self.inputs]
        if all(t == self.result.type for t in in_types):
            printer.print_attribute(self.result.type)
            return
        printer.print_string("(")
        printer.print_list(in_types, printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> NodeOp:
        op = parser.parse_identifier(context_msg=" (the ExampleJSON op name)")
        pos = parser.pos
        unresolved: list[UnresolvedOperand] = (
            parser.parse_optional_undelimited_comma_separated_list(
                parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
            )
            or []
        )
        attrs = parser.parse_optional_attr_dict()
        extra = _parse_extra_attributes(parser)
        parser.parse_punctuation(":")
        if parser.parse_optional_punctuation("(") is not None:
            in_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            parser.parse_punctuation("->")
            result_type = parser.parse_type()
        else:
            result_type = parser.parse_type()
            in_types = [result_type] * len(unresolved)
        if len(in_types) != len(unresolved):
            parser.raise_error(
                f"{len(unresolved)} inputs but {len(in_types)} input types", pos, parser.pos
            )
        inputs = parser.resolve_operands(unresolved, in_types, pos)
        return cls.create(
            operands=inputs,
            result_types=[result_type],
            properties={"op": StringAttr(op), "attrs": DictionaryAttr(attrs)},
            attributes=extra,
        )


@irdl_op_definition
class OutputOp(IRDLOperation):
    """The values a subgraph returns, in order; `output <ids>` in the text unless it
    is just the last line's value (the seed's rule)."""

    name = "examplejson.output"
    outputs = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(SubgraphOp)))
    assembly_format = "$outputs attr-dict `:` type($outputs)"

    def __init__(self, outputs: Sequence[SSAValue]):
        super().__init__(operands=[list(outputs)])

    def check(self) -> None:
        if not self.outputs:
            raise LineError("a subgraph returns at least one value", "inputs")


# --------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------


@irdl_op_definition
class SubgraphOp(IRDLOperation):
    """A named graph: input, const and node lines, then `examplejson.output`.

    `ids`, when present, are the text ids of the value lines, in order (the
    reader keeps them when they are not 0, 1, 2, ...), so text prints back as it
    was read."""

    name = "examplejson.subgraph"
    sym_name = prop_def(SymbolNameConstraint())
    ids = opt_prop_def(DenseArrayBase)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(self, name: str, lines: Sequence[Operation], ids: Sequence[int] | None = None):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "ids": None if ids is None else DenseArrayBase.from_list(i64, list(ids)),
            },
            regions=[Region(Block(list(lines)))],
        )

    @property
    def lines(self) -> list[ValueOp]:
        """The lines that define values, in order."""
        return [op for op in self.body.block.ops if isinstance(op, ValueOp)]

    @property
    def inputs(self) -> list[InputOp]:
        """The arguments, in line order."""
        return [op for op in self.body.block.ops if isinstance(op, InputOp)]

    @property
    def output(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    def value_ids(self) -> dict[SSAValue, int]:
        """The text id of each value: `ids` if given, else its line's position."""
        lines = self.lines
        ids = range(len(lines)) if self.ids is None else self.ids.get_values()
        # strict=False: verify_ reports ids of the wrong length
        return {op.result: int(i) for op, i in zip(lines, ids, strict=False)}

    def verify_(self) -> None:
        block = self.body.block
        name = self.sym_name.data
        if not isinstance(block.last_op, OutputOp):
            raise VerifyException(f"subgraph @{name} must end with examplejson.output")
        lines = self.lines
        ids = self.value_ids()
        if self.ids is not None and len(self.ids.get_values()) != len(lines):
            raise VerifyException(
                f"subgraph @{name}: {len(self.ids.get_values())} ids for {len(lines)} value lines"
            )
        defined: set[SSAValue] = set()
        taken: set[int] = set()
        for op in block.ops:
            try:
                if not isinstance(op, ValueOp | OutputOp):
                    raise VerifyException(
                        f"subgraph @{name} holds '{op.name}'; only "
                        "examplejson.input, const, node and output lines are allowed"
                    )
                for k, value in enumerate(op.operands):
                    if value not in defined:
                        what = "output" if isinstance(op, OutputOp) else "input"
                        raise LineError(
                            f"{what} id {ids.get(value, '?')} is not defined by an earlier line",
                            "inputs",
                            k,
                        )
                if isinstance(op, ValueOp):
                    value_id = ids[op.result]
                    if value_id < 0:
                        raise LineError(f"id {value_id} must be non-negative", "id")
                    if value_id in taken:
                        raise LineError(f"id {value_id} is already defined", "id")
                    taken.add(value_id)
                    defined.add(op.result)
                op.check()
            except LineError as e:
                raise VerifyException(f"subgraph @{name}: {describe(op, ids)}: {e}") from None

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.ids is not None:
            printer.print_string(" ids(" + ", ".join(map(str, self.ids.get_values())) + ")")
        _print_extra_attributes(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> SubgraphOp:
        name = parser.parse_symbol_name()
        props: dict[str, Attribute] = {"sym_name": name}
        if parser.parse_optional_keyword("ids") is not None:
            ids = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_boolean=False)
            )
            props["ids"] = DenseArrayBase.from_list(i64, ids)
        extra = _parse_extra_attributes(parser)
        body = parser.parse_region()
        return cls.create(properties=props, regions=[body], attributes=extra)


def describe(op: Operation, ids: Mapping[SSAValue, int]) -> str:
    """How errors name a line: `line 'add 4'`, `line 'input 0'`, `the output`."""
    if isinstance(op, NodeOp):
        return f"line '{op.op.data} {ids.get(op.result, '?')}'"
    if isinstance(op, InputOp | ConstOp):
        kind = "input" if isinstance(op, InputOp) else "const"
        return f"line '{kind} {ids.get(op.result, '?')}'"
    if isinstance(op, OutputOp):
        return "the output"
    return f"'{op.name}'"


@irdl_op_definition
class ExampleJsonModuleOp(IRDLOperation):
    """The subgraphs of one ExampleJSON runtime module (a symbol table of subgraphs)."""

    name = "examplejson.module"
    body = region_def("single_block")
    traits = traits_def(SymbolTable(), NoTerminator(), IsolatedFromAbove())

    def __init__(self, subgraphs: Sequence[SubgraphOp] = ()):
        super().__init__(regions=[Region(Block(list(subgraphs)))])

    @property
    def subgraphs(self) -> list[SubgraphOp]:
        return [op for op in self.body.block.ops if isinstance(op, SubgraphOp)]

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, SubgraphOp):
                raise VerifyException(
                    f"examplejson.module holds only examplejson.subgraph ops, not '{op.name}'"
                )

    def print(self, printer: Printer) -> None:
        _print_extra_attributes(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> ExampleJsonModuleOp:
        extra = _parse_extra_attributes(parser)
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        return cls.create(regions=[body], attributes=extra)


def subgraphs_of(op: Operation) -> list[SubgraphOp]:
    """Every subgraph in `op` (a builtin.module, an examplejson.module, or a subgraph), in order."""
    return [o for o in op.walk() if isinstance(o, SubgraphOp)]


ExampleJson = Dialect(
    "examplejson",
    [ExampleJsonModuleOp, SubgraphOp, InputOp, ConstOp, NodeOp, OutputOp],
    [],
)
