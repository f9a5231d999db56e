"""The QDQ idiom as composites (issue #13): what a target with int8 kernels takes whole.

A model quantized in the QDQ format (onnxruntime's `quantize_static`) keeps every op in
float and wraps it in `dequantize` / `quantize` pairs. A quantized convolution reads

    x_q -> dequantize ─┐
    w_q -> dequantize ─┴> conv2d -> bias_add(dequantize(b_i32)) -> [relu] -> quantize -> y_q

and an int8 kernel computes exactly that block from x_q, w_q and b_i32 with integer
arithmetic. `qdq_block(root)` analyses a match rooted at the `quantize`; the pattern table
(`pattern_table()`, the ccompiler target's) names the blocks:

| composite           | matches                                                                 |
|---------------------|-------------------------------------------------------------------------|
| `<t>.qconv2d`       | quantize([relu](conv2d(dq(x), dq(W)) [+ dq(B)]))  (groups: any, depthwise too) |
| `<t>.qdense`        | the same over nn.dense                                                   |
| `<t>.qmatmul`       | the same over nn.matmul with a constant 2-D right operand                |
| `<t>.quantize`      | a lone nn.quantize (f32 -> i8/ui8), per tensor or per axis               |
| `<t>.dequantize`    | a lone nn.dequantize (i8/ui8 -> f32)                                     |

Conditions (`qdq_block`, the entries' check): x, y are i8/ui8 per tensor; W is an i8/ui8
constant per tensor or per output channel; B an i32 constant with zero point 0 and scale
exactly `f32(x_scale * w_scale)` (what onnxruntime's quantizer writes and its QLinearConv
assumes); no blocked scales. Anything else is not matched and stays float (on the host or
on a float target).

A dequantize shared by several consumers (onnxruntime shares one per tensor) is inside one
composite and becomes an extra result of it (merge-composite's `extra-results`): the kernel
also writes the f32 value for the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, OpResult, SSAValue

from byoc.dialects import nn
from byoc.targets.patterns import Match, Pattern, is_constant, is_op, wildcard

INT8_NAMES = ("i8", "ui8")
COMPOSITES = frozenset({"qconv2d", "qdense", "qmatmul", "quantize", "dequantize"})
"""The entries of `pattern_table()`: composites `<target>.<name>` an int8 kernel lowers."""


def _const(v: SSAValue) -> np.ndarray[Any, Any] | None:
    if isinstance(v, OpResult) and isinstance(v.op, nn.ConstantOp):
        return v.op.ndarray()
    return None


def _dtype(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, TensorType)
    return nn.DTYPE_NAMES.get(t.element_type, str(t.element_type))


@dataclass(frozen=True)
class QBlock:
    """What an int8 kernel needs of one quantized conv2d / dense / matmul block."""

    gemm: Operation
    x: SSAValue
    """The quantized input (the dequantize's operand)."""
    x_dequantize: Operation
    x_zero_point: int
    weight: np.ndarray[Any, Any]
    """Integer weights, laid out (O, ...) (a matmul's right operand transposed)."""
    weight_zero_point: np.ndarray[Any, Any]
    """One per output channel (int64)."""
    bias: np.ndarray[Any, Any]
    """int32, one per output channel (zeros without a bias)."""
    multiplier: np.ndarray[Any, Any]
    """f32(f32(x_scale * w_scale) / y_scale), one per output channel."""
    y_zero_point: int
    y_dtype: str
    relu: bool
    ops: tuple[Operation, ...]


def _per_tensor(scale: np.ndarray[Any, Any] | None, zp: np.ndarray[Any, Any] | None) -> bool:
    return scale is not None and zp is not None and scale.size == 1 and zp.size == 1


def qdq_block(root: Operation) -> QBlock | str:
    """The block a `quantize` root closes, or why an int8 kernel cannot take it."""
    if not isinstance(root, nn.QuantizeOp):
        return "the root is not nn.quantize"
    ys, yz = _const(root.scale), _const(root.zero_point)
    if not _per_tensor(ys, yz) or _dtype(root.result) not in INT8_NAMES:
        return "the output is not i8/ui8 per tensor"
    assert ys is not None and yz is not None
    ops: list[Operation] = [root]
    v = root.x
    relu = False
    if isinstance(v, OpResult) and isinstance(v.op, nn.ReluOp):
        relu = True
        ops.append(v.op)
        v = v.op.x
    bias_op: Operation | None = None
    if isinstance(v, OpResult) and isinstance(v.op, nn.BiasAddOp | nn.AddOp):
        bias_op = v.op
        ops.append(bias_op)
        a, b = bias_op.operands
        v, b = (a, b) if isinstance(a, OpResult) and isinstance(a.op, nn.Conv2DOp | nn.DenseOp | nn.MatmulOp) else (b, a)
    if not (isinstance(v, OpResult) and isinstance(v.op, nn.Conv2DOp | nn.DenseOp | nn.MatmulOp)):
        return "no conv2d, dense or matmul under the quantize"
    gemm = v.op
    ops.append(gemm)
    xd, wd = (o.op if isinstance(o, OpResult) else None for o in gemm.operands)
    if not isinstance(xd, nn.DequantizeOp) or not isinstance(wd, nn.DequantizeOp):
        return "the operands are not dequantized"
    ops += [xd, wd]
    xs, xz = _const(xd.scale), _const(xd.zero_point)
    if not _per_tensor(xs, xz) or _dtype(xd.x) not in INT8_NAMES:
        return "the input is not i8/ui8 per tensor"
    assert xs is not None and xz is not None
    w, ws, wz = _const(wd.x), _const(wd.scale), _const(wd.zero_point)
    if w is None or ws is None or wz is None or _dtype(wd.x) not in INT8_NAMES:
        return "the weights are not an i8/ui8 constant"
    if wd.attr_values()["block_size"]:
        return "blocked weight scales"
    if isinstance(gemm, nn.MatmulOp):
        if w.ndim != 2 or len(nn.shape_of(gemm.lhs.type)) < 2:
            return "matmul needs a 2-D constant right operand"
        w_axis, w = 1, np.ascontiguousarray(w.T)
    else:
        w_axis = 0
    channels = w.shape[0]
    if ws.size != 1 and (wd.attr_values()["axis"] % w.ndim != w_axis or ws.size != channels):
        return "the weight scale is not per output channel"
    ws_c = np.broadcast_to(ws.reshape(-1), (channels,)).astype(np.float32)
    wz_c = np.broadcast_to(wz.reshape(-1), (channels,)).astype(np.int64)
    in_scale = (np.float32(xs.reshape(())) * ws_c).astype(np.float32)
    bias = np.zeros(channels, np.int32)
    if bias_op is not None:
        bd = b.op if isinstance(b, OpResult) else None  # pyright: ignore[reportPossiblyUnbound]
        if not isinstance(bd, nn.DequantizeOp):
            return "the bias is not dequantized"
        bq, bs, bz = _const(bd.x), _const(bd.scale), _const(bd.zero_point)
        if bq is None or bs is None or bz is None or bq.dtype != np.int32 or bq.size != channels:
            return "the bias is not an i32 constant per channel"
        if np.any(bz != 0) or not np.array_equal(np.broadcast_to(bs.reshape(-1), (channels,)), in_scale):
            return "the bias scale is not x_scale * w_scale"
        if isinstance(bias_op, nn.BiasAddOp):
            rank = len(nn.shape_of(gemm.results[0].type))
            if bias_op.attr_values()["axis"] % rank != (1 if isinstance(gemm, nn.Conv2DOp) else rank - 1):
                return "bias_add on another axis than the channels"
        elif nn.shape_of(bd.result.type) not in ((channels,),):
            return "the added bias is not one value per channel"
        bias = bq.reshape(-1).astype(np.int32)
        ops.append(bd)
    with np.errstate(all="ignore"):
        mult = (in_scale / np.float32(ys.reshape(()))).astype(np.float32)
    if not np.all(np.isfinite(mult)):
        return "a scale is zero or not finite"
    return QBlock(
        gemm=gemm,
        x=xd.x,
        x_dequantize=xd,
        x_zero_point=int(xz.reshape(())),
        weight=w,
        weight_zero_point=wz_c,
        bias=bias,
        multiplier=mult,
        y_zero_point=int(yz.reshape(())),
        y_dtype=_dtype(root.result),
        relu=relu,
        ops=tuple(ops),
    )


def lone_qdq(op: Operation) -> str | None:
    """Why a lone quantize/dequantize cannot be a kernel (None: it can)."""
    if not isinstance(op, nn.QuantizeOp | nn.DequantizeOp):
        return "not a quantize or dequantize"
    if op.attr_values()["block_size"]:
        return "blocked scales"
    if _const(op.scale) is None or _const(op.zero_point) is None:
        return "scale or zero point computed at run time"
    q = op.result if isinstance(op, nn.QuantizeOp) else op.x
    if _dtype(q) not in INT8_NAMES:
        return "not i8/ui8"
    return None


def _dq(x: Pattern) -> Pattern:
    return is_op("nn.dequantize")(x, is_constant(), is_constant())


def _block(gemm: str) -> Pattern:
    core = is_op(gemm)(_dq(wildcard()), _dq(is_constant()))
    bias = _dq(is_constant())
    p = core.optional(lambda q: is_op("nn.bias_add")(q, bias) | is_op("nn.add")(q, bias))
    p = p.optional(lambda q: is_op("nn.relu")(q))
    return is_op("nn.quantize")(p, is_constant(), is_constant())


def _check_block(match: Match) -> bool:
    block = qdq_block(match.root)
    return isinstance(block, QBlock) and {id(o) for o in block.ops} == {id(o) for o in match.ops if not isinstance(o, nn.ConstantOp)}


def _check_lone(match: Match) -> bool:
    return lone_qdq(match.root) is None


def pattern_table() -> list[tuple[object, ...]]:
    """(name, pattern, check) entries: the composites `<target>.qconv2d` ... (see above)."""
    return [
        ("qconv2d", _block("nn.conv2d"), _check_block),
        ("qdense", _block("nn.dense"), _check_block),
        ("qmatmul", _block("nn.matmul"), _check_block),
        ("quantize", is_op("nn.quantize")(wildcard(), is_constant(), is_constant()), _check_lone),
        ("dequantize", is_op("nn.dequantize")(wildcard(), is_constant(), is_constant()), _check_lone),
    ]


__all__ = ["COMPOSITES", "INT8_NAMES", "QBlock", "lone_qdq", "pattern_table", "qdq_block"]
