"""The dataflow pattern language of pattern tables (TVM's `relay.dataflow_pattern`).

    x, w, b = wildcard(), is_constant(), wildcard()
    conv = is_op("nn.conv2d", groups=1)(x, w).named("conv")
    pattern = is_op("nn.bias_add")(conv, b).optional(lambda p: is_op("nn.relu")(p))

| constructor                     | matches                                                    |
|---------------------------------|------------------------------------------------------------|
| `wildcard()`                    | any value; it becomes an operand of the composite          |
| `is_var(name=None)`             | a block argument (a function input), optionally by name    |
| `is_constant()`                 | a value made by `nn.constant`; it is copied *into* the composite |
| `is_op(name, **attrs)`          | an op with any operands (they become operands)             |
| `is_op(name, **attrs)(*args)`   | an op whose operands match `args` in order                 |
| `a \\| b`                        | `a`, else `b` (left first)                                 |
| `p.optional(f)`                 | `f(p) \\| p`: the longer match first                        |
| `p.has_attr({...})`             | `p`, and the defining op's properties equal the values     |
| `p.has_dtype(f32)`, `p.has_shape((1, 4))` | `p`, and the value's type agrees                 |
| `p.named("conv")`               | `p`, captured as `match["conv"]` / `match.op("conv")`      |

Attribute values compare with `NNOp.attr_values()` (ints, floats, tuples); a
callable value is a predicate on the property (`groups=lambda g: g > 1`).

Semantics kept from TVM: a pattern node used twice must match the same value
(`x` in `multiply(x, clip(add(x, c)))`); `nn.add` and `nn.multiply` match
their operands in either order; a constant matched by `is_constant()` is
embedded in the composite while one matched by `wildcard()` becomes an operand.
Matching backtracks: every consistent match is produced, in priority order
(`Pattern.matches`), so a caller can skip matches its own rules reject.

A pattern table is a list of `(name, pattern)` or `(name, pattern, check)`
entries; `check(match) -> bool` sees the root op and the captures.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue

from byoc.dialects.nn import NN_OPS, ConstantOp
from byoc.targets.predicates import attrs_match

COMMUTATIVE_OPS = frozenset({"nn.add", "nn.multiply"})
"""Binary ops whose operands a pattern matches in either order."""


# --------------------------------------------------------------------------
# Match state and result
# --------------------------------------------------------------------------


class _State:
    """The match being built. Mutable: every step undoes its own changes when it backtracks."""

    __slots__ = ("block", "ok", "bound", "ops", "inputs", "constants", "captures")

    def __init__(self, block: Block, ok: Available):
        self.block = block
        self.ok = ok
        self.bound: dict[int, SSAValue] = {}
        """id(pattern node) -> the value it matched."""
        self.ops: list[Operation] = []
        self.inputs: list[SSAValue] = []
        self.constants: list[ConstantOp] = []
        self.captures: dict[str, SSAValue] = {}


def _push_new(items: list[Any], item: Any) -> bool:
    """Append `item` unless it is there (by identity); whether it was appended."""
    for x in items:
        if x is item:
            return False
    items.append(item)
    return True


@dataclass(frozen=True)
class Match:
    """One match of a pattern, rooted at `root`."""

    root: Operation
    ops: tuple[Operation, ...]
    """The matched ops (root included), in the order the pattern reached them."""
    inputs: tuple[SSAValue, ...]
    """The distinct values that become operands of a composite, in pattern order."""
    constants: tuple[ConstantOp, ...]
    """The `nn.constant` ops matched by `is_constant()` (embedded in a composite)."""
    captures: Mapping[str, SSAValue]

    def __getitem__(self, name: str) -> SSAValue:
        try:
            return self.captures[name]
        except KeyError:
            raise KeyError(
                f"no capture '{name}' in the match (captures: {', '.join(self.captures) or 'none'})"
            ) from None

    def op(self, name: str) -> Operation:
        """The op that defines capture `name`."""
        value = self[name]
        if not isinstance(value, OpResult):
            raise KeyError(f"capture '{name}' is a block argument, not an op result")
        return value.op


Available = Callable[[Operation], bool]
"""Whether an op may take part in a match (not already claimed by another)."""


def _always(op: Operation) -> bool:
    return True


# --------------------------------------------------------------------------
# Pattern nodes
# --------------------------------------------------------------------------


class Pattern:
    """A pattern node. Nodes compare by identity: a node used twice matches one value."""

    def __or__(self, other: Pattern) -> Pattern:
        return AltPattern(self, other)

    def optional(self, extend: Callable[[Pattern], Pattern]) -> Pattern:
        """`extend(self) | self`: match the extension when it is there."""
        return AltPattern(extend(self), self)

    def has_attr(self, attrs: Mapping[str, Any]) -> Pattern:
        """This pattern, where the defining op's properties equal (or satisfy) `attrs`."""
        return AttrPattern(self, dict(attrs))

    def has_dtype(self, element_type: Attribute) -> Pattern:
        return TypePattern(self, lambda t: t.element_type == element_type, f"dtype {element_type}")

    def has_shape(self, shape: Sequence[int]) -> Pattern:
        want = tuple(shape)
        return TypePattern(self, lambda t: tuple(t.get_shape()) == want, f"shape {want}")

    def named(self, name: str) -> Pattern:
        """This pattern, captured under `name` in the match."""
        return NamedPattern(self, name)

    # ---- matching ---------------------------------------------------------------
    def root_ops(self) -> frozenset[str] | None:
        """Op names a match can be rooted at; None if any value (wildcards)."""
        return None

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        """Yield once per way `value` matches, with `st` extended; undo on resuming."""
        raise NotImplementedError

    def _go(self, value: SSAValue, st: _State) -> Iterator[None]:
        """Match with the "same node, same value" rule applied."""
        key = id(self)
        seen = st.bound.get(key)
        if seen is not None:
            if seen is value:
                yield
            return
        for _ in self._match(value, st):
            st.bound[key] = value
            yield
            del st.bound[key]

    def matches(self, root: Operation, available: Available = _always) -> Iterator[Match]:
        """Every match rooted at `root`'s single result, best first.

        Ops the pattern reaches must sit in `root`'s block and satisfy `available`.
        """
        if len(root.results) != 1 or root.parent is None:
            return
        names = self.root_ops()
        if names is not None and root.name not in names:
            return
        st = _State(root.parent, available)
        for _ in self._go(root.results[0], st):
            if not any(o is root for o in st.ops):  # the root must be matched by an op pattern
                continue
            yield Match(
                root, tuple(st.ops), tuple(st.inputs), tuple(st.constants), dict(st.captures)
            )

    def match(self, root: Operation, available: Available = _always) -> Match | None:
        """The first match rooted at `root`, or None."""
        return next(self.matches(root, available), None)


