"""Conformance of the ONNX frontend (and of any executor) against ONNX's own test data.

Two sources, both shipped inside the installed `onnx` package:

- **Node tests** (`onnx.backend.test`): one small model per op and attribute
  combination, with inputs and expected outputs. onnx >= 1.23 builds them in
  memory (`load_node_cases()`, about 10-25 s, cached per process).
  `select_cases()` keeps the cases whose ops are all in `SUPPORTED_OPS`;
  `run_case(case, execute)` imports a case, runs it with `execute(module,
  inputs) -> outputs` and compares with the stored outputs the way ONNX's
  backend runner does (same shape, same dtype, `assert_allclose` with the
  case's rtol/atol: 1e-3 / 1e-7). With `NODE_CASE_CACHE` set (the test
  suite sets it), the built cases are also pickled there, so the next process
  (another pytest-xdist worker, the next run) reads them in a fraction of a
  second; a case's numpy-reference result is kept per process, so the test
  files that check different ops' shares of it run each case once.
- **Light models** (`onnx/backend/test/data/light/light_*.onnx`): real
  architectures whose weights are all 0.02 (`ConstantOfShape` nodes), so the
  stored output is input-independent. `randomize_weights(model, seed)` replaces
  those constants with seeded random initializers for a stronger check against
  onnxruntime.

The executor is pluggable: `reference_execute` (the numpy reference), or
`BuildExecute(targets)`, the real flow: `byoc.build(module, targets=...)`
partitions, compiles the C partitions, builds the ExampleJSON module and runs
the rest on the host; it also records where each `nn` op ran (`placement`).
`run_cases_batched` runs many cases as one model (their graphs side by side
in one `@main`), so one C library is compiled for all of them; a case that
fails there is run again alone, and that run decides. A case is *skipped* only
when the importer rejects it cleanly (`UnsupportedOnnxError`: an element
type, attribute or mode outside nn's subset); anything else (a crash, a wrong
shape, dtype or value) *fails*.

`python benchmarks/conformance.py` writes the table in `docs/conformance.md`
from the build path, one `byoc.build` per case (`--reference` for the numpy
reference). This module lives with the tests: it is a test and report
harness, not part of the `byoc` package.
"""

from __future__ import annotations

import collections
import functools
import glob
import math
import os
import pickle
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, ReturnOp
from xdsl.ir import Operation

from byoc.frontend.onnx import (
    SUPPORTED_OPS,
    StaticValueRequired,
    UnsupportedOnnxError,
    import_model,
)
from support.merged_builds import main_function, merge_mains

Execute = Callable[[ModuleOp, Sequence[np.ndarray[Any, Any]]], Sequence[np.ndarray[Any, Any]]]
"""Runs @main of an imported module on positional inputs; returns its outputs."""

Status = Literal["passed", "failed", "skipped"]


def reference_execute(
    module: ModuleOp, inputs: Sequence[np.ndarray[Any, Any]]
) -> list[np.ndarray[Any, Any]]:
    """The numpy reference (`byoc.run_reference`)."""
    from byoc.interpreters import run_reference

    return run_reference(module, *inputs)


DEFAULT_TARGETS: tuple[str, ...] = ("ccompiler", "examplejson")
"""The targets of the build path: C first; ExampleJSON takes what C rejects."""

HOST = "host"


def placement_of(exe: Any) -> tuple[tuple[str, str], ...]:
    """(nn op or composite name, target or 'host') for every op an `Executable` runs, sorted."""
    where = {(op, p.target) for p in exe.partitions for op in p.ops}
    where |= {(s.name, HOST) for s in exe.plan.steps if s.kind == "kernel"}
    return tuple(sorted(where))


@dataclass
class BuildExecute:
    """`byoc.build(module, targets=...)` then `run`: the real flow, as an `Execute`.

    `last` is the `Executable` of the latest call (its partitions and host steps
    say where each op ran).
    """

    targets: tuple[str, ...] = DEFAULT_TARGETS
    last: Any = None
    build_seconds: float = 0.0
    """Wall time of the latest `byoc.build` (partitioning and code generation included)."""

    def __call__(
        self, module: ModuleOp, inputs: Sequence[np.ndarray[Any, Any]]
    ) -> list[np.ndarray[Any, Any]]:
        from byoc import build

        self.last = None
        start = time.perf_counter()
        self.last = build(module, targets=list(self.targets))
        self.build_seconds = time.perf_counter() - start
        return self.last.run(*inputs)


