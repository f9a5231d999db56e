"""Property tests of the whole partitioning pipeline on random DAGs (hypothesis).

Random `nn` DAGs of 5-200 ops, 1-3 test targets with random support and a
random choice of patterns, through `byoc{targets=...}`:
- the result verifies and the call graph has no cycle;
- every op tagged for a target (after merge-composite + annotate-target) ends
  in a partition of that target, and every other op stays in @main;
- maximality: no two partitions of one target could be merged without a cycle;
- `run_reference` gives the same outputs before and after;
- running the pipeline again changes nothing.

200 examples by default; `BYOC_HYPOTHESIS_EXAMPLES=10000 pytest tests/passes/test_pipeline_properties.py`
runs more (the result of that run is in benchmarks/README.md).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.dag_strategies import DagSpec, build_module, dags, ops_used, random_inputs
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import CallOp, FuncOp

from byoc.context import make_context
from byoc.dialects.byoc import COMPILER_ATTR, TARGET_ATTR, CompositeOp
from byoc.dialects.nn import ConstantOp, NNOp
from byoc.interpreters import run_reference
from byoc.passes.annotate_target import AnnotateTargetPass
from byoc.passes.byoc_pipeline import ByocPass
from byoc.passes.merge_composite import MergeCompositePass

EXAMPLES = int(os.environ.get("BYOC_HYPOTHESIS_EXAMPLES", "200"))
TARGETS = ("test_a", "test_b", "test_c")
PATTERNS = ("add_abs_relu", "abs_relu", "add_const_relu")
"""Entries of the test target's library that the DAG vocabulary can match."""
VOCABULARY = {
    "nn.relu": 1, "nn.tanh": 1, "nn.abs": 1, "nn.negative": 1, "nn.clip": 1,
    "nn.add": 2, "nn.subtract": 2, "nn.multiply": 2, "nn.maximum": 2,
}  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    spec: DagSpec
    targets: tuple[str, ...]
    ops: tuple[str, ...]
    patterns: tuple[str, ...]

    def pipeline(self) -> ByocPass:
        return ByocPass(targets=self.targets, ops=self.ops, patterns=self.patterns)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    spec = draw(dags(min_ops=5, max_ops=200, ops=VOCABULARY, dtypes=("f32", "i32")))
    if spec.dtype == "i32":  # i32 has no tanh/clip: keep the spec's ops and drop float-only ones
        spec = _as_float_if_needed(spec)
    count = draw(st.integers(1, 3))
    targets = tuple(draw(st.permutations(TARGETS))[:count])
    used = ops_used(spec)
    ops: list[str] = []
    for t in targets:
        for op in draw(st.sets(st.sampled_from(used))):
            ops.append(f"{t}:{op}")
    patterns = tuple(draw(st.lists(st.sampled_from(PATTERNS), unique=True, max_size=2)))
    return Scenario(spec, targets, tuple(ops), patterns)


def _as_float_if_needed(spec: DagSpec) -> DagSpec:
    float_only = {"nn.tanh", "nn.clip"}
    if any(node.op in float_only for node in spec.nodes):
        return DagSpec(
            spec.shape, "f32", spec.n_inputs, spec.constants, spec.nodes, spec.extra_outputs
        )
    return spec


# --------------------------------------------------------------------------
# Observations on a module
# --------------------------------------------------------------------------


def _functions(module: ModuleOp) -> dict[str, FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}


def _nn_ops(op: NNOp | CompositeOp) -> list[str]:
    """The non-constant nn ops an op stands for (a composite: those of its body)."""
    if isinstance(op, CompositeOp):
        return [
            o.name
            for o in op.body.block.ops
            if isinstance(o, NNOp) and not isinstance(o, ConstantOp)
        ]
    return [] if isinstance(op, ConstantOp) else [op.name]


def expected_placement(module: ModuleOp, scenario: Scenario) -> dict[str | None, Counter[str]]:
    """target (None: host) -> nn op names, as merge-composite + annotate-target tag them."""
    ctx = make_context()
    tagged = module.clone()
    MergeCompositePass(targets=scenario.targets, patterns=scenario.patterns).apply(ctx, tagged)
    AnnotateTargetPass(targets=scenario.targets, ops=scenario.ops).apply(ctx, tagged)
    placement: dict[str | None, Counter[str]] = {}
    for op in _functions(tagged)["main"].body.block.ops:
        if isinstance(op, NNOp | CompositeOp):
            attr = op.attributes.get(TARGET_ATTR)
            target = attr.data if isinstance(attr, StringAttr) else None
            placement.setdefault(target, Counter()).update(_nn_ops(op))
    return {k: v for k, v in placement.items() if v}


