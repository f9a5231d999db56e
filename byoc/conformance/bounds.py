"""How far apart two float32 evaluations of the same computation may be (the kit's bound).

Executors (numpy, generated C with or without FMA and AVX2, OpenBLAS, onnxruntime)
sum in different orders, so their results differ by rounding. Tests compare them
against a bound derived from the computation, never against constants tuned on one
machine. The bound, stated once:

    A sum or dot product of k terms, evaluated in float32 in any order, with or
    without fused multiply-adds, is within gamma(k) * sum(|terms|) of the exact
    value (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
    eq. 3.5), where gamma(k) = k*u / (1 - k*u) and u = 2**-24. Two such
    evaluations are therefore within 2 * gamma(k) * sum(|terms|) of each other.

`sum(|terms|)` is the magnitude: the same computation run on the absolute values
of its inputs and weights (`magnitude`). For a graph of several reductions, k is
the total reduction length along its longest path (`reduction_length`): to first
order, the errors each layer makes add up along the path, each scaled by the
magnitude that reaches the output. Results of elementwise functions (exp, tanh,
erf, division, ...) may differ by a few units in the last place between libm,
numpy's SIMD loops and onnxruntime's approximations: `ULPS` of them are allowed
on top, relative to the expected value.

The test suite (tests/bounds.py) and the conformance kit (`byoc-check-target`) use this
one copy; `compare` is the check without the assertion, for the kit's report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

U = 2.0**-24
"""Unit roundoff of float32 (round to nearest)."""

ULPS = 8
"""Units in the last place two correct implementations of an elementwise function
(exp, tanh, erf, sqrt, division) may differ by."""

Array = np.ndarray[Any, Any]


def gamma(k: int) -> float:
    """Higham's gamma_k = k*u / (1 - k*u), the relative error bound of a k-term f32 sum."""
    if k * U >= 1:
        raise ValueError(f"a reduction of {k} terms has no float32 error bound")
    return k * U / (1 - k * U)


def reduction_bound(k: int, magnitude: Array | float) -> Array:
    """Largest difference between two f32 evaluations of a k-term reduction whose
    absolute terms sum to `magnitude` (elementwise)."""
    return 2 * gamma(max(k, 1)) * np.asarray(magnitude, dtype=np.float64)


def ulp_bound(expected: Array, ulps: int = ULPS) -> Array:
    """`ulps` units in the last place of each expected float32 value (0 for integers)."""
    e = np.asarray(expected)
    if not np.issubdtype(e.dtype, np.floating):
        return np.zeros(e.shape)
    return ulps * np.spacing(np.abs(e).astype(e.dtype)).astype(np.float64)


@dataclass(frozen=True)
class Mismatch:
    """Why an actual output is not within the bound of the expected one."""

    message: str
    ulps: float
    """The largest difference in units in the last place of the expected values (inf for a
    NaN, an infinity or a shape where the expected value differs; 0 for integers)."""


