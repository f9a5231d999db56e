"""lower-to-c's epilogue fusion: the per-channel bias, the folded batch norm and one activation
that follow a conv2d or dense are applied by the kernel to each tile of results before it stores
them (byoc_kernels.h `byoc_epilogue_`), instead of in a separate loop over the output.

    %y = nn.conv2d %x, %w ; %b = nn.bias_add %y, %bias ; %r = nn.relu %b
    ->  byoc_conv2d_ep_f32(x, w, bias, w, w, r, scratch, ..., BYOC_EP_BIAS, BYOC_ACT_RELU, 0, 0)

A chain is absorbed in this order, each step optional: `nn.bias_add` on the channel axis,
`scale_shift` (an inference batch_norm with constant statistics, on the channel axis), one
activation (relu, clip, leaky_relu, sigmoid, hard_swish, hard_sigmoid, tanh, or SiLU: an
`nn.sigmoid` of the value and the `nn.multiply` of the value by it, the pair the ONNX importer
makes of a YOLO detector's SiLU). A step joins only if it is the sole reader of the value before
it (SiLU: the pair are its only two readers, the multiply the sigmoid's only one; neither value
returned nor read through a reshape), so no intermediate is lost. The kernel computes each step exactly as the fused loop does
(`scalar_op`), so the results do not change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr, f32

from byoc.lowering.nn_to_c.graph import Computation, Tensor, i32_attr

ACTIVATIONS: dict[str, int] = {
    "nn.relu": 1,
    "nn.clip": 2,
    "nn.leaky_relu": 3,
    "nn.sigmoid": 4,
    "nn.hard_swish": 5,
    "nn.hard_sigmoid": 6,
    "nn.tanh": 7,
}
"""nn op -> BYOC_ACT_* of byoc_kernels.h."""

ACT_SILU = 8
"""BYOC_ACT_SILU of byoc_kernels.h: x * sigmoid(x), from an nn.sigmoid and nn.multiply pair."""

EP_BIAS, EP_SCALE_SHIFT = 1, 2
"""BYOC_EP_* of byoc_kernels.h."""

KERNELS: dict[str, str] = {"byoc_conv2d_f32": "byoc_conv2d_ep_f32", "byoc_dense_f32": "byoc_dense_ep_f32"}
"""Kernels that take an epilogue -> their epilogue form."""


def _f32(v: float) -> FloatAttr[Any]:
    return FloatAttr(float(np.float32(v)), f32)


def _activation_params(n: Computation) -> tuple[float, float]:
    p = n.params
    if n.op_name == "nn.clip":
        return p["a_min"], p["a_max"]
    if n.op_name == "nn.leaky_relu":
        return p["alpha"], 0.0
    if n.op_name == "nn.hard_sigmoid":
        return p["alpha"], p["beta"]
    return 0.0, 0.0


def _channel_axis(kernel: Computation) -> int:
    rank = len(kernel.out.shape)
    return 1 if kernel.callee == "byoc_conv2d_f32" else rank - 1


def _per_channel(n: Computation, kernel: Computation, channels: int) -> bool:
    """Whether pointwise `n` reads its operands after the first as one value per channel."""
    rank = len(n.out.shape)
    if n.params.get("axis", -999) % max(rank, 1) != _channel_axis(kernel) % max(rank, 1):
        return False
    return all(v.dtype == "f32" and math.prod(v.shape) == channels for v in n.inputs[1:])


def _silu(
    cur: Tensor,
    readers: dict[Tensor, list[tuple[Computation, Tensor]]],
    returned: set[Tensor],
) -> tuple[Computation, Computation] | None:
    """(sigmoid, multiply) when `cur`'s only readers are `s = nn.sigmoid(cur)` and
    `nn.multiply(cur, s)` (either operand order) and the multiply is `s`'s only reader."""
    uses = readers.get(cur, [])
    if len(uses) != 2 or any(v is not cur for _, v in uses):
        return None
    sig = next((n for n, _ in uses if n.op_name == "nn.sigmoid"), None)
    mul = next((n for n, _ in uses if n.op_name == "nn.multiply"), None)
    if sig is None or mul is None or sig.out in returned:
        return None
    for n in (sig, mul):
        if n.kind != "pointwise" or n.out.dtype != "f32" or n.out.shape != cur.shape:
            return None
    if len(sig.inputs) != 1 or sig.inputs[0] is not cur or len(mul.inputs) != 2 or {id(v) for v in mul.inputs} != {id(cur), id(sig.out)}:
        return None
    if [n for n, _ in readers.get(sig.out, [])] != [mul] or readers[sig.out][0][1] is not sig.out:
        return None
    return sig, mul


def fuse_epilogues(nodes: list[Computation], outputs: Sequence[Tensor]) -> list[Computation]:
    """Absorb the epilogue chains of conv2d/dense kernel nodes; returns the remaining nodes,
    renumbered in program order (the absorbed ones are gone, their kernel produces the chain's
    last value)."""
    returned = {v.root() for v in outputs}
    readers: dict[Tensor, list[tuple[Computation, Tensor]]] = {}
    for n in nodes:
        for v in n.inputs:
            readers.setdefault(v.root(), []).append((n, v))
    absorbed: set[Computation] = set()
    for k in nodes:
        if k.kind != "kernel" or k.callee not in KERNELS or k.out.dtype != "f32":
            continue
        channels = k.out.shape[_channel_axis(k)] if k.out.shape else 1
        bias: Tensor | None = None
        scale_shift: tuple[Tensor, Tensor] | None = None
        act = 0
        alpha = beta = 0.0
        chain: list[Computation] = []
        cur = k.out
        stage = 0
        while cur not in returned:
            uses = readers.get(cur, [])
            pair = _silu(cur, readers, returned) if stage < 3 else None
            if pair is not None:
                act, stage = ACT_SILU, 3
                chain.extend(pair)
                cur = pair[1].out
                continue
            if len(uses) != 1:
                break
            n, v = uses[0]
            if v is not cur or n.kind != "pointwise" or n.inputs[0] is not cur or n.out.dtype != "f32":
                break
            if n.out.shape != cur.shape:
                break
            if n.op_name == "nn.bias_add" and stage < 1 and _per_channel(n, k, channels):
                bias, stage = n.inputs[1], 1
            elif n.op_name == "scale_shift" and stage < 2 and _per_channel(n, k, channels):
                scale_shift, stage = (n.inputs[1], n.inputs[2]), 2
            elif n.op_name in ACTIVATIONS and stage < 3 and len(n.inputs) == 1:
                act, stage = ACTIVATIONS[n.op_name], 3
                alpha, beta = _activation_params(n)
            else:
                break
            chain.append(n)
            cur = n.out
        if not chain:
            continue
        weight = k.inputs[1]
        parts = (EP_BIAS if bias is not None else 0) | (EP_SCALE_SHIFT if scale_shift is not None else 0)
        scale, shift = scale_shift if scale_shift is not None else (weight, weight)
        # the pointers after the weight: bias, scale, shift (the weight stands in for a missing one)
        k.inputs = [*k.inputs[:2], bias if bias is not None else weight, scale, shift]
        k.callee = KERNELS[k.callee]
        k.args = [*k.args, i32_attr(parts), i32_attr(act), _f32(alpha), _f32(beta)]
        k.params["epilogue"] = [n.op_name for n in chain]
        k.out = cur
        cur.node = k
        absorbed.update(chain)
    kept = [n for n in nodes if n not in absorbed]
    for i, n in enumerate(kept):
        n.index = i
    return kept


__all__ = ["ACT_SILU", "ACTIVATIONS", "KERNELS", "fuse_epilogues"]
