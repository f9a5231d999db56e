"""byoc.utils.toposort: the one stable topological sort."""

from __future__ import annotations

import pytest

from byoc.utils.toposort import CycleError, stable_topological_order


def test_an_ordered_graph_keeps_its_order() -> None:
    assert stable_topological_order([[], [0], [0, 1], [2]]) == [0, 1, 2, 3]


def test_ready_nodes_come_by_number_or_key() -> None:
    preds: list[list[int]] = [[2], [], []]
    assert stable_topological_order(preds) == [1, 2, 0]
    assert stable_topological_order(preds, key=[0, 9, 5]) == [2, 0, 1]


def test_a_predecessor_listed_twice_counts_once() -> None:
    assert stable_topological_order([[1, 1], []]) == [1, 0]


def test_a_cycle_names_the_nodes_left_waiting() -> None:
    with pytest.raises(CycleError, match="cycle") as info:
        stable_topological_order([[], [2], [1], [2]])
    assert info.value.waiting == [1, 2, 3]
