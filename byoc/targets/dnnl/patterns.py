"""The dnnl pattern table: a conv2d, conv2d_transpose, dense or matmul with the ops oneDNN
applies to its output in the same pass (post-ops).

| composite                | matches                                                        |
|--------------------------|----------------------------------------------------------------|
| `dnnl.<a>_bias_sum`      | a -> bias -> [act] -> add(residual) -> [act]                   |
| `dnnl.<a>_sum`           | a -> [act] -> add(residual) -> [act]                           |
| `dnnl.<a>_bias_act`      | a -> bias -> act                                               |
| `dnnl.<a>_bias`          | a -> bias                                                      |
| `dnnl.<a>_act`           | a -> act                                                       |

for `<a>` in conv2d, conv2d_transpose, dense, matmul (earlier rows and anchors win).
`bias` is `nn.bias_add` or `nn.add` of a per-channel constant, folded into the
primitive's bias (and a per-channel multiply into the weights) once, by the engine at
init (from the graph's constants: the same plan whether the ops arrive as a composite or
side by side). An inference `nn.batch_norm` after the anchor is folded before
partitioning by the `fold-batch-norm` pass the target's build runs (`Target.prepare`),
so it arrives here as a bias_add. `act` is relu, leaky_relu, clip, sigmoid,
tanh, hard_swish, hard_sigmoid or gelu (the erf form ONNX exporters write:
`x * (erf(x / c) + 1) * 0.5`); each becomes an eltwise post-op; `add(residual)` a sum
post-op (in place over the residual when nothing else reads it) or a binary post-op.

The composites name what oneDNN fuses; the engine reads their bodies node by node and
fuses the same chains in partitions that hold the ops side by side, so a composite is
never required for speed. Each entry's check (`check`) accepts a match only if every op
in it is one the engine takes (`support.unsupported_reason`) and the bias is per output
channel.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import OpResult, SSAValue

from byoc.targets.dnnl.support import is_supported
from byoc.targets.patterns import Match, Pattern, is_constant, is_op, per_channel, wildcard

ANCHORS = ("conv2d", "conv2d_transpose", "dense", "matmul")

ACTIVATIONS = (
    "nn.relu",
    "nn.leaky_relu",
    "nn.clip",
    "nn.sigmoid",
    "nn.tanh",
    "nn.hard_swish",
    "nn.hard_sigmoid",
)


def _anchor(name: str) -> Pattern:
    return is_op(f"nn.{name}")(wildcard(), wildcard()).named("anchor")


def _bias(p: Pattern) -> Pattern:
    """bias_add / add of a constant (a batch_norm after the anchor is already one: the
    dnnl target's build folds it first, `fold-batch-norm`)."""
    return is_op("nn.bias_add")(p, is_constant()) | is_op("nn.add")(p, is_constant())


def gelu(x: Pattern) -> Pattern:
    """x * (erf(x / c) + 1) * 0.5, as torch and the ONNX exporters write it (x used twice)."""
    inner = is_op("nn.add")(is_op("nn.erf")(is_op("nn.divide")(x, is_constant())), is_constant())
    return is_op("nn.multiply")(is_op("nn.multiply")(x, inner), is_constant())


def _act(p: Pattern) -> Pattern:
    alt = gelu(p)
    for name in ACTIVATIONS:
        alt = alt | is_op(name)(p)
    return alt


def _sum(p: Pattern) -> Pattern:
    """[act] -> add(residual) -> [act]."""
    added = is_op("nn.add")(p.optional(_act), wildcard().named("residual"))
    return added.optional(_act)


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _is_const(v: SSAValue) -> bool:
    return isinstance(v, OpResult) and v.op.name == "nn.constant"


def check(match: Match) -> bool:
    """Every op is one the engine takes (erf only inside a gelu); a bias is per output
    channel; the residual has the result's shape and is computed (a constant is a bias)."""
    anchor = match.op("anchor")
    out = _shape(anchor.results[0])
    rank = len(out)
    axis = 1 if anchor.name.startswith("nn.conv2d") else rank - 1
    members = {id(op) for op in match.ops}
    for op in match.ops:
        if op.name in ("nn.constant", "nn.erf"):
            continue
        if not is_supported(op):
            return False
        if op.name == "nn.bias_add":
            if op.attr_values()["axis"] % rank != axis:  # type: ignore[attr-defined]
                return False
    value = anchor.results[0]
    users = [u.operation for u in value.uses if id(u.operation) in members]
    if len(users) == 1 and users[0].name == "nn.add":
        other = [v for v in users[0].operands if v is not value]
        if other and _is_const(other[0]) and not per_channel(other[0], rank, axis, out[axis]):
            return False
    if "residual" in match.captures:
        residual = match["residual"]
        if _is_const(residual) or _shape(residual) != _shape(match.root.results[0]):
            return False
    return True


def pattern_table() -> list[tuple[object, ...]]:
    """(name, pattern, check) entries; the composites are `dnnl.<name>`."""
    table: list[tuple[object, ...]] = []
    for a in ANCHORS:
        table += [
            (f"{a}_bias_sum", _sum(_bias(_anchor(a))), check),
            (f"{a}_sum", _sum(_anchor(a)), check),
            (f"{a}_bias_act", _act(_bias(_anchor(a))), check),
            (f"{a}_bias", _bias(_anchor(a)), check),
            (f"{a}_act", _act(_anchor(a)), check),
        ]
    return table


__all__ = ["ACTIVATIONS", "ANCHORS", "check", "gelu", "pattern_table"]
