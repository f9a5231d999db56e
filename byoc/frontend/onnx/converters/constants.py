"""ONNX ops whose values are known at import time: Constant, Shape, Range, ..."""

from __future__ import annotations

import math

import numpy as np

from byoc.dialects import nn
from byoc.frontend.onnx.base import (
    Importer,
    Node,
    Value,
    converts,
    ints,
)
from byoc.frontend.onnx.errors import UnsupportedOnnxError


@converts("Constant")
def _constant(imp: Importer, node: Node) -> list[Value]:
    from onnx import numpy_helper

    a = node.attrs
    if "value" in a:
        return [numpy_helper.to_array(a["value"])]
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
    from onnx import numpy_helper

    shape = ints(imp.static(node, 0, "shape"))
    value = node.attr("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return [np.full(shape, fill[0], dtype=fill.dtype)]


@converts("Shape")
def _shape(imp: Importer, node: Node) -> list[Value]:
    shape = imp.shape(node.required(0))
    start, end = node.attr("start", 0), node.attr("end")
    return [np.asarray(shape[slice(start, end)], dtype=np.int64)]


@converts("Size")
def _size(imp: Importer, node: Node) -> list[Value]:
    return [np.asarray(math.prod(imp.shape(node.required(0))), dtype=np.int64)]


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
    count = max(int(math.ceil((limit.item() - start.item()) / delta.item())), 0)
    return [(start + np.arange(count, dtype=start.dtype) * delta).astype(start.dtype)]
