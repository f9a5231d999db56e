"""The dnnl target's int8 blocks: which QDQ composites oneDNN runs exactly.

The composites are byoc/targets/qdq.py's (`dnnl.qconv2d`, `dnnl.qdense`, `dnnl.qmatmul`:
dequantize -> conv2d/dense/matmul [-> bias] [-> relu] -> quantize), with a stricter check:
the engine (byoc/runtime/engines/dnnl_int8.c) lets oneDNN compute only the int32
accumulator (u8/s8 source with its zero point, s8 weights, s32 result) and requantizes it
itself exactly like the reference, so it takes a block only when

- oneDNN's int8 kernels are exact on this CPU: its effective ISA has VNNI or AMX
  (`int8_unavailable_reason`; without VNNI oneDNN multiplies with vpmaddubsw, whose int16
  pair sums saturate, and halves the weights). ONEDNN_MAX_CPU_ISA lowers the ISA;
- oneDNN's s32 result is the exact sum (`exact_accumulator`): a u8 source with zero point
  0, or weights small enough that its float32 compensation cannot round;
- the weights are s8 with zero point 0 (oneDNN's CPU convolutions have no weight zero
  point; onnxruntime's quantizer writes symmetric s8 weights);
- no value inside the block is read outside it (no extra results);
- a conv2d is NCHW/OIHW; a matmul's left operand has rank >= 2.

Blocks it declines stay for the next target (ccompiler's int8 kernels) or the host. Lone
quantize / dequantize between blocks and f32 ops (`lone_reason`) run in the engine too, in
C with byoc_qkernels.h's code, so a quantized model's pools and adds stay in one dnnl
partition with its blocks.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, OpResult

from byoc.dialects import nn
from byoc.dialects.byoc import CompositeOp
from byoc.targets.patterns import Match
from byoc.targets.qdq import QBlock, lone_qdq, qdq_block
from byoc.targets.qdq import pattern_table as qdq_pattern_table

INT8_COMPOSITES = ("qconv2d", "qdense", "qmatmul")
LONE = ("quantize", "dequantize")

VNNI_BITS = 0x8 | 0x40
"""dnnl_cpu_isa_t bits of avx2_vnni (0xf) and avx512_core_vnni (0x67); every ISA above them
(bf16, fp16, AMX) includes one."""


@lru_cache(maxsize=1)
def effective_isa() -> int | None:
    """oneDNN's dnnl_get_effective_cpu_isa() in this process (None without oneDNN)."""
    from byoc.targets.dnnl.onednn import OneDnnMissing, load_library

    try:
        lib = load_library()
    except (OneDnnMissing, OSError):
        return None
    fn = lib.dnnl_get_effective_cpu_isa
    fn.restype = ctypes.c_int
    fn.argtypes = []
    return int(fn())


def int8_unavailable_reason() -> str | None:
    """None when oneDNN's int8 kernels here sum exactly (VNNI/AMX), else why not."""
    isa = effective_isa()
    if isa is None:
        return "oneDNN is not installed"
    if not isa & VNNI_BITS:
        return (
            f"oneDNN's ISA here (0x{isa:x}) has no VNNI: its u8 x s8 kernels saturate int16 "
            "pair sums, so the int8 blocks stay on ccompiler"
        )
    return None


COMPENSATED_BOUND = 640
"""With an s8 source or a nonzero source zero point, oneDNN adds compensation terms to the
accumulator after converting it to float32 (measured: 1 off at -18945225, an s8 source with
zero point 127). Every value involved is an integer of magnitude at most (255 + 128 + 255) *
sum_k |w[c, k]|, so when 640 * max_c sum_k |w[c, k]| <= 2^24 each is exact in float32 and the
result is the integer. A u8 source with zero point 0 needs no compensation: oneDNN's s32
result is then the integer accumulator at any size (tests/targets/test_dnnl_int8.py checks it
to the unit beyond 2^24, K up to 4609)."""


def exact_accumulator(x_dtype: str, x_zero_point: int, weight: Any) -> bool:
    """Whether oneDNN's s32 result is the exact accumulator for this source and weights."""
    if x_dtype == "ui8" and x_zero_point == 0:
        return True
    w = np.abs(np.asarray(weight, np.int64)).reshape(len(weight), -1)
    return int(w.sum(axis=1).max()) * COMPENSATED_BOUND <= 2**24


def _dtype(op: Operation, i: int) -> str:
    t = op.operands[i].type
    assert isinstance(t, TensorType)
    return nn.DTYPE_NAMES.get(t.element_type, str(t.element_type))


def block_reason(match: Match) -> str | None:
    """Why the dnnl engine does not take this QDQ match (None: it does)."""
    block = qdq_block(match.root)
    if not isinstance(block, QBlock):
        return block
    members = {id(o) for o in match.ops if not isinstance(o, nn.ConstantOp)}
    if {id(o) for o in block.ops} != members:
        return "the match is not the whole block"
    reason = int8_unavailable_reason()
    if reason is not None:
        return reason
    gemm = block.gemm
    wd = gemm.operands[1].owner
    if not isinstance(wd, nn.DequantizeOp) or _dtype(wd, 0) != "i8":
        return "the weights are not i8 (oneDNN takes s8 weights)"
    if block.weight_zero_point.any():
        return "a weight zero point is not 0"
    if not exact_accumulator(_dtype(block.x_dequantize, 0), block.x_zero_point, block.weight):
        return (
            "oneDNN's zero-point or s8-source compensation goes through float32: "
            f"sum |w| of a channel times {COMPENSATED_BOUND} exceeds 2^24"
        )
    for op in block.ops:
        if op is match.root:
            continue
        for r in op.results:
            if any(id(u.operation) not in members for u in r.uses):
                return f"'{op.name}' inside the block is also read outside it"
    if isinstance(gemm, nn.Conv2DOp):
        attrs = gemm.attr_values()
        if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW":
            return "conv2d not in NCHW/OIHW"
    if isinstance(gemm, nn.MatmulOp) and len(nn.shape_of(gemm.lhs.type)) < 2:
        return "matmul of a rank-1 operand"
    for v in (*gemm.operands, *gemm.results):
        if any(d <= 0 for d in nn.shape_of(v.type)):
            return "a dynamic or empty shape"
    return None


