"""Support predicates: which ops a target takes, as composable Python callables.

A target declares its support as a table op name -> predicate, which
registering the target puts in the op registry under `target.<name>` (TVM's
`FTVMAnnotateTarget`):

    Target(name="mytarget", support={
        "nn.add": dtypes(f32, i32),
        "nn.conv2d": dtypes(f32) & attr_is(groups=1),
    })

A predicate gets the typed op and returns a bool, so it can reject an element
type, a rank or an attribute value. Predicates combine with `&`, `|` and `~`
(torch.fx's `OperatorSupport` chains), and print what they check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation

from byoc.dialects.nn import NNOp
from byoc.op_registry import register_op_attr


@dataclass(frozen=True)
class Predicate:
    """A named test on a typed op; composable with `&`, `|`, `~`."""

    fn: Callable[[Operation], bool]
    description: str

    def __call__(self, op: Operation) -> bool:
        return bool(self.fn(op))

    def __and__(self, other: Predicate) -> Predicate:
        return Predicate(
            lambda op: self(op) and other(op), f"({self.description} and {other.description})"
        )

    def __or__(self, other: Predicate) -> Predicate:
        return Predicate(
            lambda op: self(op) or other(op), f"({self.description} or {other.description})"
        )

    def __invert__(self) -> Predicate:
        return Predicate(lambda op: not self(op), f"not {self.description}")

    def __repr__(self) -> str:
        return f"Predicate({self.description})"


def always() -> Predicate:
    """Every instance of the op is supported."""
    return Predicate(lambda op: True, "always")


def _element_types(op: Operation) -> list[Attribute]:
    types = [v.type for v in op.operands] + [r.type for r in op.results]
    return [t.element_type for t in types if isinstance(t, TensorType)]


def dtypes(*element_types: Attribute) -> Predicate:
    """Every operand and result has one of these element types."""
    allowed = frozenset(element_types)
    names = ", ".join(str(t) for t in element_types)
    return Predicate(
        lambda op: all(t in allowed for t in _element_types(op)), f"element types in {{{names}}}"
    )


def value_reason(
    op: Operation, check: Callable[[str, int, TensorType[Any]], str | None]
) -> str | None:
    """Why a target cannot take `op` because of one of its values, or None: the first
    operand, then result, that is not a ranked tensor, or that `check(kind, index, type)`
    rejects (kind is "operand" or "result", the words its reason names the value with)."""
    for kind, values in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(values):
            t = v.type
            if not isinstance(t, TensorType):
                return f"{kind} #{i} of '{op.name}' is not a ranked tensor"
            why = check(kind, i, t)
            if why is not None:
                return why
    return None


def max_rank(rank: int) -> Predicate:
    """No operand or result has more than `rank` dimensions."""

    def check(op: Operation) -> bool:
        types = [v.type for v in op.operands] + [r.type for r in op.results]
        return all(t.get_num_dims() <= rank for t in types if isinstance(t, TensorType))

    return Predicate(check, f"rank <= {rank}")


def attrs_match(op: Operation, expected: Mapping[str, Any]) -> bool:
    """Each named property of `op` equals the value, or satisfies it when it is a callable."""
    if not expected:
        return True
    if not isinstance(op, NNOp):
        return False
    values = op.attr_values()
    for key, want in expected.items():
        if key not in values:
            return False
        got = values[key]
        if callable(want):
            if not want(got):
                return False
        elif got != (tuple(want) if isinstance(want, list) else want):
            return False
    return True


def attr_is(**expected: Any) -> Predicate:
    """Each named property equals the value, or satisfies it when the value is a callable.

    Values are compared as `NNOp.attr_values()` gives them (ints, floats, tuples).
    """

    def check(op: Operation) -> bool:
        return attrs_match(op, expected)

    shown = ", ".join(f"{k}={'<fn>' if callable(v) else v!r}" for k, v in expected.items())
    return Predicate(check, shown)


def register_support(
    target: str, table: Mapping[str, Callable[[Operation], bool]], level: int = 10
) -> None:
    """Register each predicate of `table` as `target.<target>` of its op."""
    for op_name, predicate in table.items():
        register_op_attr(op_name, f"target.{target}", predicate, level=level)


__all__ = [
    "Predicate",
    "always",
    "attr_is",
    "dtypes",
    "max_rank",
    "register_support",
    "value_reason",
]
