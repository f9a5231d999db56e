"""`-t dot`: `func.func @main` as a Graphviz graph.

    byoc-opt model.mlir -p 'byoc{targets=ccompiler}' -t dot | dot -Tsvg > model.svg
    byoc-opt model.mlir -t 'dot{function=other}'     # another function than @main

- each op is a box labelled with its name and result type(s); the function's
  arguments are ovals, `func.return` is the `return` node; an edge per SSA use;
- an op carrying a `byoc.target` attribute is filled with that target's colour;
- each `byoc.region` is a `subgraph cluster_region_<n>` labelled with its target,
  holding the region's ops (its results are drawn from the yielded values);
- each `func.call` of a partition function (one with a `byoc.compiler`
  attribute) is drawn as `subgraph cluster_call_<n>` labelled
  `<target>: @<callee>`, holding the callee's ops, wired to the caller's values;
- a `byoc.composite` is one node (double border) named by its pattern.

The output depends only on the IR: nodes are numbered in program order and
target colours are assigned by sorted target name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.target import Target

from byoc.diagnostics import EmitError
from byoc.dialects.byoc import TARGET_ATTR, CompositeOp, RegionOp, YieldOp, partition_target

PALETTE = (
    "#8dd3c7",
    "#fdb462",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#b3de69",
    "#fccde5",
    "#ffffb3",
    "#bc80bd",
    "#ccebc5",
)
"""Fill colours (ColorBrewer Set3), given to targets in sorted-name order."""
ARG_COLOUR = "#e0e0e0"


@dataclass(frozen=True)
class DotEmitter(Target):
    """`-t dot`: one function of the module as a Graphviz graph."""

    name = "dot"

    function: str = "main"
    """The function drawn."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(module_to_dot(module, self.function))


def module_to_dot(module: ModuleOp, function: str = "main") -> str:
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}
    func = funcs.get(function)
    if func is None:
        names = ", ".join(f"@{n}" for n in funcs) or "none"
        raise EmitError(module, f"no func.func @{function} to draw (functions: {names})")
    if not func.body.blocks:
        raise EmitError(func, f"@{function} is a declaration; there is no body to draw")
    return _DotGraph(funcs).draw(func)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _string(attr: Attribute | None) -> str | None:
    return attr.data if isinstance(attr, StringAttr) else None


