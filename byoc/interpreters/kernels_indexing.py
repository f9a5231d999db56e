"""numpy kernels of the ops in `byoc/dialects/nn/indexing.py` (ONNX semantics).

Registered in `KERNELS` with `@kernel`, like `kernels.py` (which imports this module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from byoc.interpreters.kernels import Array, kernel

# ---- gathers and scatters ---------------------------------------------------------


def _wrap(indices: Array, dim: int | Array) -> Array:
    idx = indices.astype(np.int64)
    return np.where(idx < 0, idx + dim, idx)


@kernel("nn.gather_elements")
def gather_elements(data: Array, indices: Array, *, axis: int) -> Array:
    axis %= data.ndim
    return np.take_along_axis(data, _wrap(indices, data.shape[axis]), axis=axis)


@kernel("nn.gather_nd")
def gather_nd(data: Array, indices: Array, *, batch_dims: int) -> Array:
    b = batch_dims
    k = indices.shape[-1]
    batch = data.shape[:b]
    nb = math.prod(batch)
    d = data.reshape((nb, *data.shape[b:]))
    idx = _wrap(indices.reshape((nb, -1, k)), np.asarray(data.shape[b : b + k]))
    out = np.stack([d[i][tuple(idx[i].T)] for i in range(nb)]) if nb else np.empty((0,))
    return out.reshape((*indices.shape[:-1], *data.shape[b + k :])).astype(data.dtype)


def _reduce_into(reduction: str) -> Callable[[Array, Any, Array], None]:
    """`target[index] (op)= value` applied once per index, duplicates included (np.ufunc.at)."""
    if reduction == "none":

        def assign(target: Array, index: Any, value: Array) -> None:
            target[index] = value

        return assign
    ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]

    def at(target: Array, index: Any, value: Array) -> None:
        ufunc.at(target, index, value)

    return at


@kernel("nn.scatter_elements")
def scatter_elements(data: Array, indices: Array, updates: Array, *, axis: int, reduction: str) -> Array:
    out = np.array(data, copy=True)
    axis %= data.ndim
    idx = _wrap(indices, data.shape[axis])
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = idx
    if reduction == "none":  # later updates win, in index order (ONNX's reference loop)
        flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*grid)), data.shape).reshape(-1)
        out.reshape(-1)[flat] = updates.reshape(-1)
        return out
    _reduce_into(reduction)(out, tuple(grid), updates)
    return out


@kernel("nn.scatter_nd")
def scatter_nd(data: Array, indices: Array, updates: Array, *, reduction: str) -> Array:
    out = np.array(data, copy=True)
    k = indices.shape[-1]
    idx = _wrap(indices.reshape(-1, k), np.asarray(data.shape[:k]))
    upd = updates.reshape((idx.shape[0], *data.shape[k:]))
    apply = _reduce_into(reduction)
    for i in range(idx.shape[0]):  # in order: with duplicates, ONNX's loop order decides
        apply(out, tuple(idx[i]), upd[i])
    return out


# ---- triangles, one-hot, sequences ----------------------------------------------


@kernel("nn.trilu")
def trilu(x: Array, *, k: int, upper: bool) -> Array:
    return np.triu(x, k) if upper else np.tril(x, k)


@kernel("nn.one_hot")
def one_hot(indices: Array, values: Array, *, depth: int, axis: int) -> Array:
    idx = np.asarray(indices)
    if idx.dtype.kind == "f":
        idx = np.trunc(idx)
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    axis %= idx.ndim + 1
    shape = [1] * (idx.ndim + 1)
    shape[axis] = depth
    hot = np.expand_dims(idx, axis) == np.arange(depth).reshape(shape)
    return np.where(hot, values[1], values[0]).astype(values.dtype)


@kernel("nn.reverse_sequence")
def reverse_sequence(x: Array, lens: Array, *, batch_axis: int, time_axis: int) -> Array:
    out = np.array(x, copy=True)
    b, t = batch_axis % x.ndim, time_axis % x.ndim
    for i, n in enumerate(np.asarray(lens).astype(np.int64)):
        n = min(max(int(n), 0), x.shape[t])
        src = [slice(None)] * x.ndim
        src[b] = slice(i, i + 1)
        src[t] = slice(0, n)
        out[tuple(src)] = np.flip(x[tuple(src)], axis=t)
    return out


# ---- normalisations ----------------------------------------------------------------


def _compute_dtype(x: Array) -> np.dtype[Any]:
    """f16 is computed in f32 (ONNX's stash_type), f32 and f64 in themselves."""
    return np.dtype(np.float32) if x.dtype == np.float16 else x.dtype


@kernel("nn.layer_norm")
def layer_norm(x: Array, gamma: Array, beta: Array, *, axis: int, epsilon: float) -> Array:
    axes = tuple(range(axis % x.ndim, x.ndim))
    xc = x.astype(_compute_dtype(x))
    mean = xc.mean(axis=axes, keepdims=True)
    var = np.square(xc - mean).mean(axis=axes, keepdims=True)
    y = (xc - mean) / np.sqrt(var + xc.dtype.type(epsilon))
    return (y * gamma + beta).astype(x.dtype)


@kernel("nn.rms_norm")
def rms_norm(x: Array, gamma: Array, *, axis: int, epsilon: float) -> Array:
    axes = tuple(range(axis % x.ndim, x.ndim))
    xc = x.astype(_compute_dtype(x))
    ms = np.square(xc).mean(axis=axes, keepdims=True)
    return (xc / np.sqrt(ms + xc.dtype.type(epsilon)) * gamma).astype(x.dtype)


@kernel("nn.log_softmax")
def log_softmax(x: Array, *, axis: int) -> Array:
    xc = x.astype(_compute_dtype(x))
    shifted = xc - xc.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


@kernel("nn.hardmax")
def hardmax(x: Array, *, axis: int) -> Array:
    first = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros_like(x)
    np.put_along_axis(out, first, 1, axis=axis)
    return out


# ---- resize ---------------------------------------------------------------------------


def _source_coords(
    mode: str, out_size: int, in_size: int, scale: float, roi: tuple[float, float] | None
) -> tuple[Array, Array | None]:
    """ONNX's mapping of output indices to input coordinates, and (tf_crop_and_resize)
    which outputs fall outside the input."""
    y = np.arange(out_size, dtype=np.float64)
    length = scale * in_size  # the output length before rounding
    if mode == "align_corners":
        return (np.zeros(out_size) if length == 1 else y * (in_size - 1) / (length - 1)), None
    if mode == "asymmetric":
        return y / scale, None
    if mode == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        if length == 1:
            x = np.full(out_size, (hi - lo) * (in_size - 1) / 2)
        else:
            x = y * (hi - lo) * (in_size - 1) / (length - 1)
        x = x + lo * (in_size - 1)
        return x, (x < 0) | (x > in_size - 1)
    if mode == "pytorch_half_pixel":
        return (np.full(out_size, -0.5) if length == 1 else (y + 0.5) / scale - 0.5), None
    if mode == "half_pixel_symmetric":
        offset = in_size / 2 * (1 - out_size / length)
        return offset + (y + 0.5) / scale - 0.5, None
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale, None
    return (y + 0.5) / scale - 0.5, None  # half_pixel


def _taps(
    ratio: float, scale: float, mode: str, nearest_mode: str, a: float, antialias: bool
) -> Array:
    """Weights of the taps around a coordinate whose fraction is `ratio` (in (0, 1])."""
    if mode == "nearest":
        if ratio == 1.0 or nearest_mode == "ceil":
            return np.array([0.0, 1.0])
        if nearest_mode == "floor":
            return np.array([1.0, 0.0])
        up = ratio > 0.5 if nearest_mode == "round_prefer_floor" else ratio >= 0.5
        return np.array([0.0, 1.0]) if up else np.array([1.0, 0.0])
    if mode == "linear":
        if not antialias:
            return np.array([1 - ratio, ratio])
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, 2 - start) - ratio) * s
        w = np.clip(1 - np.abs(args), 0, 1)
        return w / w.sum()

    def cubic(t: Array) -> Array:
        t = np.abs(t)
        near = ((a + 2) * t - (a + 3)) * t * t + 1
        far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
        return np.where(t <= 1, near, np.where(t < 2, far, 0.0))

    if not antialias:
        return cubic(np.array([1 + ratio, ratio, 1 - ratio, 2 - ratio]))
    s = min(scale, 1.0)
    start = int(np.floor(-2 / s) + 1)
    w = cubic(s * (np.arange(start, 2 - start) - ratio))
    return w / w.sum()


