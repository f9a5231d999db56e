"""The placement search: dynamic programming over the units of a graph in topological order.

    table = CostTable(candidates=[("a", "host"), ("a", "b", "host")], region_time=..., call_cost=...)
    best = search(table)            # best.targets == ("a", "a"), best.segments == ((0, 2, "a"),)

A pure, deterministic function of its cost table (docs/placement.md, "Search"). The units
are numbered in a topological order of the graph; an assignment cuts that order into
segments `[i, j)` and gives each segment one target that accepts all its units. The
modelled time of an assignment is

    sum over segments [i, j) on t of  region_time(i, j, t) + call_cost[t]
                                      + copy_cost[t] * bytes_in(i, j)

and `search` returns an assignment of least modelled time. A contiguous interval of a
topological order is convex (a path between two of its units stays inside it), so every
segment is a region the partitioner can outline without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

HOST = "host"
"""The host executor's name among the candidates: it takes every unit."""


@dataclass(frozen=True)
class CostTable:
    """What the search knows: per unit its candidate targets, and the modelled costs."""

    candidates: Sequence[Sequence[str]]
    """Per unit (in topological order): the targets that can take it, in priority order."""
    region_time: Callable[[int, int, str], float | None]
    """Seconds units `[i, j)` take as one partition of target `t` (the call excluded);
    None when the region cannot be priced (the search then does not use it)."""
    call_cost: Mapping[str, float] = field(default_factory=dict[str, float])
    """Seconds a call of one partition of the target costs (0 when absent; the host's 0)."""
    copy_cost: Mapping[str, float] = field(default_factory=dict[str, float])
    """Seconds per byte entering a partition of the target from outside it (0 when absent)."""
    bytes_in: Callable[[int, int], int] = lambda i, j: 0
    """Bytes of the values units `[i, j)` read that are defined outside them (not constants)."""
    max_segment: int | None = None
    """The longest segment considered (None: no bound)."""


@dataclass(frozen=True)
class Assignment:
    """The search's answer: the target of each unit, its segments and its modelled seconds."""

    targets: tuple[str, ...]
    segments: tuple[tuple[int, int, str], ...]
    """`(i, j, target)`: units `[i, j)` as one partition (for the host: run by the host)."""
    cost: float


def segment_cost(table: CostTable, i: int, j: int, target: str) -> float | None:
    """The modelled seconds of units `[i, j)` as one partition of `target`, None if unpriced."""
    time = table.region_time(i, j, target)
    if time is None:
        return None
    copy = table.copy_cost.get(target, 0.0)
    boundary = table.call_cost.get(target, 0.0) + (copy * table.bytes_in(i, j) if copy else 0.0)
    return time + boundary


def search(table: CostTable) -> Assignment:
    """An assignment of least modelled time among all cuts of the unit order into segments.

    `best[j]` is the least cost of units `[0, j)`; it extends `best[i]` by one segment
    `[i, j)` whose units all accept its target. Segments of one target only grow while
    every unit accepts it, so the work is O(units x longest run x targets) region lookups.
    Ties go to the earlier target in the first unit's priority order, then to the longer
    segment (fewer partitions), so the answer is deterministic.
    """
    n = len(table.candidates)
    best: list[float] = [0.0] + [float("inf")] * n
    choice: list[tuple[int, str] | None] = [None] * (n + 1)
    rank = [{t: k for k, t in enumerate(c)} for c in table.candidates]
    for j in range(1, n + 1):
        open_targets = list(table.candidates[j - 1])
        i = j - 1
        while open_targets and i >= 0:
            if table.max_segment is not None and j - i > table.max_segment:
                break
            for target in open_targets:
                if best[i] == float("inf"):
                    continue
                cost = segment_cost(table, i, j, target)
                if cost is None:
                    continue
                total = best[i] + cost
                if _better(total, i, target, best[j], choice[j], rank[i]):
                    best[j] = total
                    choice[j] = (i, target)
            i -= 1
            if i >= 0:
                open_targets = [t for t in open_targets if t in rank[i]]
    if n and choice[n] is None:
        raise ValueError("placement search: some unit has no candidate that can be priced")
    segments: list[tuple[int, int, str]] = []
    j = n
    while j > 0:
        step = choice[j]
        assert step is not None
        i, target = step
        segments.append((i, j, target))
        j = i
    segments.reverse()
    targets = tuple(t for i, j, t in segments for _ in range(i, j))
    return Assignment(targets, tuple(segments), best[n])


EPSILON = 1e-12
"""Costs closer than this are a tie (float sums in different orders)."""


def _better(
    total: float,
    i: int,
    target: str,
    best: float,
    current: tuple[int, str] | None,
    rank: Mapping[str, int],
) -> bool:
    if current is None or total < best - EPSILON:
        return True
    if total > best + EPSILON:
        return False
    ci, ct = current
    if rank.get(target, 1 << 30) != rank.get(ct, 1 << 30) and ci == i:
        return rank.get(target, 1 << 30) < rank.get(ct, 1 << 30)
    return i < ci  # the longer segment


__all__ = ["HOST", "Assignment", "CostTable", "search", "segment_cost"]
