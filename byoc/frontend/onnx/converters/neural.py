"""Neural-network ONNX ops: convolutions, pooling, normalization, Gemm/MatMul, Softmax."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import nn
from byoc.frontend.onnx.base import (
    Importer,
    Node,
    Value,
    converts,
    normalize_axes,
    string,
)
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError


def _auto_pads(
    auto_pad: str, sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]
) -> list[int] | None:
    """ONNX SAME_UPPER / SAME_LOWER / VALID padding as [begin..., end...]; None for NOTSET."""
    if auto_pad in ("", "NOTSET"):
        return None
    n = len(sizes)
    if auto_pad == "VALID":
        return [0] * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise OnnxImportError(f"unknown auto_pad '{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations, strict=True):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return begin + end


def _spatial(imp: Importer, node: Node, x: Value) -> int:
    """Number of spatial dims (1 or 2 are supported: 1-D is run as 2-D with H = 1)."""
    rank = len(imp.shape(x))
    if rank not in (3, 4):
        raise UnsupportedOnnxError(
            f"{node.op_type} on a rank-{rank} input ({rank - 2}-D) is not supported; 1-D and 2-D are"
        )
    return rank - 2


def _as_2d(values: Sequence[int], n: int, fill: int) -> list[int]:
    """Per-spatial-dim values for 1-D ops, with a leading H entry of `fill`."""
    return list(values) if n == 2 else [fill, *values]


def _pads_2d(pads: Sequence[int], n: int) -> tuple[int, int, int, int]:
    if n == 2:
        top, left, bottom, right = pads
        return top, left, bottom, right
    lo, hi = pads
    return 0, lo, 0, hi


def _to_2d(imp: Importer, x: Value, n: int) -> Value:
    if n == 2:
        return x
    s = imp.shape(x)
    return imp.reshape(x, (s[0], s[1], 1, s[2]))


def _from_2d(imp: Importer, y: Value, n: int) -> Value:
    if n == 2:
        return y
    s = imp.shape(y)
    return imp.reshape(y, (s[0], s[1], s[3]))




@converts("Conv")
def _conv(imp: Importer, node: Node) -> list[Value]:
    x, w, b = node.required(0), node.required(1), node.input(2)
    n = _spatial(imp, node, x)
    kernel = list(imp.shape(w)[2:])
    if node.attr("kernel_shape") is not None and list(node.attr("kernel_shape")) != kernel:
        raise OnnxImportError(f"kernel_shape {node.attr('kernel_shape')} differs from the weight's {kernel}")
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    pads = _auto_pads(string(node.attr("auto_pad", "NOTSET")), imp.shape(x)[2:], kernel, strides, dilations)
    if pads is None:
        pads = list(node.attr("pads", [0] * (2 * n)))
    y = imp.emit(
        nn.Conv2DOp,
        _to_2d(imp, x, n),
        _to_2d(imp, w, n),
        strides=_as_2d(strides, n, 1),
        padding=_pads_2d(pads, n),
        dilation=_as_2d(dilations, n, 1),
        groups=int(node.attr("group", 1)),
    )
    if b is not None:
        y = imp.emit(nn.BiasAddOp, y, b, axis=1)
    return [_from_2d(imp, y, n)]


@converts("ConvTranspose")
def _conv_transpose(imp: Importer, node: Node) -> list[Value]:
    x, w, b = node.required(0), node.required(1), node.input(2)
    n = _spatial(imp, node, x)
    sizes = imp.shape(x)[2:]
    kernel = list(imp.shape(w)[2:])
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    out_pad = list(node.attr("output_padding", [0] * n))
    auto_pad = string(node.attr("auto_pad", "NOTSET"))
    output_shape = node.attr("output_shape")
    if output_shape is not None and len(output_shape) == n + 2:
        output_shape = list(output_shape)[2:]
    pads = node.attr("pads")
    if output_shape is not None or (pads is None and auto_pad in ("SAME_UPPER", "SAME_LOWER")):
        # ONNX: the pads are derived from the requested output shape (in * stride for SAME)
        target = list(output_shape) if output_shape is not None else [s * st for s, st in zip(sizes, strides, strict=True)]
        begin, end = [], []
        for i in range(n):
            total = strides[i] * (sizes[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1 - target[i]
            small, big = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else big)
            end.append(big if auto_pad == "SAME_UPPER" else small)
        pads = begin + end
    elif pads is None:
        pads = [0] * (2 * n)
    pads = list(pads)
    if any(p < 0 for p in pads[:n]):
        raise UnsupportedOnnxError(f"ConvTranspose with negative leading pads {pads} is not supported")
    for i in range(n):  # a negative trailing pad extends the output: output_padding
        if pads[n + i] < 0:
            out_pad[i] += -pads[n + i]
            pads[n + i] = 0
    y = imp.emit(
        nn.Conv2DTransposeOp,
        _to_2d(imp, x, n),
        _to_2d(imp, w, n),
        strides=_as_2d(strides, n, 1),
        padding=_pads_2d(pads, n),
        output_padding=_as_2d(out_pad, n, 0),
        dilation=_as_2d(dilations, n, 1),
        groups=int(node.attr("group", 1)),
    )
    if b is not None:
        y = imp.emit(nn.BiasAddOp, y, b, axis=1)
    return [_from_2d(imp, y, n)]


@converts("MaxPool", "AveragePool")
def _pool(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    n = _spatial(imp, node, x)
    kernel = list(node.required_attr("kernel_shape"))
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    pads = _auto_pads(string(node.attr("auto_pad", "NOTSET")), imp.shape(x)[2:], kernel, strides, dilations)
    if pads is None:
        pads = list(node.attr("pads", [0] * (2 * n)))
    common = dict(
        pool_size=_as_2d(kernel, n, 1),
        strides=_as_2d(strides, n, 1),
        padding=_pads_2d(pads, n),
        dilation=_as_2d(dilations, n, 1),
        ceil_mode=bool(node.attr("ceil_mode", 0)),
    )
    if node.op_type == "MaxPool":
        y = imp.emit(nn.MaxPool2DOp, _to_2d(imp, x, n), **common)
    else:
        y = imp.emit(
            nn.AvgPool2DOp,
            _to_2d(imp, x, n),
            count_include_pad=bool(node.attr("count_include_pad", 0)),
            **common,
        )
    return [_from_2d(imp, y, n)]


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    rank = len(imp.shape(x))
    avg = node.op_type == "GlobalAveragePool"
    if rank == 4:
        return [imp.emit(nn.GlobalAvgPool2DOp if avg else nn.GlobalMaxPool2DOp, x)]
    if rank < 3:
        raise OnnxImportError(f"{node.op_type} needs rank >= 3, got {rank}")
    cls = nn.ReduceMeanOp if avg else nn.ReduceMaxOp
    return [imp.emit(cls, x, axes=tuple(range(2, rank)), keepdims=True)]


@converts("BatchNormalization")
def _batch_norm(imp: Importer, node: Node) -> list[Value | None]:
    if node.attr("training_mode", 0):
        raise UnsupportedOnnxError("BatchNormalization in training mode is not supported")
    if node.version < 9 and not node.attr("spatial", 1):
        raise UnsupportedOnnxError("BatchNormalization with spatial = 0 is not supported")
    if node.version < 7 and not node.attr("is_test", 0):
        raise UnsupportedOnnxError("BatchNormalization in training mode (is_test = 0) is not supported")
    x = node.required(0)
    y = imp.emit(
        nn.BatchNormOp,
        x,
        *[node.required(i) for i in range(1, 5)],
        axis=1,
        epsilon=float(node.attr("epsilon", 1e-5)),
    )
    return [y]


@converts("LRN")
def _lrn(imp: Importer, node: Node) -> list[Value]:
    return imp.emit_all(
        nn.LRNOp,
        node.required(0),
        size=int(node.required_attr("size")),
        axis=1,
        alpha=float(node.attr("alpha", 1e-4)),
        beta=float(node.attr("beta", 0.75)),
        bias=float(node.attr("bias", 1.0)),
    )


@converts("Gemm")
def _gemm(imp: Importer, node: Node) -> list[Value]:
    a, b, c = node.required(0), node.required(1), node.input(2)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if node.attr("transA", 0):
        a = imp.emit(nn.TransposeOp, a, axes=(1, 0))
    # nn.dense computes a · wᵀ: w is B when transB, else Bᵀ (folded when B is a constant)
    w = b if node.attr("transB", 0) else imp.emit(nn.TransposeOp, b, axes=(1, 0))
    if alpha != 1.0 and not isinstance(w, SSAValue):
        w = np.asarray(w * w.dtype.type(alpha))
        alpha = 1.0
    y = imp.emit(nn.DenseOp, a, w)
    if alpha != 1.0:
        y = imp.emit(nn.MultiplyOp, y, imp.scalar_like(alpha, y))
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = imp.emit(nn.MultiplyOp, c, imp.scalar_like(beta, c))
        n_out = imp.shape(y)[1]
        if imp.shape(c) == (n_out,):
            y = imp.emit(nn.BiasAddOp, y, c, axis=1)
        else:
            y = imp.emit(nn.AddOp, y, c)
    return [y]


@converts("MatMul")
def _matmul(imp: Importer, node: Node) -> list[Value]:
    a, b = node.required(0), node.required(1)
    if not isinstance(b, SSAValue) and b.ndim == 2 and len(imp.shape(a)) >= 2:
        # a constant 2-D right operand is a dense layer (its weight stored transposed)
        return [imp.emit(nn.DenseOp, a, np.ascontiguousarray(b.T))]
    return [imp.emit(nn.MatmulOp, a, b)]


@converts("Softmax")
def _softmax(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    shape = imp.shape(x)
    rank = len(shape)
    if node.version >= 13:
        return [imp.emit(nn.SoftmaxOp, x, axis=int(node.attr("axis", -1)))]
    # before opset 13 the input is coerced to 2-D at `axis` and normalized over the trailing block
    (axis,) = normalize_axes([int(node.attr("axis", 1))], max(rank, 1))
    if axis == rank - 1:
        return [imp.emit(nn.SoftmaxOp, x, axis=-1)]
    flat = imp.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
    y = imp.emit(nn.SoftmaxOp, flat, axis=1)
    return [imp.reshape(y, shape)]