def _resize_axis(
    x: Array,
    axis: int,
    out_size: int,
    scale: float,
    roi: tuple[float, float] | None,
    attrs: dict[str, Any],
) -> Array:
    in_size = x.shape[axis]
    coords, outside = _source_coords(
        attrs["coordinate_transformation_mode"], out_size, in_size, scale, roi
    )
    base = np.floor(coords)
    ratios = np.where(coords == base, 1.0, coords - base)
    weights = np.stack(
        [
            _taps(float(r), scale, attrs["mode"], attrs["nearest_mode"], attrs["cubic_coeff_a"], attrs["antialias"])
            for r in ratios
        ]
    )
    n = weights.shape[1]
    # the n taps nearest to the coordinate, ties to the smaller index (ONNX's reference)
    pad = int(math.ceil(n / 2))
    padded = coords + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:
        first = p + np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        first = p + np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    taps = first[:, None] + np.arange(n)[None, :] - pad
    if attrs["exclude_outside"]:
        weights = np.where((taps < 0) | (taps >= in_size), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    taps = np.clip(taps, 0, in_size - 1)
    gathered = np.take(x, taps, axis=axis)  # (..., out, n, ...)
    shape = (1,) * axis + weights.shape + (1,) * (x.ndim - axis - 1)
    out = (gathered * weights.reshape(shape)).sum(axis=axis + 1)
    if outside is not None and outside.any():
        mask = outside.reshape((1,) * axis + (out_size,) + (1,) * (x.ndim - axis - 1))
        out = np.where(mask, attrs["extrapolation_value"], out)
    return out


@kernel("nn.resize")
def resize(x: Array, *, size: Sequence[int], scales: Sequence[float], roi: Sequence[float], **attrs: Any) -> Array:
    rank = x.ndim
    scale = list(scales) if scales else [o / i for o, i in zip(size, x.shape, strict=True)]
    y = x.astype(np.float64)
    for axis in range(rank):
        axis_roi = (roi[axis], roi[rank + axis]) if roi else None
        if (
            size[axis] == x.shape[axis]
            and math.isclose(scale[axis], 1.0)
            and (axis_roi is None or axis_roi == (0.0, 1.0))
        ):
            continue
        y = _resize_axis(y, axis, size[axis], scale[axis], axis_roi, attrs)
    if x.dtype.kind in "iu":  # ONNX saturates to the integer type
        info = np.iinfo(x.dtype)
        y = np.clip(np.round(y), info.min, info.max)
    return y.astype(x.dtype)


# ---- attention -------------------------------------------------------------------------

_PRECISIONS = {1: np.float32, 10: np.float16, 11: np.float64}
"""softmax_precision (an ONNX type code) -> numpy dtype."""


def _heads_first(x: Array, heads: int) -> Array:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def _frontier_bias(base: Array, offset: Any, allowed: Callable[[Array], Array]) -> Array:
    """base + (0 where allowed(i + offset - j) else -inf) over (q, kv); a per-batch offset
    (a vector) adds a (batch, 1, q, kv) bias."""
    sq, skv = base.shape[-2:]
    i = np.arange(sq).reshape(sq, 1)
    j = np.arange(skv).reshape(1, skv)
    per_batch = np.ndim(offset) > 0
    diff = (i + np.reshape(offset, (-1, 1, 1)) if per_batch else i + int(offset)) - j
    bias = np.where(allowed(diff), base.dtype.type(0), base.dtype.type(-np.inf))
    return base + (bias.reshape(bias.shape[0], 1, sq, skv) if per_batch else bias)


def _safe_softmax(x: Array) -> Array:
    """softmax over the last axis; a row of -inf gives zeros (no NaN)."""
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(top), x.dtype.type(0), top))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, x.dtype.type(1), total)


