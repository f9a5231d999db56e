"""The input formats of byoc-opt: name (the file extension) -> lazy import of its
`xdsl.utils.frontend.Frontend`; the module is imported only when such input is read."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.utils.frontend import Frontend


def _lazy(module: str, cls: str) -> Callable[[], type[Frontend]]:
    def factory() -> type[Frontend]:
        return getattr(import_module(module), cls)

    return factory


ALL_FRONTENDS: dict[str, Callable[[], type[Frontend]]] = {
    "mlir": _lazy("byoc.frontend.mlir", "MLIRFrontend"),
    "onnx": _lazy("byoc.frontend.onnx_frontend", "ONNXFrontend"),
    "examplejson": _lazy("byoc.frontend.examplejson", "ExampleJsonFrontend"),
    "pt2": _lazy("byoc.frontend.torch.pt2", "Pt2Frontend"),
}
