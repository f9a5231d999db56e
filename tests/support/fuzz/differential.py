"""Random small `nn` graphs through every executor (run in the fuzz worker).

`random_graph(seed)` draws a chain of ops on an NCHW input — elementwise ops, `nn.clip`
with NaN and infinite bounds, max/avg pools and convolutions with dilation, padding,
strides and ceil mode, global pools, binary ops against constants or earlier values —
on shapes with size-1 and empty dims, and inputs with NaN and infinities. Ops are made
with `NNOp.build`, so a combination the verifier refuses is a rejection of the graph
(the same everywhere by construction). The graph then runs through the numpy reference,
a host-only build, ccompiler, cblas (+ccompiler) and examplejson: every executor must
agree with the reference within tests/support/bounds.py, or all must reject it.
"""

from __future__ import annotations

import math
import random
import traceback
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

EXECUTORS: dict[str, list[str] | None] = {
    "host": None,
    "ccompiler": ["ccompiler"],
    "cblas": ["cblas", "ccompiler"],
    "examplejson": ["examplejson"],
}
UNARY = ("nn.relu", "nn.tanh", "nn.sigmoid", "nn.abs", "nn.negative", "nn.exp")
BINARY = ("nn.add", "nn.subtract", "nn.multiply", "nn.maximum", "nn.minimum")
BOUNDS = (-1.0, 0.0, 0.5, 2.0, math.nan, math.inf, -math.inf)


class Rejected(Exception):
    """The verifier refused the graph while it was being built."""


def _dim(rng: random.Random) -> int:
    return rng.choice([0, 1, 1, 2, 3, 4, 5, 7, 8]) if rng.random() < 0.9 else rng.choice([0, 1])


def random_graph(seed: int) -> tuple[ModuleOp, list[np.ndarray], dict[str, bool]]:
    """A verified module `@main`, its inputs, and the edge features it uses."""
    from byoc.dialects import nn

    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    shape = [rng.choice([1, 1, 2]), rng.choice([1, 2, 3]), _dim(rng), _dim(rng)]
    features = {"clip_nan": False, "pool_dilation_padding": False, "empty": 0 in shape}
    ty = TensorType(nn.f32 if hasattr(nn, "f32") else _f32(), shape)
    block = Block(arg_types=[ty])
    block.args[0].name_hint = "x"
    values: list[SSAValue] = [block.args[0]]

    def add(op: Any) -> SSAValue:
        block.add_op(op)
        return op.results[0]

    def const(array: np.ndarray) -> SSAValue:
        return add(nn.ConstantOp.from_array(np.ascontiguousarray(array, dtype=np.float32)))

    def build(name: str, *operands: SSAValue, **attrs: Any) -> SSAValue:
        try:
            return add(nn.NN_OPS[name].build(*operands, **attrs))
        except Exception as exc:  # the verifier's refusal (VerifyException and friends)
            raise Rejected(f"{name} {attrs}: {exc}") from exc

    v = values[0]
    wanted, built, attempts = rng.randint(1, 5), 0, 0
    while built < wanted and attempts < 12:
        attempts += 1
        try:
            v = _add_random_op(rng, nrng, v, values, build, const, features)
        except Rejected:
            features["verifier_rejections"] = True
            continue
        built += 1
        values.append(v)
    if built == 0:
        raise Rejected("no op the verifier accepts")
    block.add_op(ReturnOp(v))
    func = FuncOp("main", ([ty], [v.type]), Region(block))
    module = ModuleOp([func])
    module.verify()
    x = nrng.standard_normal(shape).astype(np.float32)
    if x.size and rng.random() < 0.4:
        flat = x.reshape(-1)
        for _ in range(rng.randint(1, 3)):
            flat[rng.randrange(flat.size)] = rng.choice([np.nan, np.inf, -np.inf])
    features["nonfinite_input"] = not bool(np.isfinite(x).all())
    return module, [x], features