@kernel("nn.attention")
def attention(
    *inputs: Array,
    has_mask: bool,
    has_past: bool,
    has_nonpad: bool,
    num_outputs: int,
    is_causal: bool,
    q_num_heads: int,
    kv_num_heads: int,
    scale: float,
    softcap: float,
    qk_matmul_output_mode: int,
    softmax_precision: int,
    left_window_size: int,
    right_window_size: int,
) -> Any:
    q, k, v = inputs[:3]
    rest = list(inputs[3:])
    mask = rest.pop(0) if has_mask else None
    past_k, past_v = (rest.pop(0), rest.pop(0)) if has_past else (None, None)
    nonpad = rest.pop(0).astype(np.int64).reshape(-1) if has_nonpad else None
    three_d = q.ndim == 3
    if three_d:
        q, k, v = _heads_first(q, q_num_heads), _heads_first(k, kv_num_heads), _heads_first(v, kv_num_heads)
    dt = q.dtype
    root = dt.type(np.sqrt(scale if scale else 1 / np.sqrt(q.shape[3])))
    if past_k is not None:
        k, v = np.concatenate((past_k, k), axis=2), np.concatenate((past_v, v), axis=2)
    present_k, present_v = k, v
    sq, skv = q.shape[2], k.shape[2]
    bias = np.zeros((sq, skv), dt)
    if mask is not None and mask.shape[-1] < skv:  # a short mask is padded: masked out
        width = [(0, 0)] * (mask.ndim - 1) + [(0, skv - mask.shape[-1])]
        mask = np.pad(mask, width, constant_values=False if mask.dtype == np.bool_ else -np.inf)
    if mask is not None and mask.dtype == np.bool_:
        mask = np.where(mask, dt.type(0), dt.type(-np.inf))
    # the causal / window frontier: i + offset, offset the keys before this query block
    if past_k is None and nonpad is not None:
        offset: Any = nonpad - sq
    else:
        offset = past_k.shape[2] if past_k is not None else 0
    windowed = left_window_size >= 0 or right_window_size >= 0
    if is_causal:
        base = np.zeros((sq, skv), dt) if mask is None else np.array(mask, dtype=dt)
        if windowed:
            base = np.zeros((sq, skv), dt) + base
        bias = _frontier_bias(base, offset, lambda d: d >= 0)
    elif mask is not None:
        bias = bias + mask.astype(dt)
    if windowed:

        def inside(d: Array) -> Array:
            ok = np.ones(d.shape, dtype=np.bool_)
            if left_window_size >= 0:
                ok &= d <= left_window_size
            if right_window_size >= 0:
                ok &= -d <= right_window_size
            return ok

        bias = _frontier_bias(np.zeros((sq, skv), dt) + bias, offset, inside)
    if nonpad is not None:
        keep = (np.arange(skv) < nonpad[:, None]).reshape(-1, 1, 1, skv)
        bias = bias + np.where(keep, 0, -np.inf).astype(bias.dtype)
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:  # grouped-query attention: each kv head serves hq / hkv query heads
        k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)
    qk = np.matmul(q * root, np.swapaxes(k * root, 2, 3))
    if softcap > 0:
        qk = np.tanh(qk / dt.type(softcap)) * dt.type(softcap)
    with_bias = qk + bias
    qk_out = with_bias if qk_matmul_output_mode == 2 else qk
    if softmax_precision:
        with_bias = with_bias.astype(_PRECISIONS[softmax_precision])
    probs = _safe_softmax(with_bias)
    masked_rows = np.isneginf(np.max(bias, axis=-1, keepdims=True))  # no key left to attend
    probs = np.where(masked_rows, probs.dtype.type(0), probs)
    if qk_matmul_output_mode == 3:
        qk_out = probs
    y = np.matmul(probs.astype(dt), v)
    if three_d:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    results = (y, present_k, present_v, np.asarray(qk_out).astype(dt))[:num_outputs]
    return results[0] if num_outputs == 1 else results


