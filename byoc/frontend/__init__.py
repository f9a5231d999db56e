"""The input formats of byoc-opt: name (the file extension) -> lazy import of its
`xdsl.utils.frontend.Frontend`; the module is imported only when such input is read."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.utils.frontend import Frontend

from byoc.utils.lazy import LazyClass

ALL_FRONTENDS: dict[str, Callable[[], type[Frontend]]] = {
    "mlir": LazyClass("byoc.frontend.mlir", "MLIRFrontend", Frontend),
    "onnx": LazyClass("byoc.frontend.onnx_frontend", "ONNXFrontend", Frontend),
    "examplejson": LazyClass("byoc.frontend.examplejson", "ExampleJsonFrontend", Frontend),
    "pt2": LazyClass("byoc.frontend.torch.pt2", "Pt2Frontend", Frontend),
}
