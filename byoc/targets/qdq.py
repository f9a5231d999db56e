"""The QDQ idiom as composites: what a target with int8 kernels takes whole.

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

`pattern_table(fused=True)` (the ccompiler target's) adds, ahead of the lone entries, the
int8 elementwise / pooling / concatenation blocks `<t>.qadd`, `<t>.qmaxpool`, `<t>.qconcat`
and `<t>.qlut` (see "the fused int8 ... blocks" below, and docs/quantization.md).

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
FUSED_COMPOSITES = frozenset({"qlut", "qadd", "qmaxpool", "qconcat", "qavgpool", "qreshape"})
"""The entries `pattern_table(fused=True)` adds: int8 elementwise, pooling and concatenation."""
COMPOSITES = frozenset({"qconv2d", "qdense", "qmatmul", "quantize", "dequantize"}) | FUSED_COMPOSITES
"""The entries of `pattern_table(fused=True)`: composites `<target>.<name>` an int8 kernel lowers."""


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


def pattern_table(fused: bool = False) -> list[tuple[object, ...]]:
    """(name, pattern, check) entries: the composites `<target>.qconv2d` ... (see above);
    with `fused`, also the int8 elementwise / pooling / concatenation blocks
    (`fused_pattern_table`), ahead of the lone quantize / dequantize."""
    return [
        ("qconv2d", _block("nn.conv2d"), _check_block),
        ("qdense", _block("nn.dense"), _check_block),
        ("qmatmul", _block("nn.matmul"), _check_block),
        *(fused_pattern_table() if fused else []),
        ("quantize", is_op("nn.quantize")(wildcard(), is_constant(), is_constant()), _check_lone),
        ("dequantize", is_op("nn.dequantize")(wildcard(), is_constant(), is_constant()), _check_lone),
    ]


# ---- the fused int8 elementwise, pooling and concatenation blocks ---------------------------
# Each gives exactly the integers of its float QDQ block; why, block by block: docs/quantization.md,
# "The fused int8 elementwise, pooling and concatenation blocks".

MAX_CHAIN = 3
"""Elementwise ops a `qlut` block may chain between its dequantize and quantize."""
MAX_CONCAT = 8
"""Inputs a `qconcat` block may have."""

UNARY_OPS = frozenset({
    "nn.relu", "nn.sigmoid", "nn.tanh", "nn.hard_swish", "nn.hard_sigmoid", "nn.leaky_relu",
    "nn.clip", "nn.negative", "nn.abs", "nn.exp", "nn.erf",
})
"""Elementwise ops of one operand a `qlut` chain may hold."""
BINARY_CONST_OPS = frozenset({
    "nn.add", "nn.subtract", "nn.multiply", "nn.divide", "nn.maximum", "nn.minimum", "nn.prelu",
})
"""Elementwise ops a `qlut` chain may hold when their other operand is a constant."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(nn.shape_of(v.type))  # type: ignore[arg-type]


def _single_use(op: Operation) -> bool:
    return all(len(list(r.uses)) <= 1 for r in op.results)


def _const_value(v: SSAValue) -> tuple[np.ndarray[Any, Any], tuple[Operation, ...]] | None:
    """A constant operand's value (an nn.constant, or the dequantize of constants) and the
    non-constant ops that compute it."""
    c = _const(v)
    if c is not None:
        return c, ()
    if isinstance(v, OpResult) and isinstance(v.op, nn.DequantizeOp) and _single_use(v.op):
        args = [_const(o) for o in v.op.operands]
        if all(a is not None for a in args):
            from byoc.interpreters.qkernels import dequantize

            return np.asarray(dequantize(*args, **v.op.attr_values())), (v.op,)
    return None


def _per_channel_only(c: np.ndarray[Any, Any], rank: int) -> bool:
    """Whether a constant broadcast against a rank-`rank` tensor varies at most along axis 1."""
    if c.ndim > rank:
        return False
    dims = (1,) * (rank - c.ndim) + tuple(c.shape)
    return all(d == 1 for a, d in enumerate(dims) if a != 1)


