"""What a cblas composite computes (GEMM -> per-channel affine steps -> ReLU), and the
pattern table that finds them."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation, OpResult, SSAValue

from byoc.dialects import nn
from byoc.targets.patterns import Match, Pattern, is_op, per_channel, wildcard

GEMM_OPS = ("nn.conv2d", "nn.dense", "nn.matmul")

MAX_STRIDE = 64
"""Largest conv2d stride the kernels take (byoc_cblas.h keeps one entry per stride phase)."""


# --------------------------------------------------------------------------
# What a composite computes: gemm -> per-channel affine steps -> relu
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class EpilogueStep:
    """One per-channel step after the GEMM: `shift` (y + v), `scale` (y * v) or `batch_norm`."""

    kind: str
    op: Operation
    operands: tuple[SSAValue, ...]
    """`(v,)` for shift and scale, `(gamma, beta, mean, var)` for batch_norm."""


@dataclass(frozen=True)
class GemmChain:
    gemm: Operation
    """The nn.conv2d, nn.dense or nn.matmul."""
    steps: tuple[EpilogueStep, ...]
    relu: Operation | None
    channels: int
    """Output channels: O of a conv2d, N of a dense."""
    axis: int
    """The channel axis of the GEMM's result."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _is_f32(op: Operation) -> bool:
    return all(
        isinstance(v.type, TensorType) and v.type.element_type == f32
        for v in (*op.operands, *op.results)
    )


def gemm_chain(root: Operation, members: Collection[Operation]) -> GemmChain | str:
    """The structure of the match (or composite body) `members` rooted at `root`, or why
    cblas does not take it."""
    inside = {id(op) for op in members}

    def member_operand(op: Operation) -> int | None:
        found = [
            i
            for i, v in enumerate(op.operands)
            if isinstance(v, OpResult)
            and id(v.op) in inside
            and not isinstance(v.op, nn.ConstantOp)
        ]
        return found[0] if len(found) == 1 else None

    relu = root if root.name == "nn.relu" else None
    steps: list[EpilogueStep] = []
    op = root
    if relu is not None:
        prev = relu.operands[0]
        if not isinstance(prev, OpResult) or id(prev.op) not in inside:
            return "a relu alone is not a cblas composite"
        op = prev.op
    while op.name not in GEMM_OPS:
        i = member_operand(op)
        if op.name in ("nn.bias_add", "nn.batch_norm") and i == 0:
            kind = "shift" if op.name == "nn.bias_add" else "batch_norm"
            steps.append(EpilogueStep(kind, op, tuple(op.operands[1:])))
        elif op.name in ("nn.add", "nn.multiply") and i is not None:
            kind = "shift" if op.name == "nn.add" else "scale"
            steps.append(EpilogueStep(kind, op, (op.operands[1 - i],)))
        else:
            return f"'{op.name}' is not a per-channel epilogue of a GEMM"
        prev = op.operands[i]
        assert isinstance(prev, OpResult)
        op = prev.op
    gemm = op
    steps.reverse()
    for o in (gemm, *(s.op for s in steps)):
        if o is not root and any(id(use.operation) not in inside for use in o.results[0].uses):
            return f"the result of '{o.name}' is also used outside (a kernel yields one value)"
    for o in (gemm, *(s.op for s in steps), *([relu] if relu else [])):
        if not _is_f32(o):
            return f"'{o.name}' is not f32 (cblas computes in f32 only)"
        if any(d <= 0 for v in (*o.operands, *o.results) for d in _shape(v)):
            return f"'{o.name}' has a dynamic or empty shape"
    out_shape = _shape(gemm.results[0])
    rank = len(out_shape)
    attrs = gemm.attr_values() if isinstance(gemm, nn.NNOp) else {}
    if gemm.name == "nn.conv2d":
        if attrs["groups"] != 1:
            return f"conv2d with groups={attrs['groups']} (cblas takes groups == 1)"
        if max(attrs["strides"]) > MAX_STRIDE:
            return (
                f"conv2d with strides {list(attrs['strides'])} (cblas takes at most {MAX_STRIDE})"
            )
        channels, axis = out_shape[1], 1
    elif gemm.name == "nn.dense":
        channels, axis = out_shape[-1], rank - 1
    else:
        if steps or relu is not None:
            return "cblas.matmul has no epilogue"
        return GemmChain(gemm, (), None, 0, 0)
    for s in steps:
        if _shape(s.op.results[0]) != out_shape:
            return f"'{s.op.name}' broadcasts the GEMM result to a larger shape"
        if s.op.name in ("nn.bias_add", "nn.batch_norm"):
            step_axis = s.op.attr_values()["axis"] % rank  # type: ignore[attr-defined]
            if step_axis != axis:
                return f"'{s.op.name}' on axis {step_axis}, not the channel axis {axis}"
        elif not per_channel(s.operands[0], rank, axis, channels):
            return (
                f"'{s.op.name}' operand of shape {list(_shape(s.operands[0]))} is not one value "
                f"per channel"
            )
    return GemmChain(gemm, tuple(steps), relu, channels, axis)


# --------------------------------------------------------------------------
# The pattern table
# --------------------------------------------------------------------------


def _epilogue(p: Pattern) -> Pattern:
    """p -> [bias_add | add] -> [batch_norm] -> [multiply] -> [add], each part optional."""
    p = p.optional(lambda q: is_op("nn.bias_add")(q, wildcard()) | is_op("nn.add")(q, wildcard()))
    p = p.optional(
        lambda q: is_op("nn.batch_norm")(q, wildcard(), wildcard(), wildcard(), wildcard())
    )
    p = p.optional(lambda q: is_op("nn.multiply")(q, wildcard()))
    return p.optional(lambda q: is_op("nn.add")(q, wildcard()))


def _relu(p: Pattern) -> Pattern:
    return is_op("nn.relu")(p)


def _check(*, epilogue: bool) -> Any:
    """The check of an entry: `gemm_chain` accepts the match (with at least one epilogue
    step when `epilogue`)."""

    def check(match: Match) -> bool:
        chain = gemm_chain(match.root, match.ops)
        return isinstance(chain, GemmChain) and bool(chain.steps) == epilogue

    check.__name__ = "check_with_epilogue" if epilogue else "check"
    return check


def pattern_table() -> list[tuple[object, ...]]:
    """(name, pattern, check) entries; the composites are `cblas.<name>`."""
    table: list[tuple[object, ...]] = []
    for op in ("conv2d", "dense"):

        def gemm(name: str = op) -> Pattern:
            return is_op(f"nn.{name}")(wildcard(), wildcard())

        table += [
            (f"{op}_bias_relu", _relu(_epilogue(gemm())), _check(epilogue=True)),
            (f"{op}_bias", _epilogue(gemm()), _check(epilogue=True)),
            (f"{op}_relu", _relu(gemm()), _check(epilogue=False)),
            (op, gemm(), _check(epilogue=False)),
        ]
    table.append(("matmul", is_op("nn.matmul")(wildcard(), wildcard()), _check(epilogue=False)))
    return table


__all__ = ["GEMM_OPS", "MAX_STRIDE", "EpilogueStep", "GemmChain", "gemm_chain", "pattern_table"]
