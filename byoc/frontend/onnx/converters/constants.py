"""ONNX ops whose values are known at import time: Constant, Shape, Range, ..."""

from __future__ import annotations

import math

import numpy as np

import byoc.frontend.onnx.proto as proto
from byoc.dialects import nn
from byoc.frontend.onnx.base import (
    NN_DTYPES,
    Array,
    Importer,
    Node,
    Value,
    converts,
    has_dynamic,
    ints,
    nbytes,
)
from byoc.frontend.onnx.errors import STATIC_SHAPE_HINT, OnnxImportError, UnsupportedOnnxError


@converts("Constant")
def _constant(imp: Importer, node: Node) -> list[Value]:
    a = node.attrs
    if "value" in a:
        return [proto.checked_array(a["value"], "Constant's value")]
    if "value_float" in a:
        return [np.asarray(a["value_float"], dtype=np.float32)]
    if "value_floats" in a:
        return [np.asarray(a["value_floats"], dtype=np.float32)]
    if "value_int" in a:
        return [np.asarray(a["value_int"], dtype=np.int64)]
    if "value_ints" in a:
        return [np.asarray(a["value_ints"], dtype=np.int64)]
    raise UnsupportedOnnxError(f"Constant with attribute(s) {sorted(a)} is not supported")


@converts("ConstantOfShape")
def _constant_of_shape(imp: Importer, node: Node) -> list[Value]:
    shape = ints(imp.static(node, 0, "shape"))
    value = node.attr("value")
    fill = proto.checked_array(value, "ConstantOfShape's value").reshape(-1) if value is not None else np.zeros(1, np.float32)
    if len(fill) != 1:
        raise OnnxImportError(f"ConstantOfShape's value must hold one element, got {len(fill)}")
    if any(d < 0 for d in shape):
        raise OnnxImportError(f"ConstantOfShape's shape {shape} has a negative dimension")
    if nbytes(shape, fill.dtype) <= imp.fold_limit_bytes or 0 in shape:
        return [np.full(shape, fill[0], dtype=fill.dtype)]
    # Too large to compute at import time: pad the one value out to the shape at run time.
    if fill.dtype not in NN_DTYPES:
        raise UnsupportedOnnxError(
            f"ConstantOfShape of element type {fill.dtype} is too large to fold "
            f"({nbytes(shape, fill.dtype)} bytes) and nn has no run-time {fill.dtype}"
        )
    v = fill[0].item()
    if float(v) != v:
        raise UnsupportedOnnxError(
            f"ConstantOfShape's value {v} is too large to fold and is not exactly a pad value (f64)"
        )
    one = imp.constant(np.full([1] * len(shape), fill[0], dtype=fill.dtype))
    if not shape:
        return [one]
    width = tuple(w for d in shape for w in (0, d - 1))
    return [imp.emit(nn.PadOp, one, pad_width=width, pad_value=float(v))]


@converts("Shape")
def _shape(imp: Importer, node: Node) -> list[Value]:
    shape = imp.shape(node.required(0))
    start, end = node.attr("start", 0), node.attr("end")
    if has_dynamic(shape[slice(start, end)]):
        raise UnsupportedOnnxError(
            f"Shape of a value of dynamic shape {list(shape)}: the ? dims are known only at "
            f"run time; {STATIC_SHAPE_HINT}"
        )
    return [np.asarray(shape[slice(start, end)], dtype=np.int64)]


@converts("Size")
def _size(imp: Importer, node: Node) -> list[Value]:
    shape = imp.shape(node.required(0))
    if has_dynamic(shape):
        raise UnsupportedOnnxError(
            f"Size of a value of dynamic shape {list(shape)}; {STATIC_SHAPE_HINT}"
        )
    return [np.asarray(math.prod(shape), dtype=np.int64)]


@converts("Gather")
def _gather(imp: Importer, node: Node) -> list[Value]:
    data, indices = node.required(0), node.required(1)
    return [imp.emit(nn.TakeOp, data, indices, axis=int(node.attr("axis", 0)))]


@converts("Range")
def _range(imp: Importer, node: Node) -> list[Value]:
    start = imp.static(node, 0, "start")
    limit = imp.static(node, 1, "limit")
    delta = imp.static(node, 2, "delta")
    assert start is not None and limit is not None and delta is not None
    s, lim, d = start.item(), limit.item(), delta.item()
    if d == 0 or not all(math.isfinite(v) for v in (s, lim, d)):
        raise OnnxImportError(f"Range({s}, {lim}, {d}) needs finite bounds and a non-zero delta")
    count = max(math.ceil((lim - s) / d), 0)
    if nbytes([count], start.dtype) <= imp.fold_limit_bytes:
        return [(start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)]
    return [_range_at_run_time(imp, start, delta, count)]


def _range_at_run_time(imp: Importer, start: Array, delta: Array, count: int) -> Value:
    """start + i * delta for i < count, too large to fold: the index i is the broadcast
    sum of two aranges of about sqrt(count) elements (rows * cols >= count), flattened and
    cut to count, computed at run time."""
    if start.dtype not in NN_DTYPES:
        raise UnsupportedOnnxError(f"Range of element type {start.dtype} is too large to fold")
    cols = math.isqrt(count - 1) + 1
    rows = -(-count // cols)
    if nbytes([max(rows, cols)], np.int64) > imp.fold_limit_bytes:
        raise UnsupportedOnnxError(
            f"Range of {count} elements is too large to fold or to build from "
            f"aranges below the fold limit ({imp.fold_limit_bytes} bytes)"
        )
    row_starts = imp.constant((np.arange(rows, dtype=np.int64) * cols).reshape(rows, 1))
    col_offsets = imp.constant(np.arange(cols, dtype=np.int64).reshape(1, cols))
    index: Value = imp.emit(nn.AddOp, row_starts, col_offsets)
    index = imp.reshape(index, (rows * cols,))
    if rows * cols != count:
        index = imp.emit(nn.StridedSliceOp, index, begin=(0,), end=(count,), strides=(1,))
    if start.dtype != np.int64:
        index = imp.emit(nn.CastOp, index, dtype="f32" if start.dtype == np.float32 else "i32")
    scaled = imp.emit(nn.MultiplyOp, index, imp.constant(np.asarray([delta.item()], start.dtype)))
    return imp.emit(nn.AddOp, scaled, imp.constant(np.asarray([start.item()], start.dtype)))
