"""MLIR text in, with the position of every op kept for `file:line:col` diagnostics."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context

from byoc.diagnostics import (
    LocatingFrontend,
    ParsedSource,
    SourceBuffer,
    decode_source,
    parse_source,
)


@dataclass(frozen=True)
class MLIRFrontend(LocatingFrontend):
    """xDSL's `mlir` frontend; a bad input is a `SourceError` at its line and column."""

    name = "mlir"

    no_implicit_module: bool = False
    """Do not wrap the top-level ops in a `builtin.module`."""

    def parse_source(
        self, ctx: Context, data: bytes, name: str, line_offset: int = 0
    ) -> ParsedSource:
        text = decode_source(data, name)
        return parse_source(ctx, SourceBuffer(name, text, line_offset), not self.no_implicit_module)
