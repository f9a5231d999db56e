"""The `examplejson` dialect: one op per line of the ExampleJSON graph format (seed part 2).

The text the ExampleJSON runtime reads,

    examplejson_main_0
      input 0 10 10
      input 1 10 10
      add 2 inputs: 0 1 shape: 10 10

is, in this dialect,

    examplejson.module {
      examplejson.subgraph @examplejson_main_0 {
        examplejson.input 0 : tensor<10x10xf32>
        examplejson.input 1 : tensor<10x10xf32>
        examplejson.node add 2 inputs(0, 1) : tensor<10x10xf32>
        examplejson.output 2
      }
    }

Values are named by integer ids, as in the text: an op defines one id and
reads ids defined by earlier lines. `examplejson.subgraph` checks that every id
is defined once, before it is read, and that each node's declared type is the
one its `nn` op infers (the same type relation `nn` verifies with). Node names
follow the seed (`add`, `sub`, `mul`) and are the `nn` name otherwise (`OPS`).
A node's attributes are the `nn` op's properties, kept as they were given.

`examplejson.output` ends every subgraph and names the ids it returns, in
order; the text leaves it out when the result is the last line (the seed's rule).
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
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    VarOperandDef,
    VarResultDef,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import Parser
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

# --------------------------------------------------------------------------
# Op names: ExampleJSON name <-> nn op
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
    """A line is wrong; `field` ("id", "inputs", "shape", "attrs", "op") and `index` say where."""

    def __init__(self, msg: str, field: str = "op", index: int = 0):
        super().__init__(msg)
        self.field = field
        self.index = index


def _id(value: int) -> IntegerAttr[Any]:
    return IntegerAttr(value, i64)


def _ids(values: Sequence[int]) -> DenseArrayBase[Any]:
    return DenseArrayBase.from_list(i64, list(values))


def _check_tensor_type(t: Attribute, field: str = "shape") -> TensorType[Any]:
    if not isinstance(t, TensorType):
        raise LineError(f"expected a tensor type, got {t}", field)
    if any(d < 0 for d in t.get_shape()):
        raise LineError(f"shape {list(t.get_shape())} must be static", field)
    try:
        numpy_dtype(t.element_type)
    except VerifyException:
        raise LineError(f"element type {t.element_type} is not supported", field) from None
    return t


# --------------------------------------------------------------------------
# Lines
# --------------------------------------------------------------------------


class LineOp(IRDLOperation):
    """A line that defines one id."""

    id = prop_def(IntegerAttr)

    @property
    def value_id(self) -> int:
        return self.id.value.data

    def value_type(self) -> TensorType[Any]:
        raise NotImplementedError

    def check(self, env: Mapping[int, TensorType[Any]]) -> None:
        """Check the line against the ids defined before it (`env`: id -> type)."""
        if self.value_id < 0:
            raise LineError(f"id {self.value_id} must be non-negative", "id")
        if self.value_id in env:
            raise LineError(f"id {self.value_id} is already defined", "id")


def _print_extra_attributes(printer: Printer, op: Operation) -> None:
    if op.attributes:
        printer.print_string(" attributes ")
        printer.print_attr_dict(op.attributes)


def _parse_extra_attributes(parser: Parser) -> dict[str, Attribute]:
    extra = parser.parse_optional_attr_dict_with_keyword()
    return dict(extra.data) if extra is not None else {}


@irdl_op_definition
class InputOp(LineOp):
    """`input <id> <shape>`: an argument of the subgraph (arguments follow line order)."""

    name = "examplejson.input"
    tensor_type = prop_def(TensorType)
    traits = lazy_traits_def(lambda: (HasParent(SubgraphOp),))

    def __init__(self, value_id: int, tensor_type: TensorType[Any]):
        super().__init__(properties={"id": _id(value_id), "tensor_type": tensor_type})

    def value_type(self) -> TensorType[Any]:
        return self.tensor_type

    def check(self, env: Mapping[int, TensorType[Any]]) -> None:
        super().check(env)
        _check_tensor_type(self.tensor_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.value_id}")
        _print_extra_attributes(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor_type)

    @classmethod
    def parse(cls, parser: Parser) -> InputOp:
        value_id = parser.parse_integer(allow_boolean=False)
        extra = _parse_extra_attributes(parser)
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        op = cls.create(properties={"id": _id(value_id), "tensor_type": ty}, attributes=extra)
        return op


HEX_CONSTANTS_LARGER_THAN = 16
"""Constants with more elements (or any inf/nan) print their payload as little-endian hex."""


@irdl_op_definition
class ConstOp(LineOp):
    """`const <id> <shape> data: 0x<hex>`: a tensor bound into the subgraph."""

    name = "examplejson.const"
    value = prop_def(DenseIntOrFPElementsAttr)
    traits = lazy_traits_def(lambda: (HasParent(SubgraphOp),))

    def __init__(self, value_id: int, value: DenseIntOrFPElementsAttr[Any]):
        super().__init__(properties={"id": _id(value_id), "value": value})

    @staticmethod
    def from_array(value_id: int, array: Any) -> ConstOp:
        from byoc.dialects.nn import element_type_of, tensor

        arr = np.ascontiguousarray(np.asarray(array))
        ty = tensor(arr.shape, element_type_of(arr.dtype))
        return ConstOp(value_id, DenseIntOrFPElementsAttr(ty, BytesAttr(arr.tobytes())))

    def value_type(self) -> TensorType[Any]:
        ty = self.value.type
        assert isinstance(ty, TensorType)
        return ty

    def payload(self) -> bytes:
        """The raw little-endian bytes of the tensor."""
        return self.value.data.data

    def ndarray(self) -> np.ndarray[Any, Any]:
        """The value as a read-only numpy array (a view of the stored bytes)."""
        ty = self.value_type()
        dt = numpy_dtype(ty.element_type)
        return np.frombuffer(self.payload(), dtype=dt).reshape(shape_of(ty))

    def check(self, env: Mapping[int, TensorType[Any]]) -> None:
        super().check(env)
        ty = _check_tensor_type(self.value.type)
        need = math.prod(shape_of(ty)) * numpy_dtype(ty.element_type).itemsize
        if len(self.payload()) != need:
            raise LineError(f"data holds {len(self.payload())} bytes, {ty} needs {need}", "data")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.value_id} ")
        printer.print_string(format_dense(self.ndarray(), self.payload(), HEX_CONSTANTS_LARGER_THAN))
        _print_extra_attributes(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.value_type())

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        value_id = parser.parse_integer(allow_boolean=False)
        start = parser.pos
        parser.parse_keyword("dense")
        payload = parse_dense(parser, start)
        extra = _parse_extra_attributes(parser)
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        if not isinstance(ty, TensorType):
            parser.raise_error(
                f"examplejson.const needs a tensor type, got {ty}", start, parser.pos
            )
        try:
            dt = numpy_dtype(ty.element_type)
        except VerifyException as e:
            parser.raise_error(str(e), start, parser.pos)
        n = math.prod(shape_of(ty))
        if isinstance(payload, bytes):
            raw = payload
        else:
            values = payload
            if len(values) != n:
                parser.raise_error(f"{len(values)} values given, {ty} needs {n}", start, parser.pos)
            raw = np.asarray(values, dtype=dt).tobytes()
        value = DenseIntOrFPElementsAttr(ty, BytesAttr(raw))
        return cls.create(properties={"id": _id(value_id), "value": value}, attributes=extra)


def check_dtypes(cls: type[NNOp], types: Sequence[TensorType[Any]]) -> None:
    """The element-type rule of nn op `cls` (its DTYPES and SAME_DTYPE)."""
    if not types:
        return
    first = types[0].element_type
    if first not in cls.DTYPES:
        allowed = ", ".join(str(d) for d in cls.DTYPES)
        raise LineError(
            f"element type {first} is not supported (expected one of {allowed})", "inputs"
        )
    if cls.SAME_DTYPE:
        for i, t in enumerate(types[1:], 1):
            if t.element_type != first:
                raise LineError(
                    f"all inputs must have the same element type, got {first} and {t.element_type}",
                    "inputs",
                    i,
                )


@irdl_op_definition
class NodeOp(LineOp):
    """`<op> <id> inputs: <ids> shape: <dims>`: run an nn op on earlier ids."""

    name = "examplejson.node"
    op = prop_def(StringAttr)
    inputs = prop_def(DenseArrayBase)
    tensor_type = prop_def(TensorType)
    attrs = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    """The nn op's properties, as given (the lowering gives the non-default ones)."""
    traits = lazy_traits_def(lambda: (HasParent(SubgraphOp),))

    def __init__(
        self,
        op: str,
        value_id: int,
        inputs: Sequence[int],
        tensor_type: TensorType[Any],
        attrs: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            properties={
                "op": StringAttr(op),
                "id": _id(value_id),
                "inputs": _ids(inputs),
                "tensor_type": tensor_type,
                "attrs": DictionaryAttr(dict(attrs or {})),
            }
        )

    @property
    def input_ids(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.inputs.get_values())

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

    def value_type(self) -> TensorType[Any]:
        return self.tensor_type

    def check(self, env: Mapping[int, TensorType[Any]]) -> None:
        cls = self.nn_class
        super().check(env)
        _check_tensor_type(self.tensor_type)
        ids = self.input_ids
        for k, i in enumerate(ids):
            if i not in env:
                raise LineError(f"input id {i} is not defined by an earlier line", "inputs", k)
        operands = cls.get_irdl_definition().operands
        variadic = any(isinstance(d, VarOperandDef) for _, d in operands)
        if variadic and not ids:
            raise LineError(f"'{self.op.data}' needs at least one input", "inputs")
        if not variadic and len(ids) != len(operands):
            raise LineError(
                f"'{self.op.data}' takes {len(operands)} inputs, got {len(ids)}",
                "inputs",
                min(len(ids), len(operands)),
            )
        props = cls.get_irdl_definition().properties
        for key, attr in self.attrs.data.items():
            pdef = props.get(key)
            if pdef is None:
                known = ", ".join(props) or "none"
                raise LineError(
                    f"'{self.op.data}' has no attribute '{key}' (attributes: {known})", "attrs"
                )
            try:
                pdef.constr.verify(attr, VerificationContext())
            except VerifyException as e:
                raise LineError(f"attribute '{key}': {e}", "attrs") from None
        types = [env[i] for i in ids]
        check_dtypes(cls, types)
        try:
            expected = cls.infer(types, cls.python_attrs(self.attrs.data))
        except LineError:
            raise
        except VerifyException as e:
            raise LineError(
                f"'{self.op.data}': {e}", "attrs" if self.attrs.data else "inputs"
            ) from None
        if expected != [self.tensor_type]:
            raise LineError(
                f"'{self.op.data}' of {', '.join(map(str, types))} gives {expected[0]}, "
                f"the line declares {self.tensor_type}",
                "shape",
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.op.data} {self.value_id} inputs(")
        printer.print_string(", ".join(str(i) for i in self.input_ids))
        printer.print_string(")")
        if self.attrs.data:
            printer.print_string(" ")
            printer.print_attr_dict(self.attrs.data)
        _print_extra_attributes(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor_type)

    @classmethod
    def parse(cls, parser: Parser) -> NodeOp:
        op = parser.parse_identifier(context_msg=" (the ExampleJSON op name)")
        value_id = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("inputs")
        ids = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_boolean=False)
        )
        attrs = parser.parse_optional_attr_dict()
        extra = _parse_extra_attributes(parser)
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        return cls.create(
            properties={
                "op": StringAttr(op),
                "id": _id(value_id),
                "inputs": _ids(ids),
                "tensor_type": ty,
                "attrs": DictionaryAttr(attrs),
            },
            attributes=extra,
        )


