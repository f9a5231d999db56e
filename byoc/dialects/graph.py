"""The `graph` dialect: partitions as generic graphs a native engine runs (docs/graph.md).

What `lower-to-graph{target=...}` produces, `-t graph` prints and the native
graph runtime (`byoc/runtime/byoc_graph_runtime.c`) executes, after
serialisation (`byoc.runtime.graph_format`):

    graph.module {
      graph.constant @dnnl_main_0_w dense<"0x...."> : tensor<8x3x3x3xf32>
      graph.graph @dnnl_main_0 {
        %0 = graph.input "x" : tensor<1x3x8x8xf32>
        %1 = graph.const @dnnl_main_0_w : tensor<8x3x3x3xf32>
        %2 = graph.composite "dnnl.conv2d_relu"(%0, %1) : (...) -> tensor<1x8x6x6xf32> {
        ^bb0(%a: tensor<1x3x8x8xf32>, %b: tensor<8x3x3x3xf32>):
          %3 = graph.node "nn.conv2d"(%a, %b) {strides = array<i64: 1, 1>, ...} : (...) -> ...
          %4 = graph.node "nn.relu"(%3) {} : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
          graph.yield %4 : tensor<1x8x6x6xf32>
        }
        graph.output %2 : tensor<1x8x6x6xf32>
      }
    }

- `graph.module` holds the constants (TVM's `const_name_to_constant`: each stored
  once, referenced by name from any graph) and the graphs of one runtime component.
- `graph.graph @name` is one partition: inputs in argument order, then constants
  and nodes in execution order, and `graph.output`.
- `graph.node "<nn op>"` carries every property of that op (defaults included) in
  `attrs`: integers, floats, strings, and i64 / f64 arrays.
- `graph.composite "<target>.<pattern>"` is one node for the engine, named by the
  composite, with its inner ops as a body (isolated from above, like
  `byoc.composite`), so the engine sees their attributes.

Element types are those of `nn.ELEMENT_TYPES`; shapes are static.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
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
from byoc.dialects.nn import numpy_dtype, shape_of
from byoc.dialects.nn.types import array_of, dense_of, dense_value
from byoc.printer import print_named_operands

MAX_RANK = 8
"""The runtime's limit on tensor rank."""

HEX_CONSTANTS_LARGER_THAN = 16
"""Constants with more elements (or any inf/nan) print their payload as little-endian hex."""


def check_tensor_type(t: Attribute, what: str) -> TensorType[Any]:
    """A static tensor of an element type byoc knows, of rank <= MAX_RANK."""
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what}: expected a tensor type, got {t}")
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        dims = "x".join("?" if d < 0 else str(d) for d in shape)
        raise VerifyException(f"{what}: shape {dims} must be static")
    if len(shape) > MAX_RANK:
        raise VerifyException(f"{what}: rank {len(shape)} is above the runtime's {MAX_RANK}")
    try:
        numpy_dtype(t.element_type)
    except VerifyException:
        raise VerifyException(f"{what}: element type {t.element_type} is not supported") from None
    return t


def check_attr_value(name: str, value: Attribute) -> None:
    """A node attribute the format can carry: int (bool), float, string, i64 or f64 array."""
    if isinstance(value, IntegerAttr | FloatAttr | StringAttr):
        return
    if isinstance(value, DenseArrayBase):
        return
    if isinstance(value, ArrayAttr) and all(
        isinstance(v, IntegerAttr) for v in value.data  # type: ignore[union-attr]
    ):
        return
    raise VerifyException(
        f"attribute '{name}' is {value}; a graph node carries integers, floats, strings "
        "and integer or float arrays"
    )


def _print_types(printer: Printer, ins: Sequence[Attribute], outs: Sequence[Attribute]) -> None:
    printer.print_string("(")
    printer.print_list(ins, printer.print_attribute)
    printer.print_string(") -> ")
    if len(outs) == 1:
        printer.print_attribute(outs[0])
    else:
        printer.print_string("(")
        printer.print_list(outs, printer.print_attribute)
        printer.print_string(")")


def _parse_types(parser: Parser) -> tuple[list[Attribute], list[Attribute]]:
    ins = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    parser.parse_punctuation("->")
    if parser.parse_optional_punctuation("(") is not None:
        if parser.parse_optional_punctuation(")") is not None:
            return ins, []
        outs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
        return ins, outs
    return ins, [parser.parse_type()]