class _DotGraph:
    def __init__(self, funcs: dict[str, FuncOp]):
        self.funcs = funcs
        self.lines: list[str] = []
        self.edges: list[str] = []
        self.node_of: dict[SSAValue, str] = {}
        self.colours: dict[str, str] = {}
        self.counter = 0
        self.regions = 0
        self.calls = 0

    # ---- helpers ---------------------------------------------------------------
    def _new_node(self) -> str:
        name = f"n{self.counter}"
        self.counter += 1
        return name

    def _assign_colours(self, func: FuncOp) -> None:
        targets: set[str] = set()

        def visit(ops: Iterable[Operation], seen: set[str]) -> None:
            for op in ops:
                if (t := _string(op.attributes.get(TARGET_ATTR))) is not None:
                    targets.add(t)
                if isinstance(op, RegionOp):
                    targets.add(op.target.data)
                if isinstance(op, CallOp):
                    callee = self.funcs.get(op.callee.root_reference.data)
                    target = partition_target(callee)
                    if target is not None and callee is not None:
                        targets.add(target)
                        name = callee.sym_name.data
                        if name not in seen:
                            visit(callee.walk(), seen | {name})
                if not isinstance(op, CompositeOp):
                    for region in op.regions:
                        for block in region.blocks:
                            visit(block.ops, seen)

        visit(func.body.block.ops, {func.sym_name.data})
        for i, t in enumerate(sorted(targets)):
            self.colours[t] = PALETTE[i % len(PALETTE)]

    def _edges_into(self, node: str, operands: Iterable[SSAValue]) -> None:
        for value in operands:
            source = self.node_of.get(value)
            if source is not None:
                self.edges.append(f"  {source} -> {node};")

    # ---- drawing ---------------------------------------------------------------
    def draw(self, func: FuncOp) -> str:
        self._assign_colours(func)
        name = func.sym_name.data
        self.lines += [
            f"digraph {_quote(name)} {{",
            "  rankdir=TB;",
            '  node [shape=box, style="rounded,filled", fillcolor="white", '
            'fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        block = func.body.block
        for i, arg in enumerate(block.args):
            node = self._new_node()
            self.node_of[arg] = node
            label = f"%{arg.name_hint or f'arg{i}'}\n{arg.type}"
            self.lines.append(
                f"  {node} [label={_quote(label)}, shape=oval, fillcolor={_quote(ARG_COLOUR)}];"
            )
        self._draw_block(block, "  ", None, (name,), False)
        return "\n".join([*self.lines, *self.edges, "}"]) + "\n"

    def _draw_block(
        self,
        block: Block,
        indent: str,
        target: str | None,
        stack: tuple[str, ...],
        inlined: bool,
    ) -> list[SSAValue] | None:
        """Draw the ops of `block`; return the operands of its terminator (the values it yields).

        `stack` is the chain of functions being drawn (a partition calling itself is an
        error); in an `inlined` callee body `func.return` is not a node but the results.
        """
        yielded: list[SSAValue] | None = None
        for op in block.ops:
            if isinstance(op, YieldOp) or (inlined and isinstance(op, ReturnOp)):
                yielded = list(op.operands)
                continue
            if isinstance(op, RegionOp):
                self._draw_region(op, indent, stack)
                continue
            if isinstance(op, CallOp):
                callee = self.funcs.get(op.callee.root_reference.data)
                partition = partition_target(callee)
                if callee is not None and partition is not None and callee.body.blocks:
                    if callee.sym_name.data in stack:
                        raise EmitError(op, f"-t dot: @{callee.sym_name.data} calls itself")
                    self._draw_call(op, callee, partition, indent, stack)
                    continue
            self._draw_op(op, indent, target)
        return yielded

    def _draw_op(self, op: Operation, indent: str, enclosing: str | None) -> None:
        node = self._new_node()
        if isinstance(op, ReturnOp):
            label = "return"
            extra = ", shape=oval"
        else:
            types = "\n".join(str(r.type) for r in op.results)
            if isinstance(op, CompositeOp):
                title = f'byoc.composite "{op.composite.data}"'
            elif isinstance(op, CallOp):
                title = f"func.call @{op.callee.root_reference.data}"
            else:
                title = op.name
            label = f"{title}\n{types}" if types else title
            extra = ", peripheries=2" if isinstance(op, CompositeOp) else ""
        target = _string(op.attributes.get(TARGET_ATTR)) or enclosing
        if target is not None and target in self.colours:
            extra += f", fillcolor={_quote(self.colours[target])}"
        self.lines.append(f"{indent}{node} [label={_quote(label)}{extra}];")
        self._edges_into(node, op.operands)
        for result in op.results:
            self.node_of[result] = node

    def _open_cluster(self, name: str, label: str, target: str, indent: str) -> None:
        colour = self.colours.get(target, "#999999")
        self.lines += [
            f"{indent}subgraph {name} {{",
            f"{indent}  label={_quote(label)};",
            f'{indent}  style="rounded,dashed";',
            f"{indent}  color={_quote(colour)};",
        ]

    def _draw_region(self, op: RegionOp, indent: str, stack: tuple[str, ...]) -> None:
        target = op.target.data
        self._open_cluster(f"cluster_region_{self.regions}", target, target, indent)
        self.regions += 1
        yielded = self._draw_block(op.body.block, indent + "  ", target, stack, False)
        self.lines.append(f"{indent}}}")
        for result, value in zip(op.results, yielded or [], strict=False):
            if value in self.node_of:
                self.node_of[result] = self.node_of[value]

    def _draw_call(
        self, op: CallOp, callee: FuncOp, target: str, indent: str, stack: tuple[str, ...]
    ) -> None:
        name = callee.sym_name.data
        self._open_cluster(f"cluster_call_{self.calls}", f"{target}: @{name}", target, indent)
        self.calls += 1
        block = callee.body.block
        for arg, operand in zip(block.args, op.operands, strict=False):
            if operand in self.node_of:
                self.node_of[arg] = self.node_of[operand]
        returned = self._draw_block(block, indent + "  ", target, (*stack, name), True)
        self.lines.append(f"{indent}}}")
        for result, value in zip(op.results, returned or [], strict=False):
            if value in self.node_of:
                self.node_of[result] = self.node_of[value]