def _add_random_op(
    rng: random.Random,
    nrng: np.random.Generator,
    v: SSAValue,
    values: list[SSAValue],
    build: Any,
    const: Any,
    features: dict[str, bool],
) -> SSAValue:
    if True:
        cur = list(v.type.get_shape())  # type: ignore[attr-defined]
        kind = rng.random()
        if kind < 0.2:
            v = build(rng.choice(UNARY), v)
        elif kind < 0.35:
            lo, hi = rng.choice(BOUNDS), rng.choice(BOUNDS)
            v = build("nn.clip", v, a_min=lo, a_max=hi)
            features["clip_nan"] |= math.isnan(lo) or math.isnan(hi)
        elif kind < 0.6 and len(cur) == 4:
            k = [rng.randint(1, 3), rng.randint(1, 3)]
            d = [rng.choice([1, 1, 2]), rng.choice([1, 1, 2])]
            p = [rng.choice([0, 0, rng.randrange(k[i // 2 % 2] * d[i // 2 % 2])]) for i in range(4)]
            attrs: dict[str, Any] = {
                "pool_size": k,
                "strides": [rng.randint(1, 2), rng.randint(1, 2)],
                "padding": p,
                "dilation": d,
                "ceil_mode": rng.random() < 0.3,
            }
            name = rng.choice(["nn.max_pool2d", "nn.avg_pool2d"])
            if name == "nn.avg_pool2d":
                attrs["count_include_pad"] = rng.random() < 0.5
            v = build(name, v, **attrs)
            features["pool_dilation_padding"] |= max(d) > 1 and max(p) > 0
        elif kind < 0.8 and len(cur) == 4:
            out_c = rng.choice([1, 2, 3])
            k = [rng.randint(1, 3), rng.randint(1, 3)]
            w = const(nrng.standard_normal((out_c, cur[1], *k)))
            v = build(
                "nn.conv2d",
                v,
                w,
                strides=[rng.randint(1, 2), rng.randint(1, 2)],
                padding=[rng.choice([0, 0, 1, 2]) for _ in range(4)],
                dilation=[rng.choice([1, 1, 2]), rng.choice([1, 1, 2])],
            )
        elif kind < 0.85 and len(cur) == 4:
            v = build(rng.choice(["nn.global_avg_pool2d", "nn.global_max_pool2d"]), v)
        else:
            same = [u for u in values if list(u.type.get_shape()) == cur and u is not v]  # type: ignore[attr-defined]
            other = (
                rng.choice(same)
                if same and rng.random() < 0.5
                else const(nrng.standard_normal(cur))
            )
            v = build(rng.choice(BINARY), v, other)
    return v


def _f32() -> Any:
    from xdsl.dialects.builtin import f32

    return f32


def run_everywhere(module: ModuleOp, xs: list[np.ndarray]) -> dict[str, tuple[str, Any]]:
    """executor -> ("ok", outputs) or ("error", "Type: message")."""
    import byoc

    results: dict[str, tuple[str, Any]] = {}
    try:
        results["reference"] = ("ok", byoc.run_reference(module.clone(), *xs))
    except Exception as exc:  # noqa: BLE001
        results["reference"] = ("error", f"{type(exc).__name__}: {exc}")
    for name, targets in EXECUTORS.items():
        try:
            exe = byoc.build(module.clone(), targets=targets)
            results[name] = ("ok", exe(*[x.copy() for x in xs]))
        except Exception as exc:  # noqa: BLE001
            results[name] = ("error", f"{type(exc).__name__}: {str(exc)[:200]}")
    return results


def compare(
    module: ModuleOp, xs: list[np.ndarray], results: dict[str, tuple[str, Any]]
) -> tuple[str, str]:
    from support.bounds import assert_graph_outputs

    errors = {k: v[1] for k, v in results.items() if v[0] == "error"}
    if errors and len(errors) == len(results):
        return "ok-rejected-everywhere", ""
    if errors:
        return "rejected-differently", "; ".join(f"{k}: {v}" for k, v in errors.items())
    want = results["reference"][1]
    bad = []
    for name in EXECUTORS:
        got = results[name][1]
        try:
            assert_graph_outputs(module, xs, got, want)
        except AssertionError as exc:
            bad.append(f"{name}: {str(exc)[:300]}")
    if bad:
        return "mismatch", "; ".join(bad)
    return "ok", ""


def run_differential_case(case: dict[str, Any]) -> tuple[str, str]:
    try:
        module, xs, features = random_graph(case["seed"])
    except Rejected as exc:
        return "ok-rejected-by-verifier", str(exc)[:300]
    try:
        results = run_everywhere(module, xs)
        outcome, detail = compare(module, xs, results)
    except Exception:  # noqa: BLE001
        return "traceback", traceback.format_exc()
    tags = ",".join(k for k, on in features.items() if on)
    return outcome, f"[{tags}] {detail}" if outcome != "ok" else ""