def _parse_operands(parser: Parser) -> tuple[list[UnresolvedOperand], int]:
    pos = parser.pos
    unresolved = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )
    return unresolved, pos


def _print_signature(printer: Printer, op: NodeOp | CompositeOp) -> None:
    """` attributes {...} : (types) -> types`, after a node's or composite's operands."""
    printer.print_op_attributes(op.attributes, print_keyword=True)
    printer.print_string(" : ")
    _print_types(printer, [v.type for v in op.inputs], [r.type for r in op.outputs])


def _parse_signature(
    parser: Parser, unresolved: Sequence[UnresolvedOperand], pos: int
) -> tuple[list[SSAValue], list[Attribute], dict[str, Attribute]]:
    """What `_print_signature` prints: the operands resolved to their types (parsed at
    `pos`), the result types and the extra attributes."""
    extra = parser.parse_optional_attr_dict_with_keyword()
    parser.parse_punctuation(":")
    ins, outs = _parse_types(parser)
    if len(ins) != len(unresolved):
        parser.raise_error(f"{len(unresolved)} inputs but {len(ins)} input types", pos, parser.pos)
    operands = parser.resolve_operands(unresolved, ins, pos)
    return operands, outs, dict(extra.data) if extra is not None else {}


# --------------------------------------------------------------------------
# Container and constants
# --------------------------------------------------------------------------


@irdl_op_definition
class GraphModuleOp(IRDLOperation):
    """The graphs and constants of one runtime component."""

    name = "graph.module"
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolTable())

    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, ops: Sequence[Operation] = ()):
        super().__init__(regions=[Region(Block(list(ops)))])

    @property
    def graphs(self) -> list[GraphOp]:
        return [op for op in self.body.block.ops if isinstance(op, GraphOp)]

    @property
    def constants(self) -> list[ConstantOp]:
        return [op for op in self.body.block.ops if isinstance(op, ConstantOp)]

    def constant(self, name: str) -> ConstantOp | None:
        for op in self.body.block.ops:
            if isinstance(op, ConstantOp) and op.sym_name.data == name:
                return op
        return None

    def verify_(self) -> None:
        for op in self.body.block.ops:
            if not isinstance(op, GraphOp | ConstantOp):
                raise VerifyException(
                    f"graph.module holds graph.graph and graph.constant ops, not '{op.name}'"
                )


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """`graph.constant @name dense<...> : tensor<...>`: a tensor stored once, bound by name."""

    name = "graph.constant"
    sym_name = prop_def(SymbolNameConstraint())
    value = prop_def(DenseIntOrFPElementsAttr)
    traits = lazy_traits_def(lambda: (HasParent(GraphModuleOp), SymbolOpInterface()))

    def __init__(self, name: str, value: DenseIntOrFPElementsAttr[Any]):
        super().__init__(properties={"sym_name": StringAttr(name), "value": value})

    @staticmethod
    def from_array(name: str, array: Any) -> ConstantOp:
        return ConstantOp(name, dense_of(array))

    @property
    def tensor_type(self) -> TensorType[Any]:
        ty = self.value.type
        assert isinstance(ty, TensorType)
        return ty

    def payload(self) -> bytes:
        return self.value.data.data

    def ndarray(self) -> np.ndarray[Any, Any]:
        return array_of(self.value)

    def verify_(self) -> None:
        ty = check_tensor_type(self.value.type, f"constant @{self.sym_name.data}")
        need = math.prod(shape_of(ty)) * numpy_dtype(ty.element_type).itemsize
        if len(self.payload()) != need:
            raise VerifyException(
                f"constant @{self.sym_name.data}: data holds {len(self.payload())} bytes, "
                f"{ty} needs {need}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" ")
        printer.print_string(format_dense(self.ndarray(), self.payload(), HEX_CONSTANTS_LARGER_THAN))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor_type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        name = parser.parse_symbol_name()
        start = parser.pos
        parser.parse_keyword("dense")
        payload = parse_dense(parser, start)
        extra = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        try:
            value = dense_value(payload, ty, "graph.constant")
        except ValueError as e:
            parser.raise_error(str(e), start, parser.pos)
        return cls.create(properties={"sym_name": name, "value": value}, attributes=extra)


# --------------------------------------------------------------------------
# A graph
# --------------------------------------------------------------------------


@irdl_op_definition
class GraphOp(IRDLOperation):
    """`graph.graph @name { inputs, constants, nodes, graph.output }`: one partition."""

    name = "graph.graph"
    sym_name = prop_def(SymbolNameConstraint())
    body = region_def("single_block")
    traits = lazy_traits_def(
        lambda: (HasParent(GraphModuleOp), SymbolOpInterface(), IsolatedFromAbove())
    )

    def __init__(self, name: str, ops: Sequence[Operation]):
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[Region(Block(ops))])

    @property
    def inputs(self) -> list[InputOp]:
        return [op for op in self.body.block.ops if isinstance(op, InputOp)]

    @property
    def output(self) -> OutputOp:
        last = self.body.block.last_op
        assert isinstance(last, OutputOp)
        return last

    def verify_(self) -> None:
        name = self.sym_name.data
        block = self.body.block
        if block.args:
            raise VerifyException(f"graph @{name}: the body takes no block arguments")
        if not isinstance(block.last_op, OutputOp):
            raise VerifyException(f"graph @{name} must end with graph.output")
        seen_other = False
        names: set[str] = set()
        for op in block.ops:
            if isinstance(op, InputOp):
                if seen_other:
                    raise VerifyException(f"graph @{name}: inputs come before every other op")
                if op.arg_name.data in names:
                    raise VerifyException(f"graph @{name}: two inputs named '{op.arg_name.data}'")
                names.add(op.arg_name.data)
            elif isinstance(op, ConstRefOp | NodeOp | CompositeOp | OutputOp):
                seen_other = True
            else:
                raise VerifyException(f"graph @{name}: '{op.name}' cannot appear in a graph")
        if not block.last_op.operands:
            raise VerifyException(f"graph @{name} returns nothing")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> GraphOp:
        name = parser.parse_symbol_name()
        extra = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        return cls.create(
            properties={"sym_name": name},
            regions=[body],
            attributes=dict(extra.data) if extra is not None else {},
        )