def _dq_input(v: SSAValue, per_axis: bool) -> tuple[nn.DequantizeOp, np.ndarray[Any, Any], np.ndarray[Any, Any]] | str:
    """The i8/ui8 dequantize that makes v (its scale and zero point), or why not."""
    if not isinstance(v, OpResult) or not isinstance(v.op, nn.DequantizeOp):
        return "the input is not dequantized"
    d = v.op
    if not _single_use(d):
        return "the dequantized value has other uses"
    s, z = _const(d.scale), _const(d.zero_point)
    if s is None or z is None or _dtype(d.x) not in INT8_NAMES or d.attr_values()["block_size"]:
        return "the input is not an i8/ui8 tensor with constant scale"
    if not _per_tensor(s, z):
        rank = len(_shape(d.x))
        if not per_axis or rank < 2 or d.attr_values()["axis"] % rank != 1:
            return "the input is not quantized per tensor"
    if np.any(np.asarray(s, np.float32) <= 0) or not np.all(np.isfinite(s)):
        return "a scale is not positive and finite"
    return d, s, z


def _q_output(root: Operation) -> nn.QuantizeOp | str:
    """`root` as the quantize that closes a fused block (per tensor, to i8/ui8, with a
    positive finite scale), or why it cannot."""
    if not isinstance(root, nn.QuantizeOp):
        return "the root is not nn.quantize"
    ys, yz = _const(root.scale), _const(root.zero_point)
    if not _per_tensor(ys, yz) or _dtype(root.result) not in INT8_NAMES or root.attr_values()["block_size"]:
        return "the output is not i8/ui8 per tensor"
    assert ys is not None
    if not (np.float32(ys.reshape(())) > 0 and np.isfinite(ys).all()):
        return "the output scale is not positive and finite"
    return root


def _quantized_op(root: Operation, names: tuple[str, ...], what: str) -> tuple[nn.QuantizeOp, Operation] | str:
    """`root`, a quantize that can end a fused block, and the op of `names` it quantizes (used
    only there); or why not."""
    q = _q_output(root)
    if isinstance(q, str):
        return q
    v = q.x
    if not (isinstance(v, OpResult) and v.op.name in names and _single_use(v.op)):
        return f"no {what} under the quantize"
    return q, v.op


def _quantized_pool(
    root: Operation, names: tuple[str, ...], what: str
) -> tuple[nn.QuantizeOp, Operation, nn.DequantizeOp] | str:
    """`_quantized_op` for an NCHW pool of a per-tensor dequantize, and that dequantize."""
    got = _quantized_op(root, names, what)
    if isinstance(got, str):
        return got
    q, pool = got
    if pool.attr_values().get("data_layout", "NCHW") != "NCHW":
        return f"{what} in another layout than NCHW"
    dq = _dq_input(pool.operands[0], per_axis=False)
    if isinstance(dq, str):
        return dq
    return q, pool, dq[0]


def _probe(dtype: str) -> np.ndarray[Any, Any]:
    """The 256 values of an i8/ui8 type, indexed by their byte."""
    raw = np.arange(256, dtype=np.uint8)
    return raw.view(np.int8) if dtype == "i8" else raw


@dataclass(frozen=True)
class QLut:
    """A `qlut` block: y = table[channel][byte of x]."""

    x: SSAValue
    table: np.ndarray[Any, Any]
    """uint8 (CH, 256): the output byte for each input byte; CH is 1 or x's axis 1."""
    y_dtype: str
    ops: tuple[Operation, ...]


