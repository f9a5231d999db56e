"""numpy kernels of the ops in `byoc.dialects.nn.math_ops` (ONNX semantics), registered in
`kernels.KERNELS` like the others."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from byoc.dialects.nn.types import element_type_named, numpy_dtype
from byoc.interpreters.kernels import _axes, _erf, _same, kernel

Array = np.ndarray[Any, Any]


def _quiet(fn: Any) -> Any:
    def run(x: Array) -> Array:
        with np.errstate(all="ignore"):
            return np.asarray(fn(x), dtype=x.dtype)

    return run


for _name, _fn in (
    ("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos),
    ("atan", np.arctan), ("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh),
    ("acosh", np.arccosh), ("atanh", np.arctanh), ("floor", np.floor), ("ceil", np.ceil),
    ("round", np.round), ("sign", np.sign),
):  # fmt: skip
    kernel("nn." + _name)(_quiet(_fn))


@kernel("nn.softplus")
def softplus(x: Array) -> Array:
    return _same(np.logaddexp(np.float64(0), x.astype(np.float64)), x)


@kernel("nn.softsign")
def softsign(x: Array) -> Array:
    return _same(x / (1 + np.abs(x)), x)


@kernel("nn.mish")
def mish(x: Array) -> Array:
    x64 = x.astype(np.float64)
    return _same(x64 * np.tanh(np.logaddexp(0.0, x64)), x)


@kernel("nn.gelu")
def gelu(x: Array, *, approximate: str) -> Array:
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)
        return _same(0.5 * x64 * (1 + np.tanh(inner)), x)
    phi = np.asarray(_erf(x64 / math.sqrt(2)), dtype=np.float64).reshape(x.shape)
    return _same(0.5 * x64 * (1 + phi), x)


def _expm1_neg(x: Array, alpha: float) -> Array:
    with np.errstate(over="ignore"):
        return alpha * (np.exp(np.minimum(x.astype(np.float64), 0)) - 1)


@kernel("nn.elu")
def elu(x: Array, *, alpha: float) -> Array:
    return _same(np.where(x > 0, x, _expm1_neg(x, alpha)), x)


@kernel("nn.selu")
def selu(x: Array, *, alpha: float, gamma: float) -> Array:
    return _same(gamma * np.where(x > 0, x, _expm1_neg(x, alpha)), x)


@kernel("nn.celu")
def celu(x: Array, *, alpha: float) -> Array:
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        neg = alpha * (np.exp(np.minimum(x64, 0) / alpha) - 1)
    return _same(np.maximum(x64, 0) + np.minimum(neg, 0), x)


@kernel("nn.thresholded_relu")
def thresholded_relu(x: Array, *, alpha: float) -> Array:
    return _same(np.where(x > alpha, x, 0), x)


@kernel("nn.swish")
def swish(x: Array, *, alpha: float) -> Array:
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        return _same(x64 / (1 + np.exp(-alpha * x64)), x)


@kernel("nn.shrink")
def shrink(x: Array, *, bias: float, lambd: float) -> Array:
    x64 = x.astype(np.float64)
    return _same(np.where(x64 < -lambd, x64 + bias, np.where(x64 > lambd, x64 - bias, 0)), x)


@kernel("nn.is_nan")
def is_nan(x: Array) -> Array:
    return np.isnan(x)


@kernel("nn.is_inf")
def is_inf(x: Array, *, detect_positive: bool, detect_negative: bool) -> Array:
    return (np.isposinf(x) & detect_positive) | (np.isneginf(x) & detect_negative)


@kernel("nn.mod")
def mod(a: Array, b: Array, *, fmod: bool) -> Array:
    with np.errstate(all="ignore"):
        return np.asarray(np.fmod(a, b) if fmod else np.mod(a, b), dtype=a.dtype)


kernel("nn.bitwise_and")(lambda a, b: np.bitwise_and(a, b))
kernel("nn.bitwise_or")(lambda a, b: np.bitwise_or(a, b))
kernel("nn.bitwise_xor")(lambda a, b: np.bitwise_xor(a, b))
kernel("nn.bitwise_not")(lambda x: np.invert(x))


@kernel("nn.bit_shift")
def bit_shift(a: Array, b: Array, *, direction: str) -> Array:
    """A shift by a negative count or by the bit width or more gives 0 (-1 for a negative
    value shifted right); a signed left shift wraps, as on the unsigned bits."""
    a, b = np.broadcast_arrays(a, b)
    bits = a.dtype.itemsize * 8
    valid = (b >= 0) & (b < bits)
    count = np.where(valid, b, 0)
    if direction == "right":
        shifted = np.right_shift(a, count.astype(a.dtype))
        spill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else 0
    else:
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        shifted = np.left_shift(a.view(unsigned), count.astype(unsigned)).view(a.dtype)
        spill = 0
    return np.array(np.where(valid, shifted, spill), dtype=a.dtype, order="C")


# ---- reductions: an empty reduction gives the operation's identity -----------------------
def _extreme(dtype: np.dtype[Any], high: bool) -> Any:
    if dtype.kind == "b":
        return high
    if dtype.kind == "f":
        return np.inf if high else -np.inf
    info = np.iinfo(dtype)
    return info.max if high else info.min


@kernel("nn.reduce_min")
def reduce_min(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    return np.asarray(
        np.min(x, axis=_axes(x, axes), keepdims=keepdims, initial=_extreme(x.dtype, True)),
        dtype=x.dtype,
    )


@kernel("nn.reduce_prod")
def reduce_prod(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    return np.asarray(np.prod(x, axis=_axes(x, axes), keepdims=keepdims), dtype=x.dtype)


def _acc(x: Array) -> Array:
    return x.astype(np.float64) if x.dtype.kind == "f" else x


@kernel("nn.reduce_l1")
def reduce_l1(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    return np.asarray(np.abs(_acc(x)).sum(axis=_axes(x, axes), keepdims=keepdims), dtype=x.dtype)


@kernel("nn.reduce_sum_square")
def reduce_sum_square(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    return np.asarray(np.square(_acc(x)).sum(axis=_axes(x, axes), keepdims=keepdims), dtype=x.dtype)


@kernel("nn.reduce_l2")
def reduce_l2(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    total = np.square(x.astype(np.float64)).sum(axis=_axes(x, axes), keepdims=keepdims)
    return np.asarray(np.sqrt(total), dtype=x.dtype)


@kernel("nn.reduce_log_sum")
def reduce_log_sum(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    total = x.astype(np.float64).sum(axis=_axes(x, axes), keepdims=keepdims)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.log(total), dtype=x.dtype)


@kernel("nn.reduce_log_sum_exp")
def reduce_log_sum_exp(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    ax = _axes(x, axes)
    x64 = x.astype(np.float64)
    top = np.max(x64, axis=ax, keepdims=True, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore", over="ignore"):
        out = np.log(np.exp(x64 - top).sum(axis=ax, keepdims=True)) + top
    if not keepdims:
        out = np.squeeze(out, axis=ax)
    return np.asarray(out, dtype=x.dtype)


# ---- arg reductions, scans, top-k, einsum ---------------------------------------------------
def _arg(fn: Any, x: Array, axis: int, keepdims: bool, select_last_index: bool) -> Array:
    axis %= x.ndim
    if select_last_index:
        idx = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis)
    else:
        idx = fn(x, axis=axis)
    idx = np.asarray(idx, dtype=np.int64)
    return np.expand_dims(idx, axis) if keepdims else idx


@kernel("nn.argmax")
def argmax(x: Array, *, axis: int, keepdims: bool, select_last_index: bool) -> Array:
    return _arg(np.argmax, x, axis, keepdims, select_last_index)


@kernel("nn.argmin")
def argmin(x: Array, *, axis: int, keepdims: bool, select_last_index: bool) -> Array:
    return _arg(np.argmin, x, axis, keepdims, select_last_index)


def _scan(fn: Any, identity: int, x: Array, axis: int, exclusive: bool, reverse: bool) -> Array:
    axis %= x.ndim
    y = np.flip(x, axis) if reverse else x
    with np.errstate(over="ignore"):
        out = fn(y, axis=axis, dtype=x.dtype)
    if exclusive:
        out = np.roll(out, 1, axis=axis)
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, 1)
        out[tuple(index)] = identity
    return np.ascontiguousarray(np.flip(out, axis) if reverse else out)


@kernel("nn.cumsum")
def cumsum(x: Array, *, axis: int, exclusive: bool, reverse: bool) -> Array:
    return _scan(np.cumsum, 0, x, axis, exclusive, reverse)


@kernel("nn.cumprod")
def cumprod(x: Array, *, axis: int, exclusive: bool, reverse: bool) -> Array:
    return _scan(np.cumprod, 1, x, axis, exclusive, reverse)


@kernel("nn.topk")
def topk(x: Array, *, k: int, axis: int, largest: bool) -> tuple[Array, Array]:
    axis %= x.ndim
    n = x.shape[axis]
    if largest:  # descending values, equal values by ascending index
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.ascontiguousarray(np.take_along_axis(x, idx, axis=axis)), np.ascontiguousarray(idx)


@kernel("nn.einsum")
def einsum(*xs: Array, equation: str) -> Array:
    return np.array(np.einsum(equation.replace(" ", ""), *xs), dtype=xs[0].dtype, order="C")


@kernel("nn.tile")
def tile(x: Array, *, reps: Sequence[int]) -> Array:
    return np.array(np.tile(x, tuple(reps)), order="C")


@kernel("nn.broadcast_to")
def broadcast_to(x: Array, *, shape: Sequence[int]) -> Array:
    out = np.broadcast_shapes(x.shape, tuple(shape))
    return np.array(np.broadcast_to(x, out), order="C")


@kernel("nn.bitcast")
def bitcast(x: Array, *, dtype: str) -> Array:
    target = element_type_named(dtype)
    assert target is not None, f"no element type '{dtype}'"
    contiguous = x if x.flags.c_contiguous else np.array(x, order="C")  # 0-d stays 0-d
    return contiguous.view(numpy_dtype(target))


@kernel("nn.det")
def det(x: Array) -> Array:
    return np.asarray(np.linalg.det(x.astype(np.float64)), dtype=x.dtype)
