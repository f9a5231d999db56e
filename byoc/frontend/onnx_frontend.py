"""An ONNX model in (`byoc-opt model.onnx`, or `-f onnx` on stdin), and the `--input-shape`
option byoc-opt and byoc-run share."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context

from byoc.diagnostics import (
    Diagnostic,
    LocatingFrontend,
    ParsedSource,
    SourceError,
    describe_exception,
)

if TYPE_CHECKING:
    from byoc.frontend.onnx.errors import UnknownInputError

INPUT_SHAPE_SYNTAX = "NAME=DxDx..."
"""The value of `--input-shape`: a graph input's name and its dims joined by `x`."""


def parse_input_shapes(specs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """`--input-shape` values (`x=1x3x224x224`, one per input) as the importer's
    `input_shapes`; a malformed value, or one input given two shapes, is a ValueError."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError(spec)
            shape = tuple(int(d) for d in dims.split("x"))
        except ValueError:
            raise ValueError(
                f"--input-shape {spec!r}: expected {INPUT_SHAPE_SYNTAX}, e.g. x=1x3x224x224"
            ) from None
        if shapes.get(name, shape) != shape:
            raise ValueError(f"--input-shape: input '{name}' is given two shapes")
        shapes[name] = shape
    return shapes


def unknown_input_message(error: UnknownInputError) -> str:
    """The command line's words for an `--input-shape` that names no input of the model."""
    plural = "s" if len(error.unknown) > 1 else ""
    return (
        f"--input-shape: model has no input{plural} {', '.join(repr(n) for n in error.unknown)}; "
        f"inputs: {', '.join(error.inputs) or '(none)'}"
    )


@dataclass(frozen=True)
class ONNXFrontend(LocatingFrontend):
    """The ONNX importer as an xDSL frontend; a model has no text, so errors name the file only."""

    name = "onnx"

    input_shapes: tuple[str, ...] = ()
    """Static shapes for graph inputs, as `--input-shape` values (`NAME=DxDx...`)."""

    def parse_source(
        self, ctx: Context, data: bytes, name: str, line_offset: int = 0
    ) -> ParsedSource:
        def fail(message: str) -> SourceError:
            return SourceError([Diagnostic("error", message, name)])

        try:
            from byoc.frontend.onnx import (
                OnnxImportError,
                OnnxMissing,
                UnknownInputError,
                import_model,
            )
        except ImportError as e:
            raise fail(
                f"cannot read ONNX models: the ONNX frontend failed to load ({e}); "
                "install it with the 'onnx' extra (pip install 'byoc[onnx]')"
            ) from None
        try:
            shapes = parse_input_shapes(self.input_shapes)
        except ValueError as e:
            raise fail(str(e)) from None
        # a path lets onnx find tensors stored next to the model (external data)
        model = name if os.path.isfile(name) else data
        try:
            module = import_model(model, input_shapes=shapes or None)
        except OnnxMissing as e:
            raise fail(str(e)) from None
        except UnknownInputError as e:
            raise fail(unknown_input_message(e)) from None
        except OnnxImportError as e:  # its message names the node: no class name needed
            raise fail(f"cannot import the ONNX model: {e}") from None
        except Exception as e:
            raise fail(f"cannot import the ONNX model: {describe_exception(e)}") from None
        return ParsedSource.of_module(module, name, textual=False)