def lut_table(dq: nn.DequantizeOp, chain: list[tuple[Operation, list[Any]]], root: nn.QuantizeOp) -> np.ndarray[Any, Any]:
    """The (CH, 256) output bytes of quantize(chain(dequantize(q))) for every byte of q, by
    the reference kernels. `chain` lists each op with its operands, None for the value."""
    from byoc.interpreters.kernels import KERNELS

    xs = _shape(dq.x)
    rank = len(xs)
    channels = xs[1] if rank >= 2 else 1
    probe = _probe(_dtype(dq.x))
    if rank >= 2:
        v = np.broadcast_to(probe.reshape((256, 1) + (1,) * (rank - 2)), (256, channels) + (1,) * (rank - 2))
    else:
        v = probe.reshape((256,) + (1,) * max(rank - 1, 0))
    v = np.ascontiguousarray(v)
    v = KERNELS["nn.dequantize"](v, *(_const(o) for o in dq.operands[1:]), **dq.attr_values())
    for op, args in chain:
        v = KERNELS[op.name](*[v if a is None else a for a in args], **op.attr_values())  # type: ignore[attr-defined]
    v = KERNELS["nn.quantize"](np.asarray(v), _const(root.scale), _const(root.zero_point), **root.attr_values())
    table = np.ascontiguousarray(np.asarray(v).reshape(256, -1).T).view(np.uint8)
    if table.shape[0] > 1 and (table == table[:1]).all():
        table = table[:1]
    return np.ascontiguousarray(table)


def qlut_block(root: Operation) -> QLut | str:
    """The `qlut` block a quantize closes, or why there is none."""
    q = _q_output(root)
    if isinstance(q, str):
        return q
    ops: list[Operation] = [q]
    chain: list[tuple[Operation, list[Any]]] = []
    v = q.x
    out_shape = _shape(v)
    rank = len(out_shape)
    while isinstance(v, OpResult) and v.op.name in UNARY_OPS | BINARY_CONST_OPS | {"nn.batch_norm"}:
        op = v.op
        if len(chain) == MAX_CHAIN:
            return "too long a chain of elementwise ops"
        if _shape(op.results[0]) != out_shape or not _single_use(op):
            return f"'{op.name}' changes the shape or has other uses"
        if op.name in UNARY_OPS:
            chain.append((op, [None]))
            v = op.operands[0]
        elif op.name == "nn.batch_norm":
            if rank < 2 or op.attr_values()["axis"] % rank != 1:
                return "batch_norm on another axis than 1"
            consts = [_const_value(o) for o in op.operands[1:]]
            if any(c is None for c in consts):
                return "batch_norm with parameters computed at run time"
            chain.append((op, [None, *(c[0] for c in consts)]))  # type: ignore[index]
            ops += [o for c in consts for o in c[1]]  # type: ignore[union-attr]
            v = op.operands[0]
        else:
            a, b = op.operands
            ca, cb = _const_value(a), _const_value(b)
            if (ca is None) == (cb is None):
                return f"'{op.name}' needs exactly one constant operand"
            c, value = (cb, a) if cb is not None else (ca, b)
            assert c is not None
            if not _per_channel_only(c[0], rank) or rank < 2 and c[0].size != 1:
                return f"the constant of '{op.name}' varies along another axis than 1"
            chain.append((op, [None, c[0]] if cb is not None else [c[0], None]))
            ops += list(c[1])
            v = value
        ops.append(op)
    got = _dq_input(v, per_axis=True)
    if isinstance(got, str):
        return got
    dq, _, _ = got
    if _shape(dq.x) != out_shape:
        return "the input's shape differs from the output's"
    ops.append(dq)
    chain.reverse()
    with np.errstate(all="ignore"):
        table = lut_table(dq, chain, q)
    return QLut(x=dq.x, table=table, y_dtype=_dtype(q.result), ops=tuple(ops))


@dataclass(frozen=True)
class QAdd:
    """A `qadd` block: y = quantize([relu](dequantize(a) op dequantize(b)))."""

    a: SSAValue
    b: SSAValue
    a_scale: float
    a_zero_point: int
    b_scale: float
    b_zero_point: int
    y_scale: float
    y_zero_point: int
    y_dtype: str
    multiply: bool
    relu: bool
    ops: tuple[Operation, ...]