@kernel("nn.nll_loss")
def nll_loss(x: Array, target: Array, *weight: Array, reduction: str, ignore_index: int, has_ignore: bool) -> Array:
    n, c = x.shape[:2]
    t = target.reshape(n, -1).astype(np.int64)
    ignored = t == ignore_index if has_ignore else np.zeros(t.shape, dtype=np.bool_)
    tc = np.clip(t, 0, c - 1)  # an ignored target may lie outside [0, C)
    picked = np.take_along_axis(x.reshape(n, c, -1), tc[:, None, :], axis=1)[:, 0, :]
    loss = np.where(ignored, x.dtype.type(0), -picked).reshape(target.shape)
    if weight or has_ignore:
        w = np.take(weight[0], tc) if weight else np.ones(t.shape, x.dtype)
        w = np.where(ignored, 0, w).astype(x.dtype).reshape(target.shape)
        loss = w * loss
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.asarray(loss.sum() / w.sum()).astype(x.dtype)
    if reduction == "mean":
        return np.asarray(loss.mean()).astype(x.dtype)
    if reduction == "sum":
        return np.asarray(loss.sum()).astype(x.dtype)
    return loss.astype(x.dtype)


# ---- grid sample ------------------------------------------------------------------------


def _reflect(x: Array, lo: float, hi: float) -> Array:
    """Fold coordinates into [lo, hi] by reflecting at the nearer border (ONNX GridSample)."""
    span = hi - lo
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0))
    n = np.trunc(d / span) if span else np.zeros_like(d)
    r = d - n * span
    even = n % 2 == 0
    folded_below = np.where(even, lo + r, hi - r)
    folded_above = np.where(even, hi - r, lo + r)
    return np.where(below, folded_below, np.where(above, folded_above, x))


