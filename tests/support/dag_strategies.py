"""Random `nn` DAGs for property tests (hypothesis), shared by the partitioning, C-codegen and build tests.

    from support.dag_strategies import dags, build_module, random_inputs   # tests/ is on sys.path under pytest

    @given(dags(min_ops=5, max_ops=200))
    def test_something(spec):
        module = build_module(spec)              # func.func @main, verified
        inputs = random_inputs(spec, seed=0)

A `DagSpec` is plain data (op names, operand indices, constants), so hypothesis
shrinks it well and a failing case prints readably; `build_module` turns it into
IR with `NNOp.build` (no parsing). Values are numbered: the function inputs
first, then each node's result. Every value nobody reads is returned, so
there is no dead code. All tensors have one shape and element type, chosen
per spec; `OPS_BY_ARITY` is the vocabulary, and callers can pass their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Region, SSAValue

from byoc.dialects import nn

UNARY_OPS: tuple[str, ...] = (
    "nn.relu",
    "nn.tanh",
    "nn.sigmoid",
    "nn.abs",
    "nn.negative",
    "nn.clip",
)
BINARY_OPS: tuple[str, ...] = ("nn.add", "nn.subtract", "nn.multiply", "nn.maximum", "nn.minimum")
OPS_BY_ARITY: dict[str, int] = {**dict.fromkeys(UNARY_OPS, 1), **dict.fromkeys(BINARY_OPS, 2)}
"""The default vocabulary: op name -> number of operands. Values stay finite (clip bounds to [-2, 2])."""

INT_SAFE_OPS: dict[str, int] = {
    op: n
    for op, n in OPS_BY_ARITY.items()
    if op
    in ("nn.relu", "nn.abs", "nn.negative", "nn.add", "nn.subtract", "nn.maximum", "nn.minimum")
}
"""The ops of the vocabulary defined on i32."""

_ATTRS: dict[str, dict[str, Any]] = {"nn.clip": {"a_min": -2.0, "a_max": 2.0}}


@dataclass(frozen=True)
class Node:
    op: str
    operands: tuple[int, ...]
    """Value numbers: inputs first, then node results, then constants (see DagSpec.value_count)."""


@dataclass(frozen=True)
class DagSpec:
    shape: tuple[int, ...]
    dtype: str
    """"f32" or "i32"."""
    n_inputs: int
    constants: tuple[tuple[float, ...], ...]
    """Flattened payloads of the nn.constant ops (values n_inputs .. n_inputs + len - 1)."""
    nodes: tuple[Node, ...]
    extra_outputs: tuple[int, ...] = field(default=())
    """Values returned besides the unused ones."""

    @property
    def first_node_value(self) -> int:
        return self.n_inputs + len(self.constants)

    @property
    def value_count(self) -> int:
        return self.first_node_value + len(self.nodes)

    def outputs(self) -> list[int]:
        """Every value nobody reads, plus `extra_outputs`, in value order, without repeats."""
        used = {v for node in self.nodes for v in node.operands}
        sinks = [v for v in range(self.first_node_value, self.value_count) if v not in used]
        out = sorted(set(sinks) | set(self.extra_outputs))
        return out or [self.value_count - 1]


def _element_type(dtype: str) -> Attribute:
    return {"f32": f32, "i32": i32}[dtype]


def _np_dtype(dtype: str) -> Any:
    return {"f32": np.float32, "i32": np.int32}[dtype]


@st.composite
def dags(
    draw: st.DrawFn,
    min_ops: int = 5,
    max_ops: int = 200,
    ops: dict[str, int] | None = None,
    shapes: Sequence[tuple[int, ...]] = ((2, 3), (4,), (1, 2, 2)),
    dtypes: Sequence[str] = ("f32",),
    max_inputs: int = 3,
    max_constants: int = 3,
) -> DagSpec:
    """A random DAG of `min_ops`..`max_ops` ops drawn from `ops` (default `OPS_BY_ARITY`).

    Operands favour recent values (deep chains) but reach back anywhere (wide
    fan-out, diamonds, siblings sharing an input).
    """
    vocabulary = ops if ops is not None else OPS_BY_ARITY
    names = sorted(vocabulary)
    shape = draw(st.sampled_from(list(shapes)))
    dtype = draw(st.sampled_from(list(dtypes)))
    n_inputs = draw(st.integers(1, max_inputs))
    size = int(np.prod(shape)) if shape else 1
    value = st.integers(-3, 3).map(float)
    constants = tuple(
        tuple(draw(st.lists(value, min_size=size, max_size=size)))
        for _ in range(draw(st.integers(0, max_constants)))
    )
    n_ops = draw(st.integers(min_ops, max_ops))
    first = n_inputs + len(constants)
    nodes: list[Node] = []
    for i in range(n_ops):
        available = first + i
        op = draw(st.sampled_from(names))
        operands: list[int] = []
        for _ in range(vocabulary[op]):
            if draw(st.booleans()):
                lo = max(0, available - 4)
                operands.append(draw(st.integers(lo, available - 1)))
            else:
                operands.append(draw(st.integers(0, available - 1)))
        nodes.append(Node(op, tuple(operands)))
    total = first + n_ops
    extra = tuple(draw(st.lists(st.integers(first, total - 1), max_size=2)))
    return DagSpec(shape, dtype, n_inputs, constants, tuple(nodes), extra)


def build_module(spec: DagSpec) -> ModuleOp:
    """The spec as `func.func @main(%x0, ...)` returning its outputs; verified."""
    elt = _element_type(spec.dtype)
    ty = TensorType(elt, list(spec.shape))
    block = Block(arg_types=[ty] * spec.n_inputs)
    for i, arg in enumerate(block.args):
        arg.name_hint = f"x{i}"
    values: list[SSAValue] = list(block.args)
    for payload in spec.constants:
        const = nn.ConstantOp.from_array(
            np.asarray(payload, dtype=_np_dtype(spec.dtype)).reshape(spec.shape)
        )
        block.add_op(const)
        values.append(const.results[0])
    for node in spec.nodes:
        cls = nn.NN_OPS[node.op]
        op = cls.build(*(values[v] for v in node.operands), **_ATTRS.get(node.op, {}))
        block.add_op(op)
        values.append(op.results[0])
    outputs = [values[v] for v in spec.outputs()]
    block.add_op(ReturnOp(*outputs))
    func = FuncOp("main", ([ty] * spec.n_inputs, [ty] * len(outputs)), Region(block))
    module = ModuleOp([func])
    module.verify()
    return module


def random_inputs(spec: DagSpec, seed: int = 0) -> list[np.ndarray[Any, Any]]:
    """One array per function input, small integers (exact in f32 and i32)."""
    rng = np.random.default_rng(seed)
    return [
        rng.integers(-3, 4, size=spec.shape).astype(_np_dtype(spec.dtype))
        for _ in range(spec.n_inputs)
    ]


def ops_used(spec: DagSpec) -> list[str]:
    """The distinct op names of the spec, sorted."""
    return sorted({node.op for node in spec.nodes})


__all__ = [
    "BINARY_OPS",
    "INT_SAFE_OPS",
    "OPS_BY_ARITY",
    "UNARY_OPS",
    "DagSpec",
    "Node",
    "build_module",
    "dags",
    "ops_used",
    "random_inputs",
]
