"""`-t examplejson`: the `examplejson` dialect as ExampleJSON text (the seed's format)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from byoc.lowering.emit_examplejson import emit_examplejson


@dataclass(frozen=True)
class ExampleJsonTarget(Target):
    """`-t examplejson`: every `examplejson.subgraph` of the module, in order."""

    name = "examplejson"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        emit_examplejson(module, output)