def qadd_block(root: Operation) -> QAdd | str:
    q = _q_output(root)
    if isinstance(q, str):
        return q
    ops: list[Operation] = [q]
    v = q.x
    relu = False
    if isinstance(v, OpResult) and isinstance(v.op, nn.ReluOp) and _single_use(v.op):
        relu = True
        ops.append(v.op)
        v = v.op.x
    if not (isinstance(v, OpResult) and v.op.name in ("nn.add", "nn.multiply") and _single_use(v.op)):
        return "no add or multiply under the quantize"
    op = v.op
    ops.append(op)
    shape = _shape(op.results[0])
    ins = []
    for o in op.operands:
        got = _dq_input(o, per_axis=False)
        if isinstance(got, str):
            return got
        if _shape(got[0].x) != shape:
            return "an operand is broadcast"
        ins.append(got)
        ops.append(got[0])
    if ins[0][0] is ins[1][0]:
        return "the same dequantize twice"
    (da, sa, za), (db, sb, zb) = ins
    ys, yz = _const(q.scale), _const(q.zero_point)
    assert ys is not None and yz is not None
    return QAdd(
        a=da.x, b=db.x,
        a_scale=float(np.float32(sa.reshape(()))), a_zero_point=int(za.reshape(())),
        b_scale=float(np.float32(sb.reshape(()))), b_zero_point=int(zb.reshape(())),
        y_scale=float(np.float32(ys.reshape(()))), y_zero_point=int(yz.reshape(())),
        y_dtype=_dtype(q.result), multiply=op.name == "nn.multiply", relu=relu, ops=tuple(ops),
    )


def _requant_table(dq: nn.DequantizeOp, root: nn.QuantizeOp) -> np.ndarray[Any, Any] | None:
    """x's table into root's parameters, or None when it is the identity (same parameters)."""
    same = (
        _dtype(dq.x) == _dtype(root.result)
        and np.array_equal(_const(dq.scale).reshape(()), _const(root.scale).reshape(()))  # type: ignore[union-attr]
        and np.array_equal(_const(dq.zero_point).reshape(()), _const(root.zero_point).reshape(()))  # type: ignore[union-attr]
    )
    if same:
        return None
    with np.errstate(all="ignore"):
        return lut_table(dq, [], root)


@dataclass(frozen=True)
class QPool:
    """A `qmaxpool` block: the max over the integers, then `table` (None: the identity)."""

    x: SSAValue
    pool: Operation
    table: np.ndarray[Any, Any] | None
    y_dtype: str
    ops: tuple[Operation, ...]


def qmaxpool_block(root: Operation) -> QPool | str:
    got = _quantized_pool(root, ("nn.max_pool2d", "nn.global_max_pool2d"), "max pooling")
    if isinstance(got, str):
        return got
    root, pool, dq = got
    return QPool(x=dq.x, pool=pool, table=_requant_table(dq, root), y_dtype=_dtype(root.result),
                 ops=(root, pool, dq))


@dataclass(frozen=True)
class QConcat:
    """A `qconcat` block: each input through its table (None: copied) into the output."""

    inputs: tuple[SSAValue, ...]
    tables: tuple[np.ndarray[Any, Any] | None, ...]
    axis: int
    y_dtype: str
    ops: tuple[Operation, ...]


def qconcat_block(root: Operation) -> QConcat | str:
    quantized = _quantized_op(root, ("nn.concatenate",), "concatenation")
    if isinstance(quantized, str):
        return quantized
    root, cat = quantized
    ops: list[Operation] = [root, cat]
    inputs, tables = [], []
    for o in cat.operands:
        got = _dq_input(o, per_axis=False)
        if isinstance(got, str):
            return got
        if any(got[0] is p for p in ops):
            return "the same dequantize twice"
        ops.append(got[0])
        inputs.append(got[0].x)
        tables.append(_requant_table(got[0], root))
    rank = len(_shape(cat.results[0]))
    return QConcat(inputs=tuple(inputs), tables=tuple(tables), axis=cat.attr_values()["axis"] % rank,
                   y_dtype=_dtype(root.result), ops=tuple(ops))


