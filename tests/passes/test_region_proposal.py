"""The pure parts of merge-compiler-regions: propose_regions, validate_region, condensation_order.

Graphs are written as (targets, preds) with nodes numbered in topological order;
a group is named by its first node.
"""

from __future__ import annotations

import pytest

from byoc.passes.region_proposal import (
    CycleError,
    RegionGraph,
    condensation_order,
    propose_regions,
    validate_region,
)

T = "t"
S = "s"


def graph(targets: list[str | None], preds: list[list[int]]) -> RegionGraph:
    return RegionGraph(list(targets), [list(p) for p in preds])


def groups(g: RegionGraph) -> list[list[int]]:
    """The proposal as sorted lists of members."""
    by: dict[int, list[int]] = {}
    for v, gid in enumerate(propose_regions(g)):
        if gid >= 0:
            by.setdefault(gid, []).append(v)
    return sorted(by.values())


def test_chain_is_one_group() -> None:
    # 0 -> 1 -> 2, all T (the seed: add -> subtract -> multiply)
    assert groups(graph([T, T, T], [[], [0], [1]])) == [[0, 1, 2]]


def test_host_op_in_the_middle_splits_the_chain() -> None:
    # 0(T) -> 1(host) -> 2(T)
    assert groups(graph([T, None, T], [[], [0], [1]])) == [[0], [2]]


def test_diamond_keeps_the_add_apart() -> None:
    # a=abs(x) T, b=relu(a) T, c=tanh(a) host, d=add(b, c) T
    g = graph([None, T, T, None, T], [[], [0], [1], [1], [2, 3]])
    assert groups(g) == [[1, 2], [4]]


def test_siblings_sharing_an_input_merge() -> None:
    # x(host) -> 1(T), x -> 2(T): TVM never merged these
    assert groups(graph([None, T, T], [[], [0], [0]])) == [[1, 2]]


def test_independent_ops_merge() -> None:
    assert groups(graph([T, T], [[], []])) == [[0, 1]]


def test_three_branches_two_supported_chains() -> None:
    # x -> relu -> abs (T), x -> tanh -> exp (T), x -> sigmoid (host)
    g = graph([None, T, T, T, T, None], [[], [0], [1], [0], [3], [0]])
    assert groups(g) == [[1, 2, 3, 4]]


def test_two_targets_never_form_a_cycle() -> None:
    # x1(T) -> y1(S); y2(S) -> x2(T): {x1,x2} and {y1,y2} would be a cycle
    g = graph([T, S, S, T], [[], [], [0], [1]])
    proposal = propose_regions(g)
    condensation_order(g, proposal)  # no CycleError
    assert groups(g) == [[0, 3], [1], [2]] or groups(g) == [[0], [1, 2], [3]]


def test_later_join_makes_an_older_group_reachable() -> None:
    # The case that needs marks pushed forward: node 4 joins T's group {0}, which
    # makes S's latest group {1} reach 2 (a successor of 0) -> 5 (S) is blocked.
    #   0(T) -> 2(host) -> 5(S)
    #   1(S) -> 3(host) -> 4(T)
    g = graph([T, S, None, None, T, S], [[], [], [0], [1], [3], [2]])
    proposal = propose_regions(g)
    assert proposal[4] == proposal[0]
    assert proposal[5] != proposal[1]
    condensation_order(g, proposal)


def test_every_group_is_valid_and_groups_are_maximal() -> None:
    # A mixed graph: every proposed group passes validate_region, no two groups
    # of a target pass it together.
    targets: list[str | None] = [None, T, S, T, None, S, T, T, None, S, T]
    preds = [[], [0], [0], [1, 2], [3], [4], [2], [5, 6], [7], [1], [8, 9]]
    g = graph(targets, preds)
    proposal = propose_regions(g)
    by: dict[int, list[int]] = {}
    for v, gid in enumerate(proposal):
        if gid >= 0:
            by.setdefault(gid, []).append(v)
    for members in by.values():
        assert validate_region(g, members)
    same_target = [
        (a, b) for a in by.values() for b in by.values() if a < b and targets[a[0]] == targets[b[0]]
    ]
    for a, b in same_target:
        assert not validate_region(g, a + b), (a, b)
    condensation_order(g, proposal)


def test_proposal_is_deterministic() -> None:
    g = graph([None, T, S, T, None, S, T], [[], [0], [0], [1, 2], [3], [4], [5]])
    assert propose_regions(g) == propose_regions(g)


def test_validate_region() -> None:
    # 0 -> 1 -> 2 and 0 -> 2
    g = graph([T, None, T], [[], [0], [0, 1]])
    assert not validate_region(g, [0, 2])  # 0 -> 1 -> 2 leaves and comes back
    assert validate_region(g, [0, 1, 2])
    assert validate_region(g, [1, 2])
    assert validate_region(g, [])


def test_condensation_order_is_topological_and_stable() -> None:
    g = graph([T, None, T, None], [[], [], [0], [2]])
    order = condensation_order(g, [0, -1, 0, -1])
    assert order == [[0, 2], [1], [3]]


def test_condensation_order_rejects_a_cycle() -> None:
    g = graph([T, None, T], [[], [0], [1]])
    with pytest.raises(CycleError, match="cycle"):
        condensation_order(g, [0, -1, 0])


def test_graph_must_be_topologically_numbered() -> None:
    with pytest.raises(ValueError, match="topological"):
        RegionGraph([T, T], [[1], []])
