"""PyTorch's fused transformer ops: the inference fast path of `nn.MultiheadAttention`
(`aten._native_multi_head_attention`) and of `nn.TransformerEncoderLayer`
(`aten._transformer_encoder_layer_fwd`). `torch.compile` graphs captured under `no_grad`
hold them (`torch.export` traces the unfused path instead).

Each is decomposed into nn ops the C target runs well: the projections as dense layers
over every row at once (the weights stored transposed, the 1/sqrt(head size) scale folded
into the query projection), the heads split by one reshape and one transpose per operand
(the keys transposed straight to the layout the score product wants), a batched matmul,
softmax and matmul per head, the heads merged back by one transpose and one reshape. The
batch dim may be dynamic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from byoc.dialects import nn
from byoc.dialects.nn import indexing, math_ops
from byoc.frontend.torch.base import Array, Call, Importer, Tensor, converts, static
from byoc.frontend.torch.errors import UnsupportedTorchError


def _known(v: Any, what: str) -> Array:
    """A weight that must be known at import time (a parameter)."""
    if not isinstance(v, np.ndarray):
        raise UnsupportedTorchError(f"the {what} of a fused attention must be a parameter (known at import time)")
    return v


def _linear(imp: Importer, x: Tensor, w: Array, b: Array | None) -> Tensor:
    """x·wᵀ + b over the last dim of `x` (any rank; `w` as nn.Linear stores it): one dense
    layer over all rows."""
    y = imp.emit(nn.DenseOp, x, np.ascontiguousarray(w))
    if b is None:
        return y
    return imp.emit(nn.BiasAddOp, y, b, axis=imp.rank(y) - 1)


def _heads(imp: Importer, x: Tensor, heads: int, keys: bool) -> Tensor:
    """(B, T, E) -> (B, H, T, D), or (B, H, D, T) for the keys: one reshape, one transpose."""
    b, t, e = imp.shape(x)
    d = e // heads
    split = imp.reshape(x, (b, t, heads, d))
    return imp.emit(nn.TransposeOp, split, axes=(0, 2, 3, 1) if keys else (0, 2, 1, 3))


def multi_head_attention(
    imp: Importer, query: Tensor, key: Tensor, value: Tensor, heads: int,
    qkv_weight: Array, qkv_bias: Array | None, proj_weight: Array, proj_bias: Array | None,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Batch-first multi-head attention without a mask: (output (B, T, E), the attention
    probabilities (B, H, T, S))."""
    for v, what in ((query, "query"), (key, "key"), (value, "value")):
        if imp.rank(v) != 3:
            raise UnsupportedTorchError(f"fused attention takes a (batch, sequence, embedding) {what}, got rank {imp.rank(v)}")
    e = static(imp.shape(query)[-1], "embedding size")
    if e % heads:
        raise UnsupportedTorchError(f"embedding size {e} is not a multiple of the {heads} heads")
    scale = np.float32(1.0 / math.sqrt(e // heads))
    wq, wk, wv = np.split(np.asarray(qkv_weight), 3)
    bq, bk, bv = (None, None, None) if qkv_bias is None else np.split(np.asarray(qkv_bias), 3)
    dt = imp.dtype(query)
    q = _linear(imp, query, (wq * scale).astype(dt), None if bq is None else (bq * scale).astype(dt))
    k = _linear(imp, key, wk, bk)
    v = _linear(imp, value, wv, bv)
    scores = imp.emit(nn.MatmulOp, _heads(imp, q, heads, False), _heads(imp, k, heads, True))
    p = imp.emit(nn.SoftmaxOp, scores, axis=-1)
    y = imp.emit(nn.MatmulOp, p, _heads(imp, v, heads, False))  # (B, H, T, D)
    b, h, t, d = imp.shape(y)
    merged = imp.reshape(imp.emit(nn.TransposeOp, y, axes=(0, 2, 1, 3)), (b, t, h * d))
    return _linear(imp, merged, proj_weight, proj_bias), p


def _no_mask(call: Call) -> None:
    if call.get("mask") is not None:
        raise UnsupportedTorchError(
            "a fused attention with a mask (attn_mask or key_padding_mask on the fast path) is "
            "not supported; export with torch.export, which traces the unfused ops"
        )


@converts("aten._native_multi_head_attention.default")
def _native_mha(imp: Importer, call: Call) -> tuple[Any, ...]:
    _no_mask(call)
    out, p = multi_head_attention(
        imp, call["query"], call["key"], call["value"], int(call["num_head"]),
        _known(call["qkv_weight"], "input projection"), call.get("qkv_bias"),
        _known(call["proj_weight"], "output projection"), call.get("proj_bias"),
    )  # fmt: skip
    if not call.get("need_weights", True):
        return (out, np.zeros((0,), imp.dtype(out)))  # PyTorch returns an empty tensor
    if call.get("average_attn_weights", True):
        p = imp.emit(nn.ReduceMeanOp, p, axes=(1,), keepdims=False)
    return (out, p)


@converts("aten._transformer_encoder_layer_fwd.default")
def _encoder_layer(imp: Importer, call: Call) -> Tensor:
    _no_mask(call)
    eps = float(call["eps"])

    def norm(x: Tensor, i: int) -> Tensor:
        w, b = call[f"norm_weight_{i}"], call[f"norm_bias_{i}"]
        return imp.emit(indexing.LayerNormOp, x, w, b, axis=-1, epsilon=eps)

    def attend(x: Tensor) -> Tensor:
        out, _ = multi_head_attention(
            imp, x, x, x, int(call["num_heads"]),
            _known(call["qkv_weight"], "input projection"), call.get("qkv_bias"),
            _known(call["proj_weight"], "output projection"), call.get("proj_bias"),
        )  # fmt: skip
        return out

    def feed_forward(x: Tensor) -> Tensor:
        hidden = _linear(imp, x, _known(call["ffn_weight_1"], "feed-forward weight"), call.get("ffn_bias_1"))
        act = imp.emit(math_ops.GeluOp, hidden, approximate="none") if call["use_gelu"] else imp.emit(nn.ReluOp, hidden)
        return _linear(imp, act, _known(call["ffn_weight_2"], "feed-forward weight"), call.get("ffn_bias_2"))

    src = call["src"]
    if call["norm_first"]:
        x = imp.emit(nn.AddOp, src, attend(norm(src, 1)))
        return imp.emit(nn.AddOp, x, feed_forward(norm(x, 2)))
    x = norm(imp.emit(nn.AddOp, src, attend(src)), 1)
    return norm(imp.emit(nn.AddOp, x, feed_forward(x)), 2)
