"""The `.examplejson` frontend: ExampleJSON text in, the `examplejson` dialect out.

The grammar and its `file:line:col` errors are the dialect's text format
(`byoc.dialects.examplejson.text`), which the runtime module also reads; this
module plugs it into byoc-opt as an xDSL `Frontend` (`.examplejson` files or
`-f examplejson`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from byoc.dialects.examplejson.text import (
    ExampleJsonSyntaxError,
    parse_examplejson,
    read_examplejson,
)


@dataclass(frozen=True)
class ExampleJsonFrontend(Frontend):
    """byoc-opt's frontend for `.examplejson` files (or `-f examplejson`)."""

    name = "examplejson"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "input") -> ModuleOp:
        return read_examplejson(input.read(), input_name)


__all__ = ["ExampleJsonFrontend", "ExampleJsonSyntaxError", "parse_examplejson", "read_examplejson"]
