"""The kit's test cases: small nn graphs generated per op, kept when the target accepts them.

A `Case` is data: its inputs (shape, element type, value domain) and a short chain of
`Step`s (an nn op, its operands, its properties). `emit` builds it into a block, so the
same case becomes its own module (the reproducer the report prints) and a part of a
batch module (what the kit builds once for many cases).

`GENERATORS` maps an nn op name to a function `(dtype, x) -> [Candidate]`: the op over
odd sizes, size 1, empty tensors, every rank up to 4 and the attribute values that
matter, for one element type; with `x` (a shape) the first data operand has that shape,
which is how a pattern's outer op is chained onto an inner one. Ops of one family
(unary elementwise, binary broadcasting, reductions) share a generator. The kit probes
the target's predicate with the built op (`accepts`) and keeps what it accepts.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from byoc.dialects import nn
from byoc.dialects.nn import NN_OPS
from byoc.targets.patterns import (
    COMMUTATIVE_OPS,
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    NamedPattern,
    Pattern,
    TypePattern,
)
from byoc.targets.predicates import attrs_match

Shape = tuple[int, ...]

ELEMENT_TYPES: dict[str, Any] = {
    "f32": np.float32,
    "f64": np.float64,
    "f16": np.float16,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
}
"""The element types the kit tries (by their MLIR names)."""

DEFAULT_DTYPES = ("f32", "f64", "i8", "i32", "i64")

FLOATS = frozenset({"f32", "f64", "f16"})


@dataclass(frozen=True)
class Operand:
    """An operand of a step: a case input, a constant, or an earlier step's result."""

    kind: str
    """`input`, `const` or `step`."""
    index: int = 0
    """The input's position, or the step's."""
    shape: Shape = ()
    dtype: str = "f32"
    domain: str = "normal"
    """How values are drawn: `normal`, `positive`, `unit` (|x| < 0.9), `ge1`, `nonzero`,
    `index:<n>` (integers in [0, n))."""