class _ValueOp(IRDLOperation):
    result = result_def(TensorType)

    def verify_(self) -> None:
        check_tensor_type(self.result.type, self.name)


@irdl_op_definition
class InputOp(_ValueOp):
    """`graph.input "<name>" : tensor<...>`: an argument, in order; the name is the partition's."""

    name = "graph.input"
    arg_name = prop_def(StringAttr)
    traits = lazy_traits_def(lambda: (HasParent(GraphOp),))
    assembly_format = "$arg_name attr-dict `:` type($result)"

    def __init__(self, arg_name: str, tensor_type: TensorType[Any]):
        super().__init__(properties={"arg_name": StringAttr(arg_name)}, result_types=[tensor_type])


@irdl_op_definition
class ConstRefOp(_ValueOp):
    """`graph.const @name : tensor<...>`: the module's constant of that name."""

    name = "graph.const"
    constant = prop_def(SymbolRefAttr)
    traits = lazy_traits_def(lambda: (HasParent(GraphOp, CompositeOp),))
    assembly_format = "$constant attr-dict `:` type($result)"

    def __init__(self, constant: str, tensor_type: TensorType[Any]):
        super().__init__(
            properties={"constant": SymbolRefAttr(constant)}, result_types=[tensor_type]
        )

    def verify_(self) -> None:
        super().verify_()
        module = self.parent_op()
        while module is not None and not isinstance(module, GraphModuleOp):
            module = module.parent_op()
        if module is None:
            return  # detached: checked once inside a module
        name = self.constant.root_reference.data
        const = module.constant(name)
        if const is None:
            raise VerifyException(f"graph.const: no graph.constant @{name} in the graph.module")
        if const.tensor_type != self.result.type:
            raise VerifyException(
                f"graph.const: @{name} is {const.tensor_type}, the use declares {self.result.type}"
            )


