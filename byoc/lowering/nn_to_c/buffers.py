"""lower-to-c's storage: where each value of a partition lives (an argument, a constant,
a slice of another value's storage, or a slice of the per-thread workspace), planned once by
liveness."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr

from byoc.lowering.nn_to_c.fusion import KernelPlan
from byoc.lowering.nn_to_c.graph import Computation, GraphBuilder, Tensor, i32_attr

ALIGN = 64
"""Byte alignment of every workspace buffer."""


@dataclass
class Storage:
    kind: str
    """'input' (arg #), 'output' (result #), 'const' (global name), 'buffer' (offset, size) or
    'slice' (`offset` elements into the storage of `base`: a concatenation's input computed in
    place, `place_concat_inputs`)."""
    index: int = 0
    name: str = ""
    offset: int = 0
    size: int = 0
    base: Tensor | None = None


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


def concat_parts(node: Computation) -> tuple[int, list[int]] | None:
    """(axis, indices of the inputs it copies unchanged) of a concatenation step's node: the
    float `concat` (every input), or a kernel that declares `params['concat']` (the int8
    `byoc_qconcat<n>`: the inputs without a table); None for any other node."""
    if node.kind == "concat":
        return node.params["axis"], list(range(len(node.inputs)))
    spec = node.params.get("concat")
    if spec is None:
        return None
    return spec["axis"], list(spec["copied"])


def place_concat_inputs(steps: list[KernelPlan], storage: dict[Tensor, Storage]) -> list[KernelPlan]:
    """Concatenation in place: an input of a concatenation whose slice of the output is one
    contiguous range (every axis before the concatenation's is 1) and that a step of this
    partition stores as a dense tensor is given that slice as its storage, so its producer
    writes it there and the concatenation no longer copies it. Not placed: a partition input,
    constant or output (its storage is fixed), a value the concatenation reads twice, a value
    already placed in another concatenation, a different element type. Nested concatenations
    chain (a slice of a slice). The float concatenation drops the placed inputs from its reads
    (its step disappears when every input is placed); the int8 kernel gets their bits set in
    its mask (`byoc_qconcat<n>`: bit 8 + k, input k is already in place) and its table
    constant as their (unread) pointer. Each value is still
    written once, by its producer, and read only after: a slice is live, as part of its base,
    from the first write into the base to the base's last read (`plan_buffers`)."""
    written = {w for step in steps for w in step.writes}
    out: list[KernelPlan] = []
    for step in steps:
        node = step.nodes[0]
        parts = concat_parts(node) if len(step.nodes) == 1 else None
        if parts is None:
            out.append(step)
            continue
        axis, copied = parts
        shape = node.out.shape
        if math.prod(shape[:axis]) != 1:
            out.append(step)
            continue
        roots = [v.root() for v in node.inputs]
        placed: list[int] = []
        offset = 0
        for k, (v, r) in enumerate(zip(node.inputs, roots, strict=True)):
            if (
                k in copied
                and r.kind == "node"
                and r not in storage
                and r in written
                and roots.count(r) == 1
                and r.dtype == node.out.dtype
                and r.numel == v.numel
            ):
                storage[r] = Storage("slice", offset=offset, size=r.nbytes, base=node.out)
                placed.append(k)
            offset += v.numel
        if not placed:
            out.append(step)
            continue
        node.params["in_place"] = placed
        if len(placed) == len(roots):
            continue  # every input is in place: nothing left to copy
        if node.kind == "concat":
            kept = {roots[k] for k in range(len(roots)) if k not in placed}
            step.reads = [r for r in step.reads if r in kept]
        else:
            bits = sum(1 << (8 + k) for k in placed)
            mask = node.args[-1]
            assert isinstance(mask, IntegerAttr)
            node.args[-1] = i32_attr(int(mask.value.data) | bits)
            # The kernel never reads a placed input, but its call still passes a pointer there:
            # not the slice (inside the output: two restrict arguments at one address), the
            # kernel's last operand (its table constant) instead.
            stand_in = node.inputs[-1]
            for k in placed:
                node.inputs[k] = stand_in
            kept = {v.root() for v in node.inputs}
            step.reads = [r for r in step.reads if r in kept]
        out.append(step)
    return out


def storage_root(v: Tensor, storage: dict[Tensor, Storage]) -> tuple[Tensor, int]:
    """(the value whose own storage holds v, v's element offset into it)."""
    offset = 0
    st = storage.get(v)
    while st is not None and st.kind == "slice":
        assert st.base is not None
        offset += st.offset
        v = st.base
        st = storage.get(v)
    return v, offset


def plan_buffers(steps: list[KernelPlan], storage: dict[Tensor, Storage], reuse: bool) -> int:
    """Place every intermediate in the workspace; return its size. With `reuse` (fused
    mode) a buffer is reused once its last reader has run (first fit by address); without,
    each gets its own. Offsets are multiples of ALIGN. A value placed in a concatenation's
    output (`place_concat_inputs`) lives in its base's buffer: the base is allocated at the
    first write of any value it holds and lives until the last read of any of them."""
    last_read: dict[Tensor, int] = {}  # the last step that reads or writes (a slice: its base)
    for s, step in enumerate(steps):
        for r in [*step.reads, *step.writes]:
            base = storage_root(r, storage)[0]
            last_read[base] = max(last_read.get(base, s), s)
    live: list[tuple[int, int, int]] = []  # (offset, end, last step)
    top = 0
    for s, step in enumerate(steps):
        if reuse:
            live = [blk for blk in live if blk[2] >= s]
        for v in [*step.writes, *step.scratch]:
            v = storage_root(v, storage)[0]
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
