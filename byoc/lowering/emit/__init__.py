"""The `-t` outputs of byoc-opt: name -> lazy import of its `xdsl.utils.target.Target`.

Each target is a frozen dataclass whose fields are its options (`-t 'dot{function=f}'`);
the module is imported only when its output is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.utils.target import Target


def _lazy(module: str, cls: str) -> Callable[[], type[Target]]:
    def factory() -> type[Target]:
        return getattr(import_module(module), cls)

    return factory


ALL_TARGETS: dict[str, Callable[[], type[Target]]] = {
    "mlir": _lazy("byoc.lowering.emit.mlir", "MLIRTarget"),
    "c": _lazy("byoc.lowering.emit.c", "CTarget"),
    "examplejson": _lazy("byoc.lowering.emit.examplejson", "ExampleJsonTarget"),
    "dot": _lazy("byoc.lowering.emit.dot", "DotTarget"),
    "graph": _lazy("byoc.lowering.emit.graph", "GraphTarget"),
}