def actual_placement(module: ModuleOp) -> dict[str | None, Counter[str]]:
    """target (None: host) -> nn op names, as the partitioned module places them."""
    placement: dict[str | None, Counter[str]] = {}
    for func in _functions(module).values():
        attr = func.attributes.get(COMPILER_ATTR)
        target = attr.data if isinstance(attr, StringAttr) else None
        for op in func.body.block.ops:
            if isinstance(op, NNOp | CompositeOp):
                placement.setdefault(target, Counter()).update(_nn_ops(op))
    return {k: v for k, v in placement.items() if v}


def assert_call_graph_acyclic(module: ModuleOp) -> None:
    funcs = _functions(module)
    edges = {
        name: [op.callee.root_reference.data for op in f.walk() if isinstance(op, CallOp)]
        for name, f in funcs.items()
    }
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        assert state.get(name) != 1, f"call cycle: {' -> '.join([*path, name])}"
        state[name] = 1
        for callee in edges.get(name, []):
            assert callee in funcs, f"@{name} calls unknown @{callee}"
            visit(callee, [*path, name])
        state[name] = 2

    for name in funcs:
        visit(name, [])
    for name, f in funcs.items():
        if COMPILER_ATTR in f.attributes:
            assert not edges[name], f"partition @{name} calls {edges[name]}"


def mergeable_pairs(module: ModuleOp) -> list[tuple[str, str]]:
    """Pairs of calls of one target in @main that could be merged into one without a cycle.

    Merging calls a and b closes a cycle iff a path runs from one to the other
    through some third op. Reachability is computed with bitsets, independently
    of the pass's own checks.
    """
    funcs = _functions(module)
    ops = [op for op in funcs["main"].body.block.ops]
    index = {id(op): i for i, op in enumerate(ops)}
    succs: list[set[int]] = [set() for _ in ops]
    for i, op in enumerate(ops):
        for operand in op.operands:
            owner = getattr(operand, "op", None)
            if owner is not None and id(owner) in index:
                succs[index[id(owner)]].add(i)
    reach = [0] * len(ops)
    for i in reversed(range(len(ops))):
        bits = 0
        for s in succs[i]:
            bits |= (1 << s) | reach[s]
        reach[i] = bits
    calls_by_target: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        if isinstance(op, CallOp):
            callee = funcs[op.callee.root_reference.data]
            attr = callee.attributes.get(COMPILER_ATTR)
            if isinstance(attr, StringAttr):
                calls_by_target.setdefault(attr.data, []).append(i)

    def long_path(a: int, b: int) -> bool:
        return any(s != b and (reach[s] >> b) & 1 for s in succs[a])

    out: list[tuple[str, str]] = []
    for calls in calls_by_target.values():
        for x in range(len(calls)):
            for y in range(x + 1, len(calls)):
                a, b = calls[x], calls[y]
                if not long_path(a, b) and not long_path(b, a):
                    out.append((str(ops[a].callee), str(ops[b].callee)))
    return out


# --------------------------------------------------------------------------
# The property
# --------------------------------------------------------------------------


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_pipeline_properties(scenario: Scenario) -> None:
    module = build_module(scenario.spec)
    inputs = random_inputs(scenario.spec, seed=1)
    with np.errstate(all="ignore"):
        before = run_reference(module, *inputs)
    expected = expected_placement(module, scenario)

    ctx = make_context()
    scenario.pipeline().apply(ctx, module)
    module.verify()
    assert_call_graph_acyclic(module)
    assert actual_placement(module) == expected
    assert mergeable_pairs(module) == []
    with np.errstate(all="ignore"):
        after = run_reference(module, *inputs)
    assert len(after) == len(before)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)

    once = str(module)
    scenario.pipeline().apply(ctx, module)
    assert str(module) == once, "the pipeline is not idempotent"


def test_mergeable_pairs_detects_independent_partitions() -> None:
    """The maximality check itself: two independent calls of one target are mergeable."""
    from byoc.context import parse_module

    module = parse_module(
        """
        func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
          %a = func.call @t_0(%x) : (tensor<4xf32>) -> tensor<4xf32>
          %b = func.call @t_1(%x) : (tensor<4xf32>) -> tensor<4xf32>
          func.return %a, %b : tensor<4xf32>, tensor<4xf32>
        }
        func.func private @t_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "test"} {
          %0 = nn.relu %x : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        func.func private @t_1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {byoc.compiler = "test"} {
          %0 = nn.abs %x : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    assert mergeable_pairs(module) == [("@t_0", "@t_1")]
