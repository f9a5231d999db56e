"""Conformance of the ONNX frontend (and of any executor) against ONNX's own test data.

Two sources, both shipped inside the installed `onnx` package:

- **Node tests** (`onnx.backend.test`): one small model per op and attribute
  combination, with inputs and expected outputs. onnx >= 1.23 builds them in
  memory (`load_node_cases()`, about 10-25 s, cached per process).
  `select_cases()` keeps the cases whose ops are all in `SUPPORTED_OPS`;
  `run_case(case, execute)` imports a case, runs it with `execute(module,
  inputs) -> outputs` and compares with the stored outputs the way ONNX's
  backend runner does (same shape, same dtype, `assert_allclose` with the
  case's rtol/atol: 1e-3 / 1e-7).
- **Light models** (`onnx/backend/test/data/light/light_*.onnx`): real
  architectures whose weights are all 0.02 (`ConstantOfShape` nodes), so the
  stored output is input-independent. `randomize_weights(model, seed)` replaces
  those constants with seeded random initializers for a stronger check against
  onnxruntime.

The executor is pluggable: `reference_execute` (the numpy reference) today;
a `byoc.build(...)`-backed one checks the partitioned, compiled flow with the
same cases. A case is *skipped* only when the importer rejects it cleanly
(`UnsupportedOnnxError`: an element type, attribute or mode outside nn's
subset); anything else (a crash, a wrong shape, dtype or value) *fails*.

`python -m byoc.frontend.conformance` (or `benchmarks/onnx_conformance.py`)
writes the table in `docs/conformance.md`.
"""

from __future__ import annotations

import collections
import functools
import glob
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from byoc.frontend.onnx import (
    SUPPORTED_OPS,
    StaticValueRequired,
    UnsupportedOnnxError,
    import_model,
)

Execute = Callable[[ModuleOp, Sequence[np.ndarray[Any, Any]]], Sequence[np.ndarray[Any, Any]]]
"""Runs @main of an imported module on positional inputs; returns its outputs."""

Status = Literal["passed", "failed", "skipped"]


def reference_execute(
    module: ModuleOp, inputs: Sequence[np.ndarray[Any, Any]]
) -> list[np.ndarray[Any, Any]]:
    """The numpy reference (`byoc.run_reference`)."""
    from byoc.reference import run_reference

    return run_reference(module, list(inputs))


# --------------------------------------------------------------------------
# Node tests
# --------------------------------------------------------------------------


@functools.cache
def load_node_cases() -> tuple[Any, ...]:
    """Every ONNX backend node test case (onnx's TestCase objects), built once per process."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(load_model_tests(kind="node"))


def op_types(case: Any) -> tuple[str, ...]:
    """The op types a case's model uses, sorted (a domain other than ONNX's is kept as prefix)."""
    return tuple(
        sorted({(f"{n.domain}." if n.domain not in ("", "ai.onnx") else "") + n.op_type for n in case.model.graph.node})
    )


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
    values = {n: np.asarray(v) for n, v in zip(names, case.data_sets[0][0], strict=False)}
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
        ref, out = np.asarray(ref), np.asarray(out)
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
    for inputs, outputs in case.data_sets:
        given = [np.asarray(v) for n, v in zip(names, inputs, strict=False) if n not in bound]
        try:
            with np.errstate(all="ignore"):
                actual = execute(module, given)
            compare_outputs(outputs, actual, case.rtol, case.atol)
        except Exception as e:
            message = " ".join(str(e).split())
            return CaseResult(
                case.name, ops, "failed", f"{type(e).__name__}: {message[:300]}", tuple(bound)
            )
    return CaseResult(case.name, ops, "passed", "", tuple(bound))


def run_cases(cases: Iterable[Any], execute: Execute = reference_execute) -> list[CaseResult]:
    return [run_case(c, execute) for c in cases]


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
) -> str:
    """The conformance table: totals, per op, skip reasons, and every case not passed."""
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
    per_op: dict[str, collections.Counter[str]] = {op: collections.Counter() for op in SUPPORTED_OPS}
    for r in results:
        for op in r.op_types:
            per_op[op][r.status] += 1
    for op in sorted(per_op):
        c = per_op[op]
        lines.append(
            f"| {op} | {sum(c.values())} | {c['passed']} | {c['failed']} | {c['skipped']} |"
        )
    skipped = [r for r in results if r.status == "skipped"]
    if skipped:
        lines += ["", "## Skipped, by reason", "", "| cases | reason |", "|---:|---|"]
        reasons = collections.Counter(_short_reason(r.reason) for r in skipped)
        for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {n} | {reason.replace('|', '/')} |")
    not_passed = [r for r in results if r.status != "passed"]
    if not_passed:
        lines += ["", "## Cases not passed", "", "| case | status | reason |", "|---|---|---|"]
        for r in sorted(not_passed, key=lambda r: (r.status, r.name)):
            lines.append(f"| {r.name} | {r.status} | {r.reason.replace('|', '/')} |")
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

    Conv and Gemm weights are He-normal (by fan-in), biases small, and batch-norm
    scales and variances positive, so that activations keep their scale through
    a deep network and its outputs depend on every weight.
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

    def role(name: str) -> tuple[str, int]:
        for node, i in consumers.get(name, []):
            if node.op_type in ("Unsqueeze", "Reshape", "Identity") and i == 0:
                return role(node.output[0])
            return node.op_type, i
        return "", 0

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
        op, index = role(node.output[0])
        if op in ("Conv", "ConvTranspose") and index == 1 or op == "Gemm" and index == 1:
            fan_in = int(np.prod(shape[1:])) if op != "Gemm" else min(shape)
            w = rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(2.0 / max(fan_in, 1)))
        elif op == "BatchNormalization" and index in (1, 4) or op == "Mul":
            w = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        else:
            w = (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1)).astype(np.float32)
        graph.initializer.append(numpy_helper.from_array(w, node.output[0]))
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


def onnxruntime_execute(model: Any, inputs: Sequence[np.ndarray[Any, Any]]) -> list[np.ndarray[Any, Any]]:
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
    stored_error: float
    """Max |ours - stored output| with the model's own (constant) weights."""
    onnxruntime_error: float
    """Max |ours - onnxruntime| / max |onnxruntime| over the outputs and logits, random weights."""
    passed: bool


