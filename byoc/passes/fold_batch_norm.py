"""`fold-batch-norm`: an inference batch_norm after a conv/dense becomes its weights and bias.

Contract. Expects nn IR. Matches

    %y = nn.conv2d %x, %w            (or nn.conv2d_transpose, NCHW data and OIHW weight; or
                                      nn.dense; %w an nn.constant)
    %b = nn.bias_add %y, %c          (optional: bias_add on the channel axis, or nn.add of a
                                      per-channel constant such as (C), (C,1,1), (1,C,1,1), (1))
    %z = nn.batch_norm %b, %gamma, %beta, %mean, %var   (all four nn.constant; its axis is
                                      the channel axis: 1 for the convs, the last for dense)

where every value but the last has exactly one use and every constant is f32, and
rewrites it to

    %y2 = nn.conv2d %x, %w2          (same op, same properties; output channel o of the
                                      weight times s[o])
    %z2 = nn.bias_add %y2, %c2 {axis = <channel axis>}     (%c2 = (c - mean) * s + beta)

with s = gamma / sqrt(var + epsilon), when every new value is finite (not with a zero
variance: the batch_norm's inf/NaN stay where the reference puts them). The new
constants are computed in float64 from the f32 ones and rounded to f32 once; constants
left without uses are erased. The rewritten ops keep the discardable attributes (tags)
of the ops they replace. Ops inside a `byoc.composite` (its body is what its name says)
and inside partitions (functions with `byoc.compiler`) are left alone, like the
partitioning passes do. Idempotent: no foldable batch_norm is left.

    %y = nn.conv2d %x, %w                          %w2 = nn.constant <w * s per row>
    %b = nn.bias_add %y, %c            ==>         %y2 = nn.conv2d %x, %w2
    %z = nn.batch_norm %b, %g, %be, %m, %v         %c2 = nn.constant <(c - m) * s + be>
                                                   %z2 = nn.bias_add %y2, %c2

Numbers. The result differs from anchor-then-batch_norm by rounding only (folding moves
the normalisation's roundings onto each weight). With k the terms of one output of the
anchor (`tests/bounds.py`), both are within gamma(k + 8) * M of the exact value, M =
|s| * (sum |x * w| + |c| + |mean|) + |beta| per element: k roundings of the sum, and at
most 8 of the bias, the scale (sqrt, divide) and the affine step. So the two differ by at
most 2 * gamma(k + 8) * M, which `tests/passes/test_fold_batch_norm.py` checks on random
convs (groups, depthwise, transposed, dense).

Why: the `dnnl` target runs it before partitioning (`Target.prepare`), so the weights
oneDNN reorders once at init already hold the normalisation (onnxruntime's
Conv+BatchNormalization fusion; TVM's FoldScaleAxis). Other targets do not ask for it:
the C kernels apply batch_norm in the conv's epilogue; a build with dnnl among its
targets folds for the whole module, so a ccompiler partition there gets folded convs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from byoc.dialects import nn
from byoc.dialects.byoc import COMPILER_ATTR, CompositeOp

Array = np.ndarray[Any, Any]


def _const(v: SSAValue) -> Array | None:
    """The f32 data of an nn.constant value, else None."""
    if not isinstance(v, OpResult) or not isinstance(v.op, nn.ConstantOp):
        return None
    t = v.type
    if not isinstance(t, TensorType) or t.element_type != f32:
        return None
    return v.op.ndarray()


def _sole_use(v: SSAValue) -> bool:
    return v.has_one_use()


def _left_alone(op: Operation) -> bool:
    """Inside a composite body or a partition function."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, CompositeOp):
            return True
        if isinstance(parent, FuncOp) and COMPILER_ATTR in parent.attributes:
            return True
        parent = parent.parent_op()
    return False


def _per_channel(c: Array, rank: int, axis: int, channels: int) -> Array | None:
    """A constant added along `axis` of a rank-`rank` tensor, as (channels,); else None."""
    if c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + c.shape
    if any(d != 1 for i, d in enumerate(shape) if i != axis) or shape[axis] not in (1, channels):
        return None
    return np.broadcast_to(c.reshape(-1), (channels,))


ANCHORS = (nn.Conv2DOp, nn.Conv2DTransposeOp, nn.DenseOp)


def _channel_axis(anchor: Operation, rank: int) -> int | None:
    """The axis of the anchor's result that its weight's rows produce (None: a layout the
    pass does not fold)."""
    if isinstance(anchor, nn.DenseOp):
        return rank - 1
    attrs = anchor.attr_values()  # type: ignore[attr-defined]
    if attrs.get("data_layout", "NCHW") != "NCHW" or attrs.get("kernel_layout", "OIHW") != "OIHW":
        return None
    return 1


