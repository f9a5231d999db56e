"""`-t` output formats of byoc-opt: name -> lazy `(module, stream) -> None` emitter."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import IO

from xdsl.dialects.builtin import ModuleOp

Emitter = Callable[[ModuleOp, IO[str]], None]


def _lazy(module: str, fn: str) -> Callable[[], Emitter]:
    def factory() -> Emitter:
        return getattr(import_module(module), fn)

    return factory


# "mlir" is xDSL's own printer and handled by the driver.
ALL_EMITTERS: dict[str, Callable[[], Emitter]] = {
    "dot": _lazy("byoc.lowering.emit_dot", "emit_dot"),
    "c": _lazy("byoc.lowering.emit_c", "emit_c"),
    "examplejson": _lazy("byoc.lowering.emit_examplejson", "emit_examplejson"),
}
