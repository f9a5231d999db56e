"""The emitters: byoc-opt's `-t` outputs, name -> lazy import of the emitter class.

An emitter turns a module into text (MLIR, C, ExampleJSON, Graphviz, the graph format).
It subclasses xDSL's `xdsl.utils.target.Target`, which is how xDSL's opt driver spells an
output format; in byoc "target" means only an offload `byoc.targets.Target`. Each emitter
is a frozen dataclass whose fields are its options (`-t 'dot{function=f}'`); its module is
imported only when its output is asked for.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.utils.target import Target

from byoc.utils.lazy import LazyClass

ALL_EMITTERS: dict[str, Callable[[], type[Target]]] = {
    "mlir": LazyClass("byoc.lowering.emit.mlir", "MLIREmitter", Target),
    "c": LazyClass("byoc.lowering.emit.c", "CEmitter", Target),
    "examplejson": LazyClass("byoc.lowering.emit.examplejson", "ExampleJsonEmitter", Target),
    "dot": LazyClass("byoc.lowering.emit.dot", "DotEmitter", Target),
    "graph": LazyClass("byoc.lowering.emit.graph", "GraphEmitter", Target),
}
