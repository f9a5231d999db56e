"""merge-compiler-regions: group tagged ops into `byoc.region`s, as large as possible, never cyclic.

Contract:
- Expects ops tagged by annotate-target (`byoc.target`), composites among them;
  an existing `byoc.region` counts as a tagged op of its target.
- Groups the tagged top-level ops of each host function into regions of one
  target such that no data leaves a region and comes back into it. Producer and
  consumer merge, and so do siblings (ops sharing an input, or independent) when
  no path through other ops runs between them. No two regions of one target
  could be merged without a cycle.
- Regions with fewer than `min-ops` non-trivial ops (`region_weight`) go back
  to the host: their ops lose their tag.
- Ops move only as far as regions need (a stable topological order of the
  regions and the other ops). Deterministic; running it twice changes nothing.

    // with nn.abs, nn.relu, nn.add tagged "test"
    %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
    %b = nn.relu %a {byoc.target = "test"} : tensor<4xf32>
    %c = nn.tanh %a : tensor<4xf32>
    %d = nn.add %b, %c {byoc.target = "test"} : tensor<4xf32>
    // becomes (add cannot join: abs -> tanh -> add would leave and re-enter)
    %r:2 = byoc.region "test" -> (tensor<4xf32>, tensor<4xf32>) {
      %a = nn.abs %x {byoc.target = "test"} : tensor<4xf32>
      %b = nn.relu %a {byoc.target = "test"} : tensor<4xf32>
      byoc.yield %a, %b : tensor<4xf32>, tensor<4xf32>
    }
    %c = nn.tanh %r#0 : tensor<4xf32>
    %d = byoc.region "test" -> (tensor<4xf32>) { ... nn.add %r#1, %c ... }

The grouping itself is the pure `byoc.passes.region_proposal`; this module
turns a block into its graph and applies the proposal through the `Rewriter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsolatedFromAbove, IsTerminator

from byoc.diagnostics import PassError
from byoc.dialects.byoc import TARGET_ATTR, CompositeOp, RegionOp, YieldOp
from byoc.passes.region_proposal import RegionGraph, condensation_order, propose_regions
from byoc.passes.scope import blocks_within, host_functions, target_of
from byoc.targets import UnknownTargetError, get_target
from byoc.utils.gc import paused_gc

TRIVIAL_OPS = frozenset({"nn.reshape", "nn.flatten", "nn.constant"})
"""Ops that compute nothing (they relabel a buffer); they do not count towards `min-ops`."""


@dataclass(frozen=True)
class MergeCompilerRegionsPass(ModulePass):
    """Group tagged ops into maximal acyclic `byoc.region`s."""

    name: ClassVar[str] = "merge-compiler-regions"

    min_ops: int = 0
    """Regions with fewer non-trivial ops than this go back to the host (trivial: reshape,
    flatten). Default 0 keeps every region; 1 drops those that only relabel buffers."""

    def __post_init__(self) -> None:
        if self.min_ops < 0:
            raise ValueError(f"min-ops must not be negative, got {self.min_ops}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with paused_gc():
            for func in host_functions(op):
                for block in func.body.blocks:
                    merge_block(block, self.min_ops)


def region_weight(op: Operation) -> int:
    """How many non-trivial ops an op stands for (a composite or region: those in its body)."""
    if isinstance(op, CompositeOp | RegionOp):
        return sum(region_weight(o) for o in op.body.block.ops if not isinstance(o, YieldOp))
    return 0 if op.name in TRIVIAL_OPS else 1


# --------------------------------------------------------------------------
# From IR to the graph
# --------------------------------------------------------------------------


def build_graph(block: Block) -> tuple[list[Operation], RegionGraph]:
    """The top-level ops of `block` (its terminator excluded) as a RegionGraph."""
    nodes = list(block.ops)
    if nodes and nodes[-1].has_trait(IsTerminator):
        nodes.pop()
    position = {id(o): i for i, o in enumerate(nodes)}
    targets: list[str | None] = []
    preds: list[list[int]] = []
    checked: set[str] = set()
    for i, o in enumerate(nodes):
        target = target_of(o)
        if target is not None and target not in checked:
            _check_known(o, target)
            checked.add(target)
        targets.append(target)
        found: set[int] = set()
        for value in _used_values(o):
            if isinstance(value, OpResult):
                p = position.get(id(value.op))
                if p is None and (top := block.find_ancestor_op_in_block(value.op)) is not None:
                    p = position.get(id(top))
                if p is not None and p != i:
                    found.add(p)
        preds.append(sorted(found))
    return nodes, RegionGraph(targets, preds)


def _check_known(op: Operation, target: str) -> None:
    try:
        get_target(target)
    except UnknownTargetError as err:
        raise PassError(op, f"merge-compiler-regions: '{op.name}' is tagged for {err}") from None


def _used_values(op: Operation) -> Sequence[SSAValue]:
    """The values `op` reads: its operands and those of nested ops it is not isolated from."""
    if not op.regions or op.has_trait(IsolatedFromAbove):
        return op.operands
    values = list(op.operands)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                values.extend(_used_values(inner))
    return values


# --------------------------------------------------------------------------
# Applying the proposal
# --------------------------------------------------------------------------


def merge_block(block: Block, min_ops: int = 0) -> int:
    """Group the tagged ops of `block` into regions; return the number of regions."""
    nodes, graph = build_graph(block)
    if all(t is None for t in graph.targets):
        return 0
    group_of = _drop_small(nodes, propose_regions(graph), min_ops)
    tags = {t: StringAttr(t) for t in set(graph.targets) if t is not None}
    regions = 0
    previous: Operation | None = None  # the last op placed; the next goes right after it
    for component in condensation_order(graph, group_of):
        first = nodes[component[0]]
        grouped = group_of[component[0]] >= 0
        if not grouped or (len(component) == 1 and isinstance(first, RegionOp)):
            op = first  # a host op, or an existing region kept as it is
            if grouped:
                regions += 1
            if op.parent is block and (
                op.prev_op is previous if previous is not None else block.first_op is op
            ):
                previous = op  # already in place: most ops do not move
                continue
            op.detach()
        else:
            target = graph.targets[component[0]]
            assert target is not None
            op = _make_region(tags[target], [nodes[v] for v in component])
            regions += 1
        point = InsertPoint.after(previous) if previous is not None else InsertPoint.at_start(block)
        Rewriter.insert_op(op, point)
        previous = op
    for v, o in enumerate(nodes):
        if group_of[v] < 0 and isinstance(o, RegionOp):
            _dissolve(o, InsertPoint.before(o))  # a region sent back to the host
    return regions


def _drop_small(nodes: list[Operation], group_of: list[int], min_ops: int) -> list[int]:
    """Send groups lighter than `min_ops` back to the host (their ops lose their tag)."""
    if min_ops <= 0:
        return group_of
    weight: dict[int, int] = {}
    for v, g in enumerate(group_of):
        if g >= 0:
            weight[g] = weight.get(g, 0) + region_weight(nodes[v])
    out = list(group_of)
    for v, g in enumerate(group_of):
        if g >= 0 and weight[g] < min_ops:
            out[v] = -1
            _untag(nodes[v])
    return out


def _untag(op: Operation) -> None:
    op.attributes.pop(TARGET_ATTR, None)
    if isinstance(op, RegionOp):
        for inner in op.body.block.ops:
            inner.attributes.pop(TARGET_ATTR, None)


def _make_region(target: StringAttr, members: list[Operation]) -> RegionOp:
    """A detached region holding `members` in order; regions among them are flattened into it."""
    body = Block()
    end = InsertPoint.at_end(body)
    pending: list[Operation] = []  # consecutive plain members, inserted together
    for o in members:
        o.detach()
        if isinstance(o, RegionOp):
            if pending:
                Rewriter.insert_op(pending, end)
                pending = []
            _dissolve(o, end)
        else:
            pending.append(o)
    if pending:
        Rewriter.insert_op(pending, end)
    blocks = blocks_within(body)  # an op is in the region when its block is one of these
    escaping = [
        result
        for o in body.ops
        for result in o.results
        if any(use.operation.parent not in blocks for use in result.uses)
    ]
    region = RegionOp.create(
        properties={"target": target},
        result_types=[v.type for v in escaping],
        regions=[Region(body)],
        location=members[0].location,
    )
    for value, result in zip(escaping, region.res, strict=True):
        value.replace_uses_with_if(result, lambda use: use.operation.parent not in blocks)
    Rewriter.insert_op(YieldOp.create(operands=escaping, location=members[0].location), end)
    return region


def _dissolve(region: RegionOp, point: InsertPoint) -> None:
    """Move a region's body to `point`, the values it yielded replacing its results; erase it."""
    body = region.body.block
    terminator = body.last_op
    assert isinstance(terminator, YieldOp)
    yielded = list(terminator.values)
    Rewriter.erase_op(terminator)
    Rewriter.inline_block(body, point)
    for result, value in zip(region.res, yielded, strict=True):
        result.replace_all_uses_with(value)
    Rewriter.erase_op(region)