def ulps_apart(actual: Array, expected: Array) -> float:
    """max |actual - expected| / spacing(expected) over the elements (0 if equal)."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.size == 0:
        return 0.0
    if not np.issubdtype(e.dtype, np.floating):
        return float(np.abs(a.astype(np.float64) - e.astype(np.float64)).max())
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    same = (a64 == e64) | (np.isnan(a64) & np.isnan(e64))
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = np.spacing(np.abs(e).astype(e.dtype)).astype(np.float64)
        ulps = np.where(same, 0.0, np.abs(a64 - e64) / spacing)
    return float(np.nan_to_num(ulps, nan=np.inf).max())


def compare(actual: Array, expected: Array, bound: Array | float) -> Mismatch | None:
    """None if `actual` has the shape and dtype of `expected`, NaN at the same places, equal
    infinities, and is within `bound` elsewhere (exactly equal for integers); else what differs,
    naming the worst element."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        return Mismatch(f"shape {a.shape} != {e.shape}", float("inf"))
    if a.dtype != e.dtype:
        return Mismatch(f"dtype {a.dtype} != {e.dtype}", float("inf"))
    if not np.issubdtype(e.dtype, np.floating):
        if np.array_equal(a, e):
            return None
        i = np.unravel_index(int(np.argmax(a != e)), e.shape)
        n = int((a != e).sum())
        return Mismatch(
            f"{n} of {e.size} elements differ; first at {tuple(int(j) for j in i)}: "
            f"actual {a[i]!r}, expected {e[i]!r}",
            ulps_apart(a, e),
        )
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    if not np.array_equal(nan_a, nan_e):
        i = np.unravel_index(int(np.argmax(nan_a != nan_e)), e.shape)
        return Mismatch(
            f"NaN at different places; first at {tuple(int(j) for j in i)}: "
            f"actual {a64[i]!r}, expected {e64[i]!r}",
            float("inf"),
        )
    same = (a64 == e64) | nan_a  # equal infinities too
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a64 - e64))
    b = np.broadcast_to(np.nan_to_num(np.asarray(bound, dtype=np.float64), nan=np.inf), e.shape)
    # the smallest normal float32 absorbs differences among subnormal results
    with np.errstate(invalid="ignore"):
        excess = np.nan_to_num(diff - b - np.finfo(np.float32).tiny, nan=np.inf)
    if excess.size and excess.max() > 0:
        i = np.unravel_index(int(np.argmax(excess)), e.shape)
        return Mismatch(
            f"{int((excess > 0).sum())} of {e.size} elements outside the bound; worst at "
            f"{tuple(int(j) for j in i)}: actual {a64[i]!r}, expected {e64[i]!r}, "
            f"|diff| {diff[i]:.3g} > bound {b[i]:.3g}",
            ulps_apart(a, e),
        )
    return None


# ---- bounds of nn graphs ----------------------------------------------------------


def _reduction_of(op: Any) -> int:
    """Terms one output element of `op` sums (1: a single rounding)."""
    ins = [tuple(o.type.get_shape()) for o in op.operands]
    name = op.name
    if name == "nn.conv2d":
        return int(np.prod(ins[1][1:]))
    if name == "nn.conv2d_transpose":
        return int(np.prod(ins[1]))
    if name in ("nn.dense", "nn.matmul"):
        return int(ins[0][-1])
    if name in ("nn.max_pool2d", "nn.avg_pool2d"):
        return int(np.prod(op.pool_size.get_values()))
    if name in ("nn.global_avg_pool2d", "nn.global_max_pool2d"):
        return int(np.prod(ins[0][2:]))
    if name == "nn.resize2d" and op.method.data != "nearest_neighbor":
        # 4 taps whose weights come from a source coordinate computed in float32, off by
        # up to u * (its size) per step of the transform: each tap weight inherits that
        return 4 * (int(max(ins[0][2:])) + 4)
    if name in ("nn.lstm", "nn.gru", "nn.rnn"):
        # T steps, each a dot product over the input and the hidden state; a step's
        # error reaches the next through the state (tanh/sigmoid do not amplify it)
        x, r = ins[0], ins[2]
        steps = x[1] if op.layout.value.data else x[0]
        return int(steps) * int(x[2] + r[2] + 2)
    if name in ("nn.softmax", "nn.reduce_sum", "nn.reduce_mean", "nn.lrn", "nn.batch_norm", "nn.layer_norm"):
        return int(max(ins[0], default=1))
    if name in (
        "nn.reduce_prod", "nn.reduce_l1", "nn.reduce_l2", "nn.reduce_sum_square",
        "nn.reduce_log_sum", "nn.reduce_log_sum_exp", "nn.cumsum", "nn.cumprod", "nn.einsum",
    ):  # fmt: skip
        return int(max((d for shape in ins for d in shape), default=1))
    return 1


def reduction_length(module: Any, function: str | None = None) -> int:
    """Total reduction length along the longest path of a function of `module` (the k of
    the bound for a whole graph): the sum of `_reduction_of` over the ops of that path."""
    return _longest_path(module, _reduction_of, function)


