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
from xdsl.passes import ModulePass

from byoc.dialects import nn


@dataclass(frozen=True)
class SplitDequantizePass(ModulePass):
    """Give every use of a shared nn.dequantize its own copy."""

    name: ClassVar[str] = "split-dequantize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        order = {id(o): i for i, o in enumerate(op.walk())}
        shared = [d for d in op.walk() if isinstance(d, nn.DequantizeOp) and len(list(d.result.uses)) > 1]
        for d in shared:
            # the first use in program order keeps the original; later ones get copies, in order
            uses = sorted(d.result.uses, key=lambda u: (order[id(u.operation)], u.index))[1:]
            block = d.parent_block()
            assert block is not None
            anchor = d
            for use in uses:
                copy = d.clone()
                block.insert_op_after(copy, anchor)
                anchor = copy
                use.operation.operands[use.index] = copy.result


__all__ = ["SplitDequantizePass"]