def host_ops(module: ModuleOp) -> list[Operation]:
    """The ops a partitioned module leaves on the host: @main's ops, less calls and constants."""
    from byoc.dialects import nn

    return [
        op
        for op in main_function(module).body.block.ops
        if not isinstance(op, CallOp | ReturnOp | nn.ConstantOp)
    ]


def accepting_targets(op: Operation, targets: Sequence[str]) -> list[str]:
    """The targets among `targets` whose support predicate takes `op`."""
    from byoc.op_registry import get_op_attr
    from byoc.targets import get_target

    taken: list[str] = []
    for target in targets:
        get_target(target)  # registers its predicates
        predicate = get_op_attr(op.name, f"target.{target}")
        if predicate is not None and predicate(op):
            taken.append(target)
    return taken


def expected_placement(module: ModuleOp, targets: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(nn op, first target whose predicate takes it, else 'host') for @main's ops, sorted."""
    from byoc.dialects import nn

    where: set[tuple[str, str]] = set()
    for op in main_function(module).body.block.ops:
        if isinstance(op, nn.NNOp) and not isinstance(op, nn.ConstantOp):
            where.add((op.name, next(iter(accepting_targets(op, targets)), HOST)))
    return tuple(sorted(where))


def misplaced_host_ops(module: ModuleOp, targets: Sequence[str]) -> list[str]:
    """Partition a copy of `module` for `targets`; name each host op some target's predicate takes.

    Empty when nothing but unsupported ops is left on the host.
    """
    from byoc.passes.byoc_pipeline import partition_for

    partitioned = partition_for(module.clone(), list(targets))
    return [
        f"{op.name} (taken by {', '.join(ts)})"
        for op in host_ops(partitioned)
        if (ts := accepting_targets(op, targets))
    ]


# --------------------------------------------------------------------------
# Node tests
# --------------------------------------------------------------------------


NODE_CASE_CACHE: Path | None = None
"""A directory where `load_node_cases` keeps the built cases, pickled under a name holding
the onnx and Python versions; None builds them in every process. Reading them back is much
cheaper than building them (docs/testing.md, "Keeping the default run short")."""


def _node_case_file(directory: Path) -> Path:
    import onnx

    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return directory / f"onnx-{onnx.__version__}-py{python}-node-cases.pickle"


def _build_node_cases() -> tuple[Any, ...]:
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(load_model_tests(kind="node"))


@functools.cache
def load_node_cases() -> tuple[Any, ...]:
    """Every ONNX backend node test case (onnx's TestCase objects), built once per process,
    or read from `NODE_CASE_CACHE` when an earlier process left them there."""
    cases = _read_or_build_node_cases()
    _NODE_CASE_IDS.update(id(c) for c in cases)
    return cases


_NODE_CASE_IDS: set[int] = set()
"""The ids of the cases `load_node_cases()` returned (it keeps them alive, so an id is never
reused)."""


def _read_or_build_node_cases() -> tuple[Any, ...]:
    if NODE_CASE_CACHE is None:
        return _build_node_cases()
    path = _node_case_file(NODE_CASE_CACHE)
    try:
        with path.open("rb") as f:
            cases = pickle.load(f)
        if isinstance(cases, tuple):
            return cases
    except Exception:  # absent, or cut short by a killed run: build it again
        pass
    cases = _build_node_cases()
    path.parent.mkdir(parents=True, exist_ok=True)
    # written aside and renamed: a reader sees the whole file or none
    fd, scratch = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(cases, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(scratch, path)
    return cases


def op_types(case: Any) -> tuple[str, ...]:
    """The op types a case's model uses, sorted (a domain other than ONNX's is kept as prefix)."""
    return tuple(
        sorted(
            {
                (f"{n.domain}." if n.domain not in ("", "ai.onnx") else "") + n.op_type
                for n in case.model.graph.node
            }
        )
    )


def unconverted_ops(case: Any) -> tuple[str, ...]:
    """The op types of a case the importer does not convert, sorted."""
    return tuple(op for op in op_types(case) if op not in SUPPORTED_OPS)


def is_covered(case: Any) -> bool:
    """True when every op of the case is one the importer converts."""
    return set(op_types(case)) <= SUPPORTED_OPS


def select_cases(cases: Iterable[Any] | None = None) -> list[Any]:
    """The node test cases whose ops are all covered."""
    return [c for c in (load_node_cases() if cases is None else cases) if is_covered(c)]


@dataclass(frozen=True)
class CaseResult:
    name: str
    op_types: tuple[str, ...]
    status: Status
    reason: str = ""
    bound_inputs: tuple[str, ...] = ()
    """Graph inputs bound to their test values at import (shapes, pads, axes given as inputs)."""
    placement: tuple[tuple[str, str], ...] = ()
    """With `BuildExecute`: (nn op, target or 'host') for every op the case ran."""


def as_array(value: Any) -> np.ndarray[Any, Any]:
    """A data set's value as numpy: some cases store TensorProtos (the Cast tests), some
    numpy scalars."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def _graph_inputs(model: Any) -> list[str]:
    initializers = {t.name for t in model.graph.initializer}
    return [vi.name for vi in model.graph.input if vi.name not in initializers]


def import_case(case: Any) -> tuple[ModuleOp, dict[str, np.ndarray[Any, Any]]]:
    """Import a node test case, binding inputs that must be static to the first data set's values.

    ONNX node tests pass shapes, pads, axes, scales... as graph inputs; byoc needs
    them at import time. An input the importer asks for (`StaticValueRequired`) is
    bound; if the import still fails as unsupported, every integer input is bound
    (shape arithmetic on them, e.g. an integer Div), provided some input is left
    to compute with at run time. Raises the importer's error when neither works.
    """
    model = case.model
    names = _graph_inputs(model)
    values = {n: as_array(v) for n, v in zip(names, case.data_sets[0][0], strict=False)}
    bound: dict[str, np.ndarray[Any, Any]] = {}
    while True:
        try:
            return import_model(model, bind_inputs=bound), bound
        except StaticValueRequired as e:
            if e.input_name is None or e.input_name in bound or e.input_name not in values:
                raise
            bound[e.input_name] = values[e.input_name]
        except UnsupportedOnnxError:
            ints = {n: v for n, v in values.items() if v.dtype.kind in "iu" and n not in bound}
            if not ints or set(ints) | set(bound) >= set(names):
                raise  # nothing would be left to run: a folding test, not a run
            bound.update(ints)


def compare_outputs(
    expected: Sequence[Any], actual: Sequence[Any], rtol: float, atol: float
) -> None:
    """ONNX's backend runner comparison: same count, shape and dtype, then assert_allclose."""
    if len(expected) != len(actual):
        raise AssertionError(f"{len(actual)} outputs, expected {len(expected)}")
    for i, (ref, out) in enumerate(zip(expected, actual, strict=True)):
        if hasattr(ref, "int32_data"):  # a TensorProto (onnx stores some int16 outputs so)
            from onnx import numpy_helper

            ref = numpy_helper.to_array(ref)
        ref, out = as_array(ref), np.asarray(out)
        if out.shape != ref.shape:
            raise AssertionError(f"output {i} has shape {out.shape}, expected {ref.shape}")
        if out.dtype != ref.dtype:
            raise AssertionError(f"output {i} has dtype {out.dtype}, expected {ref.dtype}")
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol, err_msg=f"output {i}")


def run_case(case: Any, execute: Execute = reference_execute) -> CaseResult:
    """Import and run one node test case on every data set; never raises."""
    ops = op_types(case)
    try:
        module, bound = import_case(case)
    except UnsupportedOnnxError as e:
        return CaseResult(case.name, ops, "skipped", e.message)
    except Exception as e:  # an importer bug or a malformed model: a failure
        return CaseResult(case.name, ops, "failed", f"import: {type(e).__name__}: {e}")
    names = _graph_inputs(case.model)
    placement: set[tuple[str, str]] = set()
    for inputs, outputs in case.data_sets:
        given = [as_array(v) for n, v in zip(names, inputs, strict=False) if n not in bound]
        try:
            with np.errstate(all="ignore"):
                actual = execute(module, given)
            if isinstance(execute, BuildExecute):
                placement.update(placement_of(execute.last))
            compare_outputs(outputs, actual, case.rtol, case.atol)
        except Exception as e:
            return CaseResult(
                case.name, ops, "failed", _failure(e), tuple(bound), tuple(sorted(placement))
            )
    return CaseResult(case.name, ops, "passed", "", tuple(bound), tuple(sorted(placement)))


def _failure(e: BaseException) -> str:
    message = " ".join(str(e).split())
    return f"{type(e).__name__}: {message[:300]}"


_REFERENCE_RESULTS: dict[int, CaseResult] = {}
"""`run_case(case)` on the numpy reference, by `id(case)`, for the cases of `load_node_cases()`."""


def run_cases(cases: Iterable[Any], execute: Execute = reference_execute) -> list[CaseResult]:
    """`run_case` for each case; on the numpy reference, a node test case runs once per process
    (its result depends on the case alone), so the files that each check a part of the node
    tests share the runs."""
    if execute is not reference_execute:
        return [run_case(c, execute) for c in cases]
    results: list[CaseResult] = []
    for case in cases:
        if id(case) not in _NODE_CASE_IDS:
            results.append(run_case(case))
            continue
        if id(case) not in _REFERENCE_RESULTS:
            _REFERENCE_RESULTS[id(case)] = run_case(case)
        results.append(_REFERENCE_RESULTS[id(case)])
    return results


def run_cases_batched(
    cases: Sequence[Any], targets: Sequence[str] = DEFAULT_TARGETS, batch_size: int = 200
) -> list[CaseResult]:
    """`run_cases(cases, BuildExecute(targets))`, with one `byoc.build` per batch of cases.

    The cases of a batch become one model (`merge_mains`): one partitioning,
    one C library, one run. A case whose outputs do not match there, or every
    case of a batch that fails to build or run, is run again alone with
    `run_case`, whose result is the one reported: a failure is always the
    failure of the case on its own. The placement of a case that passed in a
    batch is `expected_placement`: with no pattern tables and no minimum
    region size (the build path's targets), where an op runs depends only on
    the targets' predicates on that op.
    """
    from byoc import build

    execute = BuildExecute(tuple(targets))
    results: dict[str, CaseResult] = {}
    ready: list[tuple[Any, ModuleOp, dict[str, np.ndarray[Any, Any]]]] = []
    for case in cases:
        try:
            module, bound = import_case(case)
            ready.append((case, module, bound))
        except Exception:
            results[case.name] = run_case(case, execute)  # skipped, or an import failure
    for lo in range(0, len(ready), batch_size):
        batch = ready[lo : lo + batch_size]
        merged, spans = merge_mains([m for _, m, _ in batch])
        inputs: list[np.ndarray[Any, Any]] = []
        for case, _, bound in batch:
            names = _graph_inputs(case.model)
            values = case.data_sets[0][0]
            inputs += [as_array(v) for n, v in zip(names, values, strict=False) if n not in bound]
        try:
            exe = build(merged, targets=list(targets))
            with np.errstate(all="ignore"):
                outputs = exe.run(*inputs)
        except Exception:
            outputs = None
        for (case, module, bound), (start, stop) in zip(batch, spans, strict=True):
            if outputs is None or len(case.data_sets) != 1:
                results[case.name] = run_case(case, execute)
                continue
            try:
                compare_outputs(case.data_sets[0][1], outputs[start:stop], case.rtol, case.atol)
            except Exception:
                results[case.name] = run_case(case, execute)
                continue
            results[case.name] = CaseResult(
                case.name,
                op_types(case),
                "passed",
                "",
                tuple(bound),
                expected_placement(module, targets),
            )
    return [results[c.name] for c in cases]


@functools.cache
def node_results_through_build(targets: tuple[str, ...]) -> dict[str, CaseResult]:
    """`run_cases_batched` over every covered node test case for `targets` (batches of 100),
    once per process, by case name. A case's result there is its result alone (a case that
    fails in its batch is run again alone), so a test of some ops' cases takes them from here
    instead of building its own batches."""
    covered = select_cases(load_node_cases())
    return {r.name: r for r in run_cases_batched(covered, targets, batch_size=100)}


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


def _onnx_version() -> str:
    import onnx

    return str(onnx.__version__)


def _short_reason(reason: str) -> str:
    """A reason with names quoted in it replaced, so that cases group by cause."""
    return re.sub(r"'[^']*'", "'…'", reason)


def render_markdown(
    results: Sequence[CaseResult],
    *,
    total_cases: int,
    executor: str,
    command: str,
    seconds: float | None = None,
    unconverted: Sequence[Sequence[str]] = (),
) -> str:
    """The conformance table: totals, per op, skip reasons, and every case not passed.

    `unconverted` holds, per node test not run (an op outside SUPPORTED_OPS), its op
    types the importer does not convert; each such case is counted under one reason."""
    from support.onnx_skip_reasons import NOT_CONVERTED, import_reason, op_reason

    count = collections.Counter(r.status for r in results)
    lines = [
        "# ONNX conformance",
        "",
        f"Generated by `{command}`; do not edit by hand.",
        "",
        f"Executor: {executor}. Source: the ONNX backend node tests of the installed",
        f"onnx {_onnx_version()} ({total_cases} cases; {len(results)} use only ops the importer covers).",
        "A case is skipped only when the importer rejects it cleanly as unsupported;",
        "a crash or a wrong shape, dtype or value is a failure. Inputs that ONNX",
        "passes at run time but byoc needs at import (shapes, pads, axes, scales)",
        "are bound to the case's values (`bind_inputs`).",
        "",
        "| cases run | passed | failed | skipped |",
        "|---:|---:|---:|---:|",
        f"| {len(results)} | {count['passed']} | {count['failed']} | {count['skipped']} |",
        "",
    ]
    if unconverted:
        share = 100.0 * count["passed"] / max(total_cases, 1)
        lines += [
            f"Of all {total_cases} node tests: {count['passed']} pass ({share:.0f} %), "
            f"{count['failed']} fail, {count['skipped']} are skipped at import and "
            f"{len(unconverted)} are not run (they use an op the importer does not convert); "
            "every case not passed is counted under one reason below.",
            "",
        ]
    if seconds is not None:
        lines += [f"Wall time: {seconds:.1f} s.", ""]
    lines += [
        "## Per op",
        "",
        "Each case counts once for every op type its model uses.",
        "",
        "| op | cases | passed | failed | skipped |",
        "|---|---:|---:|---:|---:|",
    ]
    per_op: dict[str, collections.Counter[str]] = {
        op: collections.Counter() for op in SUPPORTED_OPS
    }
    for r in results:
        for op in r.op_types:
            per_op[op][r.status] += 1
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(
            f"| {op} | {sum(c.values())} | {c['passed']} | {c['failed']} | {c['skipped']} |"
        )
    skipped = [r for r in results if r.status == "skipped"]
    if skipped or unconverted:
        lines += [
            "",
            "## Not passed, by reason",
            "",
            "Every case that does not pass is counted once, under one reason: skipped (the importer",
            "rejects it cleanly) or not run (its model uses an op type the importer does not convert).",
            "",
            "| reason | skipped | not run | cases |",
            "|---|---:|---:|---:|",
        ]
        skip_why = collections.Counter(import_reason(r.reason) for r in skipped)
        run_why = collections.Counter(op_reason(ops) for ops in unconverted)
        reasons = set(skip_why) | set(run_why)
        for reason in sorted(reasons, key=lambda w: (-(skip_why[w] + run_why[w]), w)):
            lines.append(
                f"| {reason.replace('|', '/')} | {skip_why[reason]} | {run_why[reason]} | "
                f"{skip_why[reason] + run_why[reason]} |"
            )
        lines.append(
            f"| **total** | {sum(skip_why.values())} | {sum(run_why.values())} | "
            f"{sum(skip_why.values()) + sum(run_why.values())} |"
        )
        missing = collections.Counter(
            op for ops in unconverted if op_reason(ops) == NOT_CONVERTED for op in ops
        )
        if missing:
            lines += [
                "",
                f"The {run_why[NOT_CONVERTED]} cases not run under \"{NOT_CONVERTED}\" use (cases per op):",
                ", ".join(f"{op} {n}" for op, n in sorted(missing.items(), key=lambda kv: (-kv[1], kv[0])))
                + ".",
            ]
    not_passed = [r for r in results if r.status != "passed"]
    if not_passed:
        lines += ["", "## Cases not passed", "", "| case | status | reason |", "|---|---|---|"]
        for r in sorted(not_passed, key=lambda r: (r.status, r.name)):
            reason = re.sub(r"; supported: .*$", "; supported: see docs/onnx.md", r.reason)
            lines.append(f"| {r.name} | {r.status} | {reason.replace('|', '/')} |")
    placed = collections.Counter(w for r in results for w in r.placement)
    if placed:
        wheres = sorted({w for _, w in placed}, key=lambda w: (w == HOST, w))
        lines += [
            "",
            "## Where the nn ops ran",
            "",
            "Cases (run, passed or failed) in which an op of that kind ran on each target or on",
            "the host. An op is on the host only when no target's support predicate takes it.",
            "",
            "| nn op | " + " | ".join(wheres) + " |",
            "|---|" + "---:|" * len(wheres),
        ]
        for op in sorted({op for op, _ in placed}):
            lines.append(f"| {op} | " + " | ".join(str(placed[op, w]) for w in wheres) + " |")
    bound = [r for r in results if r.bound_inputs and r.status == "passed"]
    if bound:
        lines += [
            "",
            "## Passed with inputs bound at import",
            "",
            "| case | bound inputs |",
            "|---|---|",
        ]
        for r in sorted(bound, key=lambda r: r.name):
            lines.append(f"| {r.name} | {', '.join(r.bound_inputs)} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Light models
# --------------------------------------------------------------------------


def light_model_dir() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def light_models() -> dict[str, str]:
    """name -> path of every light_*.onnx in the installed onnx package."""
    paths = sorted(glob.glob(os.path.join(light_model_dir(), "light_*.onnx")))
    return {os.path.basename(p)[len("light_") : -len(".onnx")]: p for p in paths}


def light_model_output(name: str) -> np.ndarray[Any, Any]:
    """The stored output of a light model (input-independent: its weights are constant)."""
    import onnx
    from onnx import numpy_helper

    tensor = onnx.TensorProto()
    with open(os.path.join(light_model_dir(), f"light_{name}_output_0.pb"), "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def randomize_weights(model: Any, seed: int = 0) -> Any:
    """A copy of `model` whose float `ConstantOfShape` weights are seeded random initializers.

    Scaled so that activations keep their scale through a deep network, its
    outputs stay well-conditioned (no logits of 1e6 that cancel to 190) and
    depend on every weight: Conv and Gemm weights are normal with variance
    gain / fan-in (gain 2, He, when a ReLU follows, through a batch norm;
    1 otherwise); a batch norm's variance is uniform in [0.5, 1.5] and its
    scale sqrt(variance) times a factor in [0.8, 1.2] (in [0.2, 0.4] when it
    feeds a residual Add, so that the sum does not double the variance);
    biases and means are small.
    """
    import onnx
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list[tuple[Any, int]]] = collections.defaultdict(list)
    for node in graph.node:
        for i, name in enumerate(node.input):
            consumers[name].append((node, i))

    def role(name: str) -> tuple[Any, int]:
        for node, i in consumers.get(name, []):
            if node.op_type in ("Unsqueeze", "Reshape", "Identity") and i == 0:
                return role(node.output[0])
            return node, i
        return None, 0

    def feeds(name: str, op_types: tuple[str, ...]) -> bool:
        """A consumer of `name` (through batch norms) is one of `op_types`."""
        for node, _ in consumers.get(name, []):
            if node.op_type in op_types:
                return True
            if node.op_type == "BatchNormalization" and feeds(node.output[0], op_types):
                return True
        return False

    relu = ("Relu", "LeakyRelu", "PRelu", "Clip")
    random: dict[str, np.ndarray[Any, Any]] = {}
    kept = []
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in consts:
            kept.append(node)
            continue
        value = next((a for a in node.attribute if a.name == "value"), None)
        dtype = numpy_helper.to_array(value.t).dtype if value is not None else np.dtype(np.float32)
        if dtype != np.float32:
            kept.append(node)
            continue
        shape = tuple(int(d) for d in consts[node.input[0]].reshape(-1))
        user, index = role(node.output[0])
        op = user.op_type if user is not None else ""
        if op in ("Conv", "ConvTranspose", "Gemm") and index == 1:
            fan_in = int(np.prod(shape[1:])) if op != "Gemm" else min(shape)
            gain = 2.0 if feeds(user.output[0], relu) else 1.0
            w = rng.standard_normal(shape, dtype=np.float32) * np.float32(
                np.sqrt(gain / max(fan_in, 1))
            )
        elif op == "BatchNormalization" and index in (1, 4) or op == "Mul":
            w = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        else:
            w = (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1)).astype(np.float32)
        random[node.output[0]] = w
    for node in graph.node:  # batch norms: scale / sqrt(variance) around 1, small before an Add
        if node.op_type == "BatchNormalization" and {node.input[1], node.input[4]} <= set(random):
            eps = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
            low, high = (0.2, 0.4) if feeds(node.output[0], ("Add", "Sum")) else (0.8, 1.2)
            var = random[node.input[4]]
            factor = rng.uniform(low, high, var.shape)
            random[node.input[1]] = (np.sqrt(var + np.float32(eps)) * factor).astype(np.float32)
    for name, w in random.items():
        graph.initializer.append(numpy_helper.from_array(w, name))
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    dropped = {t.name for t in graph.initializer if t.name not in used}
    inits = [t for t in graph.initializer if t.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    inputs = [vi for vi in graph.input if vi.name not in dropped]
    del graph.input[:]
    graph.input.extend(inputs)
    return out


def softmax_logits_model(model: Any) -> Any:
    """A copy of `model` that also outputs the input of its final Softmax (if any): the logits.

    A softmax over 1000 classes squeezes differences below the tolerances; the
    logits keep them visible.
    """
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    final = {vi.name for vi in out.graph.output}
    for node in out.graph.node:
        if node.op_type == "Softmax" and node.output[0] in final:
            out.graph.output.append(
                onnx.helper.make_tensor_value_info(node.input[0], onnx.TensorProto.FLOAT, None)
            )
    return out


def onnxruntime_execute(
    model: Any, inputs: Sequence[np.ndarray[Any, Any]]
) -> list[np.ndarray[Any, Any]]:
    """Run a ModelProto with onnxruntime on one intra-op and one inter-op thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # no warnings about unused initializers
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feeds = dict(zip(_graph_inputs(model), inputs, strict=True))
    return list(session.run(None, feeds))


@dataclass(frozen=True)
class ModelResult:
    name: str
    nodes: int
    import_seconds: float
    run_seconds: float
    """The first run with the model's own weights (with `BuildExecute`: the run alone)."""
    stored_error: float
    """Max |ours - stored output| with the model's own (constant) weights."""
    onnxruntime_error: float
    """Max |ours - onnxruntime| / max |onnxruntime| over the outputs and logits, random weights."""
    passed: bool
    build_seconds: float = 0.0
    """With `BuildExecute`: `byoc.build` of the model with its own weights."""
    partitions: int = 0
    host_ops: tuple[str, ...] = ()
    """With `BuildExecute`: the kinds of op left on the host, sorted."""
    misplaced: tuple[str, ...] = ()
    """With `BuildExecute`: host ops that some target's predicate takes (must be empty)."""


def run_light_model(
    name: str, execute: Execute = reference_execute, rtol: float = 1e-3, atol: float = 1e-4
) -> ModelResult:
    """A light model against its stored output, and with random weights against onnxruntime.

    With `BuildExecute`, also checks that the host keeps only ops no target takes.
    """
    import onnx

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    model = onnx.load(light_models()[name])
    start = time.perf_counter()
    module = import_model(model)
    imported = time.perf_counter()
    (out,) = execute(module, [x])
    ran = time.perf_counter()
    build_seconds, partitions, host, misplaced = 0.0, 0, (), ()
    if isinstance(execute, BuildExecute):
        build_seconds = execute.build_seconds
        partitions = len(execute.last.partitions)
        host = tuple(sorted({op for op, where in placement_of(execute.last) if where == HOST}))
        misplaced = tuple(misplaced_host_ops(module, execute.targets))
    stored = light_model_output(name)
    ok = out.shape == stored.shape and bool(np.allclose(out, stored, rtol=rtol, atol=atol))
    ok = ok and not misplaced
    stored_error = float(np.abs(out - stored).max()) if out.shape == stored.shape else math.inf
    random = softmax_logits_model(randomize_weights(model, seed=0))
    expected = onnxruntime_execute(random, [x])
    actual = execute(import_model(random), [x])
    ort_error = 0.0
    for a, e in zip(actual, expected, strict=True):
        ok = ok and a.shape == e.shape and bool(np.allclose(a, e, rtol=rtol, atol=atol))
        scale = max(float(np.abs(e).max()), 1e-30)
        err = float(np.abs(a - e).max()) / scale if a.shape == e.shape else math.inf
        ort_error = max(ort_error, err)
    return ModelResult(
        name,
        len(model.graph.node),
        imported - start,
        ran - imported - build_seconds,
        stored_error,
        ort_error,
        ok,
        build_seconds,
        partitions,
        host,
        misplaced,
    )


def render_models_markdown(results: Sequence[ModelResult], built: bool = False) -> str:
    lines = [
        "## Real architectures",
        "",
        "`onnx/backend/test/data/light/light_*.onnx`: the stored output (weights all 0.02),",
        "then seeded random weights against onnxruntime (1 thread), comparing the output and",
        "the logits (the final Softmax's input); rtol 1e-3, atol 1e-4 on every element. The",
        "onnxruntime error column is relative to the largest magnitude of each output. The random",
        "weights (`randomize_weights`) keep activations at their scale through the network.",
    ]
    if built:
        lines += [
            "Built for `ccompiler` alone: every op its predicates take is in a C partition,",
            "the rest (host ops) stays on the numpy host; a host op some predicate takes fails",
            "the model. Build and run times are of the model with its own weights (a cold",
            "compile unless the library cache already held it), on a shared 2-core machine.",
            "",
            "| model | nodes | import s | build s | run s | partitions | host ops "
            "| max err vs stored | max rel. err vs onnxruntime | result |",
            "|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
        ]
    else:
        lines += [
            "",
            "| model | nodes | import s | run s | max err vs stored "
            "| max rel. err vs onnxruntime | result |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
    for r in results:
        verdict = "passed" if r.passed else "FAILED"
        if built:
            host = ", ".join(f"`{op}`" for op in r.host_ops) or "none"
            lines.append(
                f"| {r.name} | {r.nodes} | {r.import_seconds:.2f} | {r.build_seconds:.2f} | "
                f"{r.run_seconds:.2f} | {r.partitions} | {host} | {r.stored_error:.2e} | "
                f"{r.onnxruntime_error:.2e} | {verdict} |"
            )
        else:
            lines.append(
                f"| {r.name} | {r.nodes} | {r.import_seconds:.2f} | {r.run_seconds:.2f} | "
                f"{r.stored_error:.2e} | {r.onnxruntime_error:.2e} | {verdict} |"
            )
    return "\n".join(lines) + "\n"


__all__ = [
    "DEFAULT_TARGETS",
    "BuildExecute",
    "CaseResult",
    "Execute",
    "ModelResult",
    "accepting_targets",
    "as_array",
    "compare_outputs",
    "expected_placement",
    "host_ops",
    "import_case",
    "is_covered",
    "merge_mains",
    "misplaced_host_ops",
    "placement_of",
    "node_results_through_build",
    "run_cases_batched",
    "light_model_output",
    "light_models",
    "load_node_cases",
    "onnxruntime_execute",
    "randomize_weights",
    "reference_execute",
    "render_markdown",
    "run_case",
    "run_cases",
    "run_light_model",
    "select_cases",
    "unconverted_ops",
    "softmax_logits_model",
]
