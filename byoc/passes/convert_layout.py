"""convert-layout: rewrite conv2d, the pools and batch_norm to a preferred layout (TVM's ConvertLayout).

Contract:
- Options: `layouts` names the wanted layouts (`NHWC`, `NCHW`, and for conv2d weights
  `HWIO`, `OIHW`; a data layout alone implies its usual kernel layout: NHWC -> HWIO,
  NCHW -> OIHW), or `targets` takes them from the first target's `preferred_layouts`
  (`byoc.targets.Target`). Exactly one of the two.
- Every top-level `nn.conv2d`, `nn.max_pool2d`, `nn.avg_pool2d`, `nn.global_*_pool2d` and
  `nn.batch_norm` (4-D, axis on the channel) of each host function whose layout differs is
  rebuilt in the wanted layout, with an `nn.transpose` on its data operand and one on its
  result back to the old layout, so the function computes the same values. A constant
  weight is transposed at compile time (a new `nn.constant`), any other weight by an
  `nn.transpose`.
- Then transposes move towards each other and cancel: a transpose feeding a unary
  elementwise op, a bias_add (its axis is remapped) or a binary op whose other operand
  is the same transpose or a scalar moves below it; two transposes in a row become one,
  or nothing when they compose to the identity. Transposes that meet no partner stay
  at the edges of the converted region (the function's inputs and outputs keep their
  types).

    // convert-layout{layouts=NHWC}
    %0 = nn.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %1 = nn.relu %0 : tensor<1x4x6x6xf32>
    %2 = nn.max_pool2d %1 {pool_size = array<i64: 2, 2>} : ...
    // becomes
    %t = nn.transpose %x {axes = array<i64: 0, 2, 3, 1>} : ...
    %w2 = nn.constant ... : tensor<3x3x3x4xf32>                  // the weight, as HWIO
    %0 = nn.conv2d %t, %w2 {data_layout = "NHWC", kernel_layout = "HWIO"} : ...
    %1 = nn.relu %0 : tensor<1x6x6x4xf32>
    %2 = nn.max_pool2d %1 {data_layout = "NHWC", pool_size = ...} : ...
    %3 = nn.transpose %2 {axes = array<i64: 0, 3, 1, 2>} : ...   // back to NCHW
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from byoc.dialects import nn
from byoc.dialects.nn.layers import DATA_LAYOUTS, KERNEL_LAYOUTS, layout_of
from byoc.passes.options import as_names
from byoc.passes.scope import host_functions
from byoc.targets import get_target

PERMS: dict[tuple[str, str], tuple[int, ...]] = {
    ("NCHW", "NHWC"): (0, 2, 3, 1),
    ("NHWC", "NCHW"): (0, 3, 1, 2),
    ("OIHW", "HWIO"): (2, 3, 1, 0),
    ("HWIO", "OIHW"): (3, 2, 0, 1),
}
"""(from, to) -> the transpose axes that turn a tensor in `from` into `to`."""

KERNEL_FOR = {"NHWC": "HWIO", "NCHW": "OIHW"}

LAYOUT_OPS: tuple[type[nn.NNOp], ...] = (
    nn.Conv2DOp,
    nn.MaxPool2DOp,
    nn.AvgPool2DOp,
    nn.GlobalAvgPool2DOp,
    nn.GlobalMaxPool2DOp,
    nn.BatchNormOp,
)


def wanted_layouts(layouts: Sequence[str]) -> dict[str, str]:
    """`layouts` option entries -> {"data_layout": ..., "kernel_layout": ...}."""
    out: dict[str, str] = {}
    for entry in layouts:
        if entry in DATA_LAYOUTS:
            out["data_layout"] = entry
        elif entry in KERNEL_LAYOUTS:
            out["kernel_layout"] = entry
        else:
            raise ValueError(
                f"layout '{entry}' is not one of {', '.join(DATA_LAYOUTS + KERNEL_LAYOUTS)}"
            )
    if "data_layout" not in out:
        raise ValueError("convert-layout needs a data layout (NCHW or NHWC) in 'layouts'")
    out.setdefault("kernel_layout", KERNEL_FOR[out["data_layout"]])
    return out


def _compose(first: Sequence[int], second: Sequence[int]) -> tuple[int, ...]:
    """The axes of transpose(transpose(x, first), second) as one transpose of x."""
    return tuple(first[a] for a in second)


def _axes(op: nn.TransposeOp) -> tuple[int, ...]:
    axes = op.attr_values()["axes"]
    rank = len(nn.shape_of(op.data.type))
    return tuple(a % rank for a in axes) if axes else tuple(reversed(range(rank)))


def _transpose(block: Block, before: Operation, value: SSAValue, axes: Sequence[int]) -> SSAValue:
    op = nn.TransposeOp.build(value, axes=tuple(axes))
    block.insert_op_before(op, before)
    return op.results[0]


@dataclass(frozen=True)
class ConvertLayoutPass(ModulePass):
    """Rewrite layout-carrying ops to the wanted layouts; transposes at the edges cancel."""

    name: ClassVar[str] = "convert-layout"

    layouts: tuple[str, ...] = ()
    """Wanted layouts: a data layout (NCHW, NHWC), optionally a kernel layout (OIHW, HWIO)."""

    targets: tuple[str, ...] = ()
    """Instead of `layouts`: the first target's `preferred_layouts`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "layouts", as_names(self.layouts))
        object.__setattr__(self, "targets", as_names(self.targets))
        if bool(self.layouts) == bool(self.targets):
            raise ValueError("convert-layout takes either 'layouts' or 'targets'")
        self.wanted()

    def wanted(self) -> dict[str, str]:
        if self.targets:
            return dict(get_target(self.targets[0]).preferred_layouts)
        return wanted_layouts(self.layouts)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        want = self.wanted()
        for func in host_functions(op):
            for block in func.body.blocks:
                convert_block(block, want)
            cancel_transposes(func)


