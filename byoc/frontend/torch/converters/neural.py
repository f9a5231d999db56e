"""Neural-network ATen ops: convolutions, matrix products, normalisations, pools, softmax,
embedding, attention, padding and resizing."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy
from xdsl.ir import SSAValue

import byoc.frontend.torch.views as views
from byoc.dialects import nn
from byoc.dialects.nn import indexing, logic_ops, math_ops
from byoc.frontend.torch.base import (
    Array,
    Call,
    Deferred,
    Importer,
    Tensor,
    converts,
    int_list,
    static,
    unsupported_result,
)
from byoc.frontend.torch.errors import UnsupportedTorchError


def _pair(v: Any, n: int, default: int) -> list[int]:
    values = int_list(v)
    if not values:
        return [default] * n
    return values * n if len(values) == 1 else values


def _to_2d(imp: Importer, x: Tensor) -> Tensor:
    """A rank-3 (N, C, L) tensor as (N, C, 1, L): 1-D ops run as 2-D with H = 1."""
    n, c, length = imp.shape(x)
    return imp.reshape(x, (n, c, 1, length))


def _from_2d(imp: Importer, y: Tensor) -> Tensor:
    n, c, _, length = imp.shape(y)
    return imp.reshape(y, (n, c, length))


def _spatial(imp: Importer, x: Tensor, what: str) -> int:
    rank = imp.rank(x)
    if rank not in (3, 4):
        raise UnsupportedTorchError(f"{what} on a rank-{rank} input is not supported; 1-D and 2-D are")
    return rank - 2


# ---- convolution ---------------------------------------------------------------------------


@converts("aten.convolution.default")
def _convolution(imp: Importer, call: Call) -> Tensor:
    x, w, b = call["input"], call["weight"], call.get("bias")
    n = _spatial(imp, x, "a convolution")
    stride, dilation = _pair(call["stride"], n, 1), _pair(call["dilation"], n, 1)
    padding = _pair(call["padding"], n, 0)
    if n == 1:
        x, w = _to_2d(imp, x), imp.reshape(w, (*imp.shape(w)[:2], 1, imp.shape(w)[2]))
        stride, dilation, padding = [1, *stride], [1, *dilation], [0, *padding]
    pads = (padding[0], padding[1], padding[0], padding[1])
    groups = int(call["groups"])
    if call["transposed"]:
        out_pad = _pair(call["output_padding"], n, 0)
        y = imp.emit(
            nn.Conv2DTransposeOp, x, w, strides=stride, padding=pads,
            output_padding=out_pad if n == 2 else [0, *out_pad], dilation=dilation, groups=groups,
        )  # fmt: skip
    else:
        y = imp.emit(nn.Conv2DOp, x, w, strides=stride, padding=pads, dilation=dilation, groups=groups)
    if b is not None:
        y = imp.emit(nn.BiasAddOp, y, b, axis=1)
    return _from_2d(imp, y) if n == 1 else y


# ---- matrix products ---------------------------------------------------------------------------


def matmul(imp: Importer, a: Tensor, b: Tensor) -> Tensor:
    """a @ b; a known right operand that is one matrix (2-D, or a batch of copies of one
    matrix) is a dense layer, its weight stored transposed as nn.Linear's is."""
    if not isinstance(b, SSAValue) and imp.rank(a) >= 2:
        w = _shared_matrix(imp.shape(a), np.asarray(b))
        if w is not None:
            return imp.emit(nn.DenseOp, a, np.ascontiguousarray(w.T))
    return imp.emit(nn.MatmulOp, a, b)


def _shared_matrix(a_shape: tuple[int, ...], b: Array) -> Array | None:
    """The one matrix of a known right operand `b` of `a @ b` when every batch of `a` meets
    the same matrix and the product keeps `a`'s batch dims: a 2-D `b`, or a batch of
    copies (what `linear` on a 3-D input decomposes to: `bmm` against the weight expanded
    to the batch). Then the product is one 2-D dense over all rows of `a`, instead of one
    small product per batch. None otherwise."""
    if b.ndim == 2:
        return b
    batch_a, batch_b = a_shape[:-2], b.shape[:-2]
    if b.ndim < 2 or len(batch_b) > len(batch_a):
        return None
    for da, db in zip(batch_a[len(batch_a) - len(batch_b) :], batch_b, strict=True):
        if db != 1 and da != db:
            return None  # the product would broadcast `a` along this dim
    first = b.reshape(-1, *b.shape[-2:])[0]
    if not np.array_equal(np.broadcast_to(first, b.shape), b):
        return None
    return first


