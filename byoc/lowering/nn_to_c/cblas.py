"""The cblas part of `lower-to-c`: each `cblas.*` composite becomes one kernel node.

`lower-to-c` lowers a cblas partition exactly like a ccompiler one (the same
graph, buffer plan, workspace, wrapper and ABI checks) and calls this module,
through the target's `composite_lowering` ("cblas"), for every composite. The
composite (see `byoc.targets.cblas.chain.gemm_chain`) is GEMM -> per-channel affine
steps -> optional ReLU; it becomes:

- one `kernel` node calling `byoc_cblas_<op>[_1x1|_taps][_bias|_affine]_f32`
  of byoc_cblas.h: inputs x, w (tap by tap for `_taps`), then the
  per-channel `scale` and/or `shift` vectors, the output, the scratch
  (conv2d but the direct 1x1 form: the padded phase planes, then the im2col
  block or the per-tap output tile), then the sizes, the block size and the
  ReLU flag as literals (`conv2d_algorithm` picks the form);
- the epilogue folded to `y * scale + shift`: batch_norm is
  `scale = gamma / sqrt(var + eps)`, `shift = beta - mean * scale` (as the
  reference kernel computes it); steps compose in order. Constant vectors are
  folded here with numpy; vectors known only at run time are computed by
  ordinary pointwise nodes over the channels (fused into one small loop).

Before/after (fused; constants bound):

    %y = byoc.composite "cblas.conv2d_bias_relu"(%x, %w, %b) ({ conv2d, bias_add, relu })
    ==>
    c.func static noalias @cblas_main_0_0(%in0, %in1, %in2, %out0, %tmp0) {
      c.call_opaque "byoc_cblas_conv2d_bias_f32"(%in0, %in1, %in2, %out0, %tmp0) {args = [...]}
    }
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.ir import Attribute, OpResult, SSAValue

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
)
from byoc.targets.cblas.chain import GemmChain, gemm_chain

TILE_BYTES = 1024 * 1024
"""Bytes of one block of GEMM operands and output a kernel works on at a time (output rows
of a conv2d, pixels of a direct 1x1 conv2d, rows of a dense), so that the epilogue finds the
block in cache."""

MIN_TILE = 64
"""Fewest pixels (direct 1x1 conv2d) or rows (dense) per block."""


def lower_composite(
    g: GraphBuilder, composite: CompositeOp, inputs: Sequence[Tensor]
) -> list[Tensor]:
    values, members, last = composite_members(g, composite, inputs)
    name = composite.composite.data
    if len(last.values) != 1 or not isinstance(last.values[0], OpResult):
        raise PassError(composite, f"lower-to-c: composite '{name}' must yield one op result")
    chain = gemm_chain(last.values[0].op, members)
    if isinstance(chain, str):
        raise PassError(composite, f"lower-to-c: composite '{name}': {chain}")
    covered = {id(chain.gemm), *(id(s.op) for s in chain.steps)}
    if chain.relu is not None:
        covered.add(id(chain.relu))
    stray = [op.name for op in members if id(op) not in covered]
    if stray:
        raise PassError(
            composite,
            f"lower-to-c: composite '{name}' holds ops outside its GEMM chain: {', '.join(stray)}",
        )
    if all(values[v].kind == "const" for v in _external_operands(members, values)) and all(
        nn.nbytes_of(t) <= nn.FOLD_LIMIT_BYTES for op in members for t in op.result_types
    ):
        return [g._const(_fold(members, values))]  # pyright: ignore[reportPrivateUsage]
    return [_ChainLowering(g, chain, values, composite).lower()]


def _external_operands(members: list[Any], values: dict[SSAValue, Tensor]) -> list[SSAValue]:
    return [v for op in members for v in op.operands if v in values]


def _fold(members: list[Any], values: dict[SSAValue, Tensor]) -> np.ndarray[Any, Any]:
    """A composite of constants only: computed now with the reference kernels."""
    from byoc.interpreters.kernels import KERNELS

    arrays: dict[SSAValue, Any] = {v: t.array for v, t in values.items()}
    result: Any = None
    for op in members:
        result = np.asarray(KERNELS[op.name](*[arrays[v] for v in op.operands], **op.attr_values()))
        arrays[op.results[0]] = result
    return result


class _ChainLowering:
    """Adds the nodes of one GEMM chain to the graph builder."""

    def __init__(
        self,
        g: GraphBuilder,
        chain: GemmChain,
        values: dict[SSAValue, Tensor],
        composite: CompositeOp,
    ):
        self.g = g
        self.chain = chain
        self.values = values
        self.composite = composite
        self.channels = chain.channels

    # ---- channel vectors ---------------------------------------------------------
    def _const(self, array: Any) -> Tensor:
        return self.g._const(np.asarray(array, dtype=np.float32))  # pyright: ignore[reportPrivateUsage]

    def vector(self, v: SSAValue) -> Tensor:
        """Operand `v` (one value per channel, or one value) read as a vector (C,) or (1,)."""
        t = self.values[v]
        k = t.numel
        if t.kind == "const":
            assert t.array is not None
            return self._const(t.array.reshape(k))
        if t.shape == (k,):
            return t
        return Tensor((k,), t.dtype, "node", alias_of=t)

    def binary(self, op_name: str, a: Tensor, b: Tensor) -> Tensor:
        if a.kind == "const" and b.kind == "const":
            fn = {
                "nn.add": np.add,
                "nn.subtract": np.subtract,
                "nn.multiply": np.multiply,
                "nn.divide": np.divide,
            }[op_name]
            return self._const(fn(a.array, b.array))
        shape = (max(a.shape[0], b.shape[0]),)
        return self._pointwise(op_name, [a, b], shape)

    def sqrt(self, a: Tensor) -> Tensor:
        if a.kind == "const":
            return self._const(np.sqrt(a.array))
        return self._pointwise("nn.sqrt", [a], a.shape)

    def _pointwise(self, op_name: str, ins: list[Tensor], shape: tuple[int, ...]) -> Tensor:
        out = Tensor(shape, "f32", "node")
        node = Computation(
            "pointwise", op_name, ins, out, views=[v.shape for v in ins], source=self.composite
        )
        self.g._node(node)  # pyright: ignore[reportPrivateUsage]
        return out

    def expand(self, v: Tensor) -> Tensor:
        """A (1,) vector broadcast to (C,)."""
        if v.shape == (self.channels,):
            return v
        if v.kind == "const":
            return self._const(np.broadcast_to(v.array, (self.channels,)))
        return self.binary("nn.add", self._const(np.zeros(self.channels)), v)

    def affine(self) -> tuple[Tensor | None, Tensor | None]:
        """The epilogue as (scale, shift) vectors of C channels; None is 1 / 0."""
        scale: Tensor | None = None
        shift: Tensor | None = None
        for step in self.chain.steps:
            if step.kind == "shift":
                v = self.vector(step.operands[0])
                shift = v if shift is None else self.binary("nn.add", shift, v)
                continue
            if step.kind == "scale":
                s = self.vector(step.operands[0])
                t = None
            else:  # batch_norm, as byoc.interpreters.kernels.batch_norm computes it
                gamma, beta, mean, var = (self.vector(v) for v in step.operands)
                eps = self._const([np.float32(step.op.attr_values()["epsilon"])])  # type: ignore[attr-defined]
                s = self.binary("nn.divide", gamma, self.sqrt(self.binary("nn.add", var, eps)))
                t = self.binary("nn.subtract", beta, self.binary("nn.multiply", mean, s))
            scale = s if scale is None else self.binary("nn.multiply", scale, s)
            if shift is not None:
                shift = self.binary("nn.multiply", shift, s)
                shift = shift if t is None else self.binary("nn.add", shift, t)
            else:
                shift = t
        return (
            None if scale is None else self.expand(scale),
            None if shift is None else self.expand(shift),
        )

    # ---- the kernel node -----------------------------------------------------------
    def lower(self) -> Tensor:
        chain = self.chain
        gemm = chain.gemm
        x, w = (self.values[v] for v in gemm.operands)
        result = gemm.results[0].type
        out = Tensor(tuple(result.get_shape()), "f32", "node")  # type: ignore[attr-defined]
        relu = i32_attr(int(chain.relu is not None))
        scale, shift = self.affine()
        if scale is not None and shift is None:
            shift = self._const(np.zeros(self.channels))
        variant = "" if shift is None else "_bias" if scale is None else "_affine"
        ins = [
            x,
            w,
            *([scale] if scale is not None else []),
            *([shift] if shift is not None else []),
        ]
        scratch = 0
        args: list[Attribute]
        if gemm.name == "nn.conv2d":
            n, c, h, wd = x.shape
            o, _, kh, kw = w.shape
            _, _, oh, ow = out.shape
            a = gemm.attr_values()  # type: ignore[attr-defined]
            sh, sw = a["strides"]
            pt, pl, pb, pr = a["padding"]
            dh, dw = a["dilation"]
            k = c * kh * kw
            algorithm = conv2d_algorithm(
                c, (kh, kw), (oh, ow), (sh, sw), (pt, pl, pb, pr), w.kind == "const"
            )
            if algorithm == "1x1":
                tile = _tile(oh * ow, 4 * (c + o))  # output pixels per GEMM
            else:
                hq, wq = oh + (kh - 1) * dh // sh, ow + (kw - 1) * dw // sw
                phases = len({i * dh % sh for i in range(kh)}) * len(
                    {j * dw % sw for j in range(kw)}
                )
                scratch = phases * (c * hq * wq + (kw - 1) * dw // sw)
                if algorithm == "taps":
                    # one GEMM per kernel tap: weights tap-major (KH*KW, O, C)
                    assert w.array is not None
                    ins[1] = self._const(w.array.transpose(2, 3, 0, 1).reshape(kh * kw, o, c))
                    tile = _tile(oh, 4 * (o + c) * wq, minimum=1)  # output rows per block
                    scratch += o * tile * wq
                else:
                    tile = _tile(oh, 4 * (k + o) * ow, minimum=1)
                    scratch += k * tile * ow
            ints = [n, c, h, wd, o, kh, kw, oh, ow, sh, sw, pt, pl, dh, dw, tile]
            suffix = "" if algorithm == "im2col" else f"_{algorithm}"
            callee = f"byoc_cblas_conv2d{suffix}{variant}_f32"
            args = [*(i64_attr(v) for v in ints), relu]
        elif gemm.name == "nn.dense":
            m, (nn_, k) = math.prod(x.shape[:-1]), w.shape
            callee = f"byoc_cblas_dense{variant}_f32"
            args = [*(i64_attr(v) for v in (m, nn_, k, _tile(m, 4 * (k + nn_)))), relu]
        else:
            callee = "byoc_cblas_matmul_f32"
            args = GraphBuilder._matmul_args(x.shape, w.shape)  # pyright: ignore[reportPrivateUsage]
        node = Computation(
            "kernel",
            self.composite.composite.data,
            ins,
            out,
            callee=callee,
            args=args,
            scratch=scratch,
            source=self.composite,
        )
        self.g._node(node)  # pyright: ignore[reportPrivateUsage]
        return out


def conv2d_algorithm(
    c: int,
    kernel: tuple[int, int],
    out: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, ...],
    const_weight: bool,
) -> str:
    """How a conv2d composite runs (byoc_cblas.h): "1x1" (unit strides, no padding: the image
    is the GEMM operand), "taps" (one GEMM per kernel tap over the phase planes, no im2col) or
    "im2col" (from the phase planes, by memcpy).

    "taps" needs the weights at compile time (to rearrange them), enough input channels for a
    GEMM of depth C to pay, and enough work per GEMM for KH*KW of them to be worth calling
    (measured on 3x3 convolutions: 20-30 % faster than im2col at 64x56x56, 128x28x28 and
    256x14x14; slower at 16-32 channels, at 64x13x13 and at 512x7x7).
    """
    if (*kernel, *strides, *padding) == (1, 1, 1, 1, 0, 0, 0, 0):
        return "1x1"
    if const_weight and c >= TAPS_MIN_CHANNELS and c * out[0] * out[1] >= TAPS_MIN_SIZE:
        return "taps"
    return "im2col"


TAPS_MIN_CHANNELS = 48
"""Input channels from which one GEMM per tap (depth C) can beat im2col (depth C*KH*KW)."""

TAPS_MIN_SIZE = 32768
"""Input channels x output pixels from which one GEMM per tap beats im2col."""


def _tile(extent: int, bytes_per_item: int, minimum: int = MIN_TILE) -> int:
    """Items per block: TILE_BYTES worth (a multiple of 16 when that is more than `minimum`,
    at least `minimum`), at most `extent`."""
    t = TILE_BYTES // max(bytes_per_item, 1)
    t = t // 16 * 16 if t >= 16 else t
    return max(1, min(extent, max(minimum, t)))


__all__ = ["TILE_BYTES", "lower_composite"]
