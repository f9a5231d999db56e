"""Mutated ONNX models (onnx_cases.py) through the importer, in the fuzz worker: each imports
to a module that prints and parses back, or raises `OnnxImportError`."""

from __future__ import annotations

from typing import Any

import pytest
from fuzz_harness import assert_clean, env_count, run_campaign

PER_CASE_SECONDS = 60.0


def attribute_known(case: dict[str, Any], outcome: str, detail: str) -> str:
    """Issue 14 item 8: unbounded import-time folding (memory, hang) and negative dims
    printed then unparseable, counted apart."""
    if outcome in ("memory", "hang", "unparseable", "crash"):
        return f"known-8-{outcome}"
    return outcome


def campaign(first_seed: int, count: int) -> Any:
    cases = [
        {"seed": s, "mode": ("small", "light")[s % 2]}
        for s in range(first_seed, first_seed + count)
    ]
    return run_campaign("onnx", cases, PER_CASE_SECONDS, attribute_known)


def test_mutated_onnx_models_short() -> None:
    assert_clean(campaign(first_seed=140000, count=env_count("onnx_short", 16)))


@pytest.mark.slow
def test_mutated_onnx_models_long() -> None:
    assert_clean(campaign(first_seed=0, count=env_count("onnx_long", 1000)))