def _linear_on_source(imp: Importer, a: Tensor, b: Tensor, bias: Tensor | None) -> Tensor | None:
    """A product whose rows merge a dynamic size with other dims (`unflattened`: a linear
    layer on 2-D rows, a `bmm` of 3-D batches): run on the values with those dims apart, so
    the view back needs no `?` arithmetic. None when `a` has no such value."""
    if not isinstance(a, SSAValue):
        return None
    found = views.rows_source(imp, a)
    if found is None:
        return None
    source, shape = found
    if not isinstance(b, SSAValue) and np.ndim(b) == 2:
        y = imp.emit(nn.DenseOp, source, np.ascontiguousarray(np.asarray(b).T))
    else:
        other = imp.unflattened.get(b) if isinstance(b, SSAValue) else None
        if other is None or imp.rank(other) != imp.rank(source):
            return None
        y = imp.emit(nn.MatmulOp, source, other)
    if bias is not None:
        y = imp.emit(nn.AddOp, y, bias)
    assert isinstance(y, SSAValue)
    n = imp.shape(y)[-1]
    src_shape = views.sym_shape(imp, source)
    if n == nn.DYNAMIC or src_shape is None:
        return None
    views.record(imp, y, (*src_shape[:-1], sympy.Integer(n)))
    flat_shape = (*shape[:-1], sympy.Integer(n))
    flat = imp.reshape(y, views.as_dims(flat_shape))
    assert isinstance(flat, SSAValue)
    views.record(imp, flat, flat_shape)
    if flat is not y:
        imp.unflattened[flat] = y
    return flat


