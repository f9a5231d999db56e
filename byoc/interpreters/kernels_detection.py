"""numpy kernels of `byoc/dialects/nn/detection.py` (ONNX semantics), and the
NonMaxSuppression the importer evaluates when its inputs are known (no nn op: its result
count depends on the values).

Registered in `KERNELS` with `@kernel`, like `kernels.py`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from byoc.interpreters.kernels import Array, kernel

# ---- RoiAlign -----------------------------------------------------------------------


def _sample_axis(coords: Array, size: int) -> tuple[Array, Array, Array, Array, Array]:
    """Bilinear taps along one axis, as ONNX RoiAlign takes them: (low, high, weight of
    low, weight of high, inside). A coordinate below -1 or above `size` samples nothing."""
    inside = (coords >= -1.0) & (coords <= size)
    c = np.maximum(coords, 0.0)
    low = np.floor(c).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    c = np.where(at_end, low.astype(np.float64), c)
    frac = c - low
    return low, high, 1.0 - frac, frac, inside


@kernel("nn.roi_align")
def roi_align(
    x: Array,
    rois: Array,
    batch_indices: Array,
    *,
    mode: str,
    output_height: int,
    output_width: int,
    sampling_ratio: int,
    spatial_scale: float,
    coordinate_transformation_mode: str,
) -> Array:
    n_rois = rois.shape[0]
    _, c, h, w = x.shape
    oh, ow = output_height, output_width
    out = np.zeros((n_rois, c, oh, ow), dtype=np.float64)
    half_pixel = coordinate_transformation_mode == "half_pixel"
    offset = 0.5 if half_pixel else 0.0
    boxes = rois.astype(np.float64) * float(spatial_scale) - offset
    for r in range(n_rois):
        x1, y1, x2, y2 = boxes[r]
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half_pixel:  # the opset-10 behaviour: a malformed region is 1x1
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / oh, roi_w / ow
        gh = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_h / oh))
        gw = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_w / ow))
        if gh <= 0 or gw <= 0:  # an empty region: ONNX averages nothing (0) or maxes nothing (0)
            continue
        ys = y1 + np.arange(oh)[:, None] * bin_h + (np.arange(gh)[None, :] + 0.5) * bin_h / gh  # (oh, gh)
        xs = x1 + np.arange(ow)[:, None] * bin_w + (np.arange(gw)[None, :] + 0.5) * bin_w / gw  # (ow, gw)
        ylo, yhi, wylo, wyhi, yin = _sample_axis(ys, h)
        xlo, xhi, wxlo, wxhi, xin = _sample_axis(xs, w)
        inside = yin[:, :, None, None] & xin[None, None, :, :]  # (oh, gh, ow, gw)
        img = x[int(batch_indices[r])].astype(np.float64)  # (C, H, W)
        terms = []
        for yi, wy in ((ylo, wylo), (yhi, wyhi)):
            for xi, wx in ((xlo, wxlo), (xhi, wxhi)):
                weight = np.where(inside, wy[:, :, None, None] * wx[None, None, :, :], 0.0)
                values = img[:, yi[:, :, None, None], xi[None, None, :, :]]  # (C, oh, gh, ow, gw)
                terms.append(np.where(inside, weight * values, 0.0))
        if mode == "avg":
            out[r] = sum(terms).sum(axis=(2, 4)) / max(gh * gw, 1)
        else:
            out[r] = np.maximum.reduce(terms).max(axis=(2, 4))
    return out.astype(x.dtype)


# ---- RotaryEmbedding -------------------------------------------------------------------


@kernel("nn.rotary_embedding")
def rotary_embedding(
    x: Array,
    cos_cache: Array,
    sin_cache: Array,
    position_ids: Array,
    *,
    interleaved: bool,
    num_heads: int,
    rotary_embedding_dim: int,
) -> Array:
    shape = x.shape
    v = np.transpose(x, (0, 2, 1, 3)) if x.ndim == 4 else x.reshape(shape[0], shape[1], num_heads, -1)
    head = v.shape[3]
    dim = rotary_embedding_dim or head
    if position_ids.size or position_ids.ndim == 2:
        pos = position_ids.astype(np.int64)
        cos_cache, sin_cache = cos_cache[pos], sin_cache[pos]
    cos = cos_cache[:, :, None, :].astype(np.float64)  # (B, S, 1, dim/2)
    sin = sin_cache[:, :, None, :].astype(np.float64)
    rot = v[..., :dim].astype(np.float64)
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., : dim // 2], rot[..., dim // 2 :]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rotated = np.stack([real, imag], axis=-1).reshape(rot.shape)
    else:
        rotated = np.concatenate([real, imag], axis=-1)
    out = np.concatenate([rotated.astype(x.dtype), v[..., dim:]], axis=-1)
    return np.ascontiguousarray(np.transpose(out, (0, 2, 1, 3)) if x.ndim == 4 else out.reshape(shape))


# ---- DeformConv ---------------------------------------------------------------------------


def _bilinear_zeros(img: Array, ys: Array, xs: Array) -> Array:
    """img (C, H, W) sampled at (ys, xs) of any one shape, zeros outside: (C, *shape)."""
    _, h, w = img.shape
    y0, x0 = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    fy, fx = ys - y0, xs - x0
    out = np.zeros((img.shape[0], *ys.shape), dtype=np.float64)
    for dy, wy in ((0, 1.0 - fy), (1, fy)):
        for dx, wx in ((0, 1.0 - fx), (1, fx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            v = img[:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
            out += np.where(inside, wy * wx, 0.0) * v
    return out


@kernel("nn.deform_conv2d")
def deform_conv2d(
    x: Array,
    weight: Array,
    offset: Array,
    bias: Array,
    mask: Array,
    *,
    strides: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    offset_group: int,
) -> Array:
    n, c, _, _ = x.shape
    oc, cg, kh, kw = weight.shape
    oh, ow = offset.shape[2:]
    og = offset_group
    off = offset.astype(np.float64).reshape(n, og, kh, kw, 2, oh, ow)
    m = (
        np.ones((n, og, kh, kw, oh, ow)) if mask.size == 0 else mask.astype(np.float64).reshape(n, og, kh, kw, oh, ow)
    )
    base_y = -padding[0] + strides[0] * np.arange(oh)[None, None, :, None] + dilation[0] * np.arange(kh)[:, None, None, None]
    base_x = -padding[1] + strides[1] * np.arange(ow)[None, None, None, :] + dilation[1] * np.arange(kw)[None, :, None, None]
    out = np.zeros((n, oc, oh, ow), dtype=np.float64)
    per_og = c // og
    w64 = weight.astype(np.float64)
    for b in range(n):
        cols = np.empty((c, kh, kw, oh, ow), dtype=np.float64)
        for g in range(og):
            ys = base_y + off[b, g, :, :, 0]  # (kh, kw, oh, ow)
            xs = base_x + off[b, g, :, :, 1]
            chans = slice(g * per_og, (g + 1) * per_og)
            cols[chans] = _bilinear_zeros(x[b, chans].astype(np.float64), ys, xs) * m[b, g]
        ocg = oc // groups
        for g in range(groups):
            out[b, g * ocg : (g + 1) * ocg] = np.einsum(
                "ocij,cijhw->ohw", w64[g * ocg : (g + 1) * ocg], cols[g * cg : (g + 1) * cg]
            )
    if bias.size:
        out += bias.astype(np.float64).reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


# ---- TensorScatter ---------------------------------------------------------------------------


@kernel("nn.tensor_scatter")
def tensor_scatter(past_cache: Array, update: Array, write_indices: Array, *, mode: str, axis: int) -> Array:
    out = np.array(past_cache, copy=True)
    axis %= past_cache.ndim
    size, count = past_cache.shape[axis], update.shape[axis]
    starts = np.zeros(past_cache.shape[0], np.int64) if write_indices.size == 0 else write_indices.astype(np.int64)
    for b in range(past_cache.shape[0]):
        idx = starts[b] + np.arange(count)
        if mode == "circular":
            idx %= size
        elif count and (idx[0] < 0 or idx[-1] >= size):
            raise ValueError(
                f"tensor_scatter: batch row {b} writes positions {idx[0]}..{idx[-1]} of a cache of {size} (mode linear)"
            )
        np.moveaxis(out[b], axis - 1, 0)[idx] = np.moveaxis(update[b], axis - 1, 0)
    return out


# ---- LinearAttention ---------------------------------------------------------------------------


@kernel("nn.linear_attention")
def linear_attention(
    query: Array,
    key: Array,
    value: Array,
    past_state: Array,
    decay: Array,
    beta: Array,
    *,
    q_num_heads: int,
    kv_num_heads: int,
    scale: float,
    update_rule: str,
) -> tuple[Array, Array]:
    b, t, _ = query.shape
    hq, hkv = q_num_heads, kv_num_heads
    dk, dv = query.shape[2] // hq, value.shape[2] // hkv

    def heads(x: Array, h: int) -> Array:  # (B, T, h * d) -> (B, h, T, d), in float64
        return x.reshape(b, t, h, -1).transpose(0, 2, 1, 3).astype(np.float64)

    q, k, v = heads(query, hq), heads(key, hkv), heads(value, hkv)
    gated, delta = update_rule in ("gated", "gated_delta"), update_rule in ("delta", "gated_delta")
    g = heads(decay, hkv) if gated else None  # (B, hkv, T, 1 or dk)
    beta4 = heads(beta, beta.shape[2]) if delta else None  # (B, hkv or 1, T, 1)
    state = np.zeros((b, hkv, dk, dv)) if past_state.size == 0 else past_state.astype(np.float64)
    s = float(scale) if scale else 1.0 / math.sqrt(dk)
    out = np.zeros((b, hq, t, dv))
    group = hq // hkv
    for i in range(t):
        v_t = v[:, :, i, :]
        if g is not None:
            state = state * np.exp(g[:, :, i, :])[..., None]
        if beta4 is not None:
            retrieved = np.einsum("bhdm,bhd->bhm", state, k[:, :, i, :])
            v_t = beta4[:, :, i, :] * (v_t - retrieved)
        state = state + k[:, :, i, :, None] * v_t[:, :, None, :]
        read = state if group == 1 else np.repeat(state, group, axis=1)
        out[:, :, i, :] = s * np.einsum("bhd,bhdm->bhm", q[:, :, i, :], read)
    output = out.transpose(0, 2, 1, 3).reshape(b, t, hq * dv).astype(query.dtype)
    return output, state.astype(past_state.dtype if past_state.size else query.dtype)


# ---- NonMaxSuppression (evaluated at import) ---------------------------------------------


def _corners(boxes: Array, center_point_box: int) -> tuple[Array, Array, Array, Array]:
    b = boxes.astype(np.float64)
    if center_point_box:  # [x_center, y_center, width, height]
        return b[:, 1] - b[:, 3] / 2, b[:, 0] - b[:, 2] / 2, b[:, 1] + b[:, 3] / 2, b[:, 0] + b[:, 2] / 2
    # [y1, x1, y2, x2], either corner first
    return (
        np.minimum(b[:, 0], b[:, 2]), np.minimum(b[:, 1], b[:, 3]),
        np.maximum(b[:, 0], b[:, 2]), np.maximum(b[:, 1], b[:, 3]),
    )  # fmt: skip


def non_max_suppression(
    boxes: Array,
    scores: Array,
    max_output_boxes_per_class: int,
    iou_threshold: float,
    score_threshold: float | None,
    center_point_box: int,
) -> Array:
    """ONNX NonMaxSuppression: rows (batch, class, box) of the boxes kept, class by class in
    descending score (ties: the lower box index first), each box dropped whose IoU with a
    kept one of its class exceeds `iou_threshold`; at most `max_output_boxes_per_class` a class."""
    selected: list[tuple[int, int, int]] = []
    limit = max(int(max_output_boxes_per_class), 0)
    for b in range(boxes.shape[0]):
        y1, x1, y2, x2 = _corners(boxes[b], center_point_box)
        area = (y2 - y1) * (x2 - x1)
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            candidates = np.arange(s.shape[0])
            if score_threshold is not None:
                candidates = candidates[s[candidates] > score_threshold]
            order = candidates[np.lexsort((candidates, -s[candidates]))]
            kept: list[int] = []
            for i in order:
                if len(kept) >= limit:
                    break
                if kept:
                    k = np.asarray(kept)
                    ih = np.minimum(y2[i], y2[k]) - np.maximum(y1[i], y1[k])
                    iw = np.minimum(x2[i], x2[k]) - np.maximum(x1[i], x1[k])
                    inter = np.where((ih > 0) & (iw > 0), ih * iw, 0.0)
                    union = area[i] + area[k] - inter
                    valid = (inter > 0) & (area[i] > 0) & (area[k] > 0) & (union > 0)
                    iou = np.where(valid, inter / np.where(union > 0, union, 1.0), 0.0)
                    if np.any(valid & (iou > iou_threshold)):
                        continue
                kept.append(int(i))
                selected.append((b, c, int(i)))
    return np.asarray(selected, dtype=np.int64).reshape(-1, 3)


__all__: list[Any] = ["deform_conv2d", "linear_attention", "non_max_suppression", "roi_align", "rotary_embedding", "tensor_scatter"]
