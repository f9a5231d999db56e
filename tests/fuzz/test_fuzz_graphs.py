"""Graph blobs of the dnnl and reference engines with one field edited (graph_cases.py),
in artifacts with valid checksums, loaded and run in a worker process: rejected with
`ArtifactError` naming the node, or loaded and run (byoc's own errors at worst); never a
crash or a hang. The sanitized runs build and load the libraries with ASan and UBSan."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.fuzz.fuzz_harness import (
    Report,
    assert_clean,
    env_count,
    run_campaign,
    sanitizer_env,
)
from support.fuzz.graph_cases import RECIPES

from byoc.targets.dnnl import missing_reason

PER_CASE_SECONDS = 30.0
BUILD_SECONDS = 900.0


def targets() -> list[str]:
    return ["graphref"] + ([] if missing_reason() is not None else ["dnnl"])


def campaign(
    directory: Path, seed: int, count: int, env: dict[str, str] | None = None
) -> Report:
    """Build the artifacts in the worker, then `count` seeded single-field edits."""
    names = targets()
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = [{"build": str(directory), "targets": names}]
    cases += [
        {"artifact": str(directory / f"{names[i % len(names)]}.byoc"), "seed": rng.randrange(2**32)}
        for i in range(count)
    ]
    # the first case compiles the engines: its bound is the build's
    first = run_campaign("graph", cases[:1], BUILD_SECONDS, env=env)
    assert first.counts == {"ok-built": 1}, first.summary() + str(first.examples)
    return run_campaign("graph", cases[1:], PER_CASE_SECONDS, env=env)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.mark.skipif(missing_reason() is not None, reason="the recipes edit a dnnl graph")
def test_crafted_graph_recipes_are_rejected_naming_the_node(cache: Path) -> None:
    directory = cache / "artifacts"
    cases: list[dict[str, Any]] = [{"build": str(directory), "targets": ["dnnl"]}]
    cases += [{"artifact": str(directory / "dnnl.byoc"), "recipe": r} for r in RECIPES]
    built = run_campaign("graph", cases[:1], BUILD_SECONDS)
    assert built.counts == {"ok-built": 1}, built.summary()
    report = run_campaign("graph", cases[1:], PER_CASE_SECONDS)
    assert_clean(report)
    assert report.counts == {"ok-rejected": len(RECIPES)}, report.summary()


CRASHED_ONCE: tuple[tuple[str, int, str], ...] = (
    ("dnnl", 1701520195, "ok"),
    ("graphref", 1443152156, "ok-rejected"),
    ("dnnl", 3438314394, "ok-rejected"),
    ("dnnl", 3345042557, "ok"),
)
"""Edits of the seed-31 campaign that ended in SIGSEGV, with the outcome each must have.
None was wrong in itself: the dnnl graph library was the only one to link libgomp, so freeing
the last dnnl module (one that ran, or one whose blob was rejected after its library was
loaded) unloaded libgomp while the worker threads of its last parallel region were still
spinning in it. Which case it hit depended on when the cyclic collector ran."""


@pytest.mark.skipif(missing_reason() is not None, reason="the libgomp threads are oneDNN's")
def test_edits_that_once_crashed_while_libgomp_threads_spin(cache: Path) -> None:
    """Each case's modules are freed before the next case (the worker collects its garbage),
    with two threads per run and libgomp's idle threads spinning without end
    (`OMP_WAIT_POLICY=active`): unloading libgomp under them crashes every time, where the
    campaign crashed in about 1 run in 3."""
    directory = cache / "artifacts"
    env = {"OMP_WAIT_POLICY": "active", "BYOC_NUM_THREADS": "2"}
    cases: list[dict[str, Any]] = [{"build": str(directory), "targets": targets()}]
    cases += [{"artifact": str(directory / f"{t}.byoc"), "seed": s} for t, s, _ in CRASHED_ONCE]
    built = run_campaign("graph", cases[:1], BUILD_SECONDS, env=env)
    assert built.counts == {"ok-built": 1}, built.summary()
    report = run_campaign("graph", cases[1:], PER_CASE_SECONDS, env=env)
    assert_clean(report)
    want = Counter(outcome for _, _, outcome in CRASHED_ONCE)
    assert report.counts == want, report.summary()


def test_single_field_graph_edits_short(cache: Path) -> None:
    assert_clean(campaign(cache, seed=31, count=env_count("graph_short", 200)))


def test_single_field_graph_edits_under_sanitizers_short(cache: Path) -> None:
    env = sanitizer_env(str(cache / "sanitized-cache"))
    if env is None:
        pytest.skip("the C compiler has no ASan/UBSan runtime (libasan.so, libubsan.so)")
    assert_clean(campaign(cache, seed=32, count=env_count("graph_sanitized_short", 40), env=env))


@pytest.mark.slow
def test_single_field_graph_edits_long(cache: Path) -> None:
    assert_clean(campaign(cache, seed=3131, count=env_count("graph_long", 2000)))


@pytest.mark.slow
def test_single_field_graph_edits_under_sanitizers_long(cache: Path) -> None:
    env = sanitizer_env(str(cache / "sanitized-cache"))
    if env is None:
        pytest.skip("the C compiler has no ASan/UBSan runtime (libasan.so, libubsan.so)")
    assert_clean(campaign(cache, seed=3232, count=env_count("graph_sanitized_long", 2000), env=env))
