"""Mutated and crafted `.byoc` artifacts through `load_module` and a run, in a worker
process: raw corruption must raise `ArtifactError`; crafted files (valid checksums) must be
rejected with it or load and run without crashing the process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from support.fuzz.artifact_cases import build_artifacts
from support.fuzz.fuzz_harness import (
    Report,
    assert_clean,
    env_count,
    print_report,
    run_campaign,
    seeded_cases,
)

PER_CASE_SECONDS = 30.0


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    directory = tmp_path_factory.mktemp("artifacts")
    old = os.environ.get("BYOC_CACHE_DIR")
    os.environ["BYOC_CACHE_DIR"] = str(directory / "cache")
    try:
        yield build_artifacts(directory)
    finally:
        if old is None:
            del os.environ["BYOC_CACHE_DIR"]
        else:
            os.environ["BYOC_CACHE_DIR"] = old


def attribute_crafted(case: dict[str, Any], outcome: str, detail: str) -> str:
    """A crafted file (valid checksums) must be rejected at load, or load and run without
    crashing; if it loads and computes other outputs it is a consistent tampering (an
    edited plan or constant with recomputed checksums), which checksums cannot detect
    (README, "Artifacts run native code")."""
    if case["mode"] != "bytes" and outcome == "loaded-crafted":
        return "ok-loaded-crafted"
    return outcome


def campaign(paths: list[str], modes: tuple[str, ...], seed: int, count: int) -> Report:
    def make(rng: Any, i: int) -> dict[str, Any]:
        mode = modes[i % len(modes)]
        return {"artifact": paths[i % len(paths)], "mode": mode, "seed": rng.randrange(2**32)}

    return run_campaign(
        "artifact", seeded_cases(seed, count, make), PER_CASE_SECONDS, attribute_crafted
    )


def test_raw_corruption_is_an_artifact_error_short(artifacts: list[str]) -> None:
    assert_clean(campaign(artifacts, ("bytes",), seed=14, count=env_count("artifact_short", 30)))


def test_crafted_artifacts_short(artifacts: list[str]) -> None:
    report = campaign(
        artifacts, ("header", "section"), seed=15, count=env_count("crafted_short", 30)
    )
    assert_clean(report)


@pytest.mark.slow
def test_mutated_and_crafted_artifacts_long(artifacts: list[str]) -> None:
    raw = campaign(artifacts, ("bytes",), seed=1414, count=env_count("artifact_long", 600))
    crafted = campaign(
        artifacts, ("header", "section"), seed=1515, count=env_count("crafted_long", 600)
    )
    print_report(crafted)
    assert_clean(raw)
    assert not crafted.bad(), crafted.summary()


# the crafted files of issue 14 item 4, by name: each must be rejected with ArtifactError
RECIPES = [
    "header-{}",
    "header-[]",
    "header-deep",
    "num_slots-5e8",
    "slot-not-int",
    "offset-nan",
    "library-truncated",
    "constant-one-element",
    "kernel-attr-str",
    "kernel-attr-list",
    "kernel-attr-extra",
    "step-reads-unwritten-slot",
]



@pytest.fixture(scope="module")
def recipe_outcomes(artifacts: list[str]) -> dict[str, str]:
    """Every recipe in one worker: name -> outcome and detail."""
    host_only = artifacts[2]  # its plan has kernel steps to edit
    cases = [
        {
            "artifact": host_only if r.startswith(("kernel-", "step-")) else artifacts[0],
            "mode": "recipe",
            "recipe": r,
            "seed": 0,
        }
        for r in RECIPES
    ]
    outcomes: dict[str, str] = {}

    def record(case: dict[str, Any], outcome: str, detail: str) -> str:
        outcomes[case["recipe"]] = f"{outcome} {detail[:300]}".strip()
        return outcome

    for case in cases:
        record(case, "ok-rejected", "")
    run_campaign("artifact", cases, PER_CASE_SECONDS, record)
    return outcomes


@pytest.mark.parametrize(
    "recipe",
    [
        r
        for r in RECIPES
    ],
)
def test_crafted_artifact_is_rejected(recipe_outcomes: dict[str, str], recipe: str) -> None:
    assert recipe_outcomes[recipe] == "ok-rejected"
