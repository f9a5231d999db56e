"""`batch-take-dense`: dense ops of rows taken one at a time from one tensor become one dense
of the whole tensor.

Contract. Expects nn IR. Matches, in one block,

    %r_i = nn.take %x, %c_i {axis = a}   (%c_i an nn.constant scalar index; a not the last
                                          axis of %x, whose shape is static)
    %y_i = nn.dense %r_i, %w             (%w an nn.constant; the same %x, %w and a for every i)

when the distinct rows the group takes are at least half of %x's axis a, and rewrites it to

    %d = nn.dense %x, %w                 (one per group, right after %x and %w are defined)
    %y_i = nn.take %d, %c_i {axis = a}

Each row of %d is the dense of that row of %x, so the values are the same products and sums
(a kernel may sum in another order for another number of rows: rounding only). The takes
of %x left without uses are erased. Only the graph blocks of host functions (their own and
their `byoc.region`s', `byoc/passes/scope.py`) are rewritten: composite bodies and
partitions are left alone, as the partitioning passes leave them. Idempotent: a rewritten group has no dense of a take left.

    %r0 = nn.take %x, %c0                      %d = nn.dense %x, %w
    %y0 = nn.dense %r0, %w          ==>        %y0 = nn.take %d, %c0
    %r1 = nn.take %x, %c1                      %y1 = nn.take %d, %c1
    %y1 = nn.dense %r1, %w

Why: a recurrent net exported step by step (captcha_crnn's bidirectional LSTM: a Gather of
each time step, then its input projection as a Gemm with the same weight) reads the weight
once per step, a memory-bound product of one row each time; after the rewrite the weight is
read once per sequence, in one product of T rows (onnxruntime's LSTM computes X . W^T of
every step in one GEMM the same way). Fewer than half of the rows taken: the rows not
needed would cost more than the weight reads saved. The `ccompiler` target's build runs it
before partitioning (`Target.prepare`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.dialects import nn
from byoc.dialects.nn.types import DYNAMIC
from byoc.passes.scope import graph_blocks, host_functions

_Key = tuple[SSAValue, SSAValue, int]
"""(%x, %w, axis) of a group."""


def _row_index(take: nn.TakeOp) -> int | None:
    """The row a take of one constant scalar index reads (negative counted from the end),
    else None."""
    idx = take.indices
    if not isinstance(idx, OpResult) or not isinstance(idx.op, nn.ConstantOp):
        return None
    value = idx.op.ndarray()
    if value.ndim != 0:
        return None
    shape = take.data.type.get_shape()  # type: ignore[attr-defined]
    axis = take.attr_values()["axis"] % len(shape)
    row = int(value)
    return row + shape[axis] if row < 0 else row


def _group_key(dense: nn.DenseOp) -> _Key | None:
    """(%x, %w, axis) when `dense` reads one row taken from %x with a constant weight."""
    data, weight = dense.data, dense.weight
    if not isinstance(data, OpResult) or not isinstance(data.op, nn.TakeOp):
        return None
    if not isinstance(weight, OpResult) or not isinstance(weight.op, nn.ConstantOp):
        return None
    take = data.op
    x_type = take.data.type
    if not isinstance(x_type, TensorType) or DYNAMIC in x_type.get_shape():
        return None
    rank = len(x_type.get_shape())
    axis = take.attr_values()["axis"] % rank
    if axis == rank - 1 or _row_index(take) is None:
        return None
    return (take.data, weight, axis)


def _defined_at(v: SSAValue, block: Block) -> Operation | None:
    """The op of `block` defining `v`, None for an argument of `block`; raises KeyError when
    `v` is defined elsewhere."""
    if isinstance(v, OpResult):
        if v.op.parent_block() is not block:
            raise KeyError(v)
        return v.op
    if v.owner is not block:  # type: ignore[attr-defined]
        raise KeyError(v)
    return None


def _rewrite_group(block: Block, key: _Key, denses: list[nn.DenseOp]) -> None:
    x, w, axis = key
    try:
        defs = [_defined_at(x, block), _defined_at(w, block)]
    except KeyError:
        return
    ops = [op for op in defs if op is not None]
    after = max(ops, key=block.get_operation_index) if ops else None
    first = min(denses, key=block.get_operation_index)
    if after is not None and block.get_operation_index(after) > block.get_operation_index(first):
        return  # a dense before %x or %w is defined: not in this block's order
    whole = nn.DenseOp.build(x, w, attributes=dict(first.attributes))
    Rewriter.insert_op(whole, InsertPoint.after(after) if after else InsertPoint.at_start(block))
    dead: list[Operation] = []
    for dense in denses:
        take = dense.data.owner
        assert isinstance(take, nn.TakeOp)
        row = nn.TakeOp.build(whole, take.indices, axis=axis, attributes=dict(dense.attributes))
        Rewriter.replace_op(dense, row)
        if take not in dead:
            dead.append(take)
    for op in dead:
        if op.results[0].first_use is None:
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class BatchTakeDensePass(ModulePass):
    """Dense ops of rows taken from one tensor with one constant weight become one dense of the tensor."""

    name: ClassVar[str] = "batch-take-dense"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in host_functions(op):
            for block in list(graph_blocks(func)):
                groups: dict[_Key, list[nn.DenseOp]] = defaultdict(list)
                for dense in block.ops:
                    if isinstance(dense, nn.DenseOp):
                        key = _group_key(dense)
                        if key is not None:
                            groups[key].append(dense)
                for key, denses in groups.items():
                    x, _, axis = key
                    rows = {_row_index(d.data.owner) for d in denses}  # type: ignore[arg-type]
                    if 2 * len(rows) >= x.type.get_shape()[axis]:  # type: ignore[attr-defined]
                        _rewrite_group(block, key, denses)


__all__ = ["BatchTakeDensePass"]
