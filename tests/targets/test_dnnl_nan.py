"""NaN and infinities on dnnl are what the numpy reference gives (docs/targets.md): oneDNN's
kernels lose a NaN in relu, clip, hard_sigmoid, exp, maximum, minimum, max pooling and
softmax, fused after a convolution or alone; the engine's guards (dnnl_guard.c) restore
them. Each case runs on dnnl (checked to be there) and on the host, on inputs holding
NaN, +inf, -inf and f32's extremes in one element and in one whole channel."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import byoc
from byoc.targets.dnnl import missing_reason

REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"oneDNN extra absent: {REASON}")

C = 12  # not a multiple of oneDNN's channel blocks: blocked layouts carry padding
X = f"tensor<1x{C}x6x6xf32>"
W = f"nn.constant dense<0.25> : tensor<{C}x{C}x3x3xf32>"
CONV = f"%w = {W}\n  %c = nn.conv2d %a0, %w {{padding = array<i64: 1, 1, 1, 1>}} : ({X}, tensor<{C}x{C}x3x3xf32>) -> {X}"
POOLED = f"tensor<1x{C}x3x3xf32>"


def _model(body: str, result: str, inputs: int = 1, out: str = X) -> str:
    args = ", ".join(f"%a{i}: {X}" for i in range(inputs))
    return f"func.func @main({args}) -> {out} {{\n  {body}\n  func.return {result} : {out}\n}}"


def _unary(op: str, attrs: str = "", src: str = "%a0") -> str:
    return f"%0 = {op} {src}{attrs} : {X}"


CASES: dict[str, str] = {
    "relu": _model(_unary("nn.relu"), "%0"),
    "clip": _model(_unary("nn.clip", " {a_min = 0.0 : f32, a_max = 6.0 : f32}"), "%0"),
    "hard_sigmoid": _model(_unary("nn.hard_sigmoid"), "%0"),
    "exp": _model(_unary("nn.exp"), "%0"),
    "maximum": _model(f"%0 = nn.maximum %a0, %a1 : ({X}, {X}) -> {X}", "%0", 2),
    "minimum": _model(f"%0 = nn.minimum %a0, %a1 : ({X}, {X}) -> {X}", "%0", 2),
    "softmax": _model(_unary("nn.softmax"), "%0"),
    "softmax_axis1": _model(_unary("nn.softmax", " {axis = 1}"), "%0"),
    "max_pool": _model(
        f"%0 = nn.max_pool2d %a0 {{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}} : ({X}) -> {POOLED}",
        "%0",
        out=POOLED,
    ),
    "max_pool_padded": _model(
        f"%0 = nn.max_pool2d %a0 {{pool_size = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}} : ({X}) -> {POOLED}",
        "%0",
        out=POOLED,
    ),
    "global_max_pool": _model(
        f"%0 = nn.global_max_pool2d %a0 : ({X}) -> tensor<1x{C}x1x1xf32>",
        "%0",
        out=f"tensor<1x{C}x1x1xf32>",
    ),
    "conv_relu": _model(f"{CONV}\n  {_unary('nn.relu', src='%c')}", "%0"),
    "conv_clip": _model(
        f"{CONV}\n  {_unary('nn.clip', ' {a_min = 0.0 : f32, a_max = 6.0 : f32}', src='%c')}", "%0"
    ),
    "conv_relu_max_pool": _model(
        f"{CONV}\n  %r = nn.relu %c : {X}\n"
        f"  %0 = nn.max_pool2d %r {{pool_size = array<i64: 2, 2>, strides = array<i64: 2, 2>}} : ({X}) -> {POOLED}",
        "%0",
        out=POOLED,
    ),
    "conv_softmax": _model(f"{CONV}\n  {_unary('nn.softmax', ' {axis = 1}', src='%c')}", "%0"),
}

SPECIALS = (np.nan, np.inf, -np.inf, 3e38, -3e38)


def _inputs(n: int, special: float, seed: int) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((1, C, 6, 6)).astype(np.float32) for _ in range(n)]
    xs[0][0, 1, 2, 3] = special  # one element
    xs[0][0, 5] = special  # one whole channel
    if n > 1:
        xs[1][0, 7, 0, 0] = special
        xs[1][0, 1, 2, 3] = -special if np.isfinite(special) else special
    return xs


@pytest.fixture(scope="module")
def builds() -> dict[str, tuple[Any, Any]]:
    out = {}
    for name, source in CASES.items():
        on_dnnl = byoc.build(byoc.parse_module(source), targets=["dnnl"])
        assert "dnnl" in on_dnnl.components, f"{name} did not go to dnnl"
        assert len(on_dnnl.plan.steps) == 1, f"{name} is not one dnnl partition"
        out[name] = (on_dnnl, byoc.build(byoc.parse_module(source), targets=[]))
    return out


@pytest.mark.parametrize("special", SPECIALS, ids=["nan", "inf", "-inf", "3e38", "-3e38"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_dnnl_keeps_nan_and_inf_like_the_reference(
    builds: dict[str, tuple[Any, Any]], name: str, special: float
) -> None:
    on_dnnl, host = builds[name]
    xs = _inputs(len(host.plan.input_specs), special, seed=len(name))
    with np.errstate(all="ignore"):
        want = host(*xs)[0]
    got = on_dnnl(*xs)[0]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-5)


def test_finite_inputs_take_no_guard_detour(builds: dict[str, tuple[Any, Any]]) -> None:
    """The guards leave finite results alone: same numbers as without a special value."""
    on_dnnl, host = builds["conv_relu_max_pool"]
    xs = [np.random.default_rng(3).standard_normal((1, C, 6, 6)).astype(np.float32)]
    np.testing.assert_allclose(on_dnnl(*xs)[0], host(*xs)[0], rtol=1e-5, atol=1e-5)
