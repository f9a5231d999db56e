"""Layout ONNX ops: reshape, transpose, concat/split/slice, pad, reductions, resize."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from byoc.dialects import nn
from byoc.frontend.onnx.base import (
    Importer,
    Node,
    Value,
    converts,
    ints,
    normalize_axes,
    spread_over_axes,
    string,
)
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError


@converts("Reshape")
def _reshape(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    if node.version < 5:
        target = list(node.required_attr("shape"))
    else:
        target = ints(imp.required_static(node, 1, "shape", "a shape"))
    src = imp.shape(x)
    allowzero = bool(node.attr("allowzero", 0))
    out = [src[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise OnnxImportError(f"shape {target} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        total = math.prod(src)
        if known == 0 or total % known:
            raise OnnxImportError(f"cannot reshape {list(src)} into {target}")
        out[out.index(-1)] = total // known
    return [imp.reshape(x, out)]


@converts("Flatten")
def _flatten(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.FlattenOp, node.required(0), axis=int(node.attr("axis", 1)))]


@converts("Transpose")
def _transpose(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    perm = node.attr("perm")
    perm = tuple(int(p) for p in perm) if perm is not None else tuple(reversed(range(rank)))
    if perm == tuple(range(rank)):
        return [x]
    return [imp.emit(nn.TransposeOp, x, axes=perm)]


@converts("Concat")
def _concat(imp: Importer, node: Node) -> list[Value]:
    values = [v for v in node.inputs if v is not None]
    if len(values) == 1:
        return [values[0]]
    return [imp.emit(nn.ConcatenateOp, *values, axis=int(node.required_attr("axis")))]


@converts("Split")
def _split(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    (axis,) = normalize_axes([int(node.attr("axis", 0))], len(shape))
    dim = shape[axis]
    parts = node.num_outputs
    if node.version < 13:
        sizes = node.attr("split")
    else:
        s = imp.static(node, 1, "split sizes")
        sizes = None if s is None else ints(s)
    if sizes is None or len(sizes) == 0:
        if node.version >= 18 and node.attr("num_outputs") is not None:
            parts = int(node.attr("num_outputs"))
            chunk = -(-dim // parts)
            sizes = [chunk] * (parts - 1) + [dim - chunk * (parts - 1)]
        else:
            if dim % parts:
                raise OnnxImportError(f"cannot split size {dim} into {parts} equal parts")
            sizes = [dim // parts] * parts
    sizes = [int(v) for v in sizes]
    if sum(sizes) != dim or any(v < 0 for v in sizes):
        raise OnnxImportError(f"split sizes {sizes} do not add up to {dim}")
    if len(sizes) != node.num_outputs:
        raise OnnxImportError(f"{len(sizes)} split sizes for {node.num_outputs} outputs")
    indices = list(np.cumsum(sizes[:-1]))
    if not indices:
        return [x]
    return imp.emit_all(nn.SplitOp, x, indices=tuple(int(i) for i in indices), axis=axis)


def _slice_bounds(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice's clamping of one axis, resolved against its static size."""
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)


def _strided_slice(
    imp: Importer, x: Value, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]
) -> Value:
    shape = imp.shape(x)
    begin, end, strides = [0] * len(shape), list(shape), [1] * len(shape)
    for a, s, e, st in zip(normalize_axes(axes, len(shape)), starts, ends, steps, strict=True):
        if st == 0:
            raise OnnxImportError("Slice steps must be non-zero")
        begin[a], end[a] = _slice_bounds(shape[a], s, e, st)
        strides[a] = st
    if begin == [0] * len(shape) and end == list(shape) and strides == [1] * len(shape):
        return x
    return imp.emit(nn.StridedSliceOp, x, begin=tuple(begin), end=tuple(end), strides=tuple(strides))