class WildcardPattern(Pattern):
    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        added = _push_new(st.inputs, value)
        yield
        if added:
            st.inputs.pop()

    def __repr__(self) -> str:
        return "wildcard()"


class VarPattern(Pattern):
    def __init__(self, name: str | None = None):
        self.name = name

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        if isinstance(value, BlockArgument) and (self.name is None or value.name_hint == self.name):
            added = _push_new(st.inputs, value)
            yield
            if added:
                st.inputs.pop()

    def __repr__(self) -> str:
        return f"is_var({self.name!r})" if self.name else "is_var()"


class ConstantPattern(Pattern):
    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        if isinstance(value, OpResult) and isinstance(value.op, ConstantOp):
            added = _push_new(st.constants, value.op)
            yield
            if added:
                st.constants.pop()

    def __repr__(self) -> str:
        return "is_constant()"


def _check_op_name(name: str) -> None:
    if name not in NN_OPS:
        close = difflib.get_close_matches(name, list(NN_OPS), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"is_op: unknown op '{name}'{hint}")


def _check_attr_names(name: str, attrs: Mapping[str, Any]) -> None:
    known = NN_OPS[name].prop_defaults()
    for key in attrs:
        if key not in known:
            raise ValueError(
                f"is_op: '{name}' has no property '{key}' (properties: {', '.join(known) or 'none'})"
            )


