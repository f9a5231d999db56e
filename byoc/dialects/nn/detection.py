"""nn ops for detectors and transformers: `roi_align`, `rotary_embedding`,
`deform_conv2d`, `tensor_scatter` and `linear_attention`.

    %y = nn.roi_align %x, %rois, %batch {output_height = 7 : i64, output_width = 7 : i64}
        : (tensor<1x8x32x32xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x8x7x7xf32>
    %q = nn.rotary_embedding %x, %cos, %sin, %pos {num_heads = 4 : i64}
        : (tensor<2x3x32xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<2x3xi64>) -> tensor<2x3x32xf32>

`roi_align` is ONNX RoiAlign: bilinear samples on a `sampling_ratio` grid in each output
bin of each region, averaged or maxed (`mode`), `spatial_scale`, and the
`coordinate_transformation_mode` half_pixel (opset 16) or output_half_pixel (opset 10).
`rotary_embedding` is ONNX RotaryEmbedding (opset 23): the input is (B, S, hidden) with
`num_heads` or (B, heads, S, head); the first `rotary_embedding_dim` (0 = all) features
of each head are rotated, in halves or `interleaved`; `position_ids` (B, S) select rows
of the (max_pos, dim/2) caches, and an empty `position_ids` (`tensor<0xi64>`, ONNX leaves
it out) means the caches are already (B, S, dim/2).

`deform_conv2d` is ONNX DeformConv on NCHW inputs: each kernel tap samples x bilinearly
(zeros outside) at its position plus a learned `offset` (N, offset_group * kh * kw * 2,
oh, ow; (dy, dx) pairs), scaled by `mask` when given (empty `tensor<0xf32>`: all ones),
then the taps are summed with the weights per `group`, plus `bias` (empty: none).
`tensor_scatter` is ONNX TensorScatter (opset 24, a KV-cache write): `update` is written
into a copy of `past_cache` along `axis` from each batch row's `write_indices` (empty:
0), wrapping around in `mode` circular; a linear write past the end is a run-time error.

`linear_attention` is ONNX LinearAttention (opset 27): the state S (B, kv_heads, d_k, d_v)
is updated token by token (`update_rule` linear, gated, delta, gated_delta) and read by
the query heads (grouped-query: q_heads a multiple of kv_heads); it has two results
(output, present state), so it runs on the host, like the recurrent ops.

Their numpy kernels are in `byoc/interpreters/kernels_detection.py`. None has a C
kernel: RoiAlign and DeformConv gather at data-dependent positions (region coordinates,
offsets are values), which the C emitter's static loop nests cannot index without
per-element bounds checks, RotaryEmbedding's cache rows and TensorScatter's write
positions are indices read at run time; all run in the ExampleJSON runtime or on the
host with the numpy kernel (one result each).

NonMaxSuppression has no nn op: its result has one row per selected box, a count that only
the values decide. Like NonZero, it is evaluated at import when its inputs are known
(`byoc/frontend/onnx/converters/detection.py`) and is otherwise a `StaticValueRequired`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, result_def

from byoc.dialects.nn.base import (
    FloatTypes,
    NNOp,
    OneResultOp,
    _fail,
    check_indices,
    tensor_operands,
)
from byoc.dialects.nn.props import array_prop, bool_prop, float_prop, int_prop, str_prop
from byoc.dialects.nn.types import ALL_TYPES, ints, shape_of, tensor

ROI_MODES = ("avg", "max")
ROI_COORDINATE_MODES = ("half_pixel", "output_half_pixel")


class _DetectionOp(FloatTypes, OneResultOp):
    """An opaque op of float data with operands of other types (indices, caches)."""

    SAME_DTYPE: ClassVar[bool] = False


@irdl_op_definition
class RoiAlignOp(_DetectionOp):
    """Pool each region of interest of x (N, C, H, W) to (output_height, output_width) by
    bilinear sampling (ONNX RoiAlign). rois (R, 4) are [x1, y1, x2, y2] in input
    coordinates before `spatial_scale`; batch_indices (R,) pick the image. Result (R, C, oh, ow)."""

    name = "nn.roi_align"
    data, rois, batch_indices = tensor_operands(3)
    mode = str_prop("avg")
    output_height = int_prop(1)
    output_width = int_prop(1)
    sampling_ratio = int_prop(0)
    spatial_scale = float_prop(1.0)
    coordinate_transformation_mode = str_prop("half_pixel")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, rois, idx = (shape_of(t) for t in types)
        if len(x) != 4:
            raise _fail(f"roi_align needs an (N, C, H, W) input, got rank {len(x)}")
        if types[1].element_type != types[0].element_type:
            raise _fail(f"rois must have the input's element type {types[0].element_type}, got {types[1].element_type}")
        check_indices(types[2], "batch_indices")
        if len(rois) != 2 or rois[1] != 4 or idx != (rois[0],):
            raise _fail(f"rois {list(rois)} and batch_indices {list(idx)} must be (R, 4) and (R,)")
        oh, ow = attrs["output_height"], attrs["output_width"]
        if oh < 1 or ow < 1 or attrs["sampling_ratio"] < 0:
            raise _fail("output_height and output_width must be at least 1, sampling_ratio at least 0")
        if attrs["mode"] not in ROI_MODES:
            raise _fail(f"mode '{attrs['mode']}' is not one of avg, max")
        if attrs["coordinate_transformation_mode"] not in ROI_COORDINATE_MODES:
            raise _fail(
                f"coordinate_transformation_mode '{attrs['coordinate_transformation_mode']}' "
                "is not one of half_pixel, output_half_pixel"
            )
        return [tensor((rois[0], x[1], oh, ow), types[0].element_type)]


@irdl_op_definition
class RotaryEmbeddingOp(_DetectionOp):
    """Rotate pairs of features of x by the angles of the cos/sin caches (ONNX
    RotaryEmbedding); the result has x's type."""

    name = "nn.rotary_embedding"
    data, cos_cache, sin_cache, position_ids = tensor_operands(4)
    interleaved = bool_prop(False)
    num_heads = int_prop(0)
    rotary_embedding_dim = int_prop(0)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, cos, sin, pos = (shape_of(t) for t in types)
        for t, what in ((types[1], "cos_cache"), (types[2], "sin_cache")):
            if t.element_type != types[0].element_type:
                raise _fail(f"{what} must have the input's element type {types[0].element_type}")
        check_indices(types[3], "position_ids")
        heads = attrs["num_heads"]
        if len(x) == 3:
            if heads < 1 or x[2] % heads:
                raise _fail(f"a 3-D input needs num_heads dividing its hidden size {x[2]}, got {heads}")
            b, s, head = x[0], x[1], x[2] // heads
        elif len(x) == 4:
            b, s, head = x[0], x[2], x[3]
        else:
            raise _fail(f"rotary_embedding needs a rank 3 or 4 input, got rank {len(x)}")
        dim = attrs["rotary_embedding_dim"] or head
        if dim % 2 or dim > head or dim < 0:
            raise _fail(f"rotary_embedding_dim {dim} must be even and at most the head size {head}")
        if cos != sin:
            raise _fail(f"cos_cache {list(cos)} and sin_cache {list(sin)} must have one shape")
        if pos == (0,):  # no position_ids: the caches are indexed already
            if cos != (b, s, dim // 2):
                raise _fail(f"without position_ids the caches must be {[b, s, dim // 2]}, got {list(cos)}")
        else:
            if pos != (b, s):
                raise _fail(f"position_ids {list(pos)} must be (batch, sequence) = {[b, s]}")
            if len(cos) != 2 or cos[1] != dim // 2:
                raise _fail(f"with position_ids the caches must be (max_position, {dim // 2}), got {list(cos)}")
        return [types[0]]


@irdl_op_definition
class DeformConv2DOp(_DetectionOp):
    """Deformable 2-D convolution (ONNX DeformConv, NCHW): x (N, C, H, W), weight
    (OC, C / group, kh, kw), offset (N, offset_group * kh * kw * 2, oh, ow), bias (OC,)
    or empty, mask (N, offset_group * kh * kw, oh, ow) or empty. Result (N, OC, oh, ow)."""

    name = "nn.deform_conv2d"
    data, weight, offset, bias, mask = tensor_operands(5)
    strides = array_prop(ints(1, 1))
    padding = array_prop(ints(0, 0, 0, 0))
    dilation = array_prop(ints(1, 1))
    groups = int_prop(1)
    offset_group = int_prop(1)
    SAME_DTYPE: ClassVar[bool] = True

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, w, off, bias, mask = (shape_of(t) for t in types)
        if len(x) != 4 or len(w) != 4:
            raise _fail(f"deform_conv2d needs (N, C, H, W) data and (OC, C/group, kh, kw) weights, got {list(x)} and {list(w)}")
        strides, pads, dil = attrs["strides"], attrs["padding"], attrs["dilation"]
        g, og = attrs["groups"], attrs["offset_group"]
        if len(strides) != 2 or len(dil) != 2 or len(pads) != 4 or min(*strides, *dil) < 1 or min(pads) < 0:
            raise _fail("strides and dilation need 2 positive values, padding 4 non-negative ones")
        if g < 1 or og < 1 or x[1] != w[1] * g or w[0] % g or x[1] % og:
            raise _fail(f"channels {x[1]}, weights {list(w)}, group {g} and offset_group {og} disagree")
        kh, kw = w[2], w[3]
        oh = (x[2] + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (x[3] + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
        if oh < 1 or ow < 1:
            raise _fail(f"a {kh}x{kw} kernel does not fit the padded {x[2]}x{x[3]} input")
        if off != (x[0], og * kh * kw * 2, oh, ow):
            raise _fail(f"offset has shape {list(off)}, expected {[x[0], og * kh * kw * 2, oh, ow]}")
        if bias not in ((0,), (w[0],)):
            raise _fail(f"bias has shape {list(bias)}, expected [{w[0]}] (or empty)")
        if mask not in ((0,), (x[0], og * kh * kw, oh, ow)):
            raise _fail(f"mask has shape {list(mask)}, expected {[x[0], og * kh * kw, oh, ow]} (or empty)")
        return [tensor((x[0], w[0], oh, ow), types[0].element_type)]


@irdl_op_definition
class TensorScatterOp(_DetectionOp):
    """Write `update` into a copy of `past_cache` along `axis` from each batch row's
    `write_indices` (ONNX TensorScatter); the result has past_cache's type."""

    name = "nn.tensor_scatter"
    past_cache, update, write_indices = tensor_operands(3)
    mode = str_prop("linear")
    axis = int_prop(-2)
    DTYPES: ClassVar[tuple[Attribute, ...]] = ALL_TYPES

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        cache, upd, idx = (shape_of(t) for t in types)
        if types[1].element_type != types[0].element_type:
            raise _fail(f"update must have the cache's element type {types[0].element_type}")
        check_indices(types[2], "write_indices")
        r = len(cache)
        if not -r <= attrs["axis"] < r or attrs["axis"] % max(r, 1) == 0:
            raise _fail(f"axis {attrs['axis']} must name a dim after the batch dim of a rank-{r} cache")
        axis = attrs["axis"] % r
        if len(upd) != r or any(a != b for i, (a, b) in enumerate(zip(cache, upd, strict=True)) if i != axis):
            raise _fail(f"update {list(upd)} must match the cache {list(cache)} outside axis {axis}")
        if upd[axis] > cache[axis]:
            raise _fail(f"update's {upd[axis]} positions do not fit the cache's {cache[axis]}")
        if idx not in ((0,), (cache[0],)):
            raise _fail(f"write_indices has shape {list(idx)}, expected [{cache[0]}] (or empty)")
        if attrs["mode"] not in ("linear", "circular"):
            raise _fail(f"mode '{attrs['mode']}' is not one of linear, circular")
        return [types[0]]


@irdl_op_definition
class LinearAttentionOp(FloatTypes, NNOp):
    """Linear attention as a recurrence over time (ONNX LinearAttention, opset 27): query,
    key, value (B, T, heads * d) packed; past_state (B, kv_heads, d_k, d_v), decay (B, T,
    kv_heads or kv_heads * d_k) and beta (B, T, kv_heads or 1) given or empty; `update_rule`
    linear, gated, delta or gated_delta. Results: the output (B, T, q_heads * d_v) and the
    present state (B, kv_heads, d_k, d_v). Two results: it runs on the host."""

    name = "nn.linear_attention"
    query, key, value, past_state, decay, beta = tensor_operands(6)
    output = result_def(TensorType)
    present_state = result_def(TensorType)
    q_num_heads = int_prop()
    kv_num_heads = int_prop()
    scale = float_prop(0.0)
    update_rule = str_prop("gated_delta")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        q, k, v, past, decay, beta = (shape_of(t) for t in types)
        hq, hkv, rule = attrs["q_num_heads"], attrs["kv_num_heads"], attrs["update_rule"]
        if rule not in ("linear", "gated", "delta", "gated_delta"):
            raise _fail(f"update_rule '{rule}' is not one of linear, gated, delta, gated_delta")
        if hq < 1 or hkv < 1 or hq % hkv:
            raise _fail(f"q_num_heads {hq} must be a positive multiple of kv_num_heads {hkv}")
        if len(q) != 3 or len(k) != 3 or len(v) != 3 or q[:2] != k[:2] or q[:2] != v[:2]:
            raise _fail(f"query {list(q)}, key {list(k)} and value {list(v)} must be (B, T, heads * d) alike")
        if q[2] % hq or k[2] % hkv or v[2] % hkv or q[2] // hq != k[2] // hkv:
            raise _fail("the packed head sizes of query, key and value do not fit the head counts")
        b, t, dk, dv = q[0], q[1], q[2] // hq, v[2] // hkv
        if past not in ((0,), (b, hkv, dk, dv)):
            raise _fail(f"past_state has shape {list(past)}, expected {[b, hkv, dk, dv]} (or empty)")
        gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
        if (decay != (0,)) != gated or (beta != (0,)) != delta:
            raise _fail(f"update_rule '{rule}' takes decay: {gated}, beta: {delta}")
        if gated and decay not in ((b, t, hkv), (b, t, hkv * dk)):
            raise _fail(f"decay has shape {list(decay)}, expected {[b, t, hkv]} or {[b, t, hkv * dk]}")
        if delta and beta not in ((b, t, hkv), (b, t, 1)):
            raise _fail(f"beta has shape {list(beta)}, expected {[b, t, hkv]} or {[b, t, 1]}")
        for other in types[1:]:
            if shape_of(other) != (0,) and other.element_type != types[0].element_type:
                raise _fail(f"every operand must have the query's element type {types[0].element_type}")
        state_type = types[3].element_type if past != (0,) else types[0].element_type
        return [tensor((b, t, hq * dv), types[0].element_type), tensor((b, hkv, dk, dv), state_type)]


DETECTION_OPS: tuple[type[NNOp], ...] = (
    RoiAlignOp, RotaryEmbeddingOp, DeformConv2DOp, TensorScatterOp, LinearAttentionOp,
)  # fmt: skip
"""The ops of this module, appended to the nn dialect's list."""

__all__ = [
    "DETECTION_OPS", "ROI_COORDINATE_MODES", "ROI_MODES", "DeformConv2DOp", "RoiAlignOp", "RotaryEmbeddingOp",
    "LinearAttentionOp", "TensorScatterOp",
]  # fmt: skip
