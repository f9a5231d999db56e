"""How far apart two float32 evaluations of the same computation may be.

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
"""

from __future__ import annotations

from collections.abc import Sequence
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


def assert_within(actual: Array, expected: Array, bound: Array | float, what: str = "") -> None:
    """Same shape and dtype, NaN at the same places, |actual - expected| <= bound elsewhere;
    the message names the worst element and its bound."""
    a, e = np.asarray(actual), np.asarray(expected)
    label = f"{what}: " if what else ""
    assert a.shape == e.shape, f"{label}shape {a.shape} != {e.shape}"
    assert a.dtype == e.dtype, f"{label}dtype {a.dtype} != {e.dtype}"
    if not np.issubdtype(e.dtype, np.floating):
        np.testing.assert_array_equal(a, e, err_msg=what)
        return
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    assert np.array_equal(nan_a, nan_e), f"{label}NaN at different places"
    same = (a64 == e64) | nan_a  # equal infinities too
    diff = np.where(same, 0.0, np.abs(a64 - e64))
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), e.shape)
    # the smallest normal float32 absorbs differences among subnormal results
    excess = diff - b - np.finfo(np.float32).tiny
    if excess.size and excess.max() > 0:
        i = np.unravel_index(int(np.argmax(excess)), e.shape)
        raise AssertionError(
            f"{label}{int((excess > 0).sum())} of {e.size} elements outside the bound; worst at "
            f"{tuple(int(j) for j in i)}: actual {a64[i]!r}, expected {e64[i]!r}, "
            f"|diff| {diff[i]:.3g} > bound {b[i]:.3g}"
        )


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
    if name in ("nn.softmax", "nn.reduce_sum", "nn.reduce_mean", "nn.lrn", "nn.batch_norm"):
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


def softmax_bound(probabilities: Array, logit_bound: Array | float) -> Array:
    """Bound on a softmax output whose logits are within `logit_bound` (elementwise or
    one value): to first order |dp_i| <= p_i * 2 * max |dz|. Where the logits are large
    and nearly equal this exceeds 1: the probabilities are then not determined by float32
    and only the logits can be compared."""
    p = np.asarray(probabilities, dtype=np.float64)
    dz = float(np.max(logit_bound))
    return 2 * p * dz + ulp_bound(np.asarray(probabilities))


def assert_graph_outputs(
    module: Any,
    inputs: Sequence[Array],
    actual: Sequence[Array],
    expected: Sequence[Array],
    function: str | None = None,
    what: str = "",
) -> None:
    """Each actual output within `graph_bounds` of the expected one."""
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    bounds = graph_bounds(module, inputs, expected, function)
    for i, (a, e, b) in enumerate(zip(actual, expected, bounds, strict=True)):
        assert_within(a, e, b, f"{what} output {i}" if what else f"output {i}")


def assert_softmax_and_logits(
    module: Any, actual: Sequence[Array], expected: Sequence[Array], what: str
) -> None:
    """Outputs of `softmax_logits_model`: [probabilities, logits] (only [logits] for a
    model without a final Softmax, densenet121). The logits are compared under the bound
    of the whole graph (`bounds.normwise_bound`); the probabilities under what that bound
    on the logits allows (`bounds.softmax_bound`), which is vacuous where large, nearly
    equal logits leave them undetermined by float32."""
    assert len(actual) == len(expected)
    if len(expected) == 1:
        k = reduction_length(module)
        assert_within(actual[0], expected[0], normwise_bound(k, expected[0]), f"{what} logits")
        return
    assert len(expected) == 2
    probs, logits = actual
    logit_bound = normwise_bound(reduction_length(module), expected[1])
    assert_within(logits, expected[1], logit_bound, f"{what} logits")
    assert_within(probs, expected[0], softmax_bound(expected[0], logit_bound), f"{what} softmax")


def layer_norm_bound(x: Array, w: Array, b: Array, axis: int, expected: Array) -> Array:
    """Bound on the difference between two f32 layer norms of `x` over axes [axis, rank),
    to first order. The mean is off by up to gamma_k * max|x|; x - mean cancels, so an
    output is off by about that over sigma (not by its own magnitude, which the
    absolute-value run of `magnitude` would give): |dy| <= 2 gamma_{k+2} |w| ((1 + sqrt k)
    max|x| / s + 2 sqrt k), s the computed standard deviation, plus the ulps of y and of b."""
    x64 = np.asarray(x, dtype=np.float64)
    axis = axis if axis >= 0 else x64.ndim + axis
    axes = tuple(range(axis, x64.ndim))
    k = int(np.prod(x64.shape[axis:]))
    s = np.sqrt(x64.var(axis=axes, keepdims=True))
    big = np.abs(x64).max(axis=axes, keepdims=True)
    with np.errstate(divide="ignore"):
        scale = (1 + np.sqrt(k)) * big / s + 2 * np.sqrt(k)
    wb = np.abs(np.asarray(w, dtype=np.float64))
    first = 2 * gamma(k + 2) * wb * np.broadcast_to(scale, x64.shape)
    return first + ulp_bound(expected) + ulp_bound(np.broadcast_to(np.asarray(b), x64.shape))


def det_bound(m: Array, expected: Array) -> Array:
    """Bound on the difference between two f32 determinants of the small square matrices
    `m[..., n, n]` (n <= 4): the permanent of |m| (every |product| of the expansion, which
    the absolute-value run of `magnitude` would partly cancel) times 2 gamma_{3n} and a
    pivot growth of 2^(n-1) for LU with partial pivoting, plus the ulps of the result."""
    import itertools

    a = np.abs(np.asarray(m, dtype=np.float64))
    n = a.shape[-1]
    perm = np.zeros(a.shape[:-2])
    for p in itertools.permutations(range(n)):
        perm = perm + np.prod([a[..., i, p[i]] for i in range(n)], axis=0)
    return 2 * gamma(3 * n) * 2 ** (n - 1) * perm + ulp_bound(expected)
