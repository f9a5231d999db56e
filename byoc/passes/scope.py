"""What the partitioning passes look at: host functions, their graph blocks, an op's target tag."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation

from byoc.dialects.byoc import COMPILER_ATTR, TARGET_ATTR, RegionOp


def host_functions(module: ModuleOp) -> list[FuncOp]:
    """Every `func.func` of `module` with a body that is not a partition (no `byoc.compiler`)."""
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


def blocks_within(block: Block) -> set[Block]:
    """`block` and every block nested in its ops: an op is within `block` (at any depth) when
    its parent block is one of these. Only ops with regions are descended into."""
    out = {block}
    for op in block.ops:
        for region in op.regions:
            for inner in region.blocks:
                out |= blocks_within(inner)
    return out


def target_of(op: Operation) -> str | None:
    """The target a region is for, or the one an op is tagged for (`byoc.target`); None if
    the op has no tag or a tag that is not a string."""
    if isinstance(op, RegionOp):
        return op.target.data
    attr = op.attributes.get(TARGET_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None
