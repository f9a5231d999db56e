"""The one stable topological sort of the project."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence


class CycleError(ValueError):
    """The graph given to `stable_topological_order` has a cycle."""

    def __init__(self, message: str, waiting: list[int]):
        super().__init__(message)
        self.waiting = waiting
        """The nodes that never became ready, in increasing order."""


def stable_topological_order(
    preds: Sequence[Iterable[int]], key: Sequence[int] | None = None
) -> list[int]:
    """Nodes `0..len(preds)-1`, each after its predecessors `preds[v]`.

    Among the nodes ready at a step, the one with the smallest `key` (default:
    its number) comes first, so a graph already in order keeps it and ties are
    broken the same way every run. A predecessor listed twice is fine. Raises
    `CycleError` if the graph has a cycle. O((nodes + edges) log nodes).
    """
    n = len(preds)
    rank = key if key is not None else range(n)
    waiting = [0] * n
    succs: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        for p in ps:
            succs[p].append(v)
            waiting[v] += 1
    ready = [(rank[v], v) for v in range(n) if waiting[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for s in succs[v]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (rank[s], s))
    if len(order) != n:
        stuck = [v for v in range(n) if waiting[v] > 0]
        raise CycleError(f"the graph has a cycle; nodes still waiting: {stuck[:5]}", stuck)
    return order