def _bias_of(op: Operation, y: SSAValue, axis: int, channels: int) -> Array | None:
    """The per-channel bias `op` adds to the anchor's result `y`, or None if it is not one."""
    rank = len(y.type.get_shape())  # type: ignore[attr-defined]
    if isinstance(op, nn.BiasAddOp) and op.data is y:
        c = _const(op.bias)
        return c if c is not None and op.attr_values()["axis"] % rank == axis else None
    if isinstance(op, nn.AddOp) and op.results[0].type == y.type:
        lhs, rhs = op.operands
        other = rhs if lhs is y else lhs if rhs is y else None
        if other is None or other is y:
            return None
        c = _const(other)
        return None if c is None else _per_channel(c, rank, axis, channels)
    return None


def _scaled(anchor: Operation, w: Array, scale: Array) -> Array:
    """The anchor's weight with output channel o multiplied by scale[o] (in float64)."""
    w64 = w.astype(np.float64)
    if isinstance(anchor, nn.Conv2DTransposeOp):
        # (C, O/groups, KH, KW): input channel ci of group ci // (C/groups) feeds outputs
        # (ci // (C/groups)) * O/groups + oo
        groups = anchor.attr_values()["groups"]
        per_group = scale.reshape(groups, w.shape[1])
        return w64 * np.repeat(per_group, w.shape[0] // groups, axis=0)[:, :, None, None]
    # conv2d (O, C/groups, KH, KW) and dense (N, K): rows are output channels
    return w64 * scale.reshape((-1,) + (1,) * (w.ndim - 1))


class FoldIntoConv(RewritePattern):
    """conv2d / conv2d_transpose / dense [-> bias] -> batch_norm, all constant, into the
    anchor with scaled weights -> bias_add."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        if _left_alone(bn):
            return
        attrs = bn.attr_values()
        shape = tuple(bn.data.type.get_shape())  # type: ignore[attr-defined]
        rank = len(shape)
        axis = attrs["axis"] % rank
        params = [_const(v) for v in bn.operands[1:]]
        if any(p is None for p in params):
            return
        gamma, beta, mean, var = (np.asarray(p, dtype=np.float64) for p in params)  # type: ignore[arg-type]
        value = bn.data
        if not isinstance(value, OpResult) or not _sole_use(value):
            return
        bias_op: Operation | None = None
        channels = shape[axis]
        bias = np.zeros(channels)
        if not isinstance(value.op, ANCHORS):
            bias_op = value.op
            if not isinstance(bias_op, nn.BiasAddOp | nn.AddOp):
                return
            anchor_value = next(
                (v for v in bias_op.operands if isinstance(v, OpResult) and isinstance(v.op, ANCHORS)),
                None,
            )
            if anchor_value is None or not _sole_use(anchor_value):
                return
            found = _bias_of(bias_op, anchor_value, axis, channels)
            if found is None:
                return
            bias = np.asarray(found, dtype=np.float64)
            value = anchor_value
        anchor = value.op
        if not isinstance(anchor, ANCHORS) or _channel_axis(anchor, rank) != axis:
            return
        w = _const(anchor.operands[1])
        if w is None:
            return
        with np.errstate(all="ignore"):
            scale = gamma / np.sqrt(var + float(np.float32(attrs["epsilon"])))
            folded_w = _scaled(anchor, w, scale).astype(np.float32)
            folded_b = ((bias - mean) * scale + beta).astype(np.float32)
        if not (np.isfinite(folded_w).all() and np.isfinite(folded_b).all()):
            return  # a zero variance (or an overflow): the batch_norm's inf/NaN stay as they are
        new_w = nn.ConstantOp.from_array(folded_w)
        new_b = nn.ConstantOp.from_array(folded_b)
        new_anchor = type(anchor).create(
            operands=[anchor.operands[0], new_w.result],
            result_types=[anchor.results[0].type],
            properties=dict(anchor.properties),
            attributes=dict(anchor.attributes),
        )
        biased = nn.BiasAddOp.build(new_anchor, new_b, axis=axis, attributes=dict(bn.attributes))
        inputs = [*bn.operands[1:], anchor.operands[1], *(bias_op.operands if bias_op else ())]
        dead: list[Operation] = [op for op in (bias_op, anchor) if op is not None]
        for v in inputs:
            if isinstance(v, OpResult) and isinstance(v.op, nn.ConstantOp) and v.op not in dead:
                dead.append(v.op)
        rewriter.insert([new_w, new_anchor, new_b, biased], InsertPoint.before(bn))
        rewriter.replace(bn, [], [biased.results[0]])
        for op in dead:  # producers first: the bias op, the anchor, then their constants
            if all(r.first_use is None for r in op.results):
                rewriter.erase(op)


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold each inference batch_norm with constant parameters into the conv2d, conv2d_transpose or dense before it."""

    name: ClassVar[str] = "fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldIntoConv(), apply_recursively=True).rewrite_module(op)


__all__ = ["FoldBatchNormPass", "FoldIntoConv"]
