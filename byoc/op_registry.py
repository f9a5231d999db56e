"""The op registry: TVM's `RELAY_REGISTER_OP` / `OpRegEntry` / `Op::Get`, in Python.

A record per op (name, arity, argument descriptions, support level, pattern
kind, numpy reference) and per-op attributes keyed by name, with TVM's rules:

    register_op_attr("nn.conv2d", "target.ccompiler", predicate, level=10)

A higher level overrides a lower one; registering the same key for the same op
twice at the same level is an error; a lower level than the current one is
ignored. The `nn` records are made here from the dialect's op classes and the
numpy kernels (`_register_nn_ops`), once, on the first query.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PATTERN_KINDS = (
    "elementwise",
    "broadcast",
    "injective",
    "reduce",
    "out-elementwise-fusable",
    "opaque",
)


class OpRegistryError(KeyError):
    """Unknown op name, or an attribute registered twice at one level."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class Argument:
    name: str
    type: str
    description: str


@dataclass
class OpRecord:
    """What the registry knows of one op (TVM's OpRegEntry)."""

    name: str
    num_inputs: int
    """Number of operands; -1 for variadic."""
    arguments: tuple[Argument, ...]
    support_level: int
    pattern_kind: str
    reference: Callable[..., Any]
    """The numpy kernel (`byoc.interpreters.kernels`)."""
    op_class: type | None = None
    description: str = ""
    attrs: dict[str, tuple[Any, int]] = field(default_factory=dict)
    """key -> (value, level)."""


# support level as in TVM (1: basic nn, 2: conv/pool, 3: tensor transforms,
# 4: broadcast and reductions, 10: misc).
_LEVELS: dict[str, int] = {
    **dict.fromkeys(
        [
            "nn.add", "nn.subtract", "nn.multiply", "nn.divide", "nn.relu", "nn.sigmoid",
            "nn.tanh", "nn.exp", "nn.log", "nn.sqrt", "nn.dense", "nn.bias_add",
            "nn.batch_norm", "nn.softmax", "nn.concatenate", "nn.erf",
        ],
        1,
    ),
    **dict.fromkeys(
        [
            "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
            "nn.global_max_pool2d", "nn.pad", "nn.conv2d_transpose", "nn.lrn",
        ],
        2,
    ),
    **dict.fromkeys(
        [
            "nn.reshape", "nn.flatten", "nn.transpose", "nn.clip", "nn.abs", "nn.negative",
            "nn.leaky_relu", "nn.prelu", "nn.cast", "nn.hard_sigmoid", "nn.hard_swish",
            "nn.reciprocal", "nn.split", "nn.take",
        ],
        3,
    ),
    **dict.fromkeys(
        ["nn.maximum", "nn.minimum", "nn.power", "nn.reduce_mean", "nn.reduce_sum",
         "nn.reduce_max", "nn.matmul", "nn.strided_slice"],
        4,
    ),
    "nn.resize2d": 5,
    # ---- nn.math_ops and nn.logic_ops ----
    **dict.fromkeys(
        [
            "nn.sin", "nn.cos", "nn.tan", "nn.asin", "nn.acos", "nn.atan", "nn.sinh",
            "nn.cosh", "nn.asinh", "nn.acosh", "nn.atanh", "nn.floor", "nn.ceil", "nn.round",
            "nn.sign", "nn.is_nan", "nn.is_inf", "nn.softplus", "nn.softsign", "nn.mish",
            "nn.gelu", "nn.elu", "nn.selu", "nn.celu", "nn.thresholded_relu", "nn.swish",
            "nn.shrink", "nn.tile", "nn.broadcast_to", "nn.where", "nn.logical_not",
            "nn.bitwise_not", "nn.bitcast",
        ],
        3,
    ),
    **dict.fromkeys(
        [
            "nn.mod", "nn.bitwise_and", "nn.bitwise_or", "nn.bitwise_xor", "nn.bit_shift",
            "nn.equal", "nn.less", "nn.greater", "nn.less_equal", "nn.greater_equal",
            "nn.logical_and", "nn.logical_or", "nn.logical_xor", "nn.reduce_min",
            "nn.reduce_prod", "nn.reduce_l1", "nn.reduce_l2", "nn.reduce_sum_square",
            "nn.reduce_log_sum", "nn.reduce_log_sum_exp", "nn.argmax", "nn.argmin",
        ],
        4,
    ),
    **dict.fromkeys(["nn.cumsum", "nn.cumprod", "nn.topk", "nn.einsum", "nn.det"], 10),
}  # fmt: skip