class CallPattern(Pattern):
    """`is_op(name, **attrs)(*args)`; `args=None` matches any operands (they become inputs)."""

    def __init__(self, op_name: str, args: Sequence[Pattern] | None, attrs: Mapping[str, Any]):
        _check_op_name(op_name)
        _check_attr_names(op_name, attrs)
        self.op_name = op_name
        self.args = None if args is None else tuple(args)
        self.attrs = dict(attrs)

    def __call__(self, *args: Pattern) -> CallPattern:
        if self.args is not None:
            raise TypeError(f"is_op('{self.op_name}') already has its operands")
        for a in args:
            if not isinstance(a, Pattern):
                raise TypeError(f"operands of is_op('{self.op_name}') must be patterns, got {a!r}")
        return CallPattern(self.op_name, args, self.attrs)

    def root_ops(self) -> frozenset[str] | None:
        return frozenset({self.op_name})

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        if not isinstance(value, OpResult):
            return
        op = value.op
        if op.name != self.op_name or op.parent is not st.block or not st.ok(op):
            return
        if self.attrs and not attrs_match(op, self.attrs):
            return
        operands = tuple(op.operands)
        args = self.args
        if args is not None and len(operands) != len(args):
            return
        added = _push_new(st.ops, op)
        if args is None:
            n = len(st.inputs)
            for v in operands:
                _push_new(st.inputs, v)
            yield
            del st.inputs[n:]
        else:
            yield from _match_all(args, operands, 0, st)
            if (
                self.op_name in COMMUTATIVE_OPS
                and len(operands) == 2
                and operands[0] is not operands[1]
            ):
                yield from _match_all(args, (operands[1], operands[0]), 0, st)
        if added:
            st.ops.pop()

    def __repr__(self) -> str:
        attrs = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        head = f"is_op({self.op_name!r}{attrs})"
        if self.args is None:
            return head
        return head + "(" + ", ".join(map(repr, self.args)) + ")"


def _match_all(
    patterns: Sequence[Pattern], values: Sequence[SSAValue], i: int, st: _State
) -> Iterator[None]:
    if i == len(patterns):
        yield
        return
    if i + 1 == len(patterns):
        yield from patterns[i]._go(values[i], st)
        return
    for _ in patterns[i]._go(values[i], st):
        yield from _match_all(patterns, values, i + 1, st)


class AltPattern(Pattern):
    def __init__(self, left: Pattern, right: Pattern):
        self.left = left
        self.right = right

    def root_ops(self) -> frozenset[str] | None:
        a, b = self.left.root_ops(), self.right.root_ops()
        return None if a is None or b is None else a | b

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        yield from self.left._go(value, st)
        yield from self.right._go(value, st)

    def __repr__(self) -> str:
        return f"({self.left!r} | {self.right!r})"


class _Wrapper(Pattern):
    def __init__(self, inner: Pattern):
        self.inner = inner

    def root_ops(self) -> frozenset[str] | None:
        return self.inner.root_ops()


class AttrPattern(_Wrapper):
    def __init__(self, inner: Pattern, attrs: Mapping[str, Any]):
        super().__init__(inner)
        self.attrs = dict(attrs)

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        if not isinstance(value, OpResult) or not attrs_match(value.op, self.attrs):
            return
        yield from self.inner._go(value, st)

    def __repr__(self) -> str:
        return f"{self.inner!r}.has_attr({self.attrs!r})"


