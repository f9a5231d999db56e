"""`lower-to-graph{target=...}`: a graph target's partition functions -> `graph` dialect graphs.

Expects functions outlined by `partition` whose `byoc.compiler` is `target`
(empty: every target whose runtime component is of kind "graph", such as the
`graphref` and `dnnl` targets). Their bodies hold nn ops, `nn.constant`,
`byoc.composite` and `func.return`. Guarantees: each such function becomes a
bodiless private declaration with the same signature and attributes (the host
still calls it by name), and a `graph.graph` of the same name is added to the
module's `graph.module` (created at the end of the module if there is none):

    %0 = graph.input "x" : tensor<1x16xf32>          one per argument, in order
    %1 = graph.const @graphref_main_0_const_0 : ...   nn.constant -> a named module constant
    %2 = graph.node "nn.dense"(%0, %1) {units = 0 : i64} : (...) -> tensor<1x8xf32>
    %3 = graph.composite "graphref.dense_bias_relu"(...) : (...) -> ... { inner graph.node ops }
    graph.output %3 : tensor<1x8xf32>

Every constant becomes one `graph.constant` of the module, named
`<function>_const_<n>` after its first use; equal constants (same dtype, shape and
bytes) are stored once, whichever partition uses them. Each node carries all the
properties of its nn op, defaults included, so an engine never needs byoc's
defaults. A composite keeps its name and its body (its inner nn ops become
graph.node ops inside graph.composite). Functions of other targets are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from byoc.diagnostics import PassError
from byoc.dialects import graph as gd
from byoc.dialects import nn
from byoc.dialects.byoc import COMPILER_ATTR, CompositeOp, YieldOp
from byoc.lowering.containers import container_of
from byoc.lowering.nn_to_examplejson import declaration_of
from byoc.runtime.host import input_name

PASS = "lower-to-graph"
GRAPH_COMPONENT = "graph"


def _compiler(op: Operation) -> str | None:
    if not isinstance(op, FuncOp) or not op.body.blocks:
        return None
    attr = op.attributes.get(COMPILER_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def _is_graph_target(name: str) -> bool:
    from byoc.targets import UnknownTargetError, get_target

    try:
        return get_target(name).component == GRAPH_COMPONENT
    except UnknownTargetError:
        return False


def is_graph_partition(op: Operation) -> bool:
    """A partition function (with a body) of a target whose component is of kind "graph"."""
    compiler = _compiler(op)
    return compiler is not None and _is_graph_target(compiler)


class _Constants:
    """The module's graph.constant ops, found by content so that each is stored once."""

    def __init__(self, container: gd.GraphModuleOp):
        self.container = container
        self.by_content: dict[tuple[Attribute, bytes], str] = {}
        self.names: set[str] = set()
        for c in container.constants:
            self.by_content.setdefault((c.tensor_type, c.payload()), c.sym_name.data)
            self.names.add(c.sym_name.data)
        self.new: list[gd.ConstantOp] = []

    def name_of(self, const: nn.ConstantOp, owner: str) -> str:
        ty = const.result.type
        payload = const.value.data.data
        key = (ty, payload)
        name = self.by_content.get(key)
        if name is not None:
            return name
        n = len(self.names)
        name = f"{owner}_const_{n}"
        while name in self.names:
            n += 1
            name = f"{owner}_const_{n}"
        self.names.add(name)
        self.by_content[key] = name
        self.new.append(gd.ConstantOp(name, const.value))
        return name


def _node_attrs(op: nn.NNOp) -> dict[str, Attribute]:
    attrs: dict[str, Attribute] = {}
    for key, default in type(op).prop_defaults().items():
        value = op.properties.get(key, default)
        if value is None:
            continue
        try:
            gd.check_attr_value(key, value)
        except VerifyException as e:
            raise PassError(op, f"{PASS}: '{op.name}': {e}") from None
        attrs[key] = value
    return attrs


