"""The emitters: byoc-opt's `-t` outputs, name -> lazy import of the emitter class.

An emitter turns a module into text (MLIR, C, ExampleJSON, Graphviz, the graph format).
It subclasses xDSL's `xdsl.utils.target.Target`, which is how xDSL's opt driver spells an
output format; in byoc "target" means only an offload `byoc.targets.Target`. Each emitter
is a frozen dataclass whose fields are its options (`-t 'dot{function=f}'`); its module is
imported only when its output is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.utils.target import Target


def _lazy(module: str, cls: str) -> Callable[[], type[Target]]:
    def factory() -> type[Target]:
        return getattr(import_module(module), cls)

    return factory


ALL_EMITTERS: dict[str, Callable[[], type[Target]]] = {
    "mlir": _lazy("byoc.lowering.emit.mlir", "MLIREmitter"),
    "c": _lazy("byoc.lowering.emit.c", "CEmitter"),
    "examplejson": _lazy("byoc.lowering.emit.examplejson", "ExampleJsonEmitter"),
    "dot": _lazy("byoc.lowering.emit.dot", "DotEmitter"),
    "graph": _lazy("byoc.lowering.emit.graph", "GraphEmitter"),
}