@dataclass(frozen=True)
class Step:
    op: str
    operands: tuple[Operand, ...]
    attrs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Case:
    """A small graph: inputs, then steps; the last step's results are the outputs."""

    name: str
    """The op or `<target>.<pattern>` it checks (the report's row)."""
    dtype: str
    """The report's column."""
    inputs: tuple[Operand, ...]
    steps: tuple[Step, ...]
    label: str = ""

    @property
    def seed(self) -> int:
        """Seeds its constants and inputs: the case alone and the case in a batch agree."""
        return zlib.crc32(f"{self.name}|{self.dtype}|{self.label}|{self.steps}".encode())

    def emit(self, block: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
        """Append the case's ops to `block`, reading its inputs from `args`; its outputs."""
        rng = np.random.default_rng(self.seed)
        results: list[list[SSAValue]] = []
        for step in self.steps:
            operands: list[SSAValue] = []
            for o in step.operands:
                if o.kind == "input":
                    operands.append(args[o.index])
                elif o.kind == "step":
                    operands.append(results[o.index][0])
                else:
                    const = nn.ConstantOp.from_array(draw(o, rng))
                    block.add_op(const)
                    operands.append(const.result)
            op = NN_OPS[step.op].build(*operands, **dict(step.attrs))
            block.add_op(op)
            results.append(list(op.results))
        return results[-1]

    def input_types(self) -> list[TensorType[Any]]:
        return [tensor_type(o.shape, o.dtype) for o in self.inputs]

    def module(self) -> ModuleOp:
        """The case alone, as `@main` (the reproducer)."""
        return batch_module([self])

    def draw_inputs(self) -> list[np.ndarray[Any, Any]]:
        rng = np.random.default_rng(self.seed + 1)
        return [draw(o, rng) for o in self.inputs]


def tensor_type(shape: Shape, dtype: str) -> TensorType[Any]:
    from xdsl.dialects.builtin import IntegerType, Signedness, f16, f32, f64, i8, i16, i32, i64

    types: dict[str, Attribute] = {
        "f32": f32, "f64": f64, "f16": f16, "i8": i8, "i16": i16, "i32": i32, "i64": i64,
        "ui8": IntegerType(8, Signedness.UNSIGNED),
    }  # fmt: skip
    return TensorType(types[dtype], list(shape))


def draw(o: Operand, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """Values for an operand from its domain."""
    dt = np.dtype(ELEMENT_TYPES[o.dtype])
    if o.domain.startswith("index:"):
        return np.asarray(rng.integers(0, int(o.domain[6:]), size=o.shape), dtype=dt)
    if dt.kind in "iu":
        low = 1 if o.domain in ("positive", "ge1") else (0 if dt.kind == "u" else -8)
        values = rng.integers(low, 9, size=o.shape)
        if o.domain == "nonzero":
            values = np.where(values == 0, 3, values)
        return np.asarray(values, dtype=dt)
    x = np.asarray(rng.standard_normal(o.shape))
    if o.domain == "positive":
        x = np.abs(x) + 0.25
    elif o.domain == "unit":
        x = np.tanh(x) * 0.9
    elif o.domain == "ge1":
        x = np.abs(x) + 1.0
    elif o.domain == "nonzero":
        x = np.where(np.abs(x) < 0.25, 0.5, x)
    return np.asarray(x, dtype=dt)


def batch_module(cases: Sequence[Case]) -> ModuleOp:
    """One `@main` computing every case side by side: its inputs are the cases' inputs in
    order, its outputs theirs."""
    types = [t for c in cases for t in c.input_types()]
    block = Block(arg_types=types)
    outputs: list[SSAValue] = []
    at = 0
    for case in cases:
        n = len(case.inputs)
        outputs += case.emit(block, block.args[at : at + n])
        at += n
    block.add_op(ReturnOp(*outputs))
    func = FuncOp("main", (types, [v.type for v in outputs]), Region(block))
    return ModuleOp([func])


def accepts(case: Case, check: Callable[[Operation], bool]) -> bool:
    """Whether `check` takes the case's last op (built on its own)."""
    module = case.module()
    func = module.body.block.first_op
    assert isinstance(func, FuncOp)
    last = [op for op in func.body.block.ops if op.name == case.steps[-1].op][-1]
    return bool(check(last))


# --------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------

Candidate = tuple[tuple[Operand, ...], tuple[tuple[str, Any], ...], str]
"""(operands, properties, label) of one op."""

Generator = Callable[[str, "Shape | None"], list[Candidate]]

SHAPES: tuple[Shape, ...] = ((7,), (1,), (3, 5), (2, 1, 3), (2, 3, 4, 5), (1, 1), ())
"""Shapes of elementwise cases: odd sizes, size 1, ranks 0 to 4."""
EMPTY: Shape = (2, 0)


def _x(shape: Shape, dtype: str, domain: str = "normal") -> Operand:
    return Operand("input", 0, shape, dtype, domain)


def _const(shape: Shape, dtype: str, domain: str = "normal") -> Operand:
    return Operand("const", 0, shape, dtype, domain)


UNARY_DOMAINS: dict[str, str] = {
    "nn.log": "positive", "nn.sqrt": "positive", "nn.reciprocal": "nonzero",
    "nn.asin": "unit", "nn.acos": "unit", "nn.atanh": "unit", "nn.acosh": "ge1",
}  # fmt: skip

UNARY_ATTRS: dict[str, list[dict[str, Any]]] = {
    "nn.clip": [{"a_min": -0.5, "a_max": 0.5}, {"a_min": 0.0, "a_max": 6.0}],
    "nn.leaky_relu": [{"alpha": 0.01}, {"alpha": 0.3}],
    "nn.elu": [{"alpha": 1.0}, {"alpha": 0.5}],
    "nn.celu": [{"alpha": 1.0}],
    "nn.hard_sigmoid": [{"alpha": 0.2, "beta": 0.5}],
    "nn.thresholded_relu": [{"alpha": 1.0}, {"alpha": 0.1}],
    "nn.swish": [{"alpha": 1.0}],
    "nn.shrink": [{"bias": 0.0, "lambd": 0.5}],
    "nn.gelu": [{"approximate": "none"}, {"approximate": "tanh"}],
    "nn.cast": [{"dtype": "f32"}, {"dtype": "i32"}],
}
"""Property values of unary ops that have them (each tried on every shape)."""


def unary(op: str) -> Generator:
    def gen(dtype: str, x: Shape | None) -> list[Candidate]:
        shapes = (x,) if x is not None else (*SHAPES, EMPTY)
        domain = UNARY_DOMAINS.get(op, "normal")
        out: list[Candidate] = []
        for attrs in UNARY_ATTRS.get(op, [{}]):
            for s in shapes:
                label = f"{s}" + (f" {attrs}" if attrs else "")
                out.append(((_x(s, dtype, domain),), tuple(attrs.items()), label))
        return out

    return gen


BINARY_DOMAINS: dict[str, tuple[str, str]] = {
    "nn.divide": ("normal", "nonzero"),
    "nn.mod": ("normal", "nonzero"),
    "nn.power": ("positive", "normal"),
}

BROADCASTS: tuple[tuple[Shape, Shape], ...] = (
    ((7,), (7,)),
    ((3, 5), (3, 5)),
    ((3, 5), (5,)),
    ((3, 5), (1,)),
    ((2, 1, 3), (1, 4, 1)),
    ((2, 3, 4, 5), (3, 1, 1)),
    ((1,), (1,)),
    ((), ()),
    ((2, 0), (2, 0)),
)
"""Operand shapes of binary cases: equal, trailing, scalar-like and both-sides broadcasts."""


def binary(op: str) -> Generator:
    def gen(dtype: str, x: Shape | None) -> list[Candidate]:
        da, db = BINARY_DOMAINS.get(op, ("normal", "normal"))
        if x is not None:
            pairs = [(x, x), (x, x[-1:]), (x, (1,))] if x else [(x, x)]
            if len(x) == 4:  # per channel of an NCHW value
                pairs[1:1] = [(x, (x[1], 1, 1))]
        else:
            pairs = list(BROADCASTS)
        out: list[Candidate] = []
        for a, b in pairs:
            ops = (_x(a, dtype, da), Operand("input", 1, b, dtype, db))
            out.append((ops, (), f"{a} x {b}"))
            if x is not None:
                out.append(((_x(a, dtype, da), _const(b, dtype, db)), (), f"{a} x const {b}"))
        return out

    return gen


def reduce(op: str) -> Generator:
    def gen(dtype: str, x: Shape | None) -> list[Candidate]:
        shapes = (x,) if x is not None else ((3, 5), (2, 3, 4, 5), (7,), (1, 1))
        out: list[Candidate] = []
        for s in shapes:
            axes_options: list[tuple[int, ...]] = [(len(s) - 1,), ()] if s else [()]
            if len(s) == 4:
                axes_options.append((2, 3))
            for axes in axes_options:
                for keepdims in (False, True):
                    attrs = (("axes", axes), ("keepdims", keepdims))
                    out.append(((_x(s, dtype),), attrs, f"{s} axes={axes} keepdims={keepdims}"))
        return out

    return gen


def _nchw(x: Shape | None) -> list[Shape]:
    if x is not None:
        return [x] if len(x) == 4 else []
    return [(1, 3, 7, 7), (2, 4, 5, 6), (1, 1, 1, 1)]


ConvRow = tuple[int, int, tuple[int, int], tuple[int, int, int, int], tuple[int, int], int]
"""(C_out, kernel size, strides, padding, dilation or output_padding, groups)."""


def _conv_cases(
    dtype: str, x: Shape | None, rows: Callable[[int], Sequence[ConvRow]], fifth: str, transposed: bool
) -> list[Candidate]:
    """A case per NCHW input and row of `rows(C_in)` whose channels the groups divide; the
    row's fifth value is the attribute `fifth`. The weight is (C_out, C_in / groups, k, k), or
    transposed (C_in, C_out / groups, k, k)."""
    out: list[Candidate] = []
    for s in _nchw(x):
        c = s[1]
        for o, k, strides, padding, extra, groups in rows(c):
            if c % groups or o % groups:
                continue
            w = (c, o // groups, k, k) if transposed else (o, c // groups, k, k)
            attrs = (("strides", strides), ("padding", padding), (fifth, extra), ("groups", groups))
            label = f"{s} w={w} " + " ".join(f"{name}={value}" for name, value in attrs)
            out.append(((_x(s, dtype), _const(w, dtype)), attrs, label))
    return out


def conv2d(dtype: str, x: Shape | None) -> list[Candidate]:
    def rows(c: int) -> list[ConvRow]:
        return [
            (4, 3, (1, 1), (0, 0, 0, 0), (1, 1), 1),
            (5, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
            (2, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
            (c, 3, (1, 1), (1, 1, 1, 1), (1, 1), c),
            (4, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1),
        ]

    return _conv_cases(dtype, x, rows, "dilation", transposed=False)


def conv2d_transpose(dtype: str, x: Shape | None) -> list[Candidate]:
    def rows(c: int) -> list[ConvRow]:
        return [
            (4, 3, (1, 1), (0, 0, 0, 0), (0, 0), 1),
            (3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
            (2, 2, (2, 2), (0, 0, 0, 0), (0, 0), 1),
            (c, 3, (1, 1), (1, 1, 1, 1), (0, 0), c),
        ]

    return _conv_cases(dtype, x, rows, "output_padding", transposed=True)


def dense(dtype: str, x: Shape | None) -> list[Candidate]:
    shapes = [x] if x is not None and len(x) == 2 else ([] if x is not None else [(3, 5), (1, 7), (4, 1)])
    out: list[Candidate] = []
    for s in shapes:
        for n in (6, 1):
            out.append(((_x(s, dtype), _const((n, s[1]), dtype)), (), f"{s} w={(n, s[1])}"))
        out.append(((_x(s, dtype), Operand("input", 1, (3, s[1]), dtype)), (), f"{s} w=input"))
    return out


def matmul(dtype: str, x: Shape | None) -> list[Candidate]:
    pairs = [((3, 5), (5, 4)), ((2, 3, 5), (5, 2)), ((2, 3, 4), (2, 4, 3)), ((1, 1), (1, 1))]
    if x is not None:
        pairs = [(x, (x[-1], 3))] if len(x) >= 2 else []
    return [
        ((_x(a, dtype), Operand("input", 1, b, dtype)), (), f"{a} x {b}") for a, b in pairs
    ]


def bias_add(dtype: str, x: Shape | None) -> list[Candidate]:
    shapes = [x] if x is not None else [(3, 5), (2, 3, 4, 5), (1, 1)]
    out: list[Candidate] = []
    for s in shapes:
        if not s:
            continue
        axes = [1, -1] if len(s) > 1 else [0]
        for axis in axes:
            n = s[axis]
            for kind in ("const", "input"):
                b = Operand(kind, 1, (n,), dtype)
                out.append(((_x(s, dtype), b), (("axis", axis),), f"{s} axis={axis} bias={kind}"))
    return out


def batch_norm(dtype: str, x: Shape | None) -> list[Candidate]:
    out: list[Candidate] = []
    for s in _nchw(x):
        c = s[1]
        params = (
            _const((c,), dtype),
            _const((c,), dtype),
            _const((c,), dtype),
            _const((c,), dtype, "positive"),
        )
        out.append(((_x(s, dtype), *params), (("axis", 1),), f"{s}"))
    return out


def pool(op: str) -> Generator:
    def gen(dtype: str, x: Shape | None) -> list[Candidate]:
        out: list[Candidate] = []
        for s in _nchw(x):
            for size, strides, padding in (
                ((2, 2), (2, 2), (0, 0, 0, 0)),
                ((3, 3), (1, 1), (1, 1, 1, 1)),
                ((1, 1), (1, 1), (0, 0, 0, 0)),
            ):
                if size[0] > s[2] + padding[0] + padding[2] or size[1] > s[3] + padding[1] + padding[3]:
                    continue
                attrs = (("pool_size", size), ("strides", strides), ("padding", padding))
                out.append(((_x(s, dtype),), attrs, f"{s} pool={size} strides={strides} padding={padding}"))
        return out

    return gen


def global_pool(dtype: str, x: Shape | None) -> list[Candidate]:
    return [((_x(s, dtype),), (), f"{s}") for s in _nchw(x)]


def softmax(dtype: str, x: Shape | None) -> list[Candidate]:
    shapes = [x] if x is not None else [(3, 5), (2, 3, 4), (1, 1), (7,)]
    out: list[Candidate] = []
    for s in shapes:
        if not s:
            continue
        for axis in {-1, 0} if len(s) > 1 else {-1}:
            out.append(((_x(s, dtype),), (("axis", axis),), f"{s} axis={axis}"))
    return out


def transpose(dtype: str, x: Shape | None) -> list[Candidate]:
    cases = [((3, 5), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((1, 7), (1, 0))]
    if x is not None:
        cases = [(x, tuple(reversed(range(len(x)))))]
    return [((_x(s, dtype),), (("axes", a),), f"{s} axes={a}") for s, a in cases]


def reshape(dtype: str, x: Shape | None) -> list[Candidate]:
    cases = [((3, 5), (5, 3)), ((2, 3, 4), (6, 4)), ((7,), (7, 1)), ((2, 3, 4, 5), (2, 60))]
    if x is not None:
        cases = [(x, (int(np.prod(x)),))]
    return [((_x(s, dtype),), (("newshape", n),), f"{s} -> {n}") for s, n in cases]


def flatten(dtype: str, x: Shape | None) -> list[Candidate]:
    shapes = [x] if x is not None else [(2, 3, 4), (2, 3, 4, 5), (1, 7)]
    return [((_x(s, dtype),), (("axis", 1),), f"{s}") for s in shapes if s and len(s) >= 2]


def concatenate(dtype: str, x: Shape | None) -> list[Candidate]:
    cases = [((3, 5), (2, 5), 0), ((3, 5), (3, 1), 1), ((2, 3, 4), (2, 3, 4), -1), ((1,), (4,), 0)]
    if x is not None:
        cases = [(x, x, 0)] if x else []
    return [
        ((_x(a, dtype), Operand("input", 1, b, dtype)), (("axis", axis),), f"{a} ++ {b} axis={axis}")
        for a, b, axis in cases
    ]


def pad(dtype: str, x: Shape | None) -> list[Candidate]:
    """pad_width is (before_0, after_0, before_1, after_1, ...)."""
    cases: list[tuple[Shape, tuple[int, ...], float]] = [
        ((3, 5), (1, 0, 2, 1), 0.0),
        ((1, 2, 3, 3), (0, 0, 0, 0, 1, 1, 1, 1), 0.0),
        ((7,), (2, 3), 1.5),
    ]
    if x is not None:
        cases = [(x, tuple(1 for _ in range(2 * len(x))), 0.0)]
    return [
        ((_x(s, dtype),), (("pad_width", w), ("pad_value", v)), f"{s} pad={w} value={v}")
        for s, w, v in cases
    ]


GENERATORS: dict[str, Generator] = {
    "nn.conv2d": conv2d,
    "nn.conv2d_transpose": conv2d_transpose,
    "nn.dense": dense,
    "nn.matmul": matmul,
    "nn.bias_add": bias_add,
    "nn.batch_norm": batch_norm,
    "nn.max_pool2d": pool("nn.max_pool2d"),
    "nn.avg_pool2d": pool("nn.avg_pool2d"),
    "nn.global_avg_pool2d": global_pool,
    "nn.global_max_pool2d": global_pool,
    "nn.softmax": softmax,
    "nn.log_softmax": softmax,
    "nn.transpose": transpose,
    "nn.reshape": reshape,
    "nn.flatten": flatten,
    "nn.concatenate": concatenate,
    "nn.pad": pad,
}
"""nn op -> its generator; unary elementwise, binary broadcasting and reduce ops get theirs
from their kind (`generator_for`)."""

SKIPPED_UNARY = frozenset({"nn.bitcast", "nn.is_inf", "nn.is_nan", "nn.logical_not"})
"""Elementwise ops whose results are not of the operand's kind (no shared generator)."""


def generator_for(op: str) -> Generator | None:
    """The op's generator: its own, or its kind's; None when the kit has none for it."""
    gen = GENERATORS.get(op)
    if gen is not None:
        return gen
    cls = NN_OPS.get(op)
    if cls is None or op in SKIPPED_UNARY:
        return None
    n = len(cls.get_irdl_definition().operands)
    if cls.KIND == "elementwise" and n == 1:
        return unary(op)
    if cls.KIND == "broadcast" and n == 2 and op not in ("nn.bias_add", "nn.prelu"):
        return binary(op)
    if cls.KIND == "reduce" and op.startswith("nn.reduce_"):
        return reduce(op)
    return None


def op_cases(op: str, dtype: str, x: Shape | None = None) -> list[Case]:
    """Every generated case of `op` on `dtype` (with `x`: its first operand of that shape)
    that builds: an op the verifier rejects (an element type it does not take) is skipped."""
    gen = generator_for(op)
    if gen is None:
        return []
    out: list[Case] = []
    for operands, attrs, label in gen(dtype, x):
        inputs = tuple(o for o in operands if o.kind == "input")
        case = Case(op, dtype, inputs, (Step(op, operands, attrs),), label)
        try:
            case.module().verify()
        except Exception:  # noqa: BLE001 - a form the op does not take: not a case
            continue
        out.append(case)
    return out


# --------------------------------------------------------------------------
# Composite patterns
# --------------------------------------------------------------------------

MAX_CHAINS = 6
"""Partial graphs kept per pattern node (the search stays small)."""


@dataclass(frozen=True)
class _Chain:
    inputs: tuple[Operand, ...]
    steps: tuple[Step, ...]
    shape: Shape
    """The last step's result shape."""


_Memo = dict[tuple[int, str, int], list[_Chain]]


def _unwrap(p: Pattern) -> list[Pattern]:
    """The alternatives of `p` with wrappers (names, attribute and type tests) removed; a
    wrapper's test is left to the matcher, which rejects a graph that fails it."""
    if isinstance(p, AltPattern):
        return [*_unwrap(p.left), *_unwrap(p.right)]
    if isinstance(p, NamedPattern | TypePattern | AttrPattern):
        return _unwrap(p.inner)
    return [p]


def _chains(p: Pattern, dtype: str, memo: _Memo, limit: int = MAX_CHAINS) -> list[_Chain]:
    """Small graphs whose last op `p` could match (at most `limit` per alternative). `memo`
    holds those of each pattern node seen: `optional` shares its inner pattern between both
    alternatives, so without it the search is exponential in the chain's length."""
    key = (id(p), dtype, limit)
    found = memo.get(key)
    if found is not None:
        return found
    out: list[_Chain] = []
    for alt in _unwrap(p):
        if isinstance(alt, CallPattern):
            out += _call_chains(alt, dtype, memo)[:limit]
    memo[key] = out
    return out


def _call_chains(p: CallPattern, dtype: str, memo: _Memo) -> list[_Chain]:
    args = list(p.args) if p.args is not None else None
    nested = [i for i, a in enumerate(args or []) if any(isinstance(x, CallPattern) for x in _unwrap(a))]
    if len(nested) > 1 or (nested and nested[0] != 0 and p.op_name not in COMMUTATIVE_OPS):
        return []  # the kit chains through the first data operand only
    if nested and args is not None:
        args.insert(0, args.pop(nested[0]))  # a commutative op matches either order
    inners: list[_Chain | None] = [None]
    if nested and args is not None:
        inners = list(_chains(args[0], dtype, memo))
    out: list[_Chain] = []
    for inner in inners:
        x = inner.shape if inner is not None else None
        gen = generator_for(p.op_name)
        if gen is None:
            return []
        per_inner = 0
        for operands, attrs, _ in gen(dtype, x):
            if args is not None and len(args) != len(operands):
                continue
            if inner is not None and per_inner >= 2:
                break  # a few ways to extend each inner graph: variety over depth
            per_inner += 1
            chain = _attach(inner, operands, args, p.op_name, attrs)
            if chain is None:
                continue
            if p.attrs and not _attrs_ok(chain, p.attrs):
                continue
            out.append(chain)
            if len(out) >= MAX_CHAINS * max(1, len(inners)):
                return out
    return out


def _attach(
    inner: _Chain | None,
    operands: tuple[Operand, ...],
    args: list[Pattern] | None,
    op: str,
    attrs: tuple[tuple[str, Any], ...],
) -> _Chain | None:
    inputs = list(inner.inputs) if inner is not None else []
    steps = list(inner.steps) if inner is not None else []
    new: list[Operand] = []
    for i, o in enumerate(operands):
        if i == 0 and inner is not None:
            new.append(Operand("step", len(steps) - 1, o.shape, o.dtype))
            continue
        # `is_constant()` needs a constant; a wildcard takes either, so the generator's
        # choice stands (a target may take only constant weights)
        want_const = args is not None and any(isinstance(a, ConstantPattern) for a in _unwrap(args[i]))
        if want_const or o.kind == "const":
            new.append(Operand("const", 0, o.shape, o.dtype, o.domain))
        else:
            new.append(Operand("input", len(inputs), o.shape, o.dtype, o.domain))
            inputs.append(new[-1])
    steps.append(Step(op, tuple(new), attrs))
    try:
        module = Case("", "", tuple(inputs), tuple(steps)).module()
        module.verify()
    except Exception:  # noqa: BLE001 - shapes that do not chain
        return None
    func = module.body.block.first_op
    assert isinstance(func, FuncOp) and func.body.block.last_op is not None
    t = func.body.block.last_op.operands[0].type
    assert isinstance(t, TensorType)
    return _Chain(tuple(inputs), tuple(steps), tuple(t.get_shape()))


def _attrs_ok(chain: _Chain, wanted: dict[str, Any]) -> bool:
    func = Case("", "", chain.inputs, chain.steps).module().body.block.first_op
    assert isinstance(func, FuncOp)
    last = [op for op in func.body.block.ops if op.name == chain.steps[-1].op][-1]
    return attrs_match(last, wanted)


def pattern_cases(composite: str, pattern: Pattern, dtype: str) -> list[Case]:
    """Graphs for the composite `<target>.<name>` whose pattern is `pattern`, on `dtype`:
    the pattern's ops chained through their first operand, constants where it asks for
    them. Whether the table really forms the composite is the kit's to check."""
    return [
        Case(composite, dtype, c.inputs, c.steps, " -> ".join(s.op for s in c.steps) + f" {c.shape}")
        for c in _chains(pattern, dtype, {}, 4 * MAX_CHAINS)
    ]


__all__ = [
    "DEFAULT_DTYPES",
    "ELEMENT_TYPES",
    "GENERATORS",
    "Case",
    "Operand",
    "Step",
    "accepts",
    "batch_module",
    "draw",
    "generator_for",
    "op_cases",
    "pattern_cases",
]