def lower_function(func: FuncOp, constants: _Constants) -> gd.GraphOp:
    """The graph of one partition function (the function is not changed)."""
    name = func.sym_name.data
    values: dict[SSAValue, SSAValue] = {}

    def lookup(value: SSAValue, user: Operation) -> SSAValue:
        found = values.get(value)
        if found is None:
            raise PassError(user, f"{PASS}: an operand of '{user.name}' is defined outside @{name}")
        return found

    def check_type(t: Attribute, op: Operation) -> None:
        try:
            gd.check_tensor_type(t, op.name)
        except VerifyException as e:
            raise PassError(op, f"{PASS}: @{name}: {e}") from None

    def composite_body(op: CompositeOp) -> Block:
        inner = op.body.block
        block = Block(arg_types=[a.type for a in inner.args])
        for arg, new in zip(inner.args, block.args, strict=True):
            values[arg] = new
        body: list[Operation] = []
        returned: Sequence[SSAValue] = ()
        for o in inner.ops:
            if isinstance(o, YieldOp):
                returned = o.values
            elif isinstance(o, nn.ConstantOp | nn.NNOp):
                lower_op(o, body)
            else:
                raise PassError(o, f"{PASS}: '{o.name}' cannot be in a composite of @{name}")
        mapped = [lookup(v, op) for v in returned]
        if len(set(mapped)) != len(mapped) or any(
            not isinstance(v.owner, gd.NodeOp) for v in mapped
        ):
            raise PassError(
                op,
                f"{PASS}: composite '{op.composite.data}' returns an argument, a constant "
                "or one value twice; the graph format wants each result computed inside",
            )
        body.append(gd.YieldOp(mapped))
        block.add_ops(body)
        return block

    def lower_op(op: Operation, into: list[Operation]) -> None:
        for r in op.results:
            check_type(r.type, op)
        if isinstance(op, nn.ConstantOp):
            ref = gd.ConstRefOp(constants.name_of(op, name), op.result.type)
            into.append(ref)
            values[op.result] = ref.result
            return
        new: gd.NodeOp | gd.CompositeOp
        if isinstance(op, nn.NNOp):
            new = gd.NodeOp(
                op.name, [lookup(v, op) for v in op.operands], op.result_types, _node_attrs(op)
            )
        elif isinstance(op, CompositeOp):
            body = Region(composite_body(op))
            new = gd.CompositeOp(
                op.composite.data, [lookup(v, op) for v in op.operands], op.result_types, body
            )
        else:
            raise PassError(
                op,
                f"{PASS}: '{op.name}' in @{name} has no graph form; the graph runtime runs nn ops "
                "and composites of them",
            )
        into.append(new)
        values.update(zip(op.results, new.outputs, strict=True))

    ops: list[Operation] = []
    block = func.body.block
    for i, arg in enumerate(block.args):
        if not isinstance(arg.type, TensorType):
            raise PassError(func, f"{PASS}: argument #{i} of @{name} is {arg.type}, not a tensor")
        check_type(arg.type, func)
        inp = gd.InputOp(input_name(func, i), arg.type)
        ops.append(inp)
        values[arg] = inp.result
    returned: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, ReturnOp):
            returned = [lookup(v, op) for v in op.operands]
            break
        lower_op(op, ops)
    if not returned:
        raise PassError(func, f"{PASS}: @{name} returns nothing")
    ops.append(gd.OutputOp(returned))
    return gd.GraphOp(name, ops)


@dataclass(frozen=True)
class LowerToGraphPass(ModulePass):
    """Lower each partition of `target` (default: every graph-runtime target) to a graph.graph."""

    name: ClassVar[str] = "lower-to-graph"

    target: str = ""
    """The target whose partitions to lower; empty: every target with a graph component."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        def wanted(f: Operation) -> bool:
            compiler = _compiler(f)
            if compiler is None:
                return False
            return compiler == self.target if self.target else _is_graph_target(compiler)

        funcs = [f for f in op.ops if wanted(f)]
        if not funcs:
            return
        assert all(isinstance(f, FuncOp) for f in funcs)
        existing = next((o for o in op.ops if isinstance(o, gd.GraphModuleOp)), None)
        constants = _Constants(existing if existing is not None else gd.GraphModuleOp())
        graphs = [lower_function(f, constants) for f in funcs]  # type: ignore[arg-type]
        container = container_of(op, gd.GraphModuleOp)
        taken = {g.sym_name.data for g in container.graphs}
        for func, graph in zip(funcs, graphs, strict=True):
            if graph.sym_name.data in taken:
                raise PassError(func, f"{PASS}: graph.module already holds a graph @{graph.sym_name.data}")
        first_graph = next(iter(container.graphs), None)
        for const in constants.new:  # constants before the graphs that use them
            point = (
                InsertPoint.before(first_graph)
                if first_graph is not None
                else InsertPoint.at_end(container.body.block)
            )
            Rewriter.insert_op(const, point)
        for func, graph in zip(funcs, graphs, strict=True):
            Rewriter.insert_op(graph, InsertPoint.at_end(container.body.block))
            Rewriter.replace_op(func, declaration_of(func))  # type: ignore[arg-type]

