"""lower-to-c's storage: where each value of a partition lives (an argument, a constant,
or a slice of the per-thread workspace), planned once by liveness."""

from __future__ import annotations

from dataclasses import dataclass

from byoc.lowering.nn_to_c.fusion import KernelPlan
from byoc.lowering.nn_to_c.graph import Computation, GraphBuilder, Tensor

ALIGN = 64
"""Byte alignment of every workspace buffer."""


@dataclass
class Storage:
    kind: str
    """'input' (arg #), 'output' (result #), 'const' (global name) or 'buffer' (offset, size)."""
    index: int = 0
    name: str = ""
    offset: int = 0
    size: int = 0


def bind_outputs(g: GraphBuilder) -> tuple[dict[Tensor, Storage], list[tuple[Tensor, int]]]:
    """Results computed here are written straight into the output tensors; any other
    result (an input, a constant, a value returned twice) is copied there at the end:
    (storage so far, (value, output #) copies)."""
    storage: dict[Tensor, Storage] = {}
    for v in g.inputs:
        storage[v] = Storage("input", v.arg)
    copies: list[tuple[Tensor, int]] = []
    for j, v in enumerate(g.outputs):
        r = v.root()
        if r.kind == "node" and r not in storage:
            storage[r] = Storage("output", j)
        else:
            copies.append((r, j))
    return storage, copies


def copy_plans(copies: list[tuple[Tensor, int]], storage: dict[Tensor, Storage]) -> list[KernelPlan]:
    """A copy into output #j for each value `bind_outputs` could not compute in place."""
    steps: list[KernelPlan] = []
    for r, j in copies:
        out = Tensor(r.shape, r.dtype, "node")
        storage[out] = Storage("output", j)
        node = Computation("copy", "copy", [r], out)
        steps.append(KernelPlan([node], [r], [out]))
    return steps


def plan_buffers(steps: list[KernelPlan], storage: dict[Tensor, Storage], reuse: bool) -> int:
    """Place every intermediate in the workspace; return its size. With `reuse` (fused
    mode) a buffer is reused once its last reader has run (first fit by address); without,
    each gets its own. Offsets are multiples of ALIGN."""
    last_read: dict[Tensor, int] = {}
    for s, step in enumerate(steps):
        for r in step.reads:
            last_read[r] = s
    live: list[tuple[int, int, int]] = []  # (offset, end, last step)
    top = 0
    for s, step in enumerate(steps):
        if reuse:
            live = [blk for blk in live if blk[2] >= s]
        for v in [*step.writes, *step.scratch]:
            if v in storage:
                continue
            size = -(-v.nbytes // ALIGN) * ALIGN
            offset = 0
            for start, end, _ in sorted(live):
                if offset + size <= start:
                    break
                offset = max(offset, end)
            storage[v] = Storage("buffer", offset=offset, size=v.nbytes)
            live.append((offset, offset + size, last_read.get(v, s)))
            top = max(top, offset + size)
    return top
