"""The units placement chooses a target for: the top-level ops of `@main` after merge-composite.

A unit is one `nn` op or one composite (a composite of target `t` is a unit `t` owns). Its
candidates are the listed targets that can take it — for an op, those whose predicate
accepts it (`accepting_targets`, annotate-target's logic); for a composite, its own target
and every other listed target that accepts each op inside it (the composite is then
inlined into that target's partition) — and the host, which runs every op.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from byoc.dialects.byoc import CompositeOp, YieldOp
from byoc.dialects.nn import ConstantOp, NNOp
from byoc.passes.annotate_target import TargetSupport
from byoc.passes.scope import host_functions
from byoc.placement.search import HOST


@dataclass(frozen=True)
class Unit:
    """One top-level op of the function placed, with what placement needs to know of it."""

    index: int
    op: Operation
    kind: str
    """The op name, or the composite name (`dnnl.conv2d_bias_act`)."""
    candidates: tuple[str, ...]
    """The targets that can take it, in priority order, then `host`."""
    inputs: tuple[SSAValue, ...]
    """The values it reads that are not constants."""
    flops: float
    """Arithmetic of the unit, roughly (the cost model's feature)."""
    bytes: int
    """Bytes of its inputs and results (the cost model's other feature)."""

    @property
    def owner(self) -> str | None:
        """The target of a composite; None for a plain op."""
        return self.op.target_name if isinstance(self.op, CompositeOp) else None


def main_function(module: ModuleOp) -> FuncOp:
    funcs = host_functions(module)
    for f in funcs:
        if f.sym_name.data == "main":
            return f
    if len(funcs) == 1:
        return funcs[0]
    raise ValueError("placement: the module has no @main to place")


def value_bytes(value: SSAValue) -> int:
    t = value.type
    if not isinstance(t, TensorType):
        return 0
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        return 0
    width = getattr(t.element_type, "bitwidth", 32)
    return math.prod(shape) * max(1, width // 8)


def _constant(value: SSAValue) -> bool:
    return isinstance(value.owner, ConstantOp)


def inner_ops(op: Operation) -> list[Operation]:
    """The computing ops of a unit: itself, or the ops in a composite's body."""
    if isinstance(op, CompositeOp):
        return [
            o
            for o in op.body.block.ops
            if not isinstance(o, ConstantOp | YieldOp)
        ]
    return [op]


def flops_of(op: Operation) -> float:
    """Multiply-adds times two for conv2d / dense / matmul; one per output element otherwise."""
    total = 0.0
    for o in inner_ops(op):
        out = sum(value_bytes(r) / 4 for r in o.results)
        name = o.name
        if name == "nn.conv2d" and len(o.operands) >= 2:
            w = o.operands[1].type
            if isinstance(w, TensorType):
                kshape = w.get_shape()
                total += 2.0 * out * math.prod(kshape[1:])
                continue
        if name in ("nn.dense", "nn.matmul") and o.operands:
            x = o.operands[0].type
            if isinstance(x, TensorType) and x.get_shape():
                total += 2.0 * out * max(1, x.get_shape()[-1])
                continue
        total += out
    return total


def find_units(module: ModuleOp, support: TargetSupport) -> list[Unit]:
    """The units of `@main`, in its block order (a topological order)."""
    func = main_function(module)
    units: list[Unit] = []
    for op in func.body.block.ops:
        if isinstance(op, ConstantOp | ReturnOp):
            continue
        candidates = candidate_targets(op, support)
        inputs = tuple(dict.fromkeys(v for v in op.operands if not _constant(v)))
        size = sum(value_bytes(v) for v in inputs) + sum(value_bytes(r) for r in op.results)
        kind = op.composite.data if isinstance(op, CompositeOp) else op.name
        units.append(
            Unit(len(units), op, kind, (*candidates, HOST), inputs, flops_of(op), size)
        )
    return units


def candidate_targets(op: Operation, support: TargetSupport) -> list[str]:
    """The listed targets that can take `op` (composites: see the module doc)."""
    if not isinstance(op, NNOp | CompositeOp):
        return []
    found = list(support.accepting(op))
    if isinstance(op, CompositeOp):
        inner = inner_ops(op)
        for target, _ in support.support:
            if target in found:
                continue
            if all(
                isinstance(o, NNOp) and target in support.accepting(o) for o in inner
            ):
                found.append(target)
        found.sort(key=[t for t, _ in support.support].index)
    return found


def bytes_entering(units: Sequence[Unit], i: int, j: int) -> int:
    """Bytes of the non-constant values units `[i, j)` read that none of them defines."""
    inside = {r for u in units[i:j] for r in u.op.results}
    seen: set[SSAValue] = set()
    total = 0
    for u in units[i:j]:
        for v in u.inputs:
            if v not in inside and v not in seen:
                seen.add(v)
                total += value_bytes(v)
    return total


class BytesIn:
    """`bytes_entering`, computed once per interval asked for."""

    def __init__(self, units: Sequence[Unit]):
        self.units = units
        self._memo: dict[tuple[int, int], int] = {}

    def __call__(self, i: int, j: int) -> int:
        key = (i, j)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = bytes_entering(self.units, i, j)
        return found


def describe(units: Sequence[Unit]) -> list[dict[str, Any]]:
    """A plain summary of the units (for messages and tests)."""
    return [{"kind": u.kind, "candidates": list(u.candidates)} for u in units]


__all__ = [
    "BytesIn",
    "Unit",
    "bytes_entering",
    "candidate_targets",
    "find_units",
    "flops_of",
    "inner_ops",
    "main_function",
    "value_bytes",
]