@converts("Slice")
def _slice(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    if node.version < 10:
        starts, ends = list(node.required_attr("starts")), list(node.required_attr("ends"))
        axes = list(node.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ints(imp.static(node, 1, "starts"))
        ends = ints(imp.static(node, 2, "ends"))
        ax = imp.static(node, 3, "axes")
        axes = ints(ax) if ax is not None else list(range(len(starts)))
        st = imp.static(node, 4, "steps")
        steps = ints(st) if st is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps) or len(axes) > rank:
        raise OnnxImportError("starts, ends, axes and steps must have the same length")
    return [_strided_slice(imp, x, axes, starts, ends, steps)]


def _axes_input(imp: Importer, node: Node, attr_before: int) -> list[int] | None:
    """`axes` as an attribute (before opset `attr_before`) or as input #1."""
    if node.version < attr_before:
        axes = node.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    static = imp.static(node, 1, "axes")
    return None if static is None else ints(static)


@converts("Squeeze")
def _squeeze(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    axes = _axes_input(imp, node, 13)
    if axes is None:
        drop = {i for i, d in enumerate(shape) if d == 1}
    else:
        drop = set(normalize_axes(axes, len(shape)))
        if any(shape[a] != 1 for a in drop):
            raise OnnxImportError(f"cannot squeeze axes {sorted(drop)} of shape {list(shape)}")
    return [imp.reshape(x, [d for i, d in enumerate(shape) if i not in drop])]


@converts("Unsqueeze")
def _unsqueeze(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = list(imp.shape(x))
    axes = _axes_input(imp, node, 13)
    if not axes:
        raise OnnxImportError("Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    new = sorted(normalize_axes(axes, rank))
    if len(set(new)) != len(new):
        raise OnnxImportError(f"Unsqueeze axes {axes} repeat an axis")
    it = iter(shape)
    out = [1 if i in new else next(it) for i in range(rank)]
    return [imp.reshape(x, out)]


@converts("Pad")
def _pad(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    mode = string(node.attr("mode", "constant"))
    if node.version < 11:
        pads = list(node.attr("pads", node.attr("paddings", [])))
        value = float(node.attr("value", 0.0))
    else:
        pads = ints(imp.static(node, 1, "pads"))
        cv = imp.static(node, 2, "constant_value")
        value = 0.0 if cv is None or np.asarray(cv).size == 0 else float(np.asarray(cv).reshape(-1)[0])
        ax = imp.static(node, 3, "axes")
        if ax is not None:
            axes = normalize_axes(ints(ax), rank)
            full = [0] * (2 * rank)
            for k, a in enumerate(axes):
                full[a], full[rank + a] = pads[k], pads[len(axes) + k]
            pads = full
    if len(pads) != 2 * rank:
        raise OnnxImportError(f"pads {pads} must have {2 * rank} values for rank {rank}")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise UnsupportedOnnxError(f"Pad mode '{mode}' is not supported")
    begin, end = pads[:rank], pads[rank:]
    if any(p < 0 for p in pads):  # negative pads crop
        x = _strided_slice(
            imp,
            x,
            list(range(rank)),
            [max(0, -b) for b in begin],
            [d - max(0, -e) for d, e in zip(shape, end, strict=True)],
            [1] * rank,
        )
        begin, end = [max(0, b) for b in begin], [max(0, e) for e in end]
    if not any(begin) and not any(end):
        return [x]
    width = tuple(v for pair in zip(begin, end, strict=True) for v in pair)
    return [imp.emit(nn.PadOp, x, pad_width=width, pad_value=value, pad_mode=mode)]


_REDUCE: dict[str, tuple[type[nn.NNOp], int]] = {
    # op -> (nn op, first opset where axes is an input)
    "ReduceMean": (nn.ReduceMeanOp, 18),
    "ReduceSum": (nn.ReduceSumOp, 13),
    "ReduceMax": (nn.ReduceMaxOp, 18),
}


@converts(*_REDUCE)
def _reduce(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    cls, axes_input_since = _REDUCE[node.op_type]
    shape = imp.shape(x)
    axes = _axes_input(imp, node, axes_input_since)
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(len(shape)))
    axes = normalize_axes(axes, len(shape))
    if node.op_type == "ReduceMean" and any(shape[a] == 0 for a in axes):
        raise UnsupportedOnnxError(f"{node.op_type} over an empty axis is not supported")
    keepdims = bool(node.attr("keepdims", 1))
    return [imp.emit(cls, x, axes=tuple(axes), keepdims=keepdims)]


def resize_2d(imp: Importer, node: Node) -> list[Value]:
    """Resize/Upsample as nn.resize2d (NCHW, nearest or linear, H and W only); anything else is an
    UnsupportedOnnxError, on which the converter (converters/indexing.py) emits nn.resize."""
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    mode = string(node.attr("mode", "nearest"))
    if node.op_type == "Upsample" or node.version < 11:
        # Upsample / Resize-10: asymmetric coordinates, nearest rounds down
        if node.version < 9 and node.op_type == "Upsample":
            scales = list(node.required_attr("scales"))
        else:
            scales = [float(s) for s in np.asarray(imp.static(node, 1, "scales")).reshape(-1)]
        coord, rounding, sizes = "asymmetric", "floor", None
    else:
        if node.attr("antialias", 0):
            raise UnsupportedOnnxError("Resize with antialias is not supported")
        if node.attr("exclude_outside", 0):
            raise UnsupportedOnnxError("Resize with exclude_outside is not supported")
        coord = string(node.attr("coordinate_transformation_mode", "half_pixel"))
        rounding = string(node.attr("nearest_mode", "round_prefer_floor"))
        s = imp.static(node, 2, "scales")
        z = imp.static(node, 3, "sizes")
        scales = None if s is None or s.size == 0 else [float(v) for v in s.reshape(-1)]
        sizes = None if z is None or z.size == 0 else ints(z)
        axes = node.attr("axes")
        if axes is not None:
            axes = normalize_axes(list(axes), rank)
            if scales is not None:
                scales = spread_over_axes(axes, scales, [1.0] * rank)
            if sizes is not None:
                sizes = spread_over_axes(axes, sizes, shape)
        policy = string(node.attr("keep_aspect_ratio_policy", "stretch"))
        if sizes is not None and policy != "stretch":
            resized = axes if axes is not None else list(range(rank))
            ratios = [sizes[a] / shape[a] for a in resized]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if a in resized else 1.0 for a in range(rank)]
            sizes = None
        if coord == "tf_crop_and_resize":
            raise UnsupportedOnnxError("Resize with coordinate_transformation_mode tf_crop_and_resize is not supported")
    if mode not in ("nearest", "linear"):
        raise UnsupportedOnnxError(f"Resize mode '{mode}' is not supported (nearest, linear)")
    if rank != 4:
        raise UnsupportedOnnxError(f"Resize of a rank-{rank} tensor is not supported (NCHW only)")
    if sizes is not None:
        out = [int(v) for v in sizes]
        if len(out) != rank:
            raise OnnxImportError(f"sizes {out} must have {rank} values")
        scale_h = scale_w = 0.0
    elif scales is not None:
        if len(scales) != rank:
            raise OnnxImportError(f"scales {scales} must have {rank} values")
        out = [int(math.floor(d * s)) for d, s in zip(shape, scales, strict=True)]
        scale_h, scale_w = scales[2], scales[3]
        if node.op_type == "Resize" and string(node.attr("keep_aspect_ratio_policy", "stretch")) != "stretch":
            out = [int(d * s + 0.5) for d, s in zip(shape, scales, strict=True)]
    else:
        raise OnnxImportError("Resize needs scales or sizes")
    if out[:2] != list(shape[:2]):
        raise UnsupportedOnnxError("Resize of the batch or channel dimension is not supported")
    if out == list(shape) and scale_h in (0.0, 1.0) and scale_w in (0.0, 1.0):
        return [x]
    return imp.emit_all(
        nn.Resize2DOp,
        x,
        size=(out[2], out[3]),
        method="nearest_neighbor" if mode == "nearest" else "linear",
        coordinate_transformation_mode=coord,
        rounding_method=rounding,
        scale_h=float(scale_h),
        scale_w=float(scale_w),
    )
