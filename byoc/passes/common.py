"""What the partitioning passes share: option normalisation, target checks, the blocks they walk."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, Operation

from byoc.dialects.byoc import COMPILER_ATTR, TARGET_ATTR, RegionOp
from byoc.targets import UnknownTargetError, get_target


def as_names(value: Any) -> tuple[str, ...]:
    """A tuple of names from a CLI tuple, a Python list, or one comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def check_targets(targets: Iterable[str]) -> None:
    """Load every target (registering its predicates); an unknown name is a ValueError."""
    seen: set[str] = set()
    for name in targets:
        if name in seen:
            raise ValueError(f"target '{name}' is listed twice")
        seen.add(name)
        get_target(name)


def host_functions(module: ModuleOp) -> list[FuncOp]:
    """The functions partitioning works on: every `func.func` with a body that is not a partition."""
    return [
        op
        for op in module.ops
        if isinstance(op, FuncOp) and op.body.blocks and COMPILER_ATTR not in op.attributes
    ]


def graph_blocks(func: FuncOp) -> Iterator[Block]:
    """The blocks holding a function's tensor graph: its own, then those of its byoc.regions."""
    for block in func.body.blocks:
        yield block
        for op in block.ops:
            if isinstance(op, RegionOp):
                yield from op.body.blocks


def target_of(op: Operation) -> str | None:
    """The target an op is tagged for (`byoc.target`), or a region's target."""
    if isinstance(op, RegionOp):
        return op.target.data
    attr = op.attributes.get(TARGET_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, StringAttr):
        return None
    return attr.data


def is_known_target(name: str) -> bool:
    try:
        get_target(name)
    except UnknownTargetError:
        return False
    return True


def ancestor_in(op: Operation, block: Block) -> Operation | None:
    """The op of `block` that is `op` or contains it, or None if `op` is not under `block`."""
    current: Operation | None = op
    while current is not None:
        if current.parent is block:
            return current
        current = current.parent_op()
    return None


def erase(op: Operation) -> None:
    """Erase `op`, detaching it first (xDSL only erases detached ops)."""
    if op.parent is not None:
        op.parent.erase_op(op)
    else:
        op.erase()


class AttrCache:
    """Attributes a pass makes many times, built once (xDSL attributes verify on creation)."""

    def __init__(self) -> None:
        self._strings: dict[str, StringAttr] = {}
        self._function_types: dict[
            tuple[tuple[Attribute, ...], tuple[Attribute, ...]], FunctionType
        ] = {}

    def string(self, text: str) -> StringAttr:
        attr = self._strings.get(text)
        if attr is None:
            attr = self._strings[text] = StringAttr(text)
        return attr

    def function_type(
        self, inputs: Sequence[Attribute], outputs: Sequence[Attribute]
    ) -> FunctionType:
        key = (tuple(inputs), tuple(outputs))
        attr = self._function_types.get(key)
        if attr is None:
            attr = self._function_types[key] = FunctionType.from_lists(list(inputs), list(outputs))
        return attr


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the duration of a pass.

    A pass over a large graph makes hundreds of thousands of long-lived objects
    (ops, uses, attributes); each collection in between rescans them all, which
    costs a quarter of the pass time at 20k ops. Reference counting still frees
    what it can; the cycles left (erased ops) are collected once it resumes.
    Nested use is fine: only the outermost pause resumes collection.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
