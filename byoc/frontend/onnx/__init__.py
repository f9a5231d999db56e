"""The ONNX frontend: an ONNX model becomes `nn` IR in `func.func @main`.

    module = import_model("resnet50.onnx")                        # a path
    module = import_model(model_proto, input_shapes={"x": (1, 3, 224, 224)})
    module = import_model_from_bytes(data)                        # serialized bytes

`importer` walks the graph (shapes, constant folding, errors naming the node);
`converters/` holds the table of ONNX op -> nn converters, one module an op family.
"""

from byoc.frontend.onnx.converters import CONVERTERS, SUPPORTED_OPS
from byoc.frontend.onnx.errors import (
    OnnxImportError,
    OnnxMissing,
    StaticValueRequired,
    UnknownInputError,
    UnsupportedOnnxError,
)
from byoc.frontend.onnx.importer import (
    CONVERT_OLD_OPSETS_TO,
    MIN_OPSET,
    import_model,
    import_model_from_bytes,
)

__all__ = [
    "CONVERTERS",
    "CONVERT_OLD_OPSETS_TO",
    "MIN_OPSET",
    "SUPPORTED_OPS",
    "OnnxImportError",
    "OnnxMissing",
    "StaticValueRequired",
    "UnknownInputError",
    "UnsupportedOnnxError",
    "import_model",
    "import_model_from_bytes",
]
