"""What a graph blob means, checked once before any engine sees it.

    check_blob(blob)      # GraphCheckError naming the graph and node, or None

The C reader (`byoc_graph_runtime.c`) checks a blob's structure: counts, ids, dtypes,
sizes, each value defined once before its uses. This module checks what the values
are: every node, top-level or inside a composite body, names an `nn` op, has that op's
arity, carries exactly the op's properties, each of the kind and within the range the
property allows, and its operand and result types satisfy the op's type relation
(`NNOp.check_call`, the same check the host plan gets in `host.check_plan`). An engine
may therefore rely on a verified graph: a blob it receives is one `lower-to-graph`
could have written from a module that verifies.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import VarOperandDef
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.dialects.nn.types import from_python
from byoc.runtime.graph_format import (
    ENTRY_CONST,
    ENTRY_INNER,
    ENTRY_INPUT,
    ENTRY_KINDS,
    Graph,
    GraphSet,
    Node,
    attr_value,
    decode,
)


class GraphCheckError(ValueError):
    """A graph blob that no verified module lowers to (the message names the node)."""


def check_blob(blob: bytes) -> GraphSet:
    """Decode `blob` and check every graph in it; return what it holds."""
    try:
        graphs = decode(blob)
    except ValueError as exc:
        raise GraphCheckError(str(exc)) from None
    check_graph_set(graphs)
    return graphs


def check_graph_set(graphs: GraphSet) -> None:
    constants = {c.name: c for c in graphs.constants}
    if len(constants) != len(graphs.constants):
        raise GraphCheckError("graph blob: two constants have the same name")
    for graph in graphs.graphs:
        _GraphChecker(graph, constants).check()


def _tensor_type(dtype: Any, shape: tuple[int, ...], where: str) -> TensorType[Any]:
    if any(d < 0 for d in shape):
        raise GraphCheckError(f"{where} has a negative dim in {list(shape)}")
    try:
        return nn.tensor(shape, nn.element_type_of(dtype))
    except (TypeError, ValueError, KeyError):
        raise GraphCheckError(f"{where} has element type {dtype}, which nn does not hold") from None


def _arity(op: type[nn.NNOp]) -> tuple[int, bool]:
    """(fixed operands, whether a variadic group may add any number)."""
    defs = [d for _, d in op.get_irdl_definition().operands]
    variadic = any(isinstance(d, VarOperandDef) for d in defs)
    return sum(not isinstance(d, VarOperandDef) for d in defs), variadic


def check_node_attrs(op: type[nn.NNOp], attrs: list[tuple[str, int, Any]], where: str) -> dict[str, Any]:
    """The node's properties as Python values: each a property of `op`, of the kind
    `lower-to-graph` writes for it and a value the property can hold; every property
    without a default present."""
    defaults = op.prop_defaults()
    values: dict[str, Any] = {}
    for name, kind, value in attrs:
        if name not in defaults:
            raise GraphCheckError(f"{where}: '{op.name}' has no property '{name}'")
        if name in values:
            raise GraphCheckError(f"{where}: property '{name}' is given twice")
        try:
            attr = from_python(value, defaults[name])
            canonical = attr_value(name, attr)
        except (TypeError, ValueError, OverflowError, VerifyException):
            raise GraphCheckError(f"{where}: property '{name}' cannot be {value!r}") from None
        if canonical[0] != kind or canonical[1] != value:
            raise GraphCheckError(
                f"{where}: property '{name}' is {ENTRY_ATTR_KINDS[kind]} {value!r}; it holds "
                f"{ENTRY_ATTR_KINDS[canonical[0]]} values like {canonical[1]!r}"
            )
        values[name] = value
    missing = [k for k, d in defaults.items() if d is None and k not in values]
    if missing:
        raise GraphCheckError(f"{where}: '{op.name}' needs the property '{missing[0]}'")
    return values


ENTRY_ATTR_KINDS = ("an int", "a float", "a string", "an int array", "a float array")
"""The attribute kinds of the format (graph_format.ATTR_*), as messages say them."""


class _GraphChecker:
    def __init__(self, graph: Graph, constants: dict[str, Any]):
        self.graph = graph
        self.constants = constants
        self.types: list[TensorType[Any]] = []

    def check(self) -> None:
        g = self.graph
        for i, e in enumerate(g.entries):
            where = f"graph @{g.name}: entry {i}"
            if not 0 <= e.kind < len(ENTRY_KINDS):
                raise GraphCheckError(f"{where} has unknown kind {e.kind}")
            self.types.append(_tensor_type(e.dtype, e.shape, where))
            if e.kind == ENTRY_CONST:
                c = self.constants.get(e.name)
                if c is None or c.array.dtype != e.dtype or tuple(c.array.shape) != e.shape:
                    raise GraphCheckError(
                        f"{where} binds constant '{e.name}', which the blob lacks or holds with "
                        "another type"
                    )
        for i in (*g.inputs, *g.outputs):
            self.entry(i, f"graph @{g.name}: its inputs and outputs")
        for i in g.inputs:
            if g.entries[i].kind != ENTRY_INPUT:
                raise GraphCheckError(f"graph @{g.name}: input entry {i} is not an input")
        for k, node in enumerate(g.nodes):
            where = f"graph @{g.name}: node {k} ('{node.op}')"
            if node.body:
                self.check_composite(node, where)
            else:
                self.check_node(node, where)

    def entry(self, i: int, where: str) -> TensorType[Any]:
        if not 0 <= i < len(self.types):
            raise GraphCheckError(f"{where} refers to entry {i} of {len(self.types)}")
        return self.types[i]

    def check_composite(self, node: Node, where: str) -> None:
        if node.attrs:
            raise GraphCheckError(f"{where}: a composite carries no attributes")
        target, dot, pattern = node.op.partition(".")
        if not dot or not target or not pattern or target == "nn":
            raise GraphCheckError(f"{where}: a composite is named '<target>.<pattern>'")
        for j, inner in enumerate(node.body):
            if inner.body:
                raise GraphCheckError(f"{where}: inner node {j} has a body")
            self.check_node(inner, f"{where}, inner node {j} ('{inner.op}')")
            for o in inner.outputs:
                if self.graph.entries[o].kind != ENTRY_INNER and o not in node.outputs:
                    raise GraphCheckError(f"{where}: inner node {j} writes entry {o} outside the body")

    def check_node(self, node: Node, where: str) -> None:
        op = nn.NN_OPS.get(node.op)
        if op is None or node.op == "nn.constant":
            raise GraphCheckError(f"{where}: there is no nn op of that name")
        fixed, variadic = _arity(op)
        n = len(node.inputs)
        if n != fixed and not (variadic and n >= fixed):
            wanted = f"at least {fixed}" if variadic else str(fixed)
            raise GraphCheckError(f"{where} has {n} operands; '{node.op}' takes {wanted}")
        attrs = check_node_attrs(op, node.attrs, where)
        types = [self.entry(i, where) for i in node.inputs]
        results = [self.entry(o, where) for o in node.outputs]
        try:
            expected = op.check_call(types, attrs)
        except VerifyException as exc:
            raise GraphCheckError(f"{where}: {exc}") from None
        except (ValueError, TypeError, IndexError, OverflowError, ZeroDivisionError) as exc:
            raise GraphCheckError(f"{where}: its operands or properties do not verify ({exc})") from None
        if list(expected) != results:
            got = ", ".join(map(str, results))
            raise GraphCheckError(
                f"{where} records results {got}; its operands give {', '.join(map(str, expected))}"
            )


__all__ = ["GraphCheckError", "check_blob", "check_graph_set", "check_node_attrs"]
