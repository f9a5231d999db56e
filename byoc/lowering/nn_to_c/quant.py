"""The quantized part of `lower-to-c`: each QDQ composite becomes one int8 kernel.

The ccompiler target's `composite_lowering` ("qnn") hands every `ccompiler.q*` composite
(byoc/targets/qdq.py) here:

- `qconv2d` -> `byoc_qconv2d_<x>_<y>` (im2col into int16, int16 GEMM into int32) or, when
  every group is one channel, `byoc_qdwconv2d_<x>_<y>` (direct); `qdense` / `qmatmul` ->
  `byoc_qdense_<x>_<y>`; `quantize` / `dequantize` -> `byoc_quantize_<y>` /
  `byoc_dequantize_<x>` (byoc/runtime/byoc_qkernels.h);
- the weights are centred (w - w_zp), widened to int16 and laid out (O, Kp) here, at compile
  time; the bias (int32), the per-channel multiplier f32(f32(x_scale * w_scale) / y_scale)
  and the clamp bounds (the output range minus its zero point, from 0 with a ReLU) are
  constants of the kernel;
- a dequantized input used outside the composite (an extra result) is written by a
  `byoc_dequantize_<x>` node.

A composite whose operands are all constants is folded with the reference kernels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.ir import Operation, OpResult, SSAValue

from byoc.diagnostics import PassError
from byoc.dialects import nn
from byoc.dialects.byoc import CompositeOp
from byoc.lowering.nn_to_c.graph import (
    Computation,
    GraphBuilder,
    Tensor,
    composite_members,
    i32_attr,
    i64_attr,
    pool_window,
)
from byoc.targets.qdq import (
    FUSED_BLOCKS,
    QAdd,
    QAvgPool,
    QBlock,
    QConcat,
    QLut,
    QPool,
    QReshape,
    lone_qdq,
    qdq_block,
)

QK = 16
"""BYOC_QK of byoc_qkernels.h: K, and the pixels of a packed block, are padded to multiples of it."""

DW_THREADS = 8
"""BYOC_Q_DW_THREADS of byoc_qkernels.h: the threads a depthwise conv2d's scratch serves."""

PACK_BYTES = 128 * 1024
"""Bytes of packed activations one GEMM block holds (u8; the int16 forms take twice this)."""

_SHORT = {"i8": "i8", "ui8": "u8"}
_RANGE = {"i8": (-128, 127), "ui8": (0, 255)}


def _f32_attr(v: float) -> Any:
    from xdsl.dialects.builtin import FloatAttr, f32

    return FloatAttr(float(np.float32(v)), f32)


def lower_composite(g: GraphBuilder, composite: CompositeOp, inputs: Sequence[Tensor]) -> list[Tensor]:
    values, ops, last = composite_members(g, composite, inputs)
    name = composite.composite.data
    if all(values[v].kind == "const" for op in ops for v in op.operands if v in values):
        return [_fold(g, ops, values, v) for v in last.values]
    kind = name.rpartition(".")[2]
    lowering = _Lowering(g, composite, values)
    if kind in FUSED_BLOCKS:
        (v,) = last.values
        assert isinstance(v, OpResult)
        fused = FUSED_BLOCKS[kind](v.op)
        if isinstance(fused, str):
            raise PassError(composite, f"lower-to-c: composite '{name}': {fused}")
        return [lowering.fused(fused)]
    outs: list[Tensor] = []
    for v in last.values:
        if not isinstance(v, OpResult):
            raise PassError(composite, f"lower-to-c: composite '{name}' yields a block argument")
        op = v.op
        if kind in ("quantize", "dequantize") or (isinstance(op, nn.DequantizeOp) and op is not ops[-1]):
            reason = lone_qdq(op)
            if reason is not None:
                raise PassError(composite, f"lower-to-c: composite '{name}': {reason}")
            outs.append(lowering.lone(op))  # type: ignore[arg-type]
            continue
        block = qdq_block(op)
        if isinstance(block, str):
            raise PassError(composite, f"lower-to-c: composite '{name}': {block}")
        outs.append(lowering.block(block))
    return outs


def _fold(g: GraphBuilder, ops: list[Operation], values: dict[SSAValue, Tensor], want: SSAValue) -> Tensor:
    from byoc.interpreters.kernels import KERNELS

    arrays: dict[SSAValue, Any] = {v: t.array for v, t in values.items()}
    for op in ops:
        out = KERNELS[op.name](*[arrays[v] for v in op.operands], **op.attr_values())  # type: ignore[attr-defined]
        arrays[op.results[0]] = np.asarray(out)
    return g._const(arrays[want])  # pyright: ignore[reportPrivateUsage]


