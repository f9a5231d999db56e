"""The tests' assertions on how far apart two float32 evaluations of the same computation may be.

The bound (gamma(k) * magnitude plus `ULPS` units in the last place; its derivation, the
magnitude run, `graph_bounds`) is stated once, in byoc/conformance/bounds.py, where
`byoc-check-target` uses it too; this module adds the assertions and the bounds only tests
need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from byoc.conformance.bounds import (
    ULPS,
    U,
    compare,
    gamma,
    graph_bounds,
    magnitude,
    normwise_bound,
    reduction_bound,
    reduction_depth,
    reduction_length,
    ulp_bound,
)

Array = np.ndarray[Any, Any]


def assert_within(actual: Array, expected: Array, bound: Array | float, what: str = "") -> None:
    """Same shape and dtype, NaN at the same places, |actual - expected| <= bound elsewhere;
    the message names the worst element and its bound."""
    mismatch = compare(actual, expected, bound)
    if mismatch is not None:
        raise AssertionError(f"{what}: {mismatch.message}" if what else mismatch.message)


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


__all__ = [
    "ULPS",
    "U",
    "assert_graph_outputs",
    "assert_softmax_and_logits",
    "assert_within",
    "det_bound",
    "gamma",
    "graph_bounds",
    "layer_norm_bound",
    "magnitude",
    "normwise_bound",
    "reduction_bound",
    "reduction_depth",
    "reduction_length",
    "softmax_bound",
    "ulp_bound",
]
