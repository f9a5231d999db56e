"""ONNX ops of coverage part B: gathers and scatters, Trilu, OneHot, NonZero, Unique,
Compress, ReverseSequence, DepthToSpace/SpaceToDepth, CenterCropPad, EyeLike, the
normalisations, LogSoftmax/Hardmax, the general Resize, `If` with a condition known at
import (the branch is inlined), Attention, the NLL and softmax cross-entropy losses,
GridSample, AffineGrid, Col2Im and LpPool. docs/onnx.md says how each maps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

import byoc.frontend.onnx.proto as proto
from byoc.dialects import nn
from byoc.dialects.nn import indexing as nni
from byoc.frontend.onnx.base import (
    Array,
    Importer,
    Node,
    Value,
    converts,
    has_dynamic,
    ints,
    normalize_axes,
    spread_over_axes,
    string,
)
from byoc.frontend.onnx.converters import layout
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError

# ---- gathers and scatters ---------------------------------------------------------


@converts("GatherElements")
def _gather_elements(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(nni.GatherElementsOp, node.required(0), node.required(1), axis=int(node.attr("axis", 0)))]


@converts("GatherND")
def _gather_nd(imp: Importer, node: Node) -> list[Value]:
    data, indices = node.required(0), node.required(1)
    batch_dims = int(node.attr("batch_dims", 0))
    flat = _rows_of(imp.shape(data), indices) if batch_dims == 0 else None
    if flat is not None:
        shape = imp.shape(data)
        k = np.asarray(indices).shape[-1]
        rows = imp.reshape(data, [math.prod(shape[:k]), *shape[k:]])
        return [imp.emit(nn.TakeOp, rows, flat, axis=0)]
    return [imp.emit(nni.GatherNDOp, data, indices, batch_dims=batch_dims)]


def _rows_of(shape: tuple[int, ...], indices: Value) -> Array | None:
    """GatherND (batch_dims 0) with indices known at import, every one inside `shape`: the
    row of each index tuple in `data` seen as (prod(shape[:k]), *shape[k:]), so the gather
    is an nn.take of those rows, which the C codegen holds (nn.gather_nd, whose reference
    raises on an index out of range, stays on the host). None where that does not apply:
    indices computed at run time, one out of range (nn.gather_nd raises), k = 0, or a
    dynamic dim."""
    if not isinstance(indices, np.ndarray) or indices.ndim == 0 or has_dynamic(shape):
        return None
    k = indices.shape[-1]
    if k == 0 or k > len(shape):
        return None
    dims = np.asarray(shape[:k], dtype=np.int64)
    index = indices.astype(np.int64)
    if ((index < -dims) | (index >= dims)).any():
        return None
    index = np.where(index < 0, index + dims, index)
    return np.ravel_multi_index(tuple(np.moveaxis(index, -1, 0)), tuple(int(d) for d in dims)).astype(np.int64)


@converts("ScatterElements", "Scatter")
def _scatter_elements(imp: Importer, node: Node) -> list[Value]:
    return imp.emit_all(
        nni.ScatterElementsOp,
        node.required(0),
        node.required(1),
        node.required(2),
        axis=int(node.attr("axis", 0)),
        reduction=string(node.attr("reduction", "none")),
    )


@converts("ScatterND")
def _scatter_nd(imp: Importer, node: Node) -> list[Value]:
    return imp.emit_all(
        nni.ScatterNDOp,
        node.required(0),
        node.required(1),
        node.required(2),
        reduction=string(node.attr("reduction", "none")),
    )


# ---- triangles, one-hot, selections ------------------------------------------------


@converts("Trilu")
def _trilu(imp: Importer, node: Node) -> list[Value]:
    k = imp.static(node, 1, "k")
    return imp.emit_all(
        nni.TriluOp,
        node.required(0),
        k=0 if k is None else int(np.asarray(k).reshape(-1)[0]),
        upper=bool(node.attr("upper", 1)),
    )


def _one_static_value(imp: Importer, node: Node, i: int, what: str, name: str) -> Any:
    """The value of input #i (`what` to `Importer.static`), known at import and holding one
    value; more or fewer is an error naming the input as `name`."""
    value = imp.static(node, i, what)
    assert value is not None
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise OnnxImportError(f"{node.op_type}'s {name} must hold one value, got {flat.size}")
    return flat[0]


@converts("OneHot")
def _one_hot(imp: Importer, node: Node) -> list[Value]:
    depth = _one_static_value(imp, node, 1, "depth", "depth")
    return imp.emit_all(
        nni.OneHotOp,
        node.required(0),
        node.required(2),
        depth=int(depth),
        axis=int(node.attr("axis", -1)),
    )


@converts("NonZero")
def _non_zero(imp: Importer, node: Node) -> list[Value]:
    # the result's shape is the count of non-zeros: known only when the input is
    x = imp.static(node, 0, "input (NonZero's result shape depends on its values)")
    assert x is not None
    a = np.asarray(x)
    if a.ndim == 0:  # numpy refuses a 0-d nonzero: no coordinates, one column if the value is set
        return [np.zeros((0, int(bool(a))), dtype=np.int64)]
    return [np.asarray(np.nonzero(a), dtype=np.int64).reshape(a.ndim, -1)]


@converts("Unique")
def _unique(imp: Importer, node: Node) -> list[Value]:
    # every output's shape is a count of distinct values: known only when the input is
    x = imp.static(node, 0, "input (Unique's result shapes depend on its values)")
    assert x is not None
    x = np.asarray(x)
    axis = node.attr("axis")
    if axis is not None:
        (axis,) = normalize_axes([int(axis)], x.ndim)
    y, first, inverse, counts = np.unique(
        x if axis is not None else x.reshape(-1), axis=axis, return_index=True, return_inverse=True, return_counts=True
    )
    inverse = inverse.reshape(-1)
    if not node.attr("sorted", 1):  # in the order of first occurrence
        order = np.argsort(first, kind="stable")
        y = np.take(y, order, axis=axis or 0)
        first, counts = first[order], counts[order]
        inverse = np.argsort(order)[inverse]
    return [y, *(np.asarray(v, dtype=np.int64) for v in (first, inverse, counts))]


@converts("CenterCropPad")
def _center_crop_pad(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    target = ints(imp.static(node, 1, "shape"))
    shape = imp.shape(x)
    rank = len(shape)
    axes = node.attr("axes")
    axes = normalize_axes([int(a) for a in axes], rank) if axes is not None else list(range(rank))
    if len(axes) != len(target):
        raise OnnxImportError(f"CenterCropPad's shape {target} must have one value per axis {axes}")
    begin, end, pads = [0] * rank, list(shape), [0] * (2 * rank)
    for a, t in zip(axes, target, strict=True):
        if t < 0:
            raise OnnxImportError(f"CenterCropPad's shape {target} has a negative dim")
        if t < shape[a]:  # crop: the window starts (dim - t) // 2 in
            begin[a] = (shape[a] - t) // 2
            end[a] = begin[a] + t
        else:  # pad: (t - dim) // 2 before, the rest after
            pads[2 * a] = (t - shape[a]) // 2
            pads[2 * a + 1] = t - shape[a] - pads[2 * a]
    if begin != [0] * rank or end != list(shape):
        x = imp.emit(nn.StridedSliceOp, x, begin=tuple(begin), end=tuple(end), strides=(1,) * rank)
    if any(pads):
        x = imp.emit(nn.PadOp, x, pad_width=tuple(pads))
    return [x]


@converts("Compress")
def _compress(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    cond = imp.static(node, 1, "condition (Compress's result shape depends on its values)")
    assert cond is not None
    axis = node.attr("axis")
    if axis is None:
        x = imp.reshape(x, (math.prod(imp.shape(x)),))
        axis = 0
    shape = imp.shape(x)
    (axis,) = normalize_axes([int(axis)], len(shape))
    flags = np.asarray(cond).reshape(-1).astype(bool)
    if flags.size > shape[axis]:
        raise OnnxImportError(f"Compress's condition has {flags.size} values for a dim of {shape[axis]}")
    keep = np.nonzero(flags)[0].astype(np.int64)
    if keep.size == shape[axis]:
        return [x]
    return [imp.emit(nn.TakeOp, x, keep, axis=axis)]


@converts("ReverseSequence")
def _reverse_sequence(imp: Importer, node: Node) -> list[Value]:
    return imp.emit_all(
        nni.ReverseSequenceOp,
        node.required(0),
        node.required(1),
        batch_axis=int(node.attr("batch_axis", 1)),
        time_axis=int(node.attr("time_axis", 0)),
    )


@converts("DepthToSpace", "SpaceToDepth")
def _depth_space(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    bs = int(node.required_attr("blocksize"))
    shape = imp.shape(x)
    if len(shape) != 4:
        raise OnnxImportError(f"{node.op_type} needs a rank-4 input, got rank {len(shape)}")
    n, c, h, w = shape
    mode = string(node.attr("mode", "DCR"))
    if mode not in ("DCR", "CRD"):
        raise OnnxImportError(f"{node.op_type} mode '{mode}' is not DCR or CRD")
    if bs < 1:
        raise OnnxImportError(f"blocksize {bs} must be positive")
    if node.op_type == "DepthToSpace":
        if c % (bs * bs):
            raise OnnxImportError(f"channels {c} are not divisible by blocksize^2 = {bs * bs}")
        if mode == "DCR":
            tmp, perm = (n, bs, bs, c // (bs * bs), h, w), (0, 3, 4, 1, 5, 2)
        else:
            tmp, perm = (n, c // (bs * bs), bs, bs, h, w), (0, 1, 4, 2, 5, 3)
        out = (n, c // (bs * bs), h * bs, w * bs)
    else:
        if h % bs or w % bs:
            raise OnnxImportError(f"spatial dims {h}x{w} are not divisible by blocksize {bs}")
        tmp = (n, c, h // bs, bs, w // bs, bs)
        perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
        out = (n, c * bs * bs, h // bs, w // bs)
    y = imp.emit(nn.TransposeOp, imp.reshape(x, tmp), axes=perm)
    return [imp.reshape(y, out)]


# ---- normalisations ----------------------------------------------------------------


def _ones(value: float, shape: tuple[int, ...], like: Value, imp: Importer) -> np.ndarray[Any, Any]:
    return np.full(shape, value, dtype=imp.dtype(like))


def _check_stash(imp: Importer, node: Node, x: Value) -> None:
    if int(node.attr("stash_type", 1)) != 1 and imp.dtype(x) != np.float32:
        raise UnsupportedOnnxError(f"{node.op_type} with stash_type {node.attr('stash_type')} is not supported")


@converts("LayerNormalization")
def _layer_norm(imp: Importer, node: Node) -> list[Value | None]:
    x, scale, bias = node.required(0), node.required(1), node.input(2)
    _check_stash(imp, node, x)
    shape = imp.shape(x)
    (axis,) = normalize_axes([int(node.attr("axis", -1))], len(shape))
    eps = float(node.attr("epsilon", 1e-5))
    if bias is None:
        bias = _ones(0.0, imp.shape(scale), x, imp)
    y = imp.emit(nni.LayerNormOp, x, scale, bias, axis=axis, epsilon=eps)
    outputs: list[Value | None] = [y]
    wanted = [bool(name) and name in getattr(imp, "_used", {name}) for name in list(node.proto.output)[1:3]]
    if any(wanted):  # Mean and InvStdDev (keepdims), from the primitives
        axes = tuple(range(axis, len(shape)))
        mean = imp.emit(nn.ReduceMeanOp, x, axes=axes, keepdims=True)
        d = imp.emit(nn.SubtractOp, x, mean)
        var = imp.emit(nn.ReduceMeanOp, imp.emit(nn.MultiplyOp, d, d), axes=axes, keepdims=True)
        std = imp.emit(nn.SqrtOp, imp.emit(nn.AddOp, var, imp.scalar_like(eps, x)))
        outputs += [mean, imp.emit(nn.ReciprocalOp, std)]
    return outputs


@converts("RMSNormalization")
def _rms_norm(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    _check_stash(imp, node, x)
    return imp.emit_all(
        nni.RMSNormOp,
        x,
        node.required(1),
        axis=int(node.attr("axis", -1)),
        epsilon=float(node.attr("epsilon", 1e-5)),
    )


def _per_channel(imp: Importer, v: Value, rank: int) -> Value:
    """A (C,) vector shaped (C, 1, ..., 1) to broadcast along axis 1 of a rank-`rank` tensor."""
    (c,) = imp.shape(v)
    return imp.reshape(v, (c, *([1] * (rank - 2))))


def _group_norm(imp: Importer, x: Value, groups: int, eps: float) -> Value:
    """Normalise each of `groups` channel groups of x (N, C, ...) over its channels and positions."""
    shape = imp.shape(x)
    if len(shape) < 3:
        raise OnnxImportError(f"needs rank >= 3 (N, C, ...), got {len(shape)}")
    n, c = shape[:2]
    if groups < 1 or c % groups:
        raise OnnxImportError(f"num_groups {groups} does not divide the channels {c}")
    flat = imp.reshape(x, (n, groups, math.prod(shape[1:]) // groups))
    one, zero = _ones(1.0, (1,), x, imp), _ones(0.0, (1,), x, imp)
    y = imp.emit(nni.LayerNormOp, flat, one, zero, axis=2, epsilon=eps)
    return imp.reshape(y, shape)


def _scale_shift(imp: Importer, y: Value, scale: Value, bias: Value) -> Value:
    rank = len(imp.shape(y))
    y = imp.emit(nn.MultiplyOp, y, _per_channel(imp, scale, rank))
    return imp.emit(nn.AddOp, y, _per_channel(imp, bias, rank))


@converts("InstanceNormalization")
def _instance_norm(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    y = _group_norm(imp, x, shape[1] if len(shape) > 1 else 1, float(node.attr("epsilon", 1e-5)))
    return [_scale_shift(imp, y, node.required(1), node.required(2))]


@converts("GroupNormalization")
def _group_normalization(imp: Importer, node: Node) -> list[Value]:
    x, scale, bias = node.required(0), node.required(1), node.required(2)
    _check_stash(imp, node, x)
    groups = int(node.required_attr("num_groups"))
    y = _group_norm(imp, x, groups, float(node.attr("epsilon", 1e-5)))
    c = imp.shape(x)[1]
    if imp.shape(scale) == (groups,) and groups != c:  # opset 18: one scale per group
        per = c // groups
        if isinstance(scale, SSAValue) or isinstance(bias, SSAValue):
            raise UnsupportedOnnxError("GroupNormalization-18 with a per-group scale computed at run time")
        scale, bias = np.repeat(scale, per), np.repeat(bias, per)
    return [_scale_shift(imp, y, scale, bias)]


@converts("MeanVarianceNormalization")
def _mvn(imp: Importer, node: Node) -> list[Value]:
    # ONNX's function body: (x - mean) / (sqrt(E[x^2] - E[x]^2) + 1e-9)
    x = node.required(0)
    rank = len(imp.shape(x))
    axes = tuple(normalize_axes([int(a) for a in node.attr("axes", [0, 2, 3])], rank))
    mean = imp.emit(nn.ReduceMeanOp, x, axes=axes, keepdims=True)
    d = imp.emit(nn.SubtractOp, x, mean)
    var = imp.emit(nn.ReduceMeanOp, imp.emit(nn.MultiplyOp, d, d), axes=axes, keepdims=True)
    std = imp.emit(nn.AddOp, imp.emit(nn.SqrtOp, var), imp.scalar_like(1e-9, x))
    return [imp.emit(nn.DivideOp, d, std)]


@converts("LpNormalization")
def _lp_norm(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    (axis,) = normalize_axes([int(node.attr("axis", -1))], rank)
    p = int(node.attr("p", 2))
    if p == 1:
        norm = imp.emit(nn.ReduceSumOp, imp.emit(nn.AbsOp, x), axes=(axis,), keepdims=True)
    elif p == 2:
        sq = imp.emit(nn.ReduceSumOp, imp.emit(nn.MultiplyOp, x, x), axes=(axis,), keepdims=True)
        norm = imp.emit(nn.SqrtOp, sq)
    else:
        raise OnnxImportError(f"LpNormalization's p must be 1 or 2, got {p}")
    # a zero norm divides by 1 (ONNX's reference): its row is all zeros, so dividing by the
    # smallest normal float gives the same zeros (norms below it are the one difference)
    tiny = imp.scalar_like(float(np.finfo(imp.dtype(x)).tiny), x)
    return [imp.emit(nn.DivideOp, x, imp.emit(nn.MaximumOp, norm, tiny))]


# ---- Resize: nn.resize2d where it applies, nn.resize for the rest --------------------


@converts("Resize", "Upsample")
def _resize(imp: Importer, node: Node) -> list[Value]:
    try:
        return layout.resize_2d(imp, node)
    except UnsupportedOnnxError:
        return [_resize_nd(imp, node)]


def _resize_nd(imp: Importer, node: Node) -> Value:
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    mode = string(node.attr("mode", "nearest"))
    attrs: dict[str, Any] = {}
    roi: list[float] = []
    if node.op_type == "Upsample" or node.version < 11:
        if node.version < 9 and node.op_type == "Upsample":
            scales = [float(s) for s in node.required_attr("scales")]
        else:
            scales = [float(s) for s in np.asarray(imp.static(node, 1, "scales")).reshape(-1)]
        coord, nearest = "asymmetric", "floor"
        sizes = None
        mode = "linear" if mode == "bilinear" else mode
    else:
        coord = string(node.attr("coordinate_transformation_mode", "half_pixel"))
        nearest = string(node.attr("nearest_mode", "round_prefer_floor"))
        r = imp.static(node, 1, "roi") if coord == "tf_crop_and_resize" else None
        s = imp.static(node, 2, "scales")
        z = imp.static(node, 3, "sizes")
        roi = [] if r is None or r.size == 0 else [float(v) for v in r.reshape(-1)]
        scales = None if s is None or s.size == 0 else [float(v) for v in s.reshape(-1)]
        sizes = None if z is None or z.size == 0 else ints(z)
        axes = node.attr("axes")
        resized = normalize_axes([int(a) for a in axes], rank) if axes is not None else list(range(rank))
        if axes is not None:
            if scales is not None:
                scales = spread_over_axes(resized, scales, [1.0] * rank)
            if sizes is not None:
                sizes = spread_over_axes(resized, sizes, shape)
            if roi:
                k = len(resized)
                full_roi = [0.0] * rank + [1.0] * rank
                for i, a in enumerate(resized):
                    full_roi[a], full_roi[rank + a] = roi[i], roi[k + i]
                roi = full_roi
        attrs = dict(
            cubic_coeff_a=float(node.attr("cubic_coeff_a", -0.75)),
            exclude_outside=bool(node.attr("exclude_outside", 0)),
            antialias=bool(node.attr("antialias", 0)),
            extrapolation_value=float(node.attr("extrapolation_value", 0.0)),
        )
        policy = string(node.attr("keep_aspect_ratio_policy", "stretch"))
        if sizes is not None and policy != "stretch":
            ratios = [sizes[a] / shape[a] for a in resized]
            scale = min(ratios) if policy == "not_larger" else max(ratios)
            scales = [scale if a in resized else 1.0 for a in range(rank)]
            sizes = [int(scale * shape[a] + 0.5) if a in resized else shape[a] for a in range(rank)]
    if mode not in nni.ResizeOp.MODES:
        raise OnnxImportError(f"Resize mode '{mode}' is not one of nearest, linear, cubic")
    if sizes is not None:
        if len(sizes) != rank:
            raise OnnxImportError(f"sizes {sizes} must have {rank} values")
        if scales is None or len(scales) != rank:
            scales = [o / i if i else 1.0 for o, i in zip(sizes, shape, strict=True)]
    elif scales is not None:
        if len(scales) != rank:
            raise OnnxImportError(f"scales {scales} must have {rank} values")
        sizes = [int(d * s) for d, s in zip(shape, scales, strict=True)]
    else:
        raise OnnxImportError("Resize needs scales or sizes")
    if roi and len(roi) != 2 * rank:
        raise OnnxImportError(f"roi {roi} must have {2 * rank} values")
    return imp.emit(
        nni.ResizeOp,
        x,
        size=tuple(int(v) for v in sizes),
        scales=nni.float_array(scales),
        roi=nni.float_array(roi),
        mode=mode,
        coordinate_transformation_mode=coord,
        nearest_mode=nearest,
        **attrs,
    )


# ---- If with a condition known at import ------------------------------------------------


@converts("If")
def _if(imp: Importer, node: Node) -> list[Value]:
    what = "condition (only an If whose condition is known at import is inlined)"
    cond = _one_static_value(imp, node, 0, what, "condition")
    branch = node.required_attr("then_branch" if bool(cond) else "else_branch")
    env: dict[str, Value] = imp.env  # type: ignore[attr-defined]
    used: set[str] = imp._used  # type: ignore[attr-defined]
    for init in branch.initializer:
        env[init.name] = proto.checked_array(init, f"If branch initializer '{init.name}'")
    used.update(name for n in branch.node for name in n.input)
    used.update(vi.name for vi in branch.output)
    for index, node_proto in enumerate(branch.node):
        imp._convert(node_proto, index)  # type: ignore[attr-defined]
    outputs: list[Value] = []
    for vi in branch.output:
        if vi.name not in env:
            raise OnnxImportError(f"If branch output '{vi.name}' is not produced by the branch")
        outputs.append(env[vi.name])
    if len(outputs) != node.num_outputs:
        raise OnnxImportError(f"the If branch has {len(outputs)} outputs, the node {node.num_outputs}")
    return outputs


# ---- Attention ------------------------------------------------------------------------------


@converts("Attention")
def _attention(imp: Importer, node: Node) -> list[Value]:
    q, k, v = node.required(0), node.required(1), node.required(2)
    mask, past_k, past_v, nonpad = (node.input(i) for i in (3, 4, 5, 6))
    if (past_k is None) != (past_v is None):
        raise OnnxImportError("Attention needs past_key and past_value together")
    if nonpad is not None and past_k is not None:
        raise OnnxImportError("Attention's nonpad_kv_seqlen cannot be combined with past_key/past_value")
    if len(imp.shape(q)) == 4 and (node.attr("q_num_heads") is not None or node.attr("kv_num_heads") is not None):
        raise OnnxImportError("q_num_heads and kv_num_heads must not be given for 4-D inputs")
    operands = [q, k, v] + [x for x in (mask, past_k, past_v, nonpad) if x is not None]
    names = list(node.proto.output)
    count = max(i + 1 for i, n in enumerate(names) if n or i == 0)
    count = 1 if count == 1 else (3 if count <= 3 else 4)
    scale = node.attr("scale")
    precision = node.attr("softmax_precision")
    outs = imp.emit_all(
        nni.AttentionOp,
        *operands,
        has_mask=mask is not None,
        has_past=past_k is not None,
        has_nonpad=nonpad is not None,
        num_outputs=count,
        is_causal=bool(node.attr("is_causal", 0)),
        q_num_heads=int(node.attr("q_num_heads", 0)),
        kv_num_heads=int(node.attr("kv_num_heads", 0)),
        scale=0.0 if scale is None else float(scale),
        softcap=float(node.attr("softcap", 0.0)),
        qk_matmul_output_mode=int(node.attr("qk_matmul_output_mode", 0)),
        softmax_precision=0 if precision is None else int(precision),
        left_window_size=int(node.attr("left_window_size", -1)),
        right_window_size=int(node.attr("right_window_size", -1)),
    )
    return outs


# ---- losses (inference-time computations, as ONNX defines them) ----------------------------


def _nll(imp: Importer, node: Node, x: Value) -> Value:
    weight = node.input(2)
    ignore = node.attr("ignore_index")
    return imp.emit(
        nni.NLLLossOp,
        x,
        node.required(1),
        *([weight] if weight is not None else []),
        reduction=string(node.attr("reduction", "mean")),
        ignore_index=0 if ignore is None else int(ignore),
        has_ignore=ignore is not None,
    )


@converts("NegativeLogLikelihoodLoss")
def _nll_loss(imp: Importer, node: Node) -> list[Value]:
    return [_nll(imp, node, node.required(0))]


@converts("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(imp: Importer, node: Node) -> list[Value]:
    log_prob = imp.emit(nni.LogSoftmaxOp, node.required(0), axis=1)
    return [_nll(imp, node, log_prob), log_prob]


@converts("GridSample")
def _grid_sample(imp: Importer, node: Node) -> list[Value]:
    mode = string(node.attr("mode", "bilinear" if node.version < 20 else "linear"))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    return imp.emit_all(
        nni.GridSampleOp,
        node.required(0),
        node.required(1),
        mode=mode,
        padding_mode=string(node.attr("padding_mode", "zeros")),
        align_corners=bool(node.attr("align_corners", 0)),
    )


@converts("Col2Im")
def _col2im(imp: Importer, node: Node) -> list[Value]:
    image = ints(imp.static(node, 1, "image_shape"))
    block = ints(imp.static(node, 2, "block_shape"))
    return imp.emit_all(
        nni.Col2ImOp,
        node.required(0),
        image_shape=tuple(image),
        block_shape=tuple(block),
        dilations=tuple(int(v) for v in node.attr("dilations", [])),
        pads=tuple(int(v) for v in node.attr("pads", [])),
        strides=tuple(int(v) for v in node.attr("strides", [])),
    )


@converts("AffineGrid")
def _affine_grid(imp: Importer, node: Node) -> list[Value]:
    theta = node.required(0)
    size = ints(imp.static(node, 1, "size"))
    dims = size[2:]
    r = len(dims)
    if r not in (2, 3) or imp.shape(theta) != (size[0], r, r + 1):
        raise OnnxImportError(f"AffineGrid's theta {list(imp.shape(theta))} does not fit size {size}")
    align = bool(node.attr("align_corners", 0))
    axes = [
        np.linspace(-1.0, 1.0, d) if align else (np.arange(d) * 2.0 + 1.0) / d - 1.0 for d in dims
    ]
    mesh = np.meshgrid(*axes, indexing="ij")  # per dim, in dim order (z,) y, x
    base = np.stack([*mesh[::-1], np.ones(dims)], axis=-1).reshape(-1, r + 1)  # x, y, (z,) 1
    base = base.astype(imp.dtype(theta))
    # grid = base . theta^T for each batch: (P, r + 1) x (N, r + 1, r) -> (N, P, r)
    grid = imp.emit(nn.MatmulOp, base, imp.emit(nn.TransposeOp, theta, axes=(0, 2, 1)))
    return [imp.reshape(grid, (size[0], *dims, r))]


@converts("LpPool")
def _lp_pool(imp: Importer, node: Node) -> list[Value]:
    """(sum over the window of |x|^p)^(1/p): an average pool counting the padding (zeros add
    nothing to the sum), times the window size, on |x|^p."""
    from byoc.frontend.onnx.converters import neural

    x = node.required(0)
    n = neural._spatial(imp, node, x)  # pyright: ignore[reportPrivateUsage]
    kernel = [int(k) for k in node.required_attr("kernel_shape")]
    strides = [int(s) for s in node.attr("strides", [1] * n)]
    dilations = [int(d) for d in node.attr("dilations", [1] * n)]
    pads = neural._auto_pads(  # pyright: ignore[reportPrivateUsage]
        string(node.attr("auto_pad", "NOTSET")), imp.shape(x)[2:], kernel, strides, dilations
    )
    if pads is None:
        pads = [int(p) for p in node.attr("pads", [0] * (2 * n))]
    if node.attr("ceil_mode", 0):  # a window past the padding would divide by fewer elements
        raise UnsupportedOnnxError("LpPool with ceil_mode is not supported")
    p = float(node.attr("p", 2))
    powered = imp.emit(nn.PowerOp, imp.emit(nn.AbsOp, x), imp.scalar_like(p, x))
    mean = imp.emit(
        nn.AvgPool2DOp,
        neural._to_2d(imp, powered, n),  # pyright: ignore[reportPrivateUsage]
        pool_size=neural._as_2d(kernel, n, 1),  # pyright: ignore[reportPrivateUsage]
        strides=neural._as_2d(strides, n, 1),  # pyright: ignore[reportPrivateUsage]
        padding=neural._pads_2d(pads, n),  # pyright: ignore[reportPrivateUsage]
        dilation=neural._as_2d(dilations, n, 1),  # pyright: ignore[reportPrivateUsage]
        count_include_pad=True,
    )
    total = imp.emit(nn.MultiplyOp, mean, imp.scalar_like(float(math.prod(kernel)), x))
    y = imp.emit(nn.PowerOp, total, imp.scalar_like(1.0 / p, x))
    return [neural._from_2d(imp, y, n)]  # pyright: ignore[reportPrivateUsage]


@converts("MaxUnpool")
def _max_unpool(imp: Importer, node: Node) -> list[Value]:
    """Scatter x to its flat indices in zeros of the unpooled shape (nn.scatter_nd on the
    flattened tensor), reshape, then pad out to `output_shape`. This is onnx's reference,
    which the node tests store: the indices are flat over the shape the pool parameters
    imply, placed at the start of each dim of a larger `output_shape` (onnxruntime reads
    them as flat over `output_shape` instead; the two agree without it)."""
    x, idx = node.required(0), node.required(1)
    shape = imp.shape(x)
    kernel = [int(k) for k in node.required_attr("kernel_shape")]
    n = len(kernel)
    strides = [int(s) for s in node.attr("strides", [1] * n)]
    pads = [int(p) for p in node.attr("pads", [0] * (2 * n))]
    if len(shape) != n + 2 or imp.shape(idx) != shape:
        raise OnnxImportError(f"MaxUnpool's input {list(shape)} and indices {list(imp.shape(idx))} do not fit")
    unpooled = [*shape[:2], *((shape[2 + i] - 1) * strides[i] - pads[i] - pads[n + i] + kernel[i] for i in range(n))]
    out = imp.static(node, 2, "output_shape")
    target = unpooled if out is None else ints(out)
    if len(target) != len(unpooled) or any(t < u for t, u in zip(target, unpooled, strict=True)):
        raise OnnxImportError(f"MaxUnpool's output_shape {target} is smaller than the unpooled {unpooled}")
    zeros = np.zeros(math.prod(unpooled), dtype=imp.dtype(x))
    flat = imp.emit(
        nni.ScatterNDOp,
        zeros,
        imp.reshape(idx, (math.prod(shape), 1)),
        imp.reshape(x, (math.prod(shape),)),
    )
    y = imp.reshape(flat, unpooled)
    if target != unpooled:
        width = tuple(w for t, u in zip(target, unpooled, strict=True) for w in (0, t - u))
        y = imp.emit(nn.PadOp, y, pad_width=width)
    return [y]
