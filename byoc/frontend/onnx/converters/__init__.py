"""The ONNX op -> nn converter table, one module an op family.

A converter is `fn(importer, node) -> outputs`, registered with `@converts("OpType", ...)`;
it returns one value per ONNX output (a numpy array when folded, else an SSA value).
"""

from byoc.frontend.onnx.base import CONVERTERS, Converter, converts
from byoc.frontend.onnx.converters import constants, elementwise, layout, neural  # noqa: F401
from byoc.frontend.onnx.converters import detection as _detection  # noqa: F401, I001
from byoc.frontend.onnx.converters import indexing as _indexing  # noqa: F401, I001 (coverage part B)
from byoc.frontend.onnx.converters import logic as _logic  # noqa: F401
from byoc.frontend.onnx.converters import math as _math  # noqa: F401
from byoc.frontend.onnx.converters import quant as _quant  # noqa: F401, I001
from byoc.frontend.onnx.converters import recurrent as _recurrent  # noqa: F401, I001

SUPPORTED_OPS: frozenset[str] = frozenset(CONVERTERS)
"""The ONNX op types (default domain) the importer converts."""

__all__ = ["CONVERTERS", "SUPPORTED_OPS", "Converter", "converts"]
