"""Quantization ONNX ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.

QuantizeLinear / DequantizeLinear (opsets 10-21: per tensor, per axis from 13, blocked and
`output_dtype` from 21) become `nn.quantize` / `nn.dequantize` with the scale and zero point as
operands. A DequantizeLinear of a constant (a QDQ model's weights and biases) is kept as an op,
not folded into an f32 constant, so the QDQ patterns see the integer weights.

QLinearConv / QLinearMatMul are the integer op then `nn.requantize` with the input scale
`x_scale * w_scale` computed in f32 — onnxruntime's own requantization, so the integers agree
bit for bit. ConvInteger / MatMulInteger are `nn.qconv2d` / `nn.qmatmul`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

import byoc.frontend.onnx.proto as proto
from byoc.dialects import nn
from byoc.frontend.onnx.base import Importer, Node, Value, converts, normalize_axes, string
from byoc.frontend.onnx.converters.neural import (
    _as_2d,  # pyright: ignore[reportPrivateUsage]
    _auto_pads,  # pyright: ignore[reportPrivateUsage]
    _pads_2d,  # pyright: ignore[reportPrivateUsage]
)
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError

QUANTIZED_DTYPES = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))
"""numpy dtypes of nn's quantized element types."""


def _onnx_dtype(code: int) -> np.dtype[Any]:
    try:
        return proto.np_dtype(code)
    except Exception:
        raise UnsupportedOnnxError(
            f"quantized type {proto.dtype_name(code)} is not supported (INT8, UINT8, INT16, UINT16)"
        ) from None


def _check_quantized(imp: Importer, node: Node, dtype: np.dtype[Any], extra: tuple[np.dtype[Any], ...] = ()) -> None:
    if dtype not in (*QUANTIZED_DTYPES, *extra):
        raise UnsupportedOnnxError(
            f"{node.op_type} on {dtype} is not supported (int8, uint8, int16, uint16"
            + (", int32" if extra else "")
            + ")"
        )


def _params(
    imp: Importer, node: Node, x: Value, scale: Value, zp: Value | None, zp_dtype: np.dtype[Any]
) -> tuple[Value, Value, dict[str, int]]:
    """Scale, zero point (zeros of `zp_dtype` when absent) and the axis/block_size properties."""
    if imp.dtype(scale) != np.float32:
        raise UnsupportedOnnxError(f"{node.op_type} with a {imp.dtype(scale)} scale is not supported (float32)")
    if imp.dtype(x) not in (np.float32, *QUANTIZED_DTYPES, np.int32):
        raise UnsupportedOnnxError(f"{node.op_type} on {imp.dtype(x)} is not supported")
    if zp is None:
        zp = np.zeros(imp.shape(scale), zp_dtype)
    rank = len(imp.shape(x))
    block = int(node.attr("block_size", 0))
    props: dict[str, int] = {}
    if imp.shape(scale) not in ((), (1,)) or block:
        if node.version < 13 and imp.shape(scale) not in ((), (1,)):
            raise OnnxImportError(f"{node.op_type}-{node.version} takes a per-tensor scale only")
        (props["axis"],) = normalize_axes([int(node.attr("axis", 1))], max(rank, 1))
    if block:
        props["block_size"] = block
    return scale, zp, props


@converts("QuantizeLinear")
def _quantize(imp: Importer, node: Node) -> list[Value]:
    x, scale, zp = node.required(0), node.required(1), node.input(2)
    out = node.attr("output_dtype", 0)
    zp_dtype = _onnx_dtype(int(out)) if out else (imp.dtype(zp) if zp is not None else np.dtype(np.uint8))
    if zp is not None and out and imp.dtype(zp) != zp_dtype:
        raise OnnxImportError(f"output_dtype {zp_dtype} differs from the zero point's {imp.dtype(zp)}")
    _check_quantized(imp, node, zp_dtype)
    if imp.dtype(x) != np.float32:
        raise UnsupportedOnnxError(f"QuantizeLinear on {imp.dtype(x)} is not supported (float32)")
    scale, zp, props = _params(imp, node, x, scale, zp, zp_dtype)
    return [imp.emit(nn.QuantizeOp, x, scale, zp, **props)]


@converts("DequantizeLinear")
def _dequantize(imp: Importer, node: Node) -> list[Value]:
    x, scale, zp = node.required(0), node.required(1), node.input(2)
    _check_quantized(imp, node, imp.dtype(x), (np.dtype(np.int32),))
    scale, zp, props = _params(imp, node, x, scale, zp, imp.dtype(x))
    if not isinstance(x, SSAValue):
        # a constant (weights, bias): kept as an op so that the QDQ patterns see the integers
        x = imp.constant(x)
    return [imp.emit(nn.DequantizeOp, x, scale, zp, **props)]