@converts("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(imp: Importer, call: Call) -> Tensor:
    a, b = call["self"], call.args.get("mat2", call.args.get("other"))
    return _linear_on_source(imp, a, b, None) or matmul(imp, a, b)


@converts("aten.addmm.default")
def _addmm(imp: Importer, call: Call) -> Tensor:
    beta, alpha = call.get("beta", 1), call.get("alpha", 1)
    if beta == 1 and alpha == 1:
        y = _linear_on_source(imp, call["mat1"], call["mat2"], call["self"])
        if y is not None:
            return y
    y = matmul(imp, call["mat1"], call["mat2"])
    dt = imp.dtype(y)
    if alpha != 1:
        y = imp.emit(nn.MultiplyOp, y, imp.tensor(float(alpha), dt))
    bias = call["self"]
    if beta == 0:
        return y
    if beta != 1:
        bias = imp.emit(nn.MultiplyOp, bias, imp.tensor(float(beta), dt))
    if imp.rank(bias) == 1 and imp.shape(bias)[0] == imp.shape(y)[-1] and imp.rank(y) == 2:
        return imp.emit(nn.BiasAddOp, y, bias, axis=1)
    return imp.emit(nn.AddOp, y, bias)


@converts("aten.baddbmm.default")
def _baddbmm(imp: Importer, call: Call) -> Tensor:
    beta, alpha = call.get("beta", 1), call.get("alpha", 1)
    y = matmul(imp, call["batch1"], call["batch2"])
    dt = imp.dtype(y)
    if alpha != 1:
        y = imp.emit(nn.MultiplyOp, y, imp.tensor(float(alpha), dt))
    if beta == 0:
        return y
    bias = call["self"]
    if beta != 1:
        bias = imp.emit(nn.MultiplyOp, bias, imp.tensor(float(beta), dt))
    return imp.emit(nn.AddOp, y, bias)


# ---- normalisation -------------------------------------------------------------------------------


def _affine(imp: Importer, v: Any, n: int, fill: float, dtype: Any) -> Tensor:
    return np.full((n,), fill, dtype=dtype) if v is None else v


@converts("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(imp: Importer, call: Call) -> tuple[Any, ...]:
    x = call["input"]
    c, dt = imp.shape(x)[1], imp.dtype(x)
    y = imp.emit(
        nn.BatchNormOp, x,
        _affine(imp, call.get("weight"), c, 1.0, dt), _affine(imp, call.get("bias"), c, 0.0, dt),
        call["running_mean"], call["running_var"],
        axis=1, epsilon=float(call["eps"]),
    )  # fmt: skip
    return (y, unsupported_result("batch norm's saved mean"), unsupported_result("batch norm's saved inverse std"))


@converts("aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit.default", "aten.native_batch_norm.default")
def _batch_norm_training(imp: Importer, call: Call) -> Any:
    if call.get("training", True):
        raise UnsupportedTorchError(
            "batch norm in training mode (statistics of the batch) is not supported; call "
            "model.eval() before exporting"
        )
    return _batch_norm(imp, call)


@converts("aten.native_layer_norm.default")
def _layer_norm(imp: Importer, call: Call) -> tuple[Any, ...]:
    x = call["input"]
    shape = int_list(call["normalized_shape"])
    dt = imp.dtype(x)
    inner = tuple(shape)
    w = np.ones(inner, dt) if call.get("weight") is None else call["weight"]
    b = np.zeros(inner, dt) if call.get("bias") is None else call["bias"]
    y = imp.emit(indexing.LayerNormOp, x, w, b, axis=-len(shape), epsilon=float(call["eps"]))
    return (y, unsupported_result("layer norm's saved mean"), unsupported_result("layer norm's saved inverse std"))


@converts("aten.native_group_norm.default")
def _group_norm(imp: Importer, call: Call) -> tuple[Any, ...]:
    x = call["input"]
    shape = imp.shape(x)
    n, c = shape[0], shape[1]
    groups = int(call["group"])
    dt = imp.dtype(x)
    inner = (c // groups) * int(np.prod(shape[2:], dtype=np.int64))
    flat = imp.reshape(x, (n, groups, inner))
    y = imp.emit(
        indexing.LayerNormOp, flat, np.ones((inner,), dt), np.zeros((inner,), dt),
        axis=-1, epsilon=float(call["eps"]),
    )  # fmt: skip
    y = imp.reshape(y, shape)
    per_channel = (c,) + (1,) * (len(shape) - 2)
    if call.get("weight") is not None:
        y = imp.emit(nn.MultiplyOp, y, imp.reshape(call["weight"], per_channel))
    if call.get("bias") is not None:
        y = imp.emit(nn.AddOp, y, imp.reshape(call["bias"], per_channel))
    return (y, unsupported_result("group norm's saved mean"), unsupported_result("group norm's saved inverse std"))


# ---- pools ---------------------------------------------------------------------------------------


def _pool_args(call: Call, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
    kernel = _pair(call["kernel_size"], n, 1)
    stride = _pair(call.get("stride"), n, 0) if int_list(call.get("stride")) else kernel
    padding = _pair(call.get("padding", 0), n, 0)
    dilation = _pair(call.get("dilation", 1), n, 1)
    return kernel, stride, padding, dilation


def _as_2d_args(values: Sequence[int], n: int, fill: int) -> list[int]:
    return list(values) if n == 2 else [fill, *values]


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:  # the last window must start inside the input
        out -= 1
    return out


@converts("aten.max_pool2d_with_indices.default", "aten.max_pool1d_with_indices.default", "aten.max_pool2d.default", "aten.max_pool1d.default")
def _max_pool(imp: Importer, call: Call) -> Any:
    x = call["self"]
    n = _spatial(imp, x, "a max pool")
    kernel, stride, padding, dilation = _pool_args(call, n)
    ceil = bool(call.get("ceil_mode", False))
    x2 = x if n == 2 else _to_2d(imp, x)
    k2, s2, p2, d2 = (_as_2d_args(v, n, f) for v, f in ((kernel, 1), (stride, 1), (padding, 0), (dilation, 1)))
    y = imp.emit(
        nn.MaxPool2DOp, x2, pool_size=k2, strides=s2, padding=(p2[0], p2[1], p2[0], p2[1]),
        dilation=d2, ceil_mode=ceil,
    )  # fmt: skip
    y = y if n == 2 else _from_2d(imp, y)
    if not call.op.endswith("with_indices.default"):
        return y

    def indices() -> Tensor:
        idx = _max_pool_indices(imp, x2, k2, s2, p2, d2, ceil)
        return idx if n == 2 else _from_2d(imp, idx)

    return (y, Deferred(indices))


def _max_pool_indices(
    imp: Importer, x: Tensor, k: list[int], s: list[int], p: list[int], d: list[int], ceil: bool
) -> Tensor:
    """The flat (h * W + w) index of each window's maximum, as PyTorch returns it: the
    window's K taps, each a strided slice of the input padded with -inf, stacked on a new
    axis; argmax picks the tap (the first of equal ones) and a constant table of each tap's
    input position per output gives the index."""
    nb, c, h, w = (static(v, "pooled tensor's size") for v in imp.shape(x))
    oh = _pool_out(h, k[0], s[0], p[0], d[0], ceil)
    ow = _pool_out(w, k[1], s[1], p[1], d[1], ceil)
    need_h = (oh - 1) * s[0] + (k[0] - 1) * d[0] + 1
    need_w = (ow - 1) * s[1] + (k[1] - 1) * d[1] + 1
    pad_end = (max(0, need_h - h - p[0]), max(0, need_w - w - p[1]))
    dt = imp.dtype(x)
    xp = imp.emit(
        nn.PadOp, x, pad_width=(0, 0, 0, 0, p[0], pad_end[0], p[1], pad_end[1]),
        pad_value=float("-inf") if dt.kind == "f" else float(np.iinfo(dt).min),
    )  # fmt: skip
    taps: list[Tensor] = []
    table = np.empty((k[0] * k[1], oh, ow), np.int64)
    rows, cols = np.arange(oh)[:, None] * s[0] - p[0], np.arange(ow)[None, :] * s[1] - p[1]
    for i in range(k[0]):
        for j in range(k[1]):
            b0, b1 = i * d[0], j * d[1]
            tap = imp.emit(
                nn.StridedSliceOp, xp, begin=(0, 0, b0, b1),
                end=(nb, c, b0 + (oh - 1) * s[0] + 1, b1 + (ow - 1) * s[1] + 1), strides=(1, 1, s[0], s[1]),
            )  # fmt: skip
            taps.append(imp.reshape(tap, (nb, c, 1, oh, ow)))
            table[i * k[1] + j] = (rows + b0) * w + (cols + b1)
    stacked = imp.emit(nn.ConcatenateOp, *taps, axis=2)
    which = imp.emit(math_ops.ArgMaxOp, stacked, axis=2, keepdims=True)
    full = np.ascontiguousarray(np.broadcast_to(table[None, None], (nb, c, *table.shape)))
    picked = imp.emit(indexing.GatherElementsOp, full, which, axis=2)
    return imp.reshape(picked, (nb, c, oh, ow))


@converts("aten.avg_pool2d.default", "aten.avg_pool1d.default")
def _avg_pool(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    n = _spatial(imp, x, "an average pool")
    kernel, stride, padding, _ = _pool_args(call, n)
    if call.get("divisor_override") is not None:
        raise UnsupportedTorchError("avg_pool with divisor_override is not supported")
    x2 = x if n == 2 else _to_2d(imp, x)
    k2, s2, p2 = (_as_2d_args(v, n, f) for v, f in ((kernel, 1), (stride, 1), (padding, 0)))
    y = imp.emit(
        nn.AvgPool2DOp, x2, pool_size=k2, strides=s2, padding=(p2[0], p2[1], p2[0], p2[1]),
        ceil_mode=bool(call.get("ceil_mode", False)),
        count_include_pad=bool(call.get("count_include_pad", True)),
    )  # fmt: skip
    return y if n == 2 else _from_2d(imp, y)


def _adaptive_matrix(size: int, out: int, dtype: Any) -> np.ndarray[Any, Any]:
    """(out, size): row i averages PyTorch's adaptive window [floor(i*size/out), ceil((i+1)*size/out))."""
    m = np.zeros((out, size), dtype)
    for i in range(out):
        lo, hi = (i * size) // out, -(-((i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def _adaptive_pool(
    imp: Importer,
    call: Call,
    what: str,
    ops: tuple[type[nn.NNOp], type[nn.NNOp]],
    overlapping: Callable[[Tensor, int, int, list[int]], Tensor],
) -> Tensor:
    """An adaptive pool (a 1-D one through a 2-D view): `ops`' global pool when the output
    is 1x1, its windowed pool when the windows tile the input, else `overlapping(x, h, w,
    out)` on the 2-D view."""
    x = call["self"]
    n = _spatial(imp, x, what)
    out = _pair(call["output_size"], n, 1)
    x2 = x if n == 2 else _to_2d(imp, x)
    out2 = out if n == 2 else [1, *out]
    h, w = (static(v, "pooled size") for v in imp.shape(x2)[2:])
    global_pool, pool = ops
    if out2 == [1, 1]:
        y = imp.emit(global_pool, x2)
    elif h % out2[0] == 0 and w % out2[1] == 0:
        k = [h // out2[0], w // out2[1]]
        y = imp.emit(pool, x2, pool_size=k, strides=k)
    else:
        y = overlapping(x2, h, w, out2)
    return y if n == 2 else _from_2d(imp, y)


@converts("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default", "aten.adaptive_avg_pool1d.default")
def _adaptive_avg_pool(imp: Importer, call: Call) -> Tensor:
    def two_products(x2: Tensor, h: int, w: int, out2: list[int]) -> Tensor:
        # overlapping windows: averaging is linear, two matrix products
        dt = imp.dtype(x2)
        y = imp.emit(nn.MatmulOp, x2, np.ascontiguousarray(_adaptive_matrix(w, out2[1], dt).T))
        return imp.emit(nn.MatmulOp, _adaptive_matrix(h, out2[0], dt), y)

    ops = (nn.GlobalAvgPool2DOp, nn.AvgPool2DOp)
    return _adaptive_pool(imp, call, "an adaptive average pool", ops, two_products)


@converts("aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool1d.default")
def _adaptive_max_pool(imp: Importer, call: Call) -> tuple[Any, ...]:
    def refuse(x2: Tensor, h: int, w: int, out2: list[int]) -> Tensor:
        raise UnsupportedTorchError(
            f"an adaptive max pool from {h}x{w} to {out2[0]}x{out2[1]} (overlapping windows) is not supported"
        )

    ops = (nn.GlobalMaxPool2DOp, nn.MaxPool2DOp)
    y = _adaptive_pool(imp, call, "an adaptive max pool", ops, refuse)
    return (y, unsupported_result("the indices of an adaptive max pool"))


# ---- softmax, embedding, attention -------------------------------------------------------


@converts("aten._softmax.default", "aten.softmax.int")
def _softmax(imp: Importer, call: Call) -> Tensor:
    return imp.emit(nn.SoftmaxOp, imp.cast(call["self"], call.out_dtype), axis=int(call["dim"]))


@converts("aten._log_softmax.default", "aten.log_softmax.int")
def _log_softmax(imp: Importer, call: Call) -> Tensor:
    return imp.emit(indexing.LogSoftmaxOp, imp.cast(call["self"], call.out_dtype), axis=int(call["dim"]))


@converts("aten.embedding.default")
def _embedding(imp: Importer, call: Call) -> Tensor:
    return imp.emit(nn.TakeOp, call["weight"], call["indices"], axis=0)


def attention(
    imp: Importer, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool, scale: float | None
) -> Tensor:
    """softmax(q kᵀ * scale + mask) v, with a causal (lower-triangular) mask when asked."""
    dt = imp.dtype(q)
    d = static(imp.shape(q)[-1], "head size")
    s = 1.0 / math.sqrt(d) if scale is None else float(scale)
    rank = imp.rank(k)
    kt = imp.emit(nn.TransposeOp, k, axes=(*range(rank - 2), rank - 1, rank - 2))
    scores = imp.emit(nn.MultiplyOp, imp.emit(nn.MatmulOp, q, kt), imp.tensor(s, dt))
    if causal:
        lq, lk = (static(x, "sequence length") for x in (imp.shape(q)[-2], imp.shape(k)[-2]))
        keep = np.tril(np.ones((lq, lk), dtype=np.bool_))
        scores = imp.emit(logic_ops.WhereOp, keep, scores, np.asarray(-np.inf, dt))
    masked = mask is not None and imp.dtype(mask) == np.bool_
    if mask is not None:
        if masked:
            scores = imp.emit(logic_ops.WhereOp, mask, scores, np.asarray(-np.inf, dt))
        else:
            scores = imp.emit(nn.AddOp, scores, mask)
    p = imp.emit(nn.SoftmaxOp, scores, axis=-1)
    if masked:  # a query that the mask hides every key from attends to nothing (PyTorch: 0)
        anything = imp.emit(nn.ReduceMaxOp, mask, axes=(imp.rank(mask) - 1,), keepdims=True)
        p = imp.emit(logic_ops.WhereOp, anything, p, np.zeros((), dt))
    return imp.emit(nn.MatmulOp, p, v)


@converts(
    "aten.scaled_dot_product_attention.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "aten._scaled_dot_product_attention_math.default",
)
def _sdpa(imp: Importer, call: Call) -> Any:
    if float(call.get("dropout_p", 0.0)) != 0.0:
        raise UnsupportedTorchError("attention dropout is not supported; export in eval mode")
    if call.get("enable_gqa"):
        raise UnsupportedTorchError("grouped-query attention (enable_gqa) is not supported")
    y = attention(
        imp, call["query"], call["key"], call["value"], call.get("attn_mask"),
        bool(call.get("is_causal", False)), call.get("scale"),
    )  # fmt: skip
    if call.op == "aten.scaled_dot_product_attention.default":
        return y
    return (y, unsupported_result("the attention's log-sum-exp"))


# ---- padding, resizing ---------------------------------------------------------------------


@converts("aten.constant_pad_nd.default", "aten.pad.default")
def _pad(imp: Importer, call: Call) -> Tensor:
    x = call.args.get("self", call.args.get("input"))
    mode = call.get("mode", "constant")
    pads = int_list(call["pad"])
    rank = imp.rank(x)
    width = [0] * (2 * rank)
    crop = [0] * (2 * rank)  # a negative pad crops: (begin, end) amounts per axis
    for i in range(len(pads) // 2):
        axis = rank - 1 - i
        for side in (0, 1):
            amount = pads[2 * i + side]
            width[2 * axis + side], crop[2 * axis + side] = max(amount, 0), max(-amount, 0)
    if any(width):
        modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
        if mode not in modes:
            raise UnsupportedTorchError(f"pad mode '{mode}' is not supported")
        value = float(call.get("value", 0.0) or 0.0)
        x = imp.emit(nn.PadOp, x, pad_width=width, pad_value=value, pad_mode=modes[mode])
    if any(crop):
        shape = [static(d, "cropped size") for d in imp.shape(x)]
        begin = [crop[2 * a] for a in range(rank)]
        end = [d - crop[2 * a + 1] for a, d in enumerate(shape)]
        x = imp.emit(nn.StridedSliceOp, x, begin=begin, end=end)
    return x


@converts("aten.reflection_pad1d.default", "aten.reflection_pad2d.default", "aten.replication_pad1d.default", "aten.replication_pad2d.default")
def _named_pad(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    pads = int_list(call["padding"])
    rank = imp.rank(x)
    width = [0] * (2 * rank)
    for i in range(len(pads) // 2):
        axis = rank - 1 - i
        width[2 * axis], width[2 * axis + 1] = pads[2 * i], pads[2 * i + 1]
    mode = "reflect" if "reflection" in call.op else "edge"
    return imp.emit(nn.PadOp, x, pad_width=width, pad_mode=mode)


@converts("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default", "aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")
def _upsample(imp: Importer, call: Call) -> Tensor:
    x = call["input"] if "input" in call.args else call["self"]
    h, w = (static(v, "resized size") for v in imp.shape(x)[2:])
    size = int_list(call.get("output_size"))
    scales = call.get("scale_factors") or [call.get("scales_h"), call.get("scales_w")]
    if not size:
        size = [int(math.floor(h * float(scales[0]))), int(math.floor(w * float(scales[1])))]
    linear = "bilinear" in call.op
    align = bool(call.get("align_corners", False)) if linear else False
    attrs: dict[str, Any] = {
        "size": size,
        "method": "linear" if linear else "nearest_neighbor",
        "coordinate_transformation_mode": "align_corners" if align else ("pytorch_half_pixel" if linear else "asymmetric"),
        "rounding_method": "floor",
    }
    if scales and all(s is not None for s in scales) and not align:
        attrs["scale_h"], attrs["scale_w"] = float(scales[0]), float(scales[1])
    return imp.emit(nn.Resize2DOp, x, **attrs)
