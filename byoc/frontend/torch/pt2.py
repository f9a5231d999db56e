"""`.pt2` files (`torch.export.save`) as input of byoc-opt (`byoc-opt model.pt2`, or `-f pt2`)
and byoc-run.

A diagnostic about an op is placed at the Python line the op came from (its
`FileLineColLoc`, which the importer takes from the FX node's stack trace), with that
line's text when the file is readable; an import error gives one diagnostic per node
that failed.
"""

from __future__ import annotations

import io
import linecache
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation

from byoc.diagnostics import (
    Diagnostic,
    LocatingFrontend,
    ParsedSource,
    SourceError,
    describe_exception,
)


def parse_input_shapes(specs: Sequence[str]) -> dict[str, list[int]]:
    """`NAME=D0xD1x...` specs (byoc-run's and byoc-opt's `--input-shape`) by name."""
    shapes: dict[str, list[int]] = {}
    for spec in specs:
        name, _, dims = spec.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split("x")]
        except ValueError:
            raise ValueError(f"--input-shape {spec!r}: expected NAME=D0xD1x...") from None
        if not name:
            raise ValueError(f"--input-shape {spec!r}: expected NAME=D0xD1x...")
    return shapes


def _python_line(file: str, line: int) -> str | None:
    text = linecache.getline(file, line)
    return text.rstrip("\n") or None


def _code_column(text: str | None) -> int:
    """The column of the first character of code on a line (1 when unknown)."""
    return 1 if not text else len(text) - len(text.lstrip()) + 1


def diagnostic_at(
    location: FileLineColLoc, message: str, severity: str = "error"
) -> Diagnostic:
    """A diagnostic at a Python source line (an op's or a failed node's)."""
    file, line = location.filename.data, location.line.data
    text = _python_line(file, line)
    return Diagnostic(severity, message, file, line, _code_column(text), text)


@dataclass
class Pt2Source(ParsedSource):
    """The module of a `.pt2` file: diagnostics go to the Python line of the op."""

    def diagnostic(self, op: Operation | None, message: str, severity: str = "error") -> Diagnostic:
        while op is not None:
            if isinstance(op.location, FileLineColLoc):
                return diagnostic_at(op.location, message, severity)
            op = op.parent_op()
        return Diagnostic(severity, message, self.source.name)


def load_pt2(
    data: bytes | str | os.PathLike[str], name: str, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> Pt2Source:
    """Read an ExportedProgram (a path, or the file's bytes) and import it; a failure is a
    `SourceError`: one diagnostic per failed node, at its Python line."""

    def fail(message: str) -> SourceError:
        return SourceError([Diagnostic("error", message, name)])

    try:
        import torch

        from byoc.frontend.torch import TorchImportError, import_exported_program
    except ImportError as e:
        raise fail(
            f"cannot read .pt2 files: the PyTorch frontend failed to load ({e}); "
            "install the 'torch' extra (pip install 'byoc[torch]')"
        ) from None
    try:
        source = io.BytesIO(data) if isinstance(data, bytes) else os.fspath(data)
        with warnings.catch_warnings():  # PyTorch's own deprecations, not the user's
            warnings.simplefilter("ignore", FutureWarning)
            ep = torch.export.load(source)
    except Exception as e:
        raise fail(f"cannot load the exported program: {describe_exception(e)}") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            module: ModuleOp = import_exported_program(ep, input_shapes=input_shapes)
    except TorchImportError as e:
        if not e.problems:
            raise fail(str(e)) from None
        diagnostics = []
        for p in e.problems:
            message = f"{p.op} (node '{p.node}'): {p.message}"
            if p.location is None:
                diagnostics.append(Diagnostic("error", message, name))
            else:
                text = _python_line(p.location.file, p.location.line)
                diagnostics.append(
                    Diagnostic("error", message, p.location.file, p.location.line, _code_column(text), text)
                )
        n = len(e.problems)
        diagnostics.append(Diagnostic("note", f"{n} node{'s' if n != 1 else ''} of the exported program failed to convert", name))
        raise SourceError(diagnostics) from None
    except Exception as e:
        raise fail(f"cannot import the exported program: {describe_exception(e)}") from None
    return Pt2Source.of_module(module, name, textual=False)


@dataclass(frozen=True)
class Pt2Frontend(LocatingFrontend):
    """A `torch.export` program saved with `torch.export.save`, as an xDSL frontend."""

    name = "pt2"
    input_shape: tuple[str, ...] = field(default=())
    """Static shapes for inputs with dynamic dims, `NAME=D0xD1x...` each."""

    def parse_source(self, ctx: Context, data: bytes, name: str, line_offset: int = 0) -> ParsedSource:
        try:
            shapes = parse_input_shapes(self.input_shape)
        except ValueError as e:
            raise SourceError([Diagnostic("error", str(e), name)]) from None
        source: Any = name if os.path.isfile(name) else data
        return load_pt2(source, name, shapes or None)
