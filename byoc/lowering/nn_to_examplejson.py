"""`lower-to-examplejson`: partition functions of the examplejson target -> `examplejson` subgraphs.

Expects functions outlined by `partition`:

    func.func private @examplejson_main_0(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>)
        -> tensor<10x10xf32> attributes {byoc.compiler = "examplejson"} {
      %0 = nn.multiply %a, %b : tensor<10x10xf32>
      %1 = nn.relu %0 : tensor<10x10xf32>
      func.return %1 : tensor<10x10xf32>
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
        %0 = examplejson.input : tensor<10x10xf32>
        %1 = examplejson.input : tensor<10x10xf32>
        %2 = examplejson.node mul %0, %1 : tensor<10x10xf32>
        %3 = examplejson.node relu %2 : tensor<10x10xf32>
        examplejson.output %3 : tensor<10x10xf32>
      }
    }

Lines: an input per argument in order, then a line per constant and op in
program order (so the text numbers the arguments 0..n-1). Constants inside
the function (`nn.constant`, e.g. bound by `partition`) become `const` lines carrying their data, so a subgraph is
self-contained and its text is all a saved runtime module needs. Node
attributes are the op's non-default properties. Functions of other targets
are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.diagnostics import PassError
from byoc.dialects import examplejson as ej
from byoc.dialects import nn
from byoc.dialects.byoc import COMPILER_ATTR, CompositeOp, YieldOp
from byoc.lowering.containers import container_of

TARGET = "examplejson"
PASS = "lower-to-examplejson"


def is_examplejson_function(op: Operation) -> bool:
    """A `func.func` with a body and `byoc.compiler = "examplejson"`."""
    if not isinstance(op, FuncOp) or not op.body.blocks:
        return False
    attr = op.attributes.get(COMPILER_ATTR)
    return isinstance(attr, StringAttr) and attr.data == TARGET


def lower_function(func: FuncOp) -> ej.SubgraphOp:
    """The subgraph of one examplejson partition function (the function is not changed)."""
    name = func.sym_name.data
    values: dict[SSAValue, SSAValue] = {}
    """func value -> the subgraph value that stands for it."""
    lines: list[Operation] = []

    def lookup(value: SSAValue, user: Operation) -> SSAValue:
        found = values.get(value)
        if found is None:
            raise PassError(user, f"{PASS}: an operand of '{user.name}' is defined outside @{name}")
        return found

    def lower_block(block: Block) -> list[SSAValue]:
        """Lower the ops of `block`; the values its terminator returns."""
        for op in block.ops:
            if isinstance(op, ReturnOp | YieldOp):  # the block's terminator
                return [lookup(v, op) for v in op.operands]
            if isinstance(op, CompositeOp):  # inlined: one nn op per line
                for arg, operand in zip(op.body.block.args, op.args, strict=True):
                    values[arg] = lookup(operand, op)
                values.update(zip(op.results, lower_block(op.body.block), strict=True))
                continue
            line = lower_op(op, [lookup(v, op) for v in op.operands])
            lines.append(line)
            values[op.results[0]] = line.result
        return []

    def lower_op(op: Operation, inputs: list[SSAValue]) -> ej.ValueOp:
        if isinstance(op, nn.ConstantOp):
            return ej.ConstOp(op.value)
        if isinstance(op, nn.NNOp):
            kind = ej.NAME_OF.get(op.name)
            if kind is None or len(op.results) != 1:
                raise PassError(op, f"{PASS}: '{op.name}' has no ExampleJSON form")
            ty = op.results[0].type
            assert isinstance(ty, TensorType)
            defaults = type(op).prop_defaults()
            attrs = {k: v for k, v in op.properties.items() if defaults.get(k) != v}
            return ej.NodeOp(kind, inputs, ty, attrs)
        raise PassError(
            op,
            f"{PASS}: '{op.name}' in @{name} cannot run on the ExampleJSON "
            "runtime, which runs nn ops only; leave it out of the examplejson partition "
            "(its support predicates decide what annotate-target tags)",
        )

    block = func.body.block
    for arg in block.args:
        if not isinstance(arg.type, TensorType):
            raise PassError(
                func, f"{PASS}: argument #{arg.index} of @{name} is {arg.type}, not a tensor"
            )
        line = ej.InputOp(arg.type)
        lines.append(line)
        values[arg] = line.result
    returned = lower_block(block)
    if not returned:
        raise PassError(func, f"{PASS}: @{name} returns nothing")
    return ej.SubgraphOp(name, [*lines, ej.OutputOp(returned)])


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


@dataclass(frozen=True)
class LowerToExampleJsonPass(ModulePass):
    """Lower each func.func with byoc.compiler = "examplejson" to an examplejson.subgraph."""

    name = "lower-to-examplejson"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if is_examplejson_function(f)]
        if not funcs:
            return
        subgraphs = [lower_function(f) for f in funcs]
        container = container_of(op, ej.ExampleJsonModuleOp)
        taken = {s.sym_name.data for s in container.subgraphs}
        for func, subgraph in zip(funcs, subgraphs, strict=True):
            if subgraph.sym_name.data in taken:
                raise PassError(
                    func,
                    f"{PASS}: examplejson.module already holds a subgraph @{subgraph.sym_name.data}",
                )
            Rewriter.insert_op(subgraph, InsertPoint.at_end(container.body.block))
            Rewriter.replace_op(func, declaration_of(func))