# - `qavgpool`: quantize(avg_pool2d | global_avg_pool2d(dequantize(x))). The reference sums
#   the window's f32 values in f64 (`sum(dtype=float64)`, `mean(dtype=float64)`), divides by
#   the count in f64, rounds to f32 and quantizes. The sum is exact, whatever its order: every
#   d(q) = f32((q - z) * s) is an integer multiple of u = ulp(min |d(q)| != 0) (an f32 at least
#   as large as that one has an ulp that is a multiple of it), |d(q)| / u < 2^33, so a window
#   of n values sums to a multiple of u below n * 2^33 u, which f64 holds exactly while it is
#   below 2^53 u (checked: n * max |d(q)| / u < 2^53). So the sum is the integer sum of
#   D(q) = d(q) / u (a table of 256 int64, from the reference dequantize), times u; the kernel
#   adds the integers and then does the reference's float steps per output: (double)sum * u
#   (a power of two: exact), / count in f64, to f32, quantize. Padding adds 0.0 in the
#   reference and nothing here; the counts are the reference's (count_include_pad, ceil_mode).
# - `qreshape`: quantize(reshape | flatten(dequantize(x))): a reshape moves no value, so it
#   is x itself (an alias) when the parameters are equal, else x's `qlut` table.

SUM_BITS = 53
"""f64's significand: a window's sum of D(q) must stay below 2**SUM_BITS to be exact."""


@dataclass(frozen=True)
class QAvgPool:
    """A `qavgpool` block: y = quantize(f32(f64(sum of table[byte]) * 2**exponent / count))."""

    x: SSAValue
    pool: Operation
    table: np.ndarray[Any, Any]
    """int64 (256,): d(byte) / 2**exponent, exactly."""
    exponent: int
    counts: np.ndarray[Any, Any]
    """int32 (OH, OW): the reference's divisor of each output position."""
    split: tuple[int, int, int, np.ndarray[Any, Any]]
    """`linear_split(table)`: (form, m, c, r) — the kernel's fast form of the same sums."""
    y_scale: float
    y_zero_point: int
    y_dtype: str
    ops: tuple[Operation, ...]


def avgpool_sum_table(dq: nn.DequantizeOp) -> tuple[np.ndarray[Any, Any], int] | None:
    """(D, e): d(byte) = D[byte] * 2**e exactly for every byte of x's type, d the reference
    dequantize (per tensor); None when a d(byte) is not finite."""
    scale, zero_point = _const(dq.scale), _const(dq.zero_point)
    assert scale is not None and zero_point is not None
    return sum_table(_probe(_dtype(dq.x)), scale, zero_point)


def sum_table(
    probe: np.ndarray[Any, Any], scale: np.ndarray[Any, Any], zero_point: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], int] | None:
    """`avgpool_sum_table` for the 256 values `probe` (indexed by their byte) of one type."""
    from byoc.interpreters.kernels import KERNELS

    d = np.asarray(KERNELS["nn.dequantize"](probe, scale, zero_point, axis=1, block_size=0))
    d = d.astype(np.float64)
    if not np.all(np.isfinite(d)):
        return None
    nonzero = np.abs(d[d != 0])
    if nonzero.size == 0:
        return np.zeros(256, np.int64), 0
    _, e = np.frexp(nonzero.min())
    exponent = max(int(e) - 24, -149)  # the ulp of the smallest nonzero |d| (f32: 24 bits)
    table = np.ldexp(d, -exponent)
    assert np.array_equal(table, np.round(table)), "every f32 >= the smallest is a multiple of its ulp"
    return table.astype(np.int64), exponent


