"""An ONNX model in (`byoc-opt model.onnx`, or `-f onnx` on stdin)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from xdsl.context import Context

from byoc.diagnostics import (
    Diagnostic,
    LocatingFrontend,
    ParsedSource,
    SourceBuffer,
    SourceError,
    describe_exception,
)


@dataclass(frozen=True)
class ONNXFrontend(LocatingFrontend):
    """The ONNX importer as an xDSL frontend; a model has no text, so errors name the file only."""

    name = "onnx"

    def parse_source(
        self, ctx: Context, data: bytes, name: str, line_offset: int = 0
    ) -> ParsedSource:
        def fail(message: str) -> SourceError:
            return SourceError([Diagnostic("error", message, name)])

        try:
            from byoc.frontend.onnx import OnnxMissing, import_model
        except ImportError as e:
            raise fail(
                f"cannot read ONNX models: the ONNX frontend failed to load ({e}); "
                "install it with the 'onnx' extra (pip install 'byoc[onnx]')"
            ) from None
        # a path lets onnx find tensors stored next to the model (external data)
        model = name if os.path.isfile(name) else data
        try:
            module = import_model(model)
        except OnnxMissing as e:
            raise fail(str(e)) from None
        except Exception as e:
            raise fail(f"cannot import the ONNX model: {describe_exception(e)}") from None
        return ParsedSource(module, SourceBuffer(name, ""), {}, textual=False)