def _longest_path(module: Any, weight: Any, function: str | None = None) -> int:
    """The largest sum of `weight(op)` over a path of ops in a function of `module` (the
    first one, or `@function`); ops inside partitions and composites count where they are."""
    from xdsl.dialects.func import FuncOp

    func = next(
        op
        for op in module.ops
        if isinstance(op, FuncOp) and function in (None, op.sym_name.data)
    )
    depth: dict[Any, int] = {}
    best = 1
    for op in func.body.walk():
        if not op.name.startswith("nn.") or op.name == "nn.constant" or not op.operands:
            continue
        k = weight(op) + max((depth.get(o, 0) for o in op.operands), default=0)
        for r in op.results:
            depth[r] = k
        best = max(best, k)
    return best


def magnitude(module: Any, inputs: Sequence[Array], function: str | None = None) -> list[Array]:
    """The outputs of `module` run on the absolute values of its inputs and float
    constants: for sums of products, the sum of |terms| that the bound scales."""
    from byoc.dialects import nn
    from byoc.interpreters import run_reference

    clone = module.clone()
    for op in list(clone.walk()):
        if isinstance(op, nn.ConstantOp):
            arr = op.ndarray()
            if np.issubdtype(arr.dtype, np.floating):
                new = nn.ConstantOp.from_array(np.abs(arr))
                op.result.replace_all_uses_with(new.result)
                block = op.parent_block()
                assert block is not None
                block.insert_op_before(new, op)
                block.erase_op(op)
    absolute = [np.abs(x) if np.issubdtype(np.asarray(x).dtype, np.floating) else x for x in inputs]
    with np.errstate(all="ignore"):
        outs = run_reference(clone, *absolute, **({"function": function} if function else {}))
    return [np.abs(np.asarray(r, dtype=np.float64)) for r in outs]


def reduction_depth(module: Any, function: str | None = None) -> int:
    """Reductions (ops summing more than one term) along the longest path of a function."""
    return _longest_path(module, lambda op: int(_reduction_of(op) > 1), function)


def _has_interpolation(module: Any, function: str | None) -> bool:
    return _longest_path(
        module,
        lambda op: int(op.name == "nn.resize2d" and op.method.data != "nearest_neighbor"),
        function,
    ) > 0


def graph_bounds(
    module: Any,
    inputs: Sequence[Array],
    expected: Sequence[Array],
    function: str | None = None,
) -> list[Array]:
    """Per-output bounds for comparing two f32 executions of `module` on `inputs`.

    k is `reduction_length(module)`. With at most one reduction on any path the bound is
    componentwise: the magnitude is the graph run on absolute values (or |expected| where
    that is larger, as for a softmax). In a deeper graph the absolute-value network grows
    without bound (1e21 at squeezenet's logits, an overflow in resnet50) while the signed
    activations keep their scale, so the magnitude is the output's own largest value: a
    first-order, normwise bound that assumes the layers keep the scale of what they pass
    on, which the seeded test weights are drawn to do (`randomize_weights`).
    """
    k = reduction_length(module, function)
    if reduction_depth(module, function) <= 1:
        mags = magnitude(module, inputs, function)
        if _has_interpolation(module, function):
            # a source coordinate off by rounding moves weight between neighbouring inputs:
            # the error scales with their difference, so with the largest input
            largest = max((float(np.abs(np.asarray(x)).max()) for x in inputs if np.size(x)), default=0.0)
            mags = [np.maximum(m, largest) for m in mags]
        return [
            reduction_bound(k, np.maximum(m, np.abs(np.asarray(e, dtype=np.float64))))
            + ulp_bound(e)
            for m, e in zip(mags, expected, strict=True)
        ]
    return [normwise_bound(k, e) for e in expected]


def normwise_bound(k: int, expected: Array) -> Array:
    """reduction_bound(k, max |expected|) + ULPS of each value: the bound of a deep graph's
    output (see `graph_bounds`)."""
    e = np.asarray(expected)
    if not np.issubdtype(e.dtype, np.floating) or e.size == 0:
        return ulp_bound(e)
    scale = float(np.nanmax(np.abs(e.astype(np.float64))))
    return reduction_bound(k, scale) + ulp_bound(e)
