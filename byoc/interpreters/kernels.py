"""numpy kernels for every `nn` op: the reference semantics.

`KERNELS["nn.conv2d"](x, w, strides=..., padding=..., dilation=..., groups=...)`:
positional arguments are the operands (numpy arrays), keyword arguments are
the op's properties as Python values (`NNOp.attr_values()`). Each returns one
array (or a tuple for multi-result ops). The numpy reference interpreter, the
host executor and the ExampleJSON runtime all call these; nothing
re-implements them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from byoc.dialects.nn.types import element_type_named, numpy_dtype
from byoc.interpreters.registry import KERNELS as KERNELS  # re-exported: the filled table
from byoc.interpreters.registry import Array, kernel
from byoc.interpreters.windows import pad_nchw, windows


def _same(x: Array, like: Array) -> Array:
    return np.asarray(x, dtype=like.dtype)


# ---- binary (numpy broadcasting) ---------------------------------------------
kernel("nn.add")(lambda a, b: np.add(a, b))
kernel("nn.subtract")(lambda a, b: np.subtract(a, b))
kernel("nn.multiply")(lambda a, b: np.multiply(a, b))
@kernel("nn.divide")
def divide(a: Array, b: Array) -> Array:
    """Integers: the quotient truncated toward zero (ONNX Div); a zero divisor is undefined."""
    if a.dtype.kind == "f":
        return np.divide(a, b)
    with np.errstate(all="ignore"):
        return np.divide(a, b).astype(a.dtype)
kernel("nn.maximum")(lambda a, b: np.maximum(a, b))
kernel("nn.minimum")(lambda a, b: np.minimum(a, b))


@kernel("nn.power")
def power(a: Array, b: Array) -> Array:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.power(a, b)


@kernel("nn.prelu")
def prelu(x: Array, slope: Array) -> Array:
    return np.where(x >= 0, x, x * slope).astype(x.dtype)


# ---- unary ---------------------------------------------------------------------
@kernel("nn.relu")
def relu(x: Array) -> Array:
    return np.maximum(x, x.dtype.type(0))


@kernel("nn.sigmoid")
def sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return _same(1.0 / (1.0 + np.exp(-x)), x)


kernel("nn.tanh")(lambda x: np.tanh(x))
kernel("nn.negative")(lambda x: np.negative(x))
kernel("nn.abs")(lambda x: np.abs(x))


@kernel("nn.exp")
def exp(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return np.exp(x)


@kernel("nn.log")
def log(x: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


@kernel("nn.sqrt")
def sqrt(x: Array) -> Array:
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


@kernel("nn.reciprocal")
def reciprocal(x: Array) -> Array:
    with np.errstate(divide="ignore"):
        return np.reciprocal(x)


_erf = np.frompyfunc(math.erf, 1, 1)


@kernel("nn.erf")
def erf(x: Array) -> Array:
    return np.asarray(_erf(x), dtype=x.dtype).reshape(x.shape)


@kernel("nn.clip")
def clip(x: Array, *, a_min: float, a_max: float) -> Array:
    if x.dtype.kind == "f":
        return np.clip(x, x.dtype.type(a_min), x.dtype.type(a_max))
    info = np.iinfo(x.dtype)
    lo = info.min if math.isinf(a_min) else max(info.min, math.ceil(a_min))
    hi = info.max if math.isinf(a_max) else min(info.max, math.floor(a_max))
    return np.clip(x, lo, hi).astype(x.dtype)


@kernel("nn.leaky_relu")
def leaky_relu(x: Array, *, alpha: float) -> Array:
    return np.where(x >= 0, x, x * x.dtype.type(alpha)).astype(x.dtype)


@kernel("nn.hard_sigmoid")
def hard_sigmoid(x: Array, *, alpha: float, beta: float) -> Array:
    return _same(np.clip(x * x.dtype.type(alpha) + x.dtype.type(beta), 0, 1), x)


@kernel("nn.hard_swish")
def hard_swish(x: Array) -> Array:
    # x >= 3 is x itself: x * 6 / 6 would overflow above f32's max / 6
    with np.errstate(over="ignore", invalid="ignore"):
        return _same(np.where(x >= 3, x, x * np.clip(x + 3, 0, 6) / 6), x)


@kernel("nn.cast")
def cast(x: Array, *, dtype: str) -> Array:
    target = element_type_named(dtype)
    assert target is not None, f"no element type '{dtype}'"
    return x.astype(numpy_dtype(target))


# ---- nn ------------------------------------------------------------------------
def _to_nchw(x: Array, layout: str) -> Array:
    return x if layout == "NCHW" else x.transpose(0, 3, 1, 2)


def _from_nchw(x: Array, layout: str) -> Array:
    return x if layout == "NCHW" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))


@kernel("nn.conv2d")
def conv2d(
    x: Array,
    w: Array,
    *,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
) -> Array:
    x = _to_nchw(x, data_layout)
    if kernel_layout == "HWIO":
        w = w.transpose(3, 2, 0, 1)
    return _from_nchw(_conv2d_nchw(x, w, strides, padding, dilation, groups), data_layout)


def _conv2d_nchw(
    x: Array,
    w: Array,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    n, c, _, _ = x.shape
    o, i, kh, kw = w.shape
    win = windows(pad_nchw(x, padding, 0.0), kh, kw, strides, dilation)
    if groups == 1:
        out = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    else:
        og = o // groups
        parts = [
            np.einsum(
                "nchwij,ocij->nohw",
                win[:, g * i : (g + 1) * i],
                w[g * og : (g + 1) * og],
                optimize=True,
            )
            for g in range(groups)
        ]
        out = np.concatenate(parts, axis=1)
    return np.ascontiguousarray(out, dtype=x.dtype)


@kernel("nn.conv2d_transpose")
def conv2d_transpose(
    x: Array,
    w: Array,
    *,
    strides: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Array:
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilation
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + output_padding[0]
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + output_padding[1]
    out = np.zeros((n, og * groups, full_h, full_w), dtype=x.dtype)
    cg = c // groups
    for g in range(groups):
        # every input pixel scatters a (KH, KW) patch: one strided add per tap
        taps = np.einsum("nchw,coij->noijhw", x[:, g * cg : (g + 1) * cg], w[g * cg : (g + 1) * cg])
        dst = out[:, g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                dst[:, :, i * dh : i * dh + (h - 1) * sh + 1 : sh, j * dw : j * dw + (wd - 1) * sw + 1 : sw] += taps[:, :, i, j]
    pt, pl, pb, pr = padding
    return np.ascontiguousarray(out[:, :, pt : full_h - pb, pl : full_w - pr])


@kernel("nn.dense")
def dense(x: Array, w: Array) -> Array:
    return np.matmul(x, w.T)


kernel("nn.matmul")(lambda a, b: np.matmul(a, b))


def _channel_shape(ndim: int, axis: int) -> list[int]:
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return shape


@kernel("nn.bias_add")
def bias_add(x: Array, b: Array, *, axis: int) -> Array:
    return x + b.reshape(_channel_shape(x.ndim, axis))


@kernel("nn.batch_norm")
def batch_norm(
    x: Array,
    gamma: Array,
    beta: Array,
    mean: Array,
    var: Array,
    *,
    axis: int,
    epsilon: float,
    data_layout: str = "NCHW",
) -> Array:
    # the verifier ties data_layout to axis (NHWC: axis 3), so `axis` says it all
    shape = _channel_shape(x.ndim, axis)
    scale = gamma / np.sqrt(var + x.dtype.type(epsilon))
    shift = beta - mean * scale
    return _same(x * scale.reshape(shape) + shift.reshape(shape), x)


def _pool_out(size: int, k: int, s: int, lo: int, hi: int, d: int, ceil_mode: bool) -> int:
    """Output extent of one pooled axis: the type relation of nn.max_pool2d/avg_pool2d."""
    span = d * (k - 1) + 1
    avail = size + lo + hi - span
    if not ceil_mode:
        return avail // s + 1
    out = -(-avail // s) + 1
    if (out - 1) * s >= size + lo:  # the last window would start in the bottom padding
        out -= 1
    return out


def _pool_pads(
    x: Array,
    pool_size: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """Padding actually needed (with the extra bottom/right rows ceil_mode reads) and the
    output extents (OH, OW), which the windows of the padded input are cut to."""
    pt, pl, pb, pr = padding
    h, w = x.shape[2:]
    extra, outs = [], []
    for size, k, s, lo, hi, d in (
        (h, pool_size[0], strides[0], pt, pb, dilation[0]),
        (w, pool_size[1], strides[1], pl, pr, dilation[1]),
    ):
        span = d * (k - 1) + 1
        out = _pool_out(size, k, s, lo, hi, d, ceil_mode)
        outs.append(out)
        extra.append(max(0, (out - 1) * s + span - (size + lo + hi)))
    return (pt, pl, pb + extra[0], pr + extra[1]), (outs[0], outs[1])


@kernel("nn.max_pool2d")
def max_pool2d(
    x: Array,
    *,
    pool_size: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    data_layout: str = "NCHW",
) -> Array:
    x = _to_nchw(x, data_layout)
    pads, (oh, ow) = _pool_pads(x, pool_size, strides, padding, dilation, ceil_mode)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = pad_nchw(x, pads, lowest)
    win = windows(xp, pool_size[0], pool_size[1], strides, dilation)[:, :, :oh, :ow]
    return _from_nchw(np.ascontiguousarray(win.max(axis=(4, 5))), data_layout)


@kernel("nn.avg_pool2d")
def avg_pool2d(
    x: Array,
    *,
    pool_size: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    data_layout: str = "NCHW",
) -> Array:
    x = _to_nchw(x, data_layout)
    pads, (oh, ow) = _pool_pads(x, pool_size, strides, padding, dilation, ceil_mode)
    xp = pad_nchw(x, pads, 0.0)
    win = windows(xp, pool_size[0], pool_size[1], strides, dilation)[:, :, :oh, :ow]
    total = win.sum(axis=(4, 5), dtype=np.float64)
    # Count the window elements that are real input (or, with count_include_pad,
    # inside the user's padding but not the extra ceil_mode rows).
    ones = np.zeros((1, 1, *x.shape[2:]), dtype=np.float64) + 1
    if count_include_pad:
        ones = pad_nchw(ones, padding, 1.0)
        extra = (0, 0, pads[2] - padding[2], pads[3] - padding[3])
        ones = pad_nchw(ones, extra, 0.0)
    else:
        ones = pad_nchw(ones, pads, 0.0)
    counts = windows(ones, pool_size[0], pool_size[1], strides, dilation)[:, :, :oh, :ow].sum(axis=(4, 5))
    return _from_nchw(
        np.ascontiguousarray((total / np.maximum(counts, 1)).astype(x.dtype)), data_layout
    )


@kernel("nn.global_avg_pool2d")
def global_avg_pool2d(x: Array, *, data_layout: str = "NCHW") -> Array:
    axes = (2, 3) if data_layout == "NCHW" else (1, 2)
    return x.mean(axis=axes, keepdims=True, dtype=np.float64).astype(x.dtype)


@kernel("nn.global_max_pool2d")
def global_max_pool2d(x: Array, *, data_layout: str = "NCHW") -> Array:
    return x.max(axis=(2, 3) if data_layout == "NCHW" else (1, 2), keepdims=True)


@kernel("nn.softmax")
def softmax(x: Array, *, axis: int) -> Array:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return _same(e / e.sum(axis=axis, keepdims=True), x)


@kernel("nn.lrn")
def lrn(x: Array, *, size: int, axis: int, alpha: float, beta: float, bias: float) -> Array:
    axis %= x.ndim
    sq = np.square(x)
    before, after = (size - 1) // 2, size // 2
    pad = [(0, 0)] * x.ndim
    pad[axis] = (before, after)
    sq = np.pad(sq, pad)
    window = sum(
        np.take(sq, range(k, k + x.shape[axis]), axis=axis) for k in range(size)
    )
    return _same(x / (bias + (alpha / size) * window) ** beta, x)


# ---- layout --------------------------------------------------------------------
@kernel("nn.reshape")
def reshape(x: Array, *, newshape: Sequence[int]) -> Array:
    return x.reshape(newshape)


@kernel("nn.flatten")
def flatten(x: Array, *, axis: int) -> Array:
    axis += x.ndim if axis < 0 else 0
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@kernel("nn.transpose")
def transpose(x: Array, *, axes: Sequence[int]) -> Array:
    return np.ascontiguousarray(np.transpose(x, axes or None))


@kernel("nn.concatenate")
def concatenate(*xs: Array, axis: int) -> Array:
    return np.concatenate(xs, axis=axis)


@kernel("nn.take")
def take(x: Array, indices: Array, *, axis: int) -> Array:
    dim = x.shape[axis]
    idx = np.where(indices < 0, indices + dim, indices)
    return np.take(x, idx, axis=axis, mode="clip")


@kernel("nn.pad")
def pad(x: Array, *, pad_width: Sequence[int], pad_value: float, pad_mode: str) -> Array:
    pw = [(pad_width[2 * i], pad_width[2 * i + 1]) for i in range(x.ndim)]
    if pad_mode == "constant":
        return np.pad(x, pw, mode="constant", constant_values=x.dtype.type(pad_value))
    return np.pad(x, pw, mode=pad_mode)


@kernel("nn.split")
def split(x: Array, *, indices: Sequence[int], axis: int) -> tuple[Array, ...]:
    return tuple(np.ascontiguousarray(p) for p in np.split(x, list(indices), axis=axis))


@kernel("nn.strided_slice")
def strided_slice(
    x: Array, *, begin: Sequence[int], end: Sequence[int], strides: Sequence[int]
) -> Array:
    index: list[slice] = []
    for b, e, s in zip(begin, end, strides or (1,) * x.ndim, strict=True):
        if not range(b, e, s):
            index.append(slice(0, 0))
        else:
            index.append(slice(b, e if e >= 0 else None, s))
    return np.ascontiguousarray(x[tuple(index)])


def _resize_coords(
    out_size: int, in_size: int, scale: float, mode: str
) -> np.ndarray[Any, Any]:
    """Input coordinate (float64) of each output index along one axis (ONNX Resize)."""
    y = np.arange(out_size, dtype=np.float64)
    scale = scale or out_size / in_size
    if mode == "align_corners":
        length = scale * in_size
        return y * 0.0 if length == 1 else y * (in_size - 1) / (length - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "pytorch_half_pixel":
        return y * 0.0 - 0.5 if scale * in_size == 1 else (y + 0.5) / scale - 0.5
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / (scale * in_size))
        return offset + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5  # half_pixel


def _resize_axis(
    x: Array, axis: int, out_size: int, scale: float, method: str, mode: str, rounding: str
) -> Array:
    in_size = x.shape[axis]
    coords = _resize_coords(out_size, in_size, scale, mode)
    lo = np.floor(coords)
    frac = coords - lo
    lo = lo.astype(np.int64)
    if method == "nearest_neighbor":
        up = {
            "round_prefer_floor": frac > 0.5,
            "round_prefer_ceil": frac >= 0.5,
            "floor": np.zeros_like(frac, dtype=bool),
            "ceil": frac > 0,
        }[rounding]
        idx = np.clip(lo + up, 0, in_size - 1)
        return np.take(x, idx, axis=axis)
    shape = [1] * x.ndim
    shape[axis] = out_size
    w = frac.reshape(shape)
    a = np.take(x, np.clip(lo, 0, in_size - 1), axis=axis)
    b = np.take(x, np.clip(lo + 1, 0, in_size - 1), axis=axis)
    return a * (1 - w) + b * w


@kernel("nn.resize2d")
def resize2d(
    x: Array,
    *,
    size: Sequence[int],
    method: str,
    coordinate_transformation_mode: str,
    rounding_method: str,
    scale_h: float,
    scale_w: float,
) -> Array:
    out = x.astype(np.float64)
    for axis, n, scale in ((2, size[0], scale_h), (3, size[1], scale_w)):
        if n == out.shape[axis] and scale in (0.0, 1.0):
            continue
        out = _resize_axis(
            out, axis, n, scale, method, coordinate_transformation_mode, rounding_method
        )
    return np.ascontiguousarray(out.astype(x.dtype))


def _axes(x: Array, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(a % x.ndim for a in axes) if axes else tuple(range(x.ndim))


@kernel("nn.reduce_mean")
def reduce_mean(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    return np.asarray(
        x.mean(axis=_axes(x, axes), keepdims=keepdims, dtype=np.float64), dtype=x.dtype
    )


@kernel("nn.reduce_sum")
def reduce_sum(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    return np.asarray(x.sum(axis=_axes(x, axes), keepdims=keepdims), dtype=x.dtype)


@kernel("nn.reduce_max")
def reduce_max(x: Array, *, axes: Sequence[int], keepdims: bool) -> Array:
    # an empty max is the lowest value
    lowest = -np.inf if x.dtype.kind == "f" else False if x.dtype.kind == "b" else np.iinfo(x.dtype).min
    return np.asarray(x.max(axis=_axes(x, axes), keepdims=keepdims, initial=lowest), dtype=x.dtype)


@kernel("nn.constant")
def constant(*, value: Array) -> Array:
    return value


# ---- quantized ops: their own module, registered into the same table ----------------
import byoc.interpreters.qkernels  # noqa: E402, F401
