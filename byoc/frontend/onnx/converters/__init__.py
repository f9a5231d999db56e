"""The ONNX op -> nn converter table, one module an op family.

A converter is `fn(importer, node) -> outputs`, registered with `@converts("OpType", ...)`;
it returns one value per ONNX output (a numpy array when folded, else an SSA value).
"""

from byoc.frontend.onnx.base import CONVERTERS, Converter, converts
from byoc.frontend.onnx.converters import (  # noqa: F401
    constants,
    elementwise,
    layout,
    neural,
    quant,  # issue #13
)

SUPPORTED_OPS: frozenset[str] = frozenset(CONVERTERS)
"""The ONNX op types (default domain) the importer converts."""

__all__ = ["CONVERTERS", "SUPPORTED_OPS", "Converter", "converts"]
