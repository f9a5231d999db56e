"""`-t examplejson`: print every `examplejson.subgraph` of a module as ExampleJSON text.

The text is the dialect's own format (`byoc.dialects.examplejson.text`): the
seed's for add/sub/mul graphs in f32, its extension otherwise. This emitter adds
what only a whole module can tell: a partition still in `func.func` form is an
error that names the pass to run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.utils.target import Target

from byoc.diagnostics import EmitError
from byoc.dialects.byoc import COMPILER_ATTR
from byoc.dialects.examplejson.text import TextFormatError, to_text

__all__ = ["ExampleJsonEmitter", "emit_examplejson", "to_text"]


def _check_lowered(module: ModuleOp) -> None:
    for op in module.walk():
        if (
            isinstance(op, FuncOp)
            and op.body.blocks
            and isinstance(attr := op.attributes.get(COMPILER_ATTR), StringAttr)
            and attr.data == "examplejson"
        ):
            raise EmitError(
                op,
                f"@{op.sym_name.data} is still a func.func; run lower-to-examplejson first "
                "(byoc-opt -p 'lower-to-examplejson' -t examplejson)",
            )


def emit_examplejson(module: ModuleOp, stream: IO[str]) -> None:
    """The `-t examplejson` emitter: every `examplejson.subgraph` of `module`."""
    _check_lowered(module)
    try:
        text = to_text(module)
    except TextFormatError as e:
        raise EmitError(e.op, str(e)) from None
    stream.write(text)


@dataclass(frozen=True)
class ExampleJsonEmitter(Target):
    """`-t examplejson`: every `examplejson.subgraph` of the module, in order."""

    name = "examplejson"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        emit_examplejson(module, output)