class TypePattern(_Wrapper):
    def __init__(self, inner: Pattern, test: Callable[[TensorType[Any]], bool], what: str):
        super().__init__(inner)
        self.test = test
        self.what = what

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        if isinstance(value.type, TensorType) and self.test(value.type):
            yield from self.inner._go(value, st)

    def __repr__(self) -> str:
        return f"{self.inner!r}.has({self.what})"


class NamedPattern(_Wrapper):
    def __init__(self, inner: Pattern, name: str):
        super().__init__(inner)
        self.name = name

    def _match(self, value: SSAValue, st: _State) -> Iterator[None]:
        for _ in self.inner._go(value, st):
            previous = st.captures.get(self.name)
            st.captures[self.name] = value
            yield
            if previous is None:
                del st.captures[self.name]
            else:
                st.captures[self.name] = previous

    def __repr__(self) -> str:
        return f"{self.inner!r}.named({self.name!r})"


# --------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------


def wildcard() -> Pattern:
    """Any value; it becomes an operand of the composite."""
    return WildcardPattern()


def is_var(name: str | None = None) -> Pattern:
    """A block argument (a function input), with name hint `name` if given."""
    return VarPattern(name)


def is_constant() -> Pattern:
    """A value made by `nn.constant`; a composite embeds the constant."""
    return ConstantPattern()


def is_op(name: str, **attrs: Any) -> CallPattern:
    """Op `name` whose properties equal (or satisfy) `attrs`; call it with operand patterns."""
    return CallPattern(name, None, attrs)


# --------------------------------------------------------------------------
# Pattern tables
# --------------------------------------------------------------------------

Check = Callable[[Match], bool]


@dataclass(frozen=True)
class TableEntry:
    """One entry of a target's pattern table; the composite is `<target>.<name>`."""

    name: str
    pattern: Pattern
    check: Check | None = None

    def accepts(self, match: Match) -> bool:
        return True if self.check is None else bool(self.check(match))


def table_entries(table: Sequence[Any], target: str) -> list[TableEntry]:
    """Normalise `(name, pattern[, check])` tuples (or entries) of `target`'s table."""
    out: list[TableEntry] = []
    seen: set[str] = set()
    for item in table:
        if isinstance(item, TableEntry):
            entry = item
        else:
            if not 2 <= len(item) <= 3:
                raise ValueError(
                    f"pattern table of '{target}': entries are (name, pattern[, check])"
                )
            entry = TableEntry(item[0], item[1], item[2] if len(item) == 3 else None)
        if not isinstance(entry.pattern, Pattern):
            raise ValueError(f"pattern table of '{target}': '{entry.name}' has no pattern")
        if not entry.name or "." in entry.name:
            raise ValueError(
                f"pattern table of '{target}': name '{entry.name}' must be non-empty and have no "
                f"'.' (the composite is named '{target}.<name>')"
            )
        if entry.name in seen:
            raise ValueError(f"pattern table of '{target}': '{entry.name}' appears twice")
        seen.add(entry.name)
        out.append(entry)
    return out



def per_channel(value: SSAValue, rank: int, axis: int, channels: int) -> bool:
    """Whether `value` broadcasts against a rank-`rank` result as one value per channel of
    `axis` (or one value): every other dim 1, that one 1 or `channels`. The epilogues of
    the GEMM-like anchors (cblas chains, dnnl post-ops) take such operands."""
    t = value.type
    assert isinstance(t, TensorType)
    shape = tuple(t.get_shape())
    if len(shape) > rank:
        return False
    padded = (1,) * (rank - len(shape)) + shape
    return all(d == 1 for i, d in enumerate(padded) if i != axis) and padded[axis] in (1, channels)

__all__ = [
    "COMMUTATIVE_OPS",
    "AltPattern",
    "AttrPattern",
    "CallPattern",
    "ConstantPattern",
    "Match",
    "NamedPattern",
    "Pattern",
    "TableEntry",
    "TypePattern",
    "VarPattern",
    "WildcardPattern",
    "is_constant",
    "is_op",
    "is_var",
    "per_channel",
    "table_entries",
    "wildcard",
]
