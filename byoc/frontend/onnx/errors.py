"""The errors of the ONNX importer."""

from __future__ import annotations


class OnnxImportError(Exception):
    """The model cannot be imported: it is malformed, or an op fails its type relation."""

    def __init__(self, message: str, *, node: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        """Where it happened: `node 'conv1' (Conv-11)`; set by the importer."""

    def __str__(self) -> str:
        return f"{self.node}: {self.message}" if self.node else self.message


class UnknownInputError(OnnxImportError):
    """`input_shapes` names something that is not an input of the graph."""

    def __init__(self, unknown: list[str], inputs: list[str]) -> None:
        self.unknown = unknown
        """The names given that the graph has no input of, in the order given."""
        self.inputs = inputs
        """The graph's inputs (initializers excluded), in the graph's order."""
        super().__init__(
            f"input_shapes names no graph input {', '.join(repr(n) for n in unknown)}; "
            f"inputs: {', '.join(inputs) or '(none)'}"
        )


class UnsupportedOnnxError(OnnxImportError):
    """A valid model uses an op type, attribute value or element type outside the supported subset."""


class StaticValueRequired(UnsupportedOnnxError):
    """An input the importer must know (a shape, pads, axes, ...) is only known at run time."""

    def __init__(self, message: str, *, input_name: str | None = None, node: str | None = None):
        super().__init__(message, node=node)
        self.input_name = input_name
        """The graph input the value is, when it is one (bind it with `bind_inputs`)."""


STATIC_SHAPE_HINT = (
    "give the graph inputs static shapes with --input-shape NAME=DxDx... (byoc-opt, byoc-run) "
    "or input_shapes={...} (import_model, byoc.import_onnx)"
)
"""How to make a dynamic (?) dim static, on the command line and in Python."""

INSTALL_HINT = "pip install 'byoc[onnx]'"
"""How to get the `onnx` package the frontend reads models with (the `onnx` extra)."""


class OnnxMissing(ImportError):
    """The `onnx` package, which reads the model files, is not installed or fails to load."""
