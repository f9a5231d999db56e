"""ONNX ops of detectors and transformers: NonMaxSuppression, RoiAlign,
RotaryEmbedding, DeformConv, TensorScatter, CausalConvWithState, LinearAttention.
docs/onnx.md says how each maps."""

from __future__ import annotations

import numpy as np

from byoc.dialects.nn import detection as nnd
from byoc.frontend.onnx.base import Importer, Node, Value, converts, string
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError
from byoc.interpreters.kernels_detection import non_max_suppression


@converts("NonMaxSuppression")
def _non_max_suppression(imp: Importer, node: Node) -> list[Value]:
    # the result has one row per kept box: a count only the values decide, so (like
    # NonZero) it is computed at import and needs every input known then
    what = "{} (NonMaxSuppression's result shape depends on the values)"
    boxes = imp.static(node, 0, what.format("boxes"))
    scores = imp.static(node, 1, what.format("scores"))
    limit = imp.static(node, 2, what.format("max_output_boxes_per_class"))
    iou = imp.static(node, 3, what.format("iou_threshold"))
    score = imp.static(node, 4, what.format("score_threshold"))
    assert boxes is not None and scores is not None
    b, s = np.asarray(boxes), np.asarray(scores)
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[0] != b.shape[0] or s.shape[2] != b.shape[1]:
        raise OnnxImportError(
            f"NonMaxSuppression's boxes {list(b.shape)} and scores {list(s.shape)} must be "
            "(batches, boxes, 4) and (batches, classes, boxes)"
        )
    center = int(node.attr("center_point_box", 0))
    if center not in (0, 1):
        raise OnnxImportError(f"NonMaxSuppression's center_point_box must be 0 or 1, got {center}")

    def scalar(v: object, default: float | None) -> float | None:
        a = None if v is None else np.asarray(v).reshape(-1)
        return default if a is None or a.size == 0 else float(a[0])

    return [
        non_max_suppression(
            b, s, int(scalar(limit, 0) or 0), float(scalar(iou, 0.0) or 0.0), scalar(score, None), center
        )
    ]


@converts("RoiAlign")
def _roi_align(imp: Importer, node: Node) -> list[Value]:
    # opset 10 had no coordinate_transformation_mode: its behaviour is output_half_pixel
    mode = string(node.attr("coordinate_transformation_mode", "half_pixel" if node.version >= 16 else "output_half_pixel"))
    return imp.emit_all(
        nnd.RoiAlignOp,
        node.required(0),
        node.required(1),
        node.required(2),
        mode=string(node.attr("mode", "avg")),
        output_height=int(node.attr("output_height", 1)),
        output_width=int(node.attr("output_width", 1)),
        sampling_ratio=int(node.attr("sampling_ratio", 0)),
        spatial_scale=float(node.attr("spatial_scale", 1.0)),
        coordinate_transformation_mode=mode,
    )


@converts("RotaryEmbedding")
def _rotary_embedding(imp: Importer, node: Node) -> list[Value]:
    pos = node.input(3)
    if pos is None:  # left out: the caches are (batch, sequence, dim/2) already
        pos = np.zeros((0,), np.int64)
    return imp.emit_all(
        nnd.RotaryEmbeddingOp,
        node.required(0),
        node.required(1),
        node.required(2),
        pos,
        interleaved=bool(node.attr("interleaved", 0)),
        num_heads=int(node.attr("num_heads", 0)),
        rotary_embedding_dim=int(node.attr("rotary_embedding_dim", 0)),
    )


