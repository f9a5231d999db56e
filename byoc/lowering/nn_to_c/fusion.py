"""lower-to-c's fusion and scheduling: which nodes share one loop nest, in which order the
resulting steps run, and what each step reads and stores."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from byoc.lowering.nn_to_c.graph import Computation, Tensor, reads_whole
from byoc.utils.toposort import stable_topological_order


@dataclass(eq=False)
class KernelPlan:
    """What one kernel function computes: a fused group of nodes, or one node."""

    nodes: list[Computation]
    reads: list[Tensor] = field(default_factory=list[Tensor])
    """Storage roots read, in first-use order."""
    writes: list[Tensor] = field(default_factory=list[Tensor])
    """Values stored."""
    scratch: list[Tensor] = field(default_factory=list[Tensor])
    """Workspace the step's kernel uses only while it runs."""


def _consumers(nodes: list[Computation]) -> dict[Computation, list[Computation]]:
    users: dict[Computation, list[Computation]] = {n: [] for n in nodes}
    for n in nodes:
        for v in n.inputs:
            p = v.root().node
            if p is not None and n not in users[p]:
                users[p].append(n)
    return users


def _producers(n: Computation) -> list[Computation]:
    out: list[Computation] = []
    for v in n.inputs:
        p = v.root().node
        if p is not None and p not in out:
            out.append(p)
    return out


def fuse_groups(nodes: list[Computation], fuse: bool) -> list[list[Computation]]:
    """Group pointwise nodes with their pointwise producers of the same shape, never making a cycle.

    A producer joins its consumer's group only if the consumer reads it whole
    (not broadcast, not through a strided view or a gather). Groups are returned in an order that respects every
    dependency between them.
    """
    if not fuse:
        return [[n] for n in nodes]
    users = _consumers(nodes)
    group_of: dict[Computation, int] = {}
    groups: dict[int, list[Computation]] = {}
    next_id = itertools.count()
    for n in nodes:
        gid = next(next_id)
        members: list[Computation] = [n]
        if n.kind == "pointwise":
            candidates: list[int] = []
            for v, view in zip(n.inputs, n.views, strict=True):
                p = v.node  # an alias breaks fusion: its producer is read through a reshape
                if (
                    p is not None
                    and v.alias_of is None
                    and p.kind == "pointwise"
                    and p.out.shape == n.out.shape
                    and reads_whole(view, n.out.shape)
                    and group_of[p] not in candidates
                ):
                    candidates.append(group_of[p])
            chosen: list[int] = []
            for g in candidates:
                if not _creates_cycle(set(chosen + [g]), n, groups, group_of, users):
                    chosen.append(g)
            for g in chosen:
                members = groups.pop(g) + members
        groups[gid] = sorted(members, key=lambda m: m.index)
        for m in groups[gid]:
            group_of[m] = gid
    return _schedule(list(groups.values()))


def _creates_cycle(
    merged: set[int],
    node: Computation,
    groups: dict[int, list[Computation]],
    group_of: dict[Computation, int],
    users: dict[Computation, list[Computation]],
) -> bool:
    """Would fusing the groups `merged` and `node` into one make a cycle between groups?

    That is: can a path leave the merged set and come back through other
    groups (each group runs as one step, so a path into any member of a group
    reaches all of it)? Every existing group holds only nodes before `node`.
    """
    members = [m for g in merged for m in groups[g]] + [node]

    def successors(group_members: list[Computation]) -> set[int]:
        return {group_of[u] for m in group_members for u in users[m] if u in group_of}

    producers = {
        group_of[p] for m in members for p in _producers(m) if p in group_of and group_of[p] not in merged
    }
    if not producers:
        return False
    frontier = [g for g in successors(members) if g not in merged]
    seen: set[int] = set()
    while frontier:
        g = frontier.pop()
        if g in seen:
            continue
        if g in producers:
            return True
        seen.add(g)
        frontier.extend(h for h in successors(groups[g]) if h not in merged and h not in seen)
    return False


def _schedule(groups: list[list[Computation]]) -> list[list[Computation]]:
    """A topological order of the groups (ties: the group whose first node came first)."""
    of: dict[Computation, int] = {}
    for gi, g in enumerate(groups):
        for m in g:
            of[m] = gi
    deps: list[set[int]] = [set() for _ in groups]
    for gi, g in enumerate(groups):
        for m in g:
            for p in _producers(m):
                if of[p] != gi:
                    deps[gi].add(of[p])
    order = stable_topological_order(deps, key=[g[0].index for g in groups])
    return [groups[gi] for gi in order]


def kernel_plans(groups: list[list[Computation]], outputs: Sequence[Tensor]) -> list[KernelPlan]:
    """One step per group: what it reads (storage roots from outside the group) and
    what it must store (values read outside the group or returned)."""
    group_of: dict[Computation, int] = {n: gi for gi, grp in enumerate(groups) for n in grp}
    read_elsewhere: set[Tensor] = {v.root() for v in outputs}
    for gi, grp in enumerate(groups):
        for n in grp:
            for v in n.inputs:
                r = v.root()
                if r.node is not None and group_of.get(r.node) != gi:
                    read_elsewhere.add(r)
    steps: list[KernelPlan] = []
    for gi, grp in enumerate(groups):
        step = KernelPlan(grp)
        for n in grp:
            for v in n.inputs:
                r = v.root()
                # a member read inside its own group (even through a reshape, which has
                # the same element count, hence the same element order) is not a read
                if r.node is not None and group_of.get(r.node) == gi:
                    continue
                if r not in step.reads:
                    step.reads.append(r)
        for n in grp:
            if n.kind != "pointwise" or n.out in read_elsewhere:
                step.writes.append(n.out)
            step.writes.extend(n.more_outs)
            if n.scratch:
                step.scratch.append(Tensor((n.scratch,), "f32", "node"))
        steps.append(step)
    return steps