@irdl_op_definition
class NodeOp(IRDLOperation):
    """`graph.node "<nn op>"(%a, ...) {attrs} : (types) -> types`: one nn op."""

    name = "graph.node"
    op = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    attrs = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    outputs = var_result_def(TensorType)
    traits = lazy_traits_def(lambda: (HasParent(GraphOp, CompositeOp),))

    def __init__(
        self,
        op: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        attrs: Mapping[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"op": StringAttr(op), "attrs": DictionaryAttr(dict(attrs or {}))},
        )

    def verify_(self) -> None:
        if not self.op.data:
            raise VerifyException("graph.node needs an op name")
        if not self.outputs:
            raise VerifyException(f"graph.node '{self.op.data}' has no results")
        for key, value in self.attrs.data.items():
            check_attr_value(key, value)
        for i, v in enumerate([*self.inputs, *self.outputs]):
            check_tensor_type(v.type, f"graph.node '{self.op.data}' value #{i}")

    def print(self, printer: Printer) -> None:
        print_named_operands(printer, self.op.data, self.inputs)
        printer.print_string(" ")
        printer.print_attr_dict(self.attrs.data)
        _print_signature(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> NodeOp:
        op = parser.parse_str_literal(" (the node's op name)")
        unresolved, pos = _parse_operands(parser)
        attrs = parser.parse_optional_attr_dict()
        operands, outs, extra = _parse_signature(parser, unresolved, pos)
        return cls.create(
            operands=operands,
            result_types=outs,
            properties={"op": StringAttr(op), "attrs": DictionaryAttr(attrs)},
            attributes=extra,
        )


@irdl_op_definition
class CompositeOp(IRDLOperation):
    """`graph.composite "<target>.<pattern>"(%a, ...) : (types) -> types { body }`: one node
    for the engine; the body (graph.node, graph.const, graph.yield) says what it computes."""

    name = "graph.composite"
    composite = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (HasParent(GraphOp), IsolatedFromAbove()))

    def __init__(
        self,
        composite: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"composite": StringAttr(composite)},
            regions=[body],
        )

    def verify_(self) -> None:
        name = self.composite.data
        block = self.body.block
        if [a.type for a in block.args] != [v.type for v in self.inputs]:
            raise VerifyException(
                f"graph.composite '{name}': the body's arguments must have the operands' types"
            )
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException(f"graph.composite '{name}' must end with graph.yield")
        if [v.type for v in block.last_op.operands] != [r.type for r in self.outputs]:
            raise VerifyException(
                f"graph.composite '{name}': graph.yield must return the results' types"
            )
        if not self.outputs:
            raise VerifyException(f"graph.composite '{name}' has no results")
        for op in block.ops:
            if not isinstance(op, NodeOp | ConstRefOp | YieldOp):
                raise VerifyException(
                    f"graph.composite '{name}': its body holds graph.node, graph.const and "
                    f"graph.yield, not '{op.name}'"
                )
        for i, v in enumerate([*self.inputs, *self.outputs]):
            check_tensor_type(v.type, f"graph.composite '{name}' value #{i}")

    def print(self, printer: Printer) -> None:
        print_named_operands(printer, self.composite.data, self.inputs)
        _print_signature(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> CompositeOp:
        name = parser.parse_str_literal(" (the composite's name)")
        unresolved, pos = _parse_operands(parser)
        operands, outs, extra = _parse_signature(parser, unresolved, pos)
        body = parser.parse_region()
        return cls.create(
            operands=operands,
            result_types=outs,
            properties={"composite": StringAttr(name)},
            regions=[body],
            attributes=extra,
        )


class _TerminatorOp(IRDLOperation):
    values = var_operand_def(TensorType)
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class OutputOp(_TerminatorOp):
    """`graph.output %a, ... : types`: the graph's outputs, in the partition's result order."""

    name = "graph.output"
    traits = lazy_traits_def(lambda: (HasParent(GraphOp), IsTerminator()))


@irdl_op_definition
class YieldOp(_TerminatorOp):
    """`graph.yield %a, ... : types`: what a composite's body returns."""

    name = "graph.yield"
    traits = lazy_traits_def(lambda: (HasParent(CompositeOp), IsTerminator()))


Graph = Dialect(
    "graph",
    [GraphModuleOp, ConstantOp, GraphOp, InputOp, ConstRefOp, NodeOp, CompositeOp, OutputOp, YieldOp],
    [],
)

__all__ = [
    "CompositeOp",
    "ConstRefOp",
    "ConstantOp",
    "Graph",
    "GraphModuleOp",
    "GraphOp",
    "InputOp",
    "NodeOp",
    "OutputOp",
    "YieldOp",
    "check_attr_value",
    "check_tensor_type",
]