def linear_split(table: np.ndarray[Any, Any], unsigned: bool) -> tuple[int, int, int, np.ndarray[Any, Any]]:
    """(form, m, c, r): table[b] = m * u(b) + c + r[b] + r[256 + b] for every byte b, u(b) the
    byte as unsigned (u8) or flipped by 0x80 (i8: the value + 128), r bytes; form 1 when
    r[256:] is all zero, 2 otherwise, 0 when no such split exists (then m = c = 0, r zero).
    table[b] = d(q) / u rounds (q - z) * s / u (s / u an integer below 2^24, u the ulp of s) to
    24 bits, so with m = s / u the residual spans at most 257 values."""
    b = np.arange(256)
    u = b if unsigned else b ^ 0x80
    order = np.argsort(u)
    t = table[order]  # by u
    nz = np.flatnonzero(t == 0)
    m = 0
    if nz.size:
        k = int(nz[0])
        m = int(t[k + 1] - t[k]) if k + 1 < 256 else int(t[k] - t[k - 1])
    rest = table - m * u
    c = int(rest.min())
    rest = rest - c
    if not nz.size or rest.max() > 510:
        return 0, 0, 0, np.zeros(512, np.uint8)
    ra = np.minimum(rest, 255)
    rb = rest - ra
    return (2 if rb.any() else 1), m, c, np.concatenate([ra, rb]).astype(np.uint8)


