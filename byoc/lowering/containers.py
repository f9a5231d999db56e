"""The top-level container op a lowering collects its output in (`examplejson.module`,
`graph.module`): one per module, found or added at its end."""

from __future__ import annotations

from typing import TypeVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint, Rewriter

C = TypeVar("C", bound=Operation)


def container_of(module: ModuleOp, cls: type[C]) -> C:
    """The module's top-level op of class `cls`, added (empty) at its end if there is none."""
    for op in module.ops:
        if isinstance(op, cls):
            return op
    container = cls()
    Rewriter.insert_op(container, InsertPoint.at_end(module.body.block))
    return container


__all__ = ["container_of"]