def run_light_model(
    name: str, execute: Execute = reference_execute, rtol: float = 1e-3, atol: float = 1e-4
) -> ModelResult:
    """A light model against its stored output, and with random weights against onnxruntime."""
    import onnx

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    model = onnx.load(light_models()[name])
    start = time.perf_counter()
    module = import_model(model)
    imported = time.perf_counter()
    (out,) = execute(module, [x])
    ran = time.perf_counter()
    stored = light_model_output(name)
    ok = out.shape == stored.shape and bool(np.allclose(out, stored, rtol=rtol, atol=atol))
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
        name, len(model.graph.node), imported - start, ran - imported, stored_error, ort_error, ok
    )


def render_models_markdown(results: Sequence[ModelResult]) -> str:
    lines = [
        "## Real architectures",
        "",
        "`onnx/backend/test/data/light/light_*.onnx`: the stored output (weights all 0.02),",
        "then seeded random weights against onnxruntime (1 thread), comparing the output and",
        "the logits (the final Softmax's input); rtol 1e-3, atol 1e-4. The onnxruntime error is",
        "relative to the largest magnitude of each output (random weights without calibrated",
        "batch-norm statistics make the logits of the residual networks large).",
        "",
        "| model | nodes | import s | run s | max err vs stored | max rel. err vs onnxruntime | result |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.nodes} | {r.import_seconds:.2f} | {r.run_seconds:.2f} | "
            f"{r.stored_error:.2e} | {r.onnxruntime_error:.2e} | {'passed' if r.passed else 'FAILED'} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Command line: write docs/conformance.md
# --------------------------------------------------------------------------


def write_report(
    path: str,
    command: str,
    execute: Execute = reference_execute,
    executor: str = "the numpy reference (`byoc.run_reference`)",
    models: bool = True,
) -> tuple[list[CaseResult], list[ModelResult]]:
    start = time.perf_counter()
    cases = load_node_cases()
    results = run_cases(select_cases(cases), execute)
    seconds = time.perf_counter() - start
    text = render_markdown(
        results, total_cases=len(cases), executor=executor, command=command, seconds=seconds
    )
    model_results = [run_light_model(name, execute) for name in light_models()] if models else []
    if model_results:
        head, sep, rest = text.partition("\n## Per op\n")
        text = head + "\n" + render_models_markdown(model_results) + sep + rest
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return results, model_results


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="docs/conformance.md", help="where to write the table")
    parser.add_argument(
        "--no-models", action="store_true", help="skip the light_* models (about a minute)"
    )
    args = parser.parse_args(argv)
    results, models = write_report(
        args.output, "python -m byoc.frontend.conformance", models=not args.no_models
    )
    count = collections.Counter(r.status for r in results)
    print(
        f"{len(results)} cases: {count['passed']} passed, {count['failed']} failed, "
        f"{count['skipped']} skipped -> {args.output}"
    )
    for r in results:
        if r.status == "failed":
            print(f"FAILED {r.name}: {r.reason}")
    for m in models:
        print(
            f"{m.name}: {'passed' if m.passed else 'FAILED'} (vs stored {m.stored_error:.1e}, "
            f"vs onnxruntime {m.onnxruntime_error:.1e} relative)"
        )
    return 1 if count["failed"] or not all(m.passed for m in models) else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "CaseResult",
    "Execute",
    "ModelResult",
    "compare_outputs",
    "import_case",
    "is_covered",
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
    "softmax_logits_model",
]