def _pool_counts(pool: Operation, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """The reference's count per output position (kernels.avg_pool2d, max(counts, 1))."""
    from byoc.interpreters import kernels as k
    from byoc.interpreters.windows import pad_nchw, windows

    n, c, h, w = shape
    if pool.name == "nn.global_avg_pool2d":
        return np.full((1, 1), h * w, np.int64)
    a = pool.attr_values()  # type: ignore[attr-defined]
    probe = np.zeros((1, 1, h, w), np.float64)
    pads, (oh, ow) = k._pool_pads(probe, a["pool_size"], a["strides"], a["padding"], a["dilation"], a["ceil_mode"])  # pyright: ignore[reportPrivateUsage]
    ones = probe + 1
    if a["count_include_pad"]:
        ones = pad_nchw(ones, a["padding"], 1.0)
        ones = pad_nchw(ones, (0, 0, pads[2] - a["padding"][2], pads[3] - a["padding"][3]), 0.0)
    else:
        ones = pad_nchw(ones, pads, 0.0)
    win = windows(ones, a["pool_size"][0], a["pool_size"][1], a["strides"], a["dilation"])[:, :, :oh, :ow]
    return np.maximum(win.sum(axis=(4, 5)), 1).reshape(oh, ow).astype(np.int64)


def qavgpool_block(root: Operation) -> QAvgPool | str:
    got = _quantized_pool(root, ("nn.avg_pool2d", "nn.global_avg_pool2d"), "average pooling")
    if isinstance(got, str):
        return got
    root, pool, dq = got
    shape = _shape(dq.x)
    if len(shape) != 4:
        return "average pooling of another rank than 4"
    got_table = avgpool_sum_table(dq)
    if got_table is None:
        return "a dequantized value is not finite"
    table, exponent = got_table
    if pool.name == "nn.global_avg_pool2d":
        window = shape[2] * shape[3]
    else:
        kh, kw = pool.attr_values()["pool_size"]
        window = kh * kw
    if window * int(np.abs(table).max(initial=0)) >= 2**SUM_BITS:
        return "the window is too large for an exact f64 sum"
    counts = _pool_counts(pool, shape)
    if counts.max(initial=1) >= 2**31:
        return "a window count does not fit int32"
    ys, yz = _const(root.scale), _const(root.zero_point)
    assert ys is not None and yz is not None
    return QAvgPool(
        x=dq.x, pool=pool, table=table, exponent=exponent, counts=counts.astype(np.int32),
        split=linear_split(table, unsigned=_dtype(dq.x) == "ui8"),
        y_scale=float(np.float32(ys.reshape(()))), y_zero_point=int(yz.reshape(())),
        y_dtype=_dtype(root.result), ops=(root, pool, dq),
    )


@dataclass(frozen=True)
class QReshape:
    """A `qreshape` block: x viewed in the output's shape, through `table` (None: as it is)."""

    x: SSAValue
    shape: tuple[int, ...]
    table: np.ndarray[Any, Any] | None
    y_dtype: str
    ops: tuple[Operation, ...]


def qreshape_block(root: Operation) -> QReshape | str:
    quantized = _quantized_op(root, ("nn.reshape", "nn.flatten"), "reshape")
    if isinstance(quantized, str):
        return quantized
    root, reshape = quantized
    got = _dq_input(reshape.operands[0], per_axis=False)
    if isinstance(got, str):
        return got
    dq = got[0]
    return QReshape(x=dq.x, shape=_shape(reshape.results[0]), table=_requant_table(dq, root),
                    y_dtype=_dtype(root.result), ops=(root, reshape, dq))


FUSED_BLOCKS = {
    "qlut": qlut_block, "qadd": qadd_block, "qmaxpool": qmaxpool_block, "qconcat": qconcat_block,
    "qavgpool": qavgpool_block, "qreshape": qreshape_block,
}
"""composite name -> the analysis its check and its lowering share."""


def _check_fused(kind: str) -> Any:
    def check(match: Match) -> bool:
        block = FUSED_BLOCKS[kind](match.root)
        if isinstance(block, str):
            return False
        return {id(o) for o in block.ops} == {id(o) for o in match.ops if not isinstance(o, nn.ConstantOp)}

    return check


def _const_like() -> Pattern:
    return is_constant() | _dq(is_constant())


def _elementwise_step(p: Pattern) -> Pattern:
    alt: Pattern = is_op("nn.batch_norm")(p, _const_like(), _const_like(), _const_like(), _const_like())
    for name in sorted(UNARY_OPS):
        alt = alt | is_op(name)(p)
    for name in sorted(BINARY_CONST_OPS):
        alt = alt | is_op(name)(p, _const_like())
        if name not in ("nn.add", "nn.multiply"):  # the commutative ones match either order
            alt = alt | is_op(name)(_const_like(), p)
    return alt


def _q(p: Pattern) -> Pattern:
    return is_op("nn.quantize")(p, is_constant(), is_constant())


def fused_pattern_table() -> list[tuple[object, ...]]:
    """The `qadd`, `qmaxpool`, `qconcat` and `qlut` entries (see the comment above)."""
    dq = _dq(wildcard())
    lut = dq
    for _ in range(MAX_CHAIN):
        lut = lut.optional(_elementwise_step)
    add = (is_op("nn.add")(_dq(wildcard()), _dq(wildcard())) | is_op("nn.multiply")(_dq(wildcard()), _dq(wildcard())))
    add = add.optional(lambda p: is_op("nn.relu")(p))
    pool = is_op("nn.max_pool2d")(_dq(wildcard())) | is_op("nn.global_max_pool2d")(_dq(wildcard()))
    cat: Pattern = is_op("nn.concatenate")(*[_dq(wildcard()) for _ in range(2)])
    for n in range(3, MAX_CONCAT + 1):
        cat = cat | is_op("nn.concatenate")(*[_dq(wildcard()) for _ in range(n)])
    avg = is_op("nn.avg_pool2d")(_dq(wildcard())) | is_op("nn.global_avg_pool2d")(_dq(wildcard()))
    reshape = is_op("nn.reshape")(_dq(wildcard())) | is_op("nn.flatten")(_dq(wildcard()))
    return [
        ("qadd", _q(add), _check_fused("qadd")),
        ("qmaxpool", _q(pool), _check_fused("qmaxpool")),
        ("qavgpool", _q(avg), _check_fused("qavgpool")),
        ("qreshape", _q(reshape), _check_fused("qreshape")),
        ("qconcat", _q(cat), _check_fused("qconcat")),
        ("qlut", _q(lut), _check_fused("qlut")),
    ]


__all__ = [
    "COMPOSITES",
    "FUSED_BLOCKS",
    "FUSED_COMPOSITES",
    "INT8_NAMES",
    "QAdd",
    "QAvgPool",
    "QBlock",
    "QConcat",
    "QLut",
    "QPool",
    "QReshape",
    "avgpool_sum_table",
    "sum_table",
    "fused_pattern_table",
    "lone_qdq",
    "linear_split",
    "lut_table",
    "pattern_table",
    "qadd_block",
    "qavgpool_block",
    "qconcat_block",
    "qdq_block",
    "qlut_block",
    "qmaxpool_block",
    "qreshape_block",
]
