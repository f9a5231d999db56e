"""Every activation at f32's extremes on every executor that takes it (host, ccompiler,
examplejson, cblas, dnnl, graphref): ±3e38, ±inf, NaN, denormals, the
kinks (±3 of hard_swish) and values whose exp overflows. Expected: the op's formula
evaluated in float64 (where nothing overflows at f32's range) and rounded to f32. Each op
runs alone (the C scalar code, numpy on the host and examplejson, oneDNN's eltwise), as
the epilogue of a 1x1 dense (the fused activation of byoc_kernels and cblas, dnnl's
post-op: one element a row), and as the epilogue of a 1x1 conv2d over 9 copies of the
values (207 pixels of one channel: the epilogue's 4-lane loop, every value in every lane,
then its scalar tail)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import byoc
from byoc.targets.dnnl import missing_reason
from byoc.targets.dnnl.support import ELTWISE_OPS

Array = np.ndarray[Any, Any]

VALUES = np.array(
    [3e38, -3e38, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -1e-40, 0.0, -0.0, 3.0, -3.0,
     2.9, -2.9, 1e10, -1e10, 88.0, -88.0, 100.0, -100.0, 0.5, -0.5],
    dtype=np.float32,
)  # fmt: skip

_erf = np.vectorize(math.erf)
_SQRT_2_PI = math.sqrt(2 / math.pi)


def _where(cond: Array, a: Array, b: Array) -> Array:
    return np.where(cond, a, b)


# op, its properties as written in the IR, the float64 formula
ACTIVATIONS: dict[str, tuple[str, Callable[[Array], Array]]] = {
    "nn.relu": ("", lambda x: np.maximum(x, 0)),
    "nn.leaky_relu": ("{alpha = 0.1 : f32}", lambda x: _where(x >= 0, x, 0.1 * x)),
    "nn.clip": ("{a_min = 0.0 : f32, a_max = 6.0 : f32}", lambda x: np.clip(x, 0, 6)),
    "nn.sigmoid": ("", lambda x: 1 / (1 + np.exp(-x))),
    "nn.tanh": ("", np.tanh),
    "nn.hard_swish": ("", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "nn.hard_sigmoid": ("{alpha = 0.2 : f32, beta = 0.5 : f32}", lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "nn.gelu": ("", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "nn.gelu_tanh": (
        '{approximate = "tanh"}',
        lambda x: 0.5 * x * (1 + np.tanh(_SQRT_2_PI * (x + 0.044715 * x**3))),
    ),
    "nn.softplus": ("", lambda x: np.logaddexp(0, x)),
    "nn.mish": ("", lambda x: x * np.tanh(np.logaddexp(0, x))),
    "nn.swish": ("", lambda x: x / (1 + np.exp(-x))),
    "nn.elu": ("", lambda x: _where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    "nn.selu": (
        "",
        lambda x: 1.0507009873554805 * _where(x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0))),
    ),
    "nn.celu": ("", lambda x: np.maximum(x, 0) + np.minimum(np.expm1(np.minimum(x, 0)), 0)),
}

TYPE = f"tensor<{len(VALUES)}x1xf32>"
COPIES = 9
IMAGE = f"tensor<1x1x{COPIES}x{len(VALUES)}xf32>"


def _source(op: str, attrs: str, mode: str) -> str:
    name = "nn.gelu" if op == "nn.gelu_tanh" else op
    if mode == "alone":
        body = f"%0 = {name} %x {attrs} : {TYPE}"
        return f"func.func @main(%x: {TYPE}) -> {TYPE} {{\n  {body}\n  func.return %0 : {TYPE}\n}}"
    if mode == "after-conv":
        return (
            f"func.func @main(%x: {IMAGE}) -> {IMAGE} {{\n"
            "  %w = nn.constant dense<1.0> : tensor<1x1x1x1xf32>\n"
            f"  %c = nn.conv2d %x, %w : ({IMAGE}, tensor<1x1x1x1xf32>) -> {IMAGE}\n"
            f"  %0 = {name} %c {attrs} : {IMAGE}\n"
            f"  func.return %0 : {IMAGE}\n}}"
        )
    return (
        f"func.func @main(%x: {TYPE}) -> {TYPE} {{\n"
        "  %w = nn.constant dense<1.0> : tensor<1x1xf32>\n"
        f"  %d = nn.dense %x, %w : ({TYPE}, tensor<1x1xf32>) -> {TYPE}\n"
        f"  %0 = {name} %d {attrs} : {TYPE}\n"
        f"  func.return %0 : {TYPE}\n}}"
    )


def _executors(op: str) -> list[list[str]]:
    out = [[], ["ccompiler"], ["examplejson"], ["cblas", "ccompiler"]]
    if missing_reason() is None and op in ELTWISE_OPS:
        out.append(["dnnl"])
    if op == "nn.relu":  # the reference graph engine's one activation
        out.append(["graphref"])
    return out


def _expected(op: str) -> Array:
    x64 = VALUES.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.asarray(ACTIVATIONS[op][1](x64)).astype(np.float32)


@pytest.mark.parametrize("mode", ["alone", "after-dense", "after-conv"])
@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
def test_activation_at_the_f32_extremes_on_every_executor(op: str, mode: str) -> None:
    attrs = ACTIVATIONS[op][0]
    copies = COPIES if mode == "after-conv" else 1
    want = np.tile(_expected(op), copies)
    x = np.tile(VALUES, copies).reshape((1, 1, copies, -1) if mode == "after-conv" else (-1, 1))
    values = np.tile(VALUES, copies)
    failures = []
    for targets in _executors(op):
        exe = byoc.build(byoc.parse_module(_source(op, attrs, mode)), targets=targets)
        with np.errstate(all="ignore"):
            got = np.asarray(exe(x)[0]).reshape(-1)
        same_specials = (
            np.array_equal(np.isnan(got), np.isnan(want))
            and np.array_equal(np.isposinf(got), np.isposinf(want))
            and np.array_equal(np.isneginf(got), np.isneginf(want))
        )
        finite = np.isfinite(want) & np.isfinite(got)
        close = np.allclose(got[finite], want[finite], rtol=2e-5, atol=1e-30)
        if not (same_specials and close):
            bad = [
                f"{v!r}: got {g!r}, want {w!r}"
                for v, g, w in zip(values, got, want, strict=True)
                if not (
                    (np.isnan(g) and np.isnan(w)) or g == w or (np.isfinite(g) and np.isfinite(w)
                    and math.isclose(g, w, rel_tol=2e-5, abs_tol=1e-30))
                )
            ]
            failures.append(f"{targets or 'host'}: {'; '.join(bad)}")
    assert not failures, "\n".join(failures)