def _keys(t: Array, a: float = -0.75) -> Array:
    """The 4 cubic convolution weights (Keys, a = -0.75) of fraction t in [0, 1)."""
    return np.stack(
        [
            ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
        ],
        axis=-1,
    )


@kernel("nn.grid_sample")
def grid_sample(x: Array, grid: Array, *, mode: str, padding_mode: str, align_corners: bool) -> Array:
    n, c = x.shape[:2]
    dims = x.shape[2:]
    r = len(dims)
    out_shape = grid.shape[1:-1]
    coords = grid.reshape(n, -1, r)[..., ::-1]  # (N, P, r), dim order
    f = coords.dtype.type
    taps: list[Array] = []
    weights: list[Array] = []
    for i, size in enumerate(dims):
        g = coords[..., i]
        if align_corners:
            v, lo, hi = (g + f(1)) / f(2) * f(size - 1), 0.0, float(size - 1)
        else:
            v, lo, hi = ((g + f(1)) * f(size) - f(1)) / f(2), -0.5, size - 0.5
        if mode == "nearest":
            v = np.rint(v)
        outside = (v < lo) | (v > hi)
        if padding_mode == "border":
            v = np.where(outside, np.clip(v, 0, size - 1), v)
        elif padding_mode == "reflection":
            v = np.where(outside, _reflect(v, lo, hi), v)
        if mode == "nearest":
            idx, w = v.astype(np.int64)[..., None], np.ones(v.shape + (1,), v.dtype)
        else:
            base = np.floor(v)
            t = v - base
            if mode == "linear":
                idx = base.astype(np.int64)[..., None] + np.arange(2)
                w = np.stack([1 - t, t], axis=-1)
            else:
                idx = base.astype(np.int64)[..., None] + np.arange(-1, 3)
                w = _keys(t)
        # where a tap lands outside: zeros drops it, border clamps it, reflection folds it
        if padding_mode == "zeros":
            w = np.where((idx < 0) | (idx >= size), 0, w)
            idx = np.clip(idx, 0, size - 1)
        elif padding_mode == "border":
            idx = np.clip(idx, 0, size - 1)
        else:
            idx = np.clip(_reflect(idx.astype(np.float64), lo, hi).astype(np.int64), 0, size - 1)
        taps.append(idx)
        weights.append(w)
    out = np.zeros((n, c, coords.shape[1]), dtype=np.float64)
    for b in range(n):
        xb = x[b].astype(np.float64)
        for combo in np.ndindex(*[t.shape[-1] for t in taps]):
            index = tuple(taps[d][b, :, k] for d, k in enumerate(combo))
            w = np.prod([weights[d][b, :, k].astype(np.float64) for d, k in enumerate(combo)], axis=0)
            out[b] += xb[(slice(None), *index)] * w
    return out.reshape(n, c, *out_shape).astype(x.dtype)


@kernel("nn.col2im")
def col2im(
    x: Array,
    *,
    image_shape: Sequence[int],
    block_shape: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    strides: Sequence[int],
) -> Array:
    r = len(image_shape)
    dil = dilations or (1,) * r
    pad = pads or (0,) * (2 * r)
    stride = strides or (1,) * r
    n, cb, _ = x.shape
    c = cb // math.prod(block_shape)
    counts = [
        (image_shape[i] + pad[i] + pad[r + i] - dil[i] * (block_shape[i] - 1) - 1) // stride[i] + 1
        for i in range(r)
    ]
    padded = np.zeros((n, c, *(image_shape[i] + pad[i] + pad[r + i] for i in range(r))), dtype=x.dtype)
    cols = x.reshape(n, c, math.prod(block_shape), *counts)
    for k, offset in enumerate(np.ndindex(*block_shape)):
        window = tuple(
            slice(offset[i] * dil[i], offset[i] * dil[i] + (counts[i] - 1) * stride[i] + 1, stride[i])
            for i in range(r)
        )
        padded[(slice(None), slice(None), *window)] += cols[:, :, k]
    crop = tuple(slice(pad[i], pad[i] + image_shape[i]) for i in range(r))
    return np.ascontiguousarray(padded[(slice(None), slice(None), *crop)])
