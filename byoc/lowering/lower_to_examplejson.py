"""`lower-to-examplejson`: partition functions of the examplejson target -> `examplejson` subgraphs.

Expects functions outlined by `partition`:

    func.func private @examplejson_main_0(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>)
        -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"} {
      %0 = nn.add %a, %b : tensor<10x10xf32>
      func.return %0 : tensor<10x10xf32>
    }

whose bodies hold nn ops, `byoc.composite` (its body is inlined: the
ExampleJSON runtime runs one nn op per line) and `func.return`. Guarantees:
each such function becomes a bodiless private declaration with the same
signature and attributes (the host still calls it by name), and a subgraph of
the same name is added to the module's `examplejson.module` (created at the
end of the module if there is none):

    func.func private @examplejson_main_0(tensor<10x10xf32>, tensor<10x10xf32>)
        -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"}
    examplejson.module {
      examplejson.subgraph @examplejson_main_0 {
        examplejson.input 0 : tensor<10x10xf32>
        examplejson.input 1 : tensor<10x10xf32>
        examplejson.node add 2 inputs(0, 1) : tensor<10x10xf32>
        examplejson.output 2
      }
    }

Ids: the arguments are 0..n-1 in order, then every constant and op in program
order. Constants inside the function (`nn.constant`, e.g. bound by
`partition`) become `const` lines carrying their data, so a subgraph is
self-contained and its text is all a saved runtime module needs. Node
attributes are the op's non-default properties. Functions of other targets
are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from byoc.diagnostics import PassError
from byoc.dialects import byoc as byoc_d
from byoc.dialects import examplejson as ej
from byoc.dialects import nn

TARGET = "examplejson"
PASS = "lower-to-examplejson"


def is_examplejson_function(op: Operation) -> bool:
    """A `func.func` with a body and `byoc.compiler = "examplejson"`."""
    if not isinstance(op, FuncOp) or not op.body.blocks:
        return False
    attr = op.attributes.get(byoc_d.COMPILER_ATTR)
    return isinstance(attr, StringAttr) and attr.data == TARGET


class _Builder:
    """Numbers values and appends one line per op."""

    def __init__(self, func: FuncOp):
        self.func = func
        self.ids: dict[SSAValue, int] = {}
        self.lines: list[Operation] = []

    def define(self, value: SSAValue, line: ej.LineOp) -> None:
        self.ids[value] = line.value_id
        self.lines.append(line)

    def next_id(self) -> int:
        return len(self.lines)

    def id_of(self, value: SSAValue, user: Operation) -> int:
        found = self.ids.get(value)
        if found is None:
            raise PassError(
                user,
                f"{PASS}: an operand of '{user.name}' is defined outside @{self.func.sym_name.data}",
            )
        return found

    def block(self, block: Block) -> list[SSAValue] | None:
        """Lower the ops of `block`; the values its terminator returns, if it has one."""
        for op in block.ops:
            if isinstance(op, ReturnOp | byoc_d.YieldOp):  # terminators: the block's last op
                return list(op.operands)
            self.op(op)
        return None

    def op(self, op: Operation) -> None:
        if isinstance(op, nn.ConstantOp):
            self.define(op.result, ej.ConstOp(self.next_id(), op.value))
            return
        if isinstance(op, byoc_d.CompositeOp):
            for arg, operand in zip(op.body.block.args, op.args, strict=True):
                self.ids[arg] = self.id_of(operand, op)
            returned = self.block(op.body.block) or []
            for result, value in zip(op.results, returned, strict=True):
                self.ids[result] = self.id_of(value, op)
            return
        if isinstance(op, nn.NNOp):
            name = ej.NAME_OF.get(op.name)
            if name is None or len(op.results) != 1:
                raise PassError(op, f"{PASS}: '{op.name}' has no ExampleJSON form")
            ty = op.results[0].type
            assert isinstance(ty, TensorType)
            defaults = type(op).prop_defaults()
            attrs = {k: v for k, v in op.properties.items() if defaults.get(k) != v}
            inputs = [self.id_of(v, op) for v in op.operands]
            self.define(op.results[0], ej.NodeOp(name, self.next_id(), inputs, ty, attrs))
            return
        raise PassError(
            op,
            f"{PASS}: '{op.name}' in @{self.func.sym_name.data} cannot run on the ExampleJSON "
            "runtime, which runs nn ops only; leave it out of the examplejson partition "
            "(its support predicates decide what annotate-target tags)",
        )


def lower_function(func: FuncOp) -> ej.SubgraphOp:
    """The subgraph of one examplejson partition function (the function is not changed)."""
    builder = _Builder(func)
    block = func.body.block
    for arg in block.args:
        ty = arg.type
        if not isinstance(ty, TensorType):
            raise PassError(
                func,
                f"{PASS}: argument #{arg.index} of @{func.sym_name.data} is {ty}, not a tensor",
            )
        builder.define(arg, ej.InputOp(builder.next_id(), ty))
    returned = builder.block(block)
    if not returned:
        raise PassError(func, f"{PASS}: @{func.sym_name.data} returns nothing")
    outputs = [builder.id_of(v, block.last_op or func) for v in returned]
    return ej.SubgraphOp(func.sym_name.data, [*builder.lines, ej.OutputOp(outputs)])


def declaration_of(func: FuncOp) -> FuncOp:
    """A bodiless private `func.func` with `func`'s name, signature and attributes."""
    decl = FuncOp.external(
        func.sym_name.data, list(func.function_type.inputs), list(func.function_type.outputs)
    )
    decl.attributes.update(func.attributes)
    for name in ("arg_attrs", "res_attrs"):
        if (value := func.properties.get(name)) is not None:
            decl.properties[name] = value
    return decl


def container_of(module: ModuleOp) -> ej.ExampleJsonModuleOp:
    """The module's `examplejson.module`, added at its end if there is none."""
    for op in module.ops:
        if isinstance(op, ej.ExampleJsonModuleOp):
            return op
    container = ej.ExampleJsonModuleOp()
    module.body.block.add_op(container)
    return container


def lower_functions(funcs: Iterable[FuncOp]) -> ej.ExampleJsonModuleOp:
    """A detached `examplejson.module` holding the subgraph of each function (unchanged)."""
    return ej.ExampleJsonModuleOp([lower_function(f) for f in funcs])


@dataclass(frozen=True)
class LowerToExampleJsonPass(ModulePass):
    """Lower each func.func with byoc.compiler = "examplejson" to an examplejson.subgraph."""

    name = "lower-to-examplejson"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if is_examplejson_function(f)]
        if not funcs:
            return
        subgraphs = [lower_function(f) for f in funcs]
        container = container_of(op)
        taken = {s.sym_name.data for s in container.subgraphs}
        for func, subgraph in zip(funcs, subgraphs, strict=True):
            if subgraph.sym_name.data in taken:
                raise PassError(
                    func,
                    f"{PASS}: examplejson.module already holds a subgraph @{subgraph.sym_name.data}",
                )
            container.body.block.add_op(subgraph)
            parent = func.parent_block()
            assert parent is not None
            parent.insert_op_before(declaration_of(func), func)
            parent.erase_op(func)
