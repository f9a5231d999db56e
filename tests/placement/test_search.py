"""The placement search on hand-made cost tables: exact assignments."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from byoc.placement.search import HOST, CostTable, search, segment_cost


def table_of(
    times: Mapping[str, list[float]],
    candidates: list[tuple[str, ...]],
    *,
    fused: Mapping[tuple[str, int, int], float] | None = None,
    call: Mapping[str, float] | None = None,
    copy: Mapping[str, float] | None = None,
    sizes: list[int] | None = None,
) -> CostTable:
    """Region time: the sum of the units' times on the target, unless `fused` names it."""

    def region_time(i: int, j: int, t: str) -> float | None:
        if fused and (t, i, j) in fused:
            return fused[(t, i, j)]
        return sum(times[t][i:j])

    def bytes_in(i: int, j: int) -> int:
        return sizes[i] if sizes else 0

    return CostTable(candidates, region_time, call or {}, copy or {}, bytes_in)


def test_one_target_everywhere_is_one_segment() -> None:
    cands = [("a", HOST)] * 3
    best = search(table_of({"a": [1, 1, 1], HOST: [5, 5, 5]}, cands, call={"a": 0.5}))
    assert best.targets == ("a", "a", "a")
    assert best.segments == ((0, 3, "a"),)
    assert best.cost == pytest.approx(3.5)


def test_mixing_targets_beats_every_single_target() -> None:
    # a is fast on units 0-1, b on units 2-3; either alone pays 10 on the other half
    times = {"a": [1, 1, 10, 10], "b": [10, 10, 1, 1], HOST: [20] * 4}
    cands = [("a", "b", HOST)] * 4
    table = table_of(times, cands, call={"a": 0.1, "b": 0.1})
    best = search(table)
    assert best.targets == ("a", "a", "b", "b")
    assert best.cost == pytest.approx(4.2)
    for t in ("a", "b"):
        alone = segment_cost(table, 0, 4, t)
        assert alone is not None and alone > best.cost


def test_call_cost_tips_a_unit_to_its_neighbours_target() -> None:
    # unit 1 is slightly faster on b, but a call of a second partition costs more
    times = {"a": [1, 1.2, 1], "b": [3, 1.0, 3], HOST: [9] * 3}
    cands = [("a", "b", HOST)] * 3
    cheap = search(table_of(times, cands, call={"a": 0.01, "b": 0.01}))
    assert cheap.targets == ("a", "b", "a")
    dear = search(table_of(times, cands, call={"a": 0.5, "b": 0.5}))
    assert dear.targets == ("a", "a", "a")


def test_copy_cost_tips_a_choice() -> None:
    # b is faster on unit 1, but its input (1000 bytes) crosses into b's partition
    times = {"a": [1, 2, 1], "b": [5, 1.5, 5], HOST: [9] * 3}
    cands = [("a", "b", HOST)] * 3
    sizes = [0, 1000, 0]
    free = search(table_of(times, cands, sizes=sizes))
    assert free.targets == ("a", "b", "a")
    dear = search(table_of(times, cands, sizes=sizes, copy={"b": 0.001}))
    assert dear.targets == ("a", "a", "a")


def test_a_measured_fused_region_wins_over_its_parts() -> None:
    times = {"a": [2, 2, 2], "b": [1.5, 1.5, 1.5], HOST: [9] * 3}
    cands = [("a", "b", HOST)] * 3
    best = search(table_of(times, cands, fused={("a", 0, 3): 3.0}))
    assert best.targets == ("a", "a", "a")
    assert best.cost == pytest.approx(3.0)


def test_units_a_target_does_not_take_cut_its_segments() -> None:
    times = {"a": [1, 0, 1], HOST: [4, 2, 4]}
    cands = [("a", HOST), (HOST,), ("a", HOST)]
    best = search(table_of(times, cands, call={"a": 0.5}))
    assert best.targets == ("a", HOST, "a")
    assert best.segments == ((0, 1, "a"), (1, 2, HOST), (2, 3, "a"))
    assert best.cost == pytest.approx(5.0)


def test_ties_go_to_the_earlier_target_in_priority_order() -> None:
    times = {"a": [1, 1], "b": [1, 1], HOST: [3, 3]}
    assert search(table_of(times, [("a", "b", HOST)] * 2)).targets == ("a", "a")
    assert search(table_of(times, [("b", "a", HOST)] * 2)).targets == ("b", "b")


def test_unpriced_regions_are_not_used() -> None:
    def region_time(i: int, j: int, t: str) -> float | None:
        if t == "a":
            return None
        return float(j - i) * (1.0 if t == HOST else 0.5)

    best = search(CostTable([("a", "b", HOST)] * 2, region_time))
    assert best.targets == ("b", "b")


def test_no_priced_candidate_is_an_error() -> None:
    with pytest.raises(ValueError, match="no candidate"):
        search(CostTable([("a",)], lambda i, j, t: None))


def test_empty_graph() -> None:
    best = search(CostTable([], lambda i, j, t: 0.0))
    assert best.targets == () and best.cost == 0.0