def convert_block(block: Block, want: dict[str, str]) -> int:
    """Rebuild every layout op of `block` in `want`, with transposes around it."""
    converted = 0
    for op in list(block.ops):
        if not isinstance(op, LAYOUT_OPS):
            continue
        have = layout_of(op)
        data_from, data_to = have["data_layout"], want["data_layout"]
        kernel_from = have.get("kernel_layout")
        kernel_to = want.get("kernel_layout", kernel_from) if kernel_from else None
        if data_from == data_to and kernel_from == kernel_to:
            continue
        data_t = op.operands[0].type
        if not isinstance(data_t, TensorType) or data_t.get_num_dims() != 4:
            continue
        attrs: dict[str, Any] = op.attr_values()
        if isinstance(op, nn.BatchNormOp):
            if attrs["axis"] % 4 != (1 if data_from == "NCHW" else 3):
                continue  # not the channel axis: not a layout this pass knows
            attrs["axis"] = 1 if data_to == "NCHW" else 3
        operands: list[SSAValue] = list(op.operands)
        if data_from != data_to:
            operands[0] = _transpose(block, op, operands[0], PERMS[(data_from, data_to)])
        if kernel_from is not None and kernel_to is not None and kernel_from != kernel_to:
            perm = PERMS[(kernel_from, kernel_to)]
            weight = operands[1].owner
            if isinstance(weight, nn.ConstantOp):
                const = nn.ConstantOp.from_array(np.ascontiguousarray(weight.ndarray().transpose(perm)))
                block.insert_op_before(const, op)
                operands[1] = const.result
            else:
                operands[1] = _transpose(block, op, operands[1], perm)
        attrs["data_layout"] = data_to
        if kernel_to is not None:
            attrs["kernel_layout"] = kernel_to
        defaults = type(op).prop_defaults()
        new = type(op).build(
            *operands,
            attributes=dict(op.attributes),
            **{k: v for k, v in attrs.items() if nn.from_python(v, defaults[k]) != defaults[k]},
        )
        block.insert_op_before(new, op)
        result = new.results[0]
        if data_from != data_to:
            back = nn.TransposeOp.build(result, axes=PERMS[(data_to, data_from)])
            block.insert_op_after(back, new)
            result = back.results[0]
        weight_op = op.operands[1].owner if len(op.operands) > 1 else None
        op.results[0].replace_all_uses_with(result)
        block.erase_op(op)
        if isinstance(weight_op, nn.ConstantOp) and weight_op.parent is block and not weight_op.results[0].uses:
            block.erase_op(weight_op)  # the OIHW copy, now that the HWIO one replaced it
        converted += 1
    return converted


