"""Random small nn graphs (support/fuzz/differential.py) through the reference, the host,
ccompiler, cblas (+ccompiler) and examplejson: agreement within tests/support/bounds.py, or the
same rejection everywhere. Each graph runs in the fuzz worker, so a crash is counted, not
suffered."""

from __future__ import annotations

from typing import Any

import pytest
from support.fuzz.fuzz_harness import (
    assert_clean,
    env_count,
    print_report,
    run_campaign,
    sanitizer_env,
)

PER_CASE_SECONDS = 300.0


def campaign(first_seed: int, count: int) -> Any:
    cases = [{"seed": s} for s in range(first_seed, first_seed + count)]
    return run_campaign("differential", cases, PER_CASE_SECONDS)


def test_random_graphs_agree_under_sanitizers(tmp_path: Any) -> None:
    """The generated C (ccompiler and cblas partitions, byoc_runtime.h, byoc_kernels.h) built
    with ASan and UBSan and run in a worker that preloads their runtimes: any report
    aborts the worker and counts as a crash."""
    env = sanitizer_env(str(tmp_path / "cache"))
    if env is None:
        pytest.skip("the C compiler has no ASan/UBSan runtime (libasan.so, libubsan.so)")
    cases = [{"seed": s} for s in range(150000, 150000 + env_count("sanitized_short", 3))]
    assert_clean(run_campaign("differential", cases, PER_CASE_SECONDS, env=env))


@pytest.mark.slow
def test_random_graphs_agree_under_sanitizers_long(tmp_path: Any) -> None:
    env = sanitizer_env(str(tmp_path / "cache"))
    if env is None:
        pytest.skip("the C compiler has no ASan/UBSan runtime (libasan.so, libubsan.so)")
    cases = [{"seed": s} for s in range(160000, 160000 + env_count("sanitized_long", 60))]
    report = run_campaign("differential", cases, PER_CASE_SECONDS, env=env)
    print_report(report)
    assert_clean(report)


def test_random_graphs_agree_everywhere_short() -> None:
    assert_clean(campaign(first_seed=140000, count=env_count("differential_short", 3)))


@pytest.mark.slow
def test_random_graphs_agree_everywhere_long() -> None:
    report = campaign(first_seed=0, count=env_count("differential_long", 200))
    print_report(report)
    assert_clean(report)


def test_clip_with_a_nan_bound_agrees_everywhere() -> None:
    # seed 17: a graph with nn.clip(a_min or a_max = NaN); C keeps the other bound
    report = run_campaign("differential", [{"seed": 17}], PER_CASE_SECONDS)
    print_report(report)
    assert report.counts == {"ok": 1}, report.summary()