@converts("DynamicQuantizeLinear")
def _dynamic_quantize(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    if imp.dtype(x) != np.float32:
        raise UnsupportedOnnxError(f"DynamicQuantizeLinear on {imp.dtype(x)} is not supported (float32)")
    return list(imp.emit_all(nn.DynamicQuantizeOp, x))


def _zero_point(imp: Importer, node: Node, i: int, like: Value, what: str) -> Value:
    zp = node.input(i)
    if zp is None:
        return np.zeros((), imp.dtype(like))
    if imp.dtype(zp) != imp.dtype(like):
        raise OnnxImportError(f"{node.op_type}: the {what} zero point is {imp.dtype(zp)}, the {what} is {imp.dtype(like)}")
    return zp


def _int8(imp: Importer, node: Node, *values: Value) -> None:
    for v in values:
        if imp.dtype(v) not in (np.int8, np.uint8):
            raise UnsupportedOnnxError(f"{node.op_type} on {imp.dtype(v)} is not supported (int8, uint8)")


def _conv_attrs(imp: Importer, node: Node, x: Value, w: Value) -> dict[str, Any]:
    if len(imp.shape(x)) != 4:
        raise UnsupportedOnnxError(f"{node.op_type} on a rank-{len(imp.shape(x))} input is not supported (2-D only)")
    kernel = list(imp.shape(w)[2:])
    strides = list(node.attr("strides", [1, 1]))
    dilations = list(node.attr("dilations", [1, 1]))
    pads = _auto_pads(string(node.attr("auto_pad", "NOTSET")), imp.shape(x)[2:], kernel, strides, dilations)
    if pads is None:
        pads = list(node.attr("pads", [0, 0, 0, 0]))
    return {
        "strides": _as_2d(strides, 2, 1),
        "padding": _pads_2d(pads, 2),
        "dilation": _as_2d(dilations, 2, 1),
        "groups": int(node.attr("group", 1)),
    }


def _per_tensor(imp: Importer, node: Node, v: Value, what: str) -> None:
    if imp.shape(v) not in ((), (1,)):
        raise UnsupportedOnnxError(f"{node.op_type} with a per-axis {what} is not supported")


def _integer_operands(imp: Importer, node: Node, a_name: str, b_name: str) -> tuple[Value, ...]:
    """ConvInteger's and MatMulInteger's operands: two int8/uint8 tensors, then their zero
    points (absent: 0), the first one per tensor."""
    a, b = node.required(0), node.required(1)
    _int8(imp, node, a, b)
    az, bz = _zero_point(imp, node, 2, a, a_name), _zero_point(imp, node, 3, b, b_name)
    _per_tensor(imp, node, az, f"{a_name} zero point")
    return a, b, az, bz


@converts("ConvInteger")
def _conv_integer(imp: Importer, node: Node) -> list[Value]:
    x, w, xz, wz = _integer_operands(imp, node, "x", "w")
    return [imp.emit(nn.QConv2DOp, x, w, xz, wz, **_conv_attrs(imp, node, x, w))]


@converts("MatMulInteger")
def _matmul_integer(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.QMatmulOp, *_integer_operands(imp, node, "a", "b"))]


def _requantize(
    imp: Importer, node: Node, acc: Value, x_scale: Value, w_scale: Value, y_scale: Value, y_zp: Value, axis: int
) -> Value:
    """acc (i32) to y's type with the input scale x_scale * w_scale (f32, as onnxruntime)."""
    _per_tensor(imp, node, x_scale, "input scale")
    _per_tensor(imp, node, y_scale, "output scale")
    for s in (x_scale, w_scale, y_scale):
        if imp.dtype(s) != np.float32:
            raise UnsupportedOnnxError(f"{node.op_type} with a {imp.dtype(s)} scale is not supported")
    _check_quantized(imp, node, imp.dtype(y_zp))
    in_scale = imp.emit(nn.MultiplyOp, imp.reshape(x_scale, ()), w_scale)
    in_zp = np.zeros(imp.shape(in_scale), np.int32)
    props = {"axis": axis} if imp.shape(in_scale) not in ((), (1,)) else {}
    return imp.emit(nn.RequantizeOp, acc, in_scale, in_zp, imp.reshape(y_scale, ()), imp.reshape(y_zp, ()), **props)


@converts("QLinearConv")
def _qlinear_conv(imp: Importer, node: Node) -> list[Value]:
    x, xs, xz, w, ws, wz, ys, yz = (node.required(i) for i in range(8))
    b = node.input(8)
    _int8(imp, node, x, w)
    acc = imp.emit(nn.QConv2DOp, x, w, xz, wz, **_conv_attrs(imp, node, x, w))
    if b is not None:
        if imp.dtype(b) != np.int32:
            raise OnnxImportError(f"QLinearConv bias must be int32, got {imp.dtype(b)}")
        acc = imp.emit(nn.AddOp, acc, imp.reshape(b, (1, imp.shape(b)[0], 1, 1)))
    return [_requantize(imp, node, acc, xs, ws, ys, yz, 1)]


@converts("QLinearMatMul")
def _qlinear_matmul(imp: Importer, node: Node) -> list[Value]:
    a, as_, az, b, bs, bz, ys, yz = (node.required(i) for i in range(8))
    _int8(imp, node, a, b)
    _per_tensor(imp, node, az, "a zero point")
    acc = imp.emit(nn.QMatmulOp, a, b, az, bz)
    return [_requantize(imp, node, acc, as_, bs, ys, yz, len(imp.shape(acc)) - 1)]
