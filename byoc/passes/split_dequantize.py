"""`split-dequantize`: every use of a shared `nn.dequantize` gets its own copy.

Contract. Expects a module of nn ops. For each `nn.dequantize` with more than one use, every
use but the first is rewired to a fresh clone of it (same operands, properties and
attributes), inserted right after the original. Guarantees: the same numbers (the op is pure);
afterwards every `nn.dequantize` has at most one use; idempotent.

Why: onnxruntime's quantizer writes one DequantizeLinear per tensor, shared by all its
consumers, while a QDQ composite (`dequantize -> conv2d -> quantize`, byoc/targets/qdq.py)
must own its dequantize. This is onnxruntime's `DedicatedQDQPair`, done after import. The
`byoc` pipeline runs it first.

    %d = nn.dequantize %q, %s, %z ...            %d = nn.dequantize %q, %s, %z ...
    %a = nn.conv2d %d, %w ...           ==>      %d2 = nn.dequantize %q, %s, %z ...
    %b = nn.add %d, %c ...                       %a = nn.conv2d %d, %w ...
                                                 %b = nn.add %d2, %c ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from byoc.dialects import nn


@dataclass
class SplitSharedDequantize(RewritePattern):
    """A dequantize with several uses: the first use in program order keeps it, each later
    one gets a copy, inserted after it in the same order."""

    order: dict[Operation, int]
    """Program order of the module's ops before the rewrite (the uses are among them)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.DequantizeOp, rewriter: PatternRewriter) -> None:
        uses = sorted(op.result.uses, key=lambda u: (self.order[u.operation], u.index))
        anchor: Operation = op
        for use in uses[1:]:
            copy = rewriter.insert(op.clone(), InsertPoint.after(anchor))
            rewriter.replace_uses_with_if(op.result, copy.result, lambda u, use=use: u == use)
            anchor = copy


@dataclass(frozen=True)
class SplitDequantizePass(ModulePass):
    """Give every use of a shared nn.dequantize its own copy."""

    name: ClassVar[str] = "split-dequantize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not any(isinstance(o, nn.DequantizeOp) and _shared(o) for o in op.walk()):
            return  # nothing to split (most modules): no program order, no rewrite walk
        order = {o: i for i, o in enumerate(op.walk())}
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SplitSharedDequantize(order)], dce_enabled=False)
        ).rewrite_module(op)


def _shared(op: nn.DequantizeOp) -> bool:
    uses = iter(op.result.uses)
    return next(uses, None) is not None and next(uses, None) is not None


__all__ = ["SplitDequantizePass", "SplitSharedDequantize"]