@irdl_op_definition
class OutputOp(IRDLOperation):
    """The ids a subgraph returns, in order; `output <ids>` in the text unless it is the last line's id."""

    name = "examplejson.output"
    ids = prop_def(DenseArrayBase)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(SubgraphOp)))

    def __init__(self, ids: Sequence[int]):
        super().__init__(properties={"ids": _ids(ids)})

    @property
    def output_ids(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.ids.get_values())

    def check(self, env: Mapping[int, TensorType[Any]]) -> None:
        ids = self.output_ids
        if not ids:
            raise LineError("a subgraph returns at least one id", "inputs")
        for k, i in enumerate(ids):
            if i not in env:
                raise LineError(f"output id {i} is not defined", "inputs", k)

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + ", ".join(str(i) for i in self.output_ids))
        _print_extra_attributes(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> OutputOp:
        ids = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, lambda: parser.parse_integer(allow_boolean=False)
        )
        return cls.create(properties={"ids": _ids(ids)}, attributes=_parse_extra_attributes(parser))


# --------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------


@irdl_op_definition
class SubgraphOp(IRDLOperation):
    """A named graph: input, const and node lines, then `examplejson.output`."""

    name = "examplejson.subgraph"
    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove())

    def __init__(self, name: str, lines: Sequence[Operation]):
        super().__init__(
            properties={"sym_name": StringAttr(name)}, regions=[Region(Block(list(lines)))]
        )

    @property
    def lines(self) -> list[LineOp]:
        return [op for op in self.body.block.ops if isinstance(op, LineOp)]

    @property
    def inputs(self) -> list[InputOp]:
        """The arguments, in line order (not id order)."""
        return [op for op in self.body.block.ops if isinstance(op, InputOp)]

    @property
    def output(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    def types(self) -> dict[int, TensorType[Any]]:
        """id -> type of every id the subgraph defines (it must verify)."""
        return {op.value_id: op.value_type() for op in self.lines}

    def verify_(self) -> None:
        block = self.body.block
        if not isinstance(block.last_op, OutputOp):
            raise VerifyException(
                f"subgraph @{self.sym_name.data} must end with examplejson.output"
            )
        env: dict[int, TensorType[Any]] = {}
        for op in block.ops:
            if not isinstance(op, LineOp | OutputOp):
                raise VerifyException(
                    f"subgraph @{self.sym_name.data} holds '{op.name}'; only "
                    "examplejson.input, const, node and output lines are allowed"
                )
            try:
                op.check(env)
            except LineError as e:
                raise VerifyException(
                    f"subgraph @{self.sym_name.data}: {_describe(op)}: {e}"
                ) from None
            if isinstance(op, LineOp):
                env[op.value_id] = op.value_type()

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        _print_extra_attributes(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> SubgraphOp:
        name = parser.parse_symbol_name()
        extra = _parse_extra_attributes(parser)
        body = parser.parse_region()
        return cls.create(properties={"sym_name": name}, regions=[body], attributes=extra)


def _describe(op: Operation) -> str:
    if isinstance(op, NodeOp):
        return f"line '{op.op.data} {op.value_id}'"
    if isinstance(op, InputOp):
        return f"line 'input {op.value_id}'"
    if isinstance(op, ConstOp):
        return f"line 'const {op.value_id}'"
    return "the output"


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

__all__ = [
    "ExampleJson",
    "ExampleJsonModuleOp",
    "SubgraphOp",
    "InputOp",
    "ConstOp",
    "NodeOp",
    "OutputOp",
    "LineOp",
    "LineError",
    "OPS",
    "NAME_OF",
    "KEYWORDS",
    "subgraphs_of",
]