_lock = threading.RLock()
_OPS: dict[str, OpRecord] = {}
_builtin_loaded = False


def _ensure_builtin() -> None:
    global _builtin_loaded
    if _builtin_loaded:
        return
    with _lock:
        if _builtin_loaded:
            return
        _builtin_loaded = True
        _register_nn_ops()


def _register_nn_ops() -> None:
    """A record per `nn` op, from its IRDL definition and its numpy kernel."""
    from byoc.dialects.nn import NN_OPS
    from byoc.interpreters.kernels import KERNELS

    for name, cls in NN_OPS.items():
        op_def = cls.get_irdl_definition()
        variadic = any(type(d).__name__.startswith("Var") for _, d in op_def.operands)
        args = tuple(
            Argument(opname, "Tensor", f"operand '{opname}' of {name}") for opname, _ in op_def.operands
        )
        doc = (cls.__doc__ or "").strip().splitlines()
        register_op(
            OpRecord(
                name=name,
                num_inputs=-1 if variadic else len(args),
                arguments=args,
                support_level=_LEVELS.get(name, 10),
                pattern_kind=cls.KIND,
                reference=KERNELS[name],
                op_class=cls,
                description=doc[0] if doc else "",
            )
        )


def register_op(record: OpRecord) -> OpRecord:
    """Add an op record; registering a name twice is an error."""
    if record.pattern_kind not in PATTERN_KINDS:
        raise ValueError(
            f"pattern kind '{record.pattern_kind}' is not one of {', '.join(PATTERN_KINDS)}"
        )
    with _lock:
        if record.name in _OPS:
            raise OpRegistryError(f"op '{record.name}' is already registered")
        _OPS[record.name] = record
    return record


def get_op(name: str) -> OpRecord:
    """The record of `name`; an unknown name is an error suggesting the closest ones."""
    _ensure_builtin()
    record = _OPS.get(name)
    if record is None:
        close = difflib.get_close_matches(name, list(_OPS), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise OpRegistryError(f"operator '{name}' is not registered{hint}")
    return record


def list_op_names() -> list[str]:
    _ensure_builtin()
    return sorted(_OPS)


def register_op_attr(op_name: str, key: str, value: Any, level: int = 10) -> None:
    """Set attribute `key` of op `op_name` (TVM's `OpRegEntry::set_attr`).

    A higher level overrides; the same level twice is an error; a lower level is ignored.
    """
    record = get_op(op_name)
    with _lock:
        current = record.attrs.get(key)
        if current is not None:
            if current[1] == level:
                raise OpRegistryError(
                    f"attribute '{key}' of '{op_name}' is already registered at level {level}"
                )
            if current[1] > level:
                return
        record.attrs[key] = (value, level)


def get_op_attr(op_name: str, key: str, default: Any = None) -> Any:
    """The value of attribute `key` for `op_name`, or `default` if unset."""
    entry = get_op(op_name).attrs.get(key)
    return default if entry is None else entry[0]


def reset_op_attr(op_name: str, key: str) -> None:
    """Remove attribute `key` of `op_name` (TVM's `reset_attr`), e.g. between tests."""
    with _lock:
        get_op(op_name).attrs.pop(key, None)


def ops_with_attr(key: str) -> dict[str, Any]:
    """op name -> value for every op that has attribute `key`."""
    _ensure_builtin()
    return {name: rec.attrs[key][0] for name, rec in _OPS.items() if key in rec.attrs}
