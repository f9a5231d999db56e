"""numpy kernels of the quantized nn ops, registered into `KERNELS`.

Rounding and saturation follow ONNX and onnxruntime exactly:

- quantize: `x / scale` in f32 (a division, as MLAS does, not a multiply by the
  reciprocal), rounded half to even, plus the zero point, saturated to the type.
  NaN quantizes to the zero point.
- dequantize: `f32(x - zero_point) * scale` in f32.
- requantize: the multiplier `f32(in_scale / out_scale)` once, then
  `f32(x - in_zp) * multiplier` in f32, rounded half to even, plus the out zero
  point, saturated (MLAS's `MlasRequantizeOutput`).
- qconv2d / qdense / qmatmul: exact integer sums (computed in f64, exact below
  2**53, then wrapped to i32 as C's i32 accumulator would be).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from byoc.interpreters.registry import Array, kernel
from byoc.interpreters.windows import pad_nchw, windows


def expand_param(p: Array, shape: Sequence[int], axis: int, block_size: int = 0) -> Array:
    """A scale or zero point broadcastable against a tensor of `shape`."""
    p = np.asarray(p)
    if p.ndim == 0 or (p.ndim == 1 and p.shape[0] == 1 and block_size == 0):
        return p.reshape(())
    rank = len(shape)
    a = axis % rank
    if block_size == 0:
        view = [1] * rank
        view[a] = -1
        return p.reshape(view)
    return np.repeat(p, block_size, axis=a)[tuple(slice(0, d) for d in shape)]


def saturate_round(v: Array, zero_point: Array, dtype: np.dtype[Any]) -> Array:
    """round_half_even(v) + zero_point, saturated to `dtype` (v is f32)."""
    info = np.iinfo(dtype)
    r = np.rint(np.nan_to_num(v.astype(np.float64), nan=0.0, posinf=np.inf, neginf=-np.inf))
    r = np.clip(r + zero_point.astype(np.float64), info.min, info.max)
    return r.astype(dtype)


@kernel("nn.quantize")
def quantize(x: Array, scale: Array, zero_point: Array, *, axis: int, block_size: int) -> Array:
    s = expand_param(scale, x.shape, axis, block_size).astype(np.float32)
    zp = expand_param(zero_point, x.shape, axis, block_size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.divide(x.astype(np.float32), s, dtype=np.float32)
    return np.ascontiguousarray(saturate_round(v, zp, zero_point.dtype))


@kernel("nn.dequantize")
def dequantize(x: Array, scale: Array, zero_point: Array, *, axis: int, block_size: int) -> Array:
    s = expand_param(scale, x.shape, axis, block_size).astype(np.float32)
    zp = expand_param(zero_point, x.shape, axis, block_size).astype(np.int64)
    centered = (x.astype(np.int64) - zp).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(np.multiply(centered, s, dtype=np.float32))


def requantize_multiplier(in_scale: Array, out_scale: Array) -> Array:
    """f32(in_scale / out_scale), the one multiplier of the requantization."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.divide(
            np.asarray(in_scale, np.float32), np.asarray(out_scale, np.float32).reshape(()), dtype=np.float32
        )


@kernel("nn.requantize")
def requantize(
    x: Array, in_scale: Array, in_zero_point: Array, out_scale: Array, out_zero_point: Array, *, axis: int
) -> Array:
    m = expand_param(requantize_multiplier(in_scale, out_scale), x.shape, axis)
    zi = expand_param(in_zero_point, x.shape, axis).astype(np.int64)
    centered = (x.astype(np.int64) - zi).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.multiply(centered, m, dtype=np.float32)
    return np.ascontiguousarray(saturate_round(v, np.asarray(out_zero_point).reshape(()), out_zero_point.dtype))


def _wrap_i32(acc: Array) -> Array:
    """An exact integer-valued f64 sum as C's i32 accumulator holds it (wrapping)."""
    return np.ascontiguousarray(acc.astype(np.int64).astype(np.int32))


def _centered(x: Array, zp: Array, shape: Sequence[int] | None = None) -> Array:
    z = np.asarray(zp, np.float64)
    if shape is not None and z.size > 1:
        z = z.reshape(shape)
    else:
        z = z.reshape(())
    return x.astype(np.float64) - z


@kernel("nn.qconv2d")
def qconv2d(
    x: Array,
    w: Array,
    x_zero_point: Array,
    w_zero_point: Array,
    *,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    o, i, kh, kw = w.shape
    xc = pad_nchw(_centered(x, x_zero_point), padding, 0.0)  # padding holds x_zp: 0 once centred
    wc = _centered(w, w_zero_point, (-1, 1, 1, 1))
    win = windows(xc, kh, kw, strides, dilation)
    og = o // groups
    parts = [
        np.einsum(
            "nchwij,ocij->nohw", win[:, g * i : (g + 1) * i], wc[g * og : (g + 1) * og], optimize=True
        )
        for g in range(groups)
    ]
    return _wrap_i32(np.concatenate(parts, axis=1))


@kernel("nn.qdense")
def qdense(x: Array, w: Array, x_zero_point: Array, w_zero_point: Array) -> Array:
    return _wrap_i32(np.matmul(_centered(x, x_zero_point), _centered(w, w_zero_point, (-1, 1)).T))


@kernel("nn.qmatmul")
def qmatmul(a: Array, b: Array, a_zero_point: Array, b_zero_point: Array) -> Array:
    return _wrap_i32(np.matmul(_centered(a, a_zero_point), _centered(b, b_zero_point, (-1,))))


@kernel("nn.dynamic_quantize")
def dynamic_quantize(x: Array) -> tuple[Array, Array, Array]:
    """onnxruntime's DynamicQuantizeLinear: range including 0, scale (max - min) / 255 in f32."""
    f = np.float32
    lo = min(f(x.min()) if x.size else f(0), f(0))
    hi = max(f(x.max()) if x.size else f(0), f(0))
    scale = f(1.0) if hi == lo else f(f(hi - lo) / f(255))
    initial = f(f(0) - f(lo / scale))
    zp = np.uint8(np.rint(min(max(initial, f(0)), f(255))))
    y = quantize(x, np.asarray(scale, f), np.asarray(zp, np.uint8), axis=1, block_size=0)
    return y, np.asarray(scale, f), np.asarray(zp, np.uint8)