def check(match: Match) -> bool:
    return block_reason(match) is None


GEMMS = (nn.Conv2DOp, nn.DenseOp, nn.MatmulOp)


def lone_reason(op: Operation) -> str | None:
    """Why the engine does not take a lone quantize / dequantize (None: it does).

    It takes those between the values the blocks and the f32 ops exchange; not the parts
    of a block another target may still take whole (a dequantized constant, a dequantize
    feeding a conv/dense/matmul, a quantize closing a block), so that a block dnnl declines
    stays whole for ccompiler's int8 kernel."""
    folded = isinstance(op, nn.DequantizeOp) and _folded_reason(op) is None
    reason = None if folded else lone_qdq(op)
    if reason is not None:
        return reason
    if any(d <= 0 for d in nn.shape_of(op.operands[0].type)):
        return "a dynamic or empty shape"
    if isinstance(op, nn.DequantizeOp):
        if isinstance(op.x, OpResult) and isinstance(op.x.op, nn.ConstantOp):
            users = [u for u in op.result.uses]
            if not users or not all(
                isinstance(u.operation, nn.BatchNormOp) and u.index >= 1
                and batch_norm_reason(u.operation) is None
                for u in users
            ):
                return "a dequantized constant (weights or bias of a block)"
            return None
        if any(isinstance(u.operation, GEMMS) for u in op.result.uses):
            return "the input of a conv2d, dense or matmul (a block's)"
    elif isinstance(qdq_block(op), QBlock):
        return "it closes a block"
    return None


def _folded_reason(op: nn.DequantizeOp) -> str | None:
    """Why the engine cannot dequantize this constant once at init (None: it can): i8/ui8
    as lone_qdq says, or i32 with zero point 0 (a batch-norm shift)."""
    if not (isinstance(op.x, OpResult) and isinstance(op.x.op, nn.ConstantOp)):
        return "not a constant"
    if _dtype(op, 0) != "i32":
        return lone_qdq(op)
    zp = op.zero_point
    if op.attr_values()["block_size"] or not (
        isinstance(zp, OpResult) and isinstance(zp.op, nn.ConstantOp)
        and isinstance(op.scale, OpResult) and isinstance(op.scale.op, nn.ConstantOp)
    ):
        return "scale or zero point computed, or blocked"
    if zp.op.ndarray().any():
        return "an i32 zero point other than 0"
    return None


def _dequantized_constant(v: Any) -> bool:
    """A dequantize of a constant the engine folds at init: the op, or (after merge-composite)
    the `dnnl.dequantize` composite made of it (accepted by `lone_reason` already)."""
    if not isinstance(v, OpResult):
        return False
    op = v.op
    if isinstance(op, nn.DequantizeOp):
        return _folded_reason(op) is None
    if isinstance(op, CompositeOp) and op.composite.data == "dnnl.dequantize":
        inner = [o for o in op.body.block.ops if isinstance(o, nn.DequantizeOp)]
        if len(inner) != 1:
            return False
        x = inner[0].x
        if isinstance(x, BlockArgument):
            x = op.operands[x.index]
        return isinstance(x, OpResult) and isinstance(x.op, nn.ConstantOp)
    return False


def batch_norm_reason(op: Operation) -> str | None:
    """The f32 engine's reason (support.py), except that parameters which are dequantized
    constants count as constants: the engine dequantizes them once at init (the light
    models quantized by onnxruntime keep batch_norm in float with QDQ parameters)."""
    from byoc.targets.dnnl.support import unsupported_reason

    reason = unsupported_reason(op)
    if reason == "batch_norm with computed parameters" and all(
        _dequantized_constant(v) or support_is_constant(v) for v in op.operands[1:]
    ):
        return None
    return reason


def support_is_constant(v: Any) -> bool:
    from byoc.targets.dnnl.support import is_constant

    return is_constant(v)


def check_lone(match: Match) -> bool:
    return lone_reason(match.root) is None


def pattern_table() -> list[tuple[object, ...]]:
    """The dnnl int8 entries: qdq.py's block patterns under this module's check, then its
    lone quantize / dequantize under `lone_reason`."""
    table = qdq_pattern_table()
    blocks = [(name, pattern, check) for name, pattern, *_ in table if name in INT8_COMPOSITES]
    lone = [(name, pattern, check_lone) for name, pattern, *_ in table if name in LONE]
    return blocks + lone


__all__ = [
    "INT8_COMPOSITES",
    "LONE",
    "batch_norm_reason",
    "lone_reason",
    "block_reason",
    "COMPENSATED_BOUND",
    "check",
    "effective_isa",
    "exact_accumulator",
    "int8_unavailable_reason",
    "pattern_table",
]
