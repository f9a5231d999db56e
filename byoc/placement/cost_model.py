"""`placement="cost-model"`: unit times from a model fitted on cached measurements.

Per (target, unit kind), a least-squares fit of the cached one-unit times on the unit's
features, `seconds ~ a + b * flops + c * bytes`, with every coefficient kept non-negative
(a negative one would price some shape below zero). With fewer than three samples of a
kind, the fit is a single ratio, `seconds ~ r * (flops + bytes)`. A (target, kind) with no
sample cannot be priced: `predict` returns None and the caller places that unit by priority.
The samples are the cache's entries of this machine, thread count and byoc version
(`MeasurementCache.samples`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class KindModel:
    coefficients: tuple[float, float, float]
    """(a, b, c) of `a + b * flops + c * bytes`."""
    samples: int

    def __call__(self, flops: float, nbytes: float) -> float:
        a, b, c = self.coefficients
        return a + b * flops + c * nbytes


def fit_kind(points: list[tuple[float, float, float]]) -> KindModel:
    """The model of one (target, kind) from `(flops, bytes, seconds)` points."""
    x = np.array([[1.0, f, b] for f, b, _ in points])
    y = np.array([s for _, _, s in points])
    if len(points) >= 3:
        scale = np.maximum(np.abs(x).max(axis=0), 1e-30)
        coef, *_ = np.linalg.lstsq(x / scale, y, rcond=None)
        coef = coef / scale
        if np.all(coef >= 0):
            return KindModel((float(coef[0]), float(coef[1]), float(coef[2])), len(points))
    work = x[:, 1] + x[:, 2]
    ratio = float(np.sum(y * work) / max(np.sum(work * work), 1e-30))
    return KindModel((0.0, ratio, ratio), len(points))


@dataclass(frozen=True)
class CostModel:
    models: Mapping[tuple[str, str], KindModel]
    call_cost: Mapping[str, float]
    """Per target: the least cached call cost (the probe partition's time)."""

    @staticmethod
    def fit(samples: Iterable[Mapping[str, Any]]) -> CostModel:
        points: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        calls: dict[str, float] = {}
        for s in samples:
            target, kind = s.get("target"), s.get("kind")
            seconds = s.get("seconds")
            if not isinstance(target, str) or not isinstance(kind, str):
                continue
            if not isinstance(seconds, int | float):
                continue
            if kind == "call":
                calls[target] = min(calls.get(target, float("inf")), float(seconds))
                continue
            flops, nbytes = s.get("flops", 0.0), s.get("bytes", 0)
            points.setdefault((target, kind), []).append((float(flops), float(nbytes), float(seconds)))
        return CostModel({k: fit_kind(v) for k, v in points.items()}, calls)

    def predict(self, target: str, kind: str, flops: float, nbytes: float) -> float | None:
        model = self.models.get((target, kind))
        return None if model is None else max(model(flops, nbytes), 0.0)


__all__ = ["CostModel", "KindModel", "fit_kind"]