@converts("DeformConv")
def _deform_conv(imp: Importer, node: Node) -> list[Value]:
    x, w = node.required(0), node.required(1)
    rank = len(imp.shape(x))
    if rank != 4:
        raise UnsupportedOnnxError(
            f"DeformConv on a rank-{rank} input ({rank - 2}-D) is not supported; 2-D is"
            if rank == 5
            else f"DeformConv on a rank-{rank} input is not supported; 2-D (rank 4) is"
        )
    ktaps = imp.shape(w)[2:]
    kernel_shape = node.attr("kernel_shape")
    if kernel_shape is not None and tuple(int(k) for k in kernel_shape) != tuple(ktaps):
        raise OnnxImportError(f"DeformConv's kernel_shape {list(kernel_shape)} is not the weights' {list(ktaps)}")
    pads = [int(p) for p in node.attr("pads", [0, 0, 0, 0])]
    empty = np.zeros((0,), imp.dtype(x))
    bias, mask = node.input(3), node.input(4)
    return imp.emit_all(
        nnd.DeformConv2DOp,
        x,
        w,
        node.required(2),
        empty if bias is None else bias,
        empty if mask is None else mask,
        strides=tuple(int(v) for v in node.attr("strides", [1, 1])),
        padding=tuple(pads),
        dilation=tuple(int(v) for v in node.attr("dilations", [1, 1])),
        groups=int(node.attr("group", 1)),
        offset_group=int(node.attr("offset_group", 1)),
    )


@converts("TensorScatter")
def _tensor_scatter(imp: Importer, node: Node) -> list[Value]:
    idx = node.input(2)
    return imp.emit_all(
        nnd.TensorScatterOp,
        node.required(0),
        node.required(1),
        np.zeros((0,), np.int64) if idx is None else idx,
        mode=string(node.attr("mode", "linear")),
        axis=int(node.attr("axis", -2)),
    )


@converts("CausalConvWithState")
def _causal_conv_with_state(imp: Importer, node: Node) -> list[Value]:
    # (opset 27) a depthwise causal conv1d over [past_state, input], SiLU when asked, and the
    # last k - 1 positions of that concatenation as the new state: nn ops that run in C
    from byoc.dialects import nn
    from byoc.dialects.nn import math_ops

    x, w = node.required(0), node.required(1)
    bias, past = node.input(2), node.input(3)
    xs, ws = imp.shape(x), imp.shape(w)
    if len(xs) != 3 or len(ws) != 3 or ws[0] != xs[1] or ws[1] != 1:
        raise OnnxImportError(
            f"CausalConvWithState needs input (B, C, L) and weight (C, 1, k), got {list(xs)} and {list(ws)}"
        )
    activation = string(node.attr("activation", "none"))
    if activation not in ("none", "silu", "swish"):
        raise OnnxImportError(f"CausalConvWithState's activation '{activation}' is not one of none, silu, swish")
    b, c, length = xs
    k = ws[2]
    if past is None:
        past = np.zeros((b, c, k - 1), imp.dtype(x))
    padded = imp.emit(nn.ConcatenateOp, past, x, axis=2) if k > 1 else x
    y = imp.emit(
        nn.Conv2DOp,
        imp.reshape(padded, (b, c, 1, length + k - 1)),
        imp.reshape(w, (c, 1, 1, k)),
        strides=(1, 1),
        padding=(0, 0, 0, 0),
        dilation=(1, 1),
        groups=c,
    )
    if bias is not None:
        y = imp.emit(nn.BiasAddOp, y, bias, axis=1)
    y = imp.reshape(y, (b, c, length))
    if activation != "none":
        y = imp.emit(math_ops.SwishOp, y, alpha=1.0)
    state = imp.emit(nn.StridedSliceOp, padded, begin=(0, 0, length), end=(b, c, length + k - 1), strides=(1, 1, 1))
    return [y, state]


@converts("LinearAttention")
def _linear_attention(imp: Importer, node: Node) -> list[Value]:
    q = node.required(0)
    empty = np.zeros((0,), imp.dtype(q))

    def given(i: int) -> Value:
        v = node.input(i)
        return empty if v is None else v

    return imp.emit_all(
        nnd.LinearAttentionOp,
        q,
        node.required(1),
        node.required(2),
        given(3),
        given(4),
        given(5),
        q_num_heads=int(node.required_attr("q_num_heads")),
        kv_num_heads=int(node.required_attr("kv_num_heads")),
        scale=float(node.attr("scale", 0.0)),
        update_rule=string(node.attr("update_rule", "gated_delta")),
    )
