"""`-t graph`: every `graph.module` of a module as a listing of its serialised graph format.

The listing shows exactly what the version-1 blob holds (`byoc.runtime.graph_format`,
docs/graph.md): the constants (each once, by name), then per graph its inputs, the
constants it binds, its nodes with their entry ids (`%n`), dtypes, shapes and every
attribute, composite bodies indented under the composite, and its outputs. A partition
of a graph target still in `func.func` form is an error that names the pass to run; a
module without a `graph.module` prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.utils.target import Target

from byoc.diagnostics import EmitError
from byoc.dialects.graph import GraphModuleOp
from byoc.runtime.graph_format import describe, to_text

__all__ = ["GraphEmitter", "emit_graph"]


def emit_graph(module: ModuleOp, stream: IO[str]) -> None:
    """The `-t graph` emitter."""
    from byoc.lowering.nn_to_graph import is_graph_partition

    for op in module.walk():
        if is_graph_partition(op):
            assert isinstance(op, FuncOp)
            raise EmitError(
                op,
                f"@{op.sym_name.data} is still a func.func; run lower-to-graph first "
                "(byoc-opt -p 'lower-to-graph' -t graph)",
            )
    for container in (op for op in module.walk() if isinstance(op, GraphModuleOp)):
        try:
            stream.write(to_text(describe(container)))
        except ValueError as e:
            raise EmitError(container, str(e)) from None


@dataclass(frozen=True)
class GraphEmitter(Target):
    """`-t graph`: the graph format of every `graph.module`, as a readable listing."""

    name = "graph"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        emit_graph(module, output)