def _single_use_transpose(value: SSAValue) -> nn.TransposeOp | None:
    owner = value.owner
    if isinstance(owner, nn.TransposeOp) and owner.results[0].has_one_use():
        return owner
    return None


def _is_scalar(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and all(d == 1 for d in t.get_shape())


def _in_function_body(op: Operation) -> bool:
    """Only the ops of a function's own blocks move: regions and composites keep theirs."""
    return isinstance(op.parent_op(), FuncOp)


class MergeTransposes(RewritePattern):
    """transpose(transpose(x, a), b) -> transpose(x, a then b), or x when that is the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.data.owner
        if not isinstance(inner, nn.TransposeOp) or not _in_function_body(op):
            return
        axes = _compose(_axes(inner), _axes(op))
        if axes == tuple(range(len(axes))):
            rewriter.replace(op, [], [inner.data])
        else:
            rewriter.replace(op, nn.TransposeOp.build(inner.data, axes=axes))
        if not inner.results[0].uses:
            rewriter.erase(inner)


class SinkTranspose(RewritePattern):
    """f(transpose(x)) -> transpose(f(x)) for an op that does not care about the layout: a
    unary elementwise op, a bias_add (its axis remapped), or a binary op whose other operand
    is the same transpose or a scalar."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: nn.UnaryOp | nn.BiasAddOp | nn.BinaryOp, rewriter: PatternRewriter
    ) -> None:
        first = _single_use_transpose(op.operands[0])
        if first is None or len(op.results) != 1 or not _in_function_body(op):
            return
        perm = _axes(first)
        operands: list[SSAValue] = [first.data]
        partner: nn.TransposeOp | None = None
        attrs = op.attr_values()
        if isinstance(op, nn.BiasAddOp):
            attrs["axis"] = perm[attrs["axis"] % len(perm)]
            operands.append(op.operands[1])
        elif isinstance(op, nn.BinaryOp):
            if op.operands[0].type != op.results[0].type:
                return  # the first operand broadcasts: its layout is not the result's
            other = op.operands[1]
            partner = _single_use_transpose(other)
            if partner is not None and _axes(partner) == perm:
                operands.append(partner.data)
            elif _is_scalar(other):
                partner = None
                operands.append(other)
            else:
                return
        elif len(op.operands) != 1 or not _layout_agnostic(op):
            return
        defaults = type(op).prop_defaults()
        moved = type(op).build(
            *operands,
            attributes=dict(op.attributes),
            **{k: v for k, v in attrs.items() if nn.from_python(v, defaults[k]) != defaults[k]},
        )
        back = nn.TransposeOp.build(moved.results[0], axes=perm)
        rewriter.replace(op, [moved, back], [back.results[0]])
        for dead in (first, partner):
            if dead is not None and dead.parent is not None and not dead.results[0].uses:
                rewriter.erase(dead)


def _layout_agnostic(op: nn.NNOp) -> bool:
    """An elementwise op with no property naming an axis: it commutes with a transpose."""
    names = type(op).prop_defaults()
    return op.KIND == "elementwise" and not any("axis" in n or "axes" in n for n in names)


def cancel_transposes(func: FuncOp) -> None:
    """Sink transposes through layout-agnostic ops; merge and cancel those that meet."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier([MergeTransposes(), SinkTranspose()], dce_enabled=False)
    ).rewrite_region(func.body)


__all__ = [
    "PERMS",
    "ConvertLayoutPass",
    "MergeTransposes",
    "SinkTranspose",
    "cancel_transposes",
    "convert_block",
    "wanted_layouts",
]