class _Lowering:
    def __init__(self, g: GraphBuilder, composite: CompositeOp, values: dict[SSAValue, Tensor]):
        self.g = g
        self.composite = composite
        self.values = values

    def const(self, array: Any) -> Tensor:
        return self.g._const(np.ascontiguousarray(array))  # pyright: ignore[reportPrivateUsage]

    def node(self, callee: str, ins: list[Tensor], out: Tensor, args: list[Any], scratch: int = 0) -> Tensor:
        self.g._node(  # pyright: ignore[reportPrivateUsage]
            Computation(
                "kernel", self.composite.composite.data, ins, out, callee=callee, args=args,
                scratch=scratch, source=self.composite,
            )
        )
        return out

    def lone(self, op: nn.QuantizeOp | nn.DequantizeOp) -> Tensor:
        x = self.values[op.x]
        scale = np.asarray(self.values[op.scale].array, np.float32).reshape(-1)
        zp = self.values[op.zero_point].array
        assert zp is not None
        zp = zp.reshape(-1)
        shape = x.shape
        if scale.size == 1:
            inner, ch = max(math.prod(shape), 1), 1  # one row: the kernels vectorise along it
        else:
            axis = op.attr_values()["axis"] % len(shape)
            inner, ch = math.prod(shape[axis + 1 :]), shape[axis]
        result = op.results[0].type
        out = Tensor(shape, nn.DTYPE_NAMES[result.element_type], "node")  # type: ignore[attr-defined]
        q = out.dtype if isinstance(op, nn.QuantizeOp) else x.dtype
        callee = f"byoc_{'quantize' if isinstance(op, nn.QuantizeOp) else 'dequantize'}_{_SHORT[q]}"
        args = [i64_attr(math.prod(shape)), i64_attr(inner), i64_attr(ch)]
        return self.node(callee, [x, self.const(scale), self.const(zp)], out, args)

    def block(self, b: QBlock) -> Tensor:
        x = self.values[b.x]
        out_t = b.gemm.results[0].type
        out = Tensor(tuple(out_t.get_shape()), b.y_dtype, "node")  # type: ignore[attr-defined]
        lo, hi = _RANGE[b.y_dtype]
        flo, fhi = float(lo - b.y_zero_point), float(hi - b.y_zero_point)
        if b.relu:
            flo = max(flo, 0.0)
        w = b.weight.astype(np.int64) - b.weight_zero_point.reshape((-1,) + (1,) * (b.weight.ndim - 1))
        if np.abs(w).max(initial=0) > 32767:
            raise PassError(self.composite, "lower-to-c: centred weights do not fit int16")
        tail = [i32_attr(b.x_zero_point), i32_attr(b.y_zero_point), _f32_attr(flo), _f32_attr(fhi)]
        consts = [self.const(b.bias), self.const(b.multiplier)]
        suffix = f"{_SHORT[x.dtype]}_{_SHORT[b.y_dtype]}"
        if isinstance(b.gemm, nn.Conv2DOp):
            a = b.gemm.attr_values()
            n, c, h, wd = x.shape
            o, cg, kh, kw = b.weight.shape
            _, _, oh, ow = out.shape
            sh, sw = a["strides"]
            pt, pl, pb, pr = a["padding"]
            dh, dw = a["dilation"]
            groups = a["groups"]
            if groups == c == o and cg == 1:
                hp, wp = h + pt + pb, wd + pl + pr
                wt = self.const(w.reshape(o, kh * kw).astype(np.int16))
                scratch = ((hp * wp + 1) // 2 + 1 + ow) * DW_THREADS  # one plane a thread
                ints = [n, c, h, wd, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, hp, wp]
                return self.node(
                    f"byoc_qdwconv2d_{suffix}", [x, wt, *consts], out,
                    [*(i64_attr(v) for v in ints), *tail], scratch,
                )
            k = cg * kh * kw
            kp = -(-k // QK) * QK
            wt = np.zeros((o, kp), np.int16)
            wt[:, :k] = w.reshape(o, k)
            # the u8 x s8 form (AVX-512 VNNI) when the centred weights fit int8
            use8 = int(-128 <= w.min(initial=0) and w.max(initial=0) <= 127)
            w8 = wt.astype(np.int8) if use8 else np.zeros((o, kp), np.int8)
            wsum = w8.astype(np.int64).sum(axis=1).astype(np.int32)
            # AVX-512 VNNI runs the implicit GEMM over the phase planes' virtual pixels
            # (byoc_qconv2d_vtile_): OH rows of WV, WV - OW of them computed and not stored
            hv, wv = oh + (kh - 1) * dh // sh, ow + (kw - 1) * dw // sw
            p = max(oh * ow, oh * wv)
            tp = min(p, max(32, PACK_BYTES // kp // 32 * 32))  # pixels a packed block, a multiple of 32
            pp = -(-tp // 32) * 32  # the packed block's pixels, padded to 32 (byoc_qkernels.h)
            scratch = kp * pp // 2 + (o // groups) * pp  # packed block (int16 form), accumulators
            # then the phase planes: 64-byte aligned, WV + 32 readable bytes after them
            scratch += -(-(63 + n * c * sh * sw * hv * wv + wv + 32) // 4)
            ints = [n, c, h, wd, o, groups, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, kp, tp]
            return self.node(
                f"byoc_qconv2d_{suffix}", [x, self.const(wt), self.const(w8), self.const(wsum), *consts],
                out, [*(i64_attr(v) for v in ints), *tail, i32_attr(use8)], scratch,
            )
        nout, k = b.weight.shape
        m = math.prod(x.shape[:-1])
        kp = -(-k // QK) * QK
        wt = np.zeros((nout, kp), np.int16)
        wt[:, :k] = w
        # the u8 x s8 dot products (AVX-512 VNNI) when the centred weights fit int8
        use8 = int(-128 <= w.min(initial=0) and w.max(initial=0) <= 127)
        w8 = wt.astype(np.int8) if use8 else np.zeros((nout, kp), np.int8)
        wsum = w8.astype(np.int64).sum(axis=1).astype(np.int32)
        tp = max(1, min(m, PACK_BYTES // (2 * kp)))
        pp = -(-tp // QK) * QK
        scratch = kp * pp // 2 + nout * pp
        return self.node(
            f"byoc_qdense_{suffix}", [x, self.const(wt), self.const(w8), self.const(wsum), *consts], out,
            [*(i64_attr(v) for v in (m, nout, k, kp, tp)), *tail, i32_attr(use8)], scratch,
        )


    # ---- the fused int8 elementwise / pooling / concatenation blocks (qdq.FUSED_BLOCKS) ----
    def _lut(self, x: Tensor, table: Any, y_dtype: str) -> Tensor:
        out = Tensor(x.shape, y_dtype, "node")
        ch = table.shape[0]
        inner = math.prod(x.shape[2:]) if ch > 1 else 1
        args = [i64_attr(math.prod(x.shape)), i64_attr(inner), i64_attr(ch)]
        return self.node(f"byoc_qlut_{_SHORT[x.dtype]}_{_SHORT[y_dtype]}", [x, self.const(table)], out, args)

    def fused(self, b: QLut | QAdd | QPool | QConcat | QAvgPool | QReshape) -> Tensor:
        if isinstance(b, QAvgPool | QReshape) or (isinstance(b, QConcat) and len(b.inputs) <= 4):  # qpool.py
            from byoc.lowering.nn_to_c.qpool import lower_qpool

            return lower_qpool(self, b)
        if isinstance(b, QLut):
            return self._lut(self.values[b.x], b.table, b.y_dtype)
        if isinstance(b, QAdd):
            a, c = self.values[b.a], self.values[b.b]
            out = Tensor(a.shape, b.y_dtype, "node")
            callee = f"byoc_qadd_{_SHORT[a.dtype]}_{_SHORT[c.dtype]}_{_SHORT[b.y_dtype]}"
            args = [
                i64_attr(math.prod(a.shape)), _f32_attr(b.a_scale), i32_attr(b.a_zero_point),
                _f32_attr(b.b_scale), i32_attr(b.b_zero_point), _f32_attr(b.y_scale),
                i32_attr(b.y_zero_point), i32_attr(int(b.multiply)), i32_attr(int(b.relu)),
            ]
            return self.node(callee, [a, c], out, args)
        if isinstance(b, QPool):
            x = self.values[b.x]
            ints = pool_window(b.pool, x.shape)
            pooled = Tensor((ints[0], ints[1], ints[6], ints[7]), x.dtype, "node")
            self.node(f"byoc_qmaxpool_{_SHORT[x.dtype]}", [x], pooled, [i64_attr(v) for v in ints])
            return pooled if b.table is None else self._lut(pooled, b.table, b.y_dtype)
        parts = []
        for v, table in zip(b.inputs, b.tables, strict=True):
            x = self.values[v]
            parts.append(x if table is None else self._lut(x, table, b.y_dtype))
        shape = list(parts[0].shape)
        shape[b.axis] = sum(p.shape[b.axis] for p in parts)
        out = Tensor(tuple(shape), b.y_dtype, "node")
        self.g._node(  # pyright: ignore[reportPrivateUsage]
            Computation("concat", self.composite.composite.data, parts, out, params={"axis": b.axis}, source=self.composite)
        )
        return out


__all__ = ["lower_composite"]
