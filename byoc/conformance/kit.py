"""`byoc.check_target(name)`: the conformance kit, derived from the target itself.

For every op of the target's support table and every entry of its pattern table, the kit
generates small graphs (byoc/conformance/cases.py) over the element types, ranks, shapes
and attribute values, keeps those the target accepts (its predicate takes the op; its
pattern table forms the composite), builds them on the target and checks, per case:

| check | what |
|---|---|
| `threads=1`, `threads=2` | outputs within the bound of the numpy reference (exact for integers) |
| `nan-inf` | NaN, +-Inf and +-3e38 in the first float input: NaN where the reference has NaN, the same infinities, the rest within the bound |
| `concurrent` | four `run` calls from threads at once, on different inputs |
| `artifact` | `export_library` + `load_module`, then the same outputs |

The bound is the suite's (byoc/conformance/bounds.py): rounding of sums of products
(gamma_k times the magnitude) plus `ULPS` units in the last place. Cases are built in
batches (one module, one build); a batch that fails to build or run is retried case by
case, so a failure names its case. The report is a table op x element type.
"""

from __future__ import annotations

import concurrent.futures
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from byoc.conformance.bounds import compare, graph_bounds
from byoc.conformance.cases import (
    DEFAULT_DTYPES,
    FLOATS,
    Case,
    accepts,
    batch_module,
    generator_for,
    op_cases,
    pattern_cases,
)

Array = np.ndarray[Any, Any]

SPECIAL_VALUES = (np.nan, np.inf, -np.inf, 3e38, -3e38, -0.0)
"""Written at the start of the first float input of each case by the `nan-inf` check."""

BATCH = 40
"""Cases per build."""


@dataclass
class CaseFailure:
    check: str
    """Which check failed (`threads=2`, `nan-inf`, `build`, ...)."""
    message: str
    ulps: float = 0.0


@dataclass
class Cell:
    """One row x column of the table: an op (or composite) on one element type."""

    name: str
    dtype: str
    cases: list[Case] = field(default_factory=list[Case])
    failures: dict[int, CaseFailure] = field(default_factory=dict[int, CaseFailure])
    """Case index -> its first failure."""
    not_offloaded: bool = False

    @property
    def status(self) -> str:
        """`pass`, `fail`, `build error` or `not offloaded`."""
        if any(f.check == "build" for f in self.failures.values()):
            return "build error"
        if self.failures:
            return "fail"
        if self.not_offloaded:
            return "not offloaded"
        return "pass"

    def first_failure(self) -> tuple[Case, CaseFailure] | None:
        for i, case in enumerate(self.cases):
            if i in self.failures:
                return case, self.failures[i]
        return None

    def max_ulps(self) -> float:
        return max((f.ulps for f in self.failures.values()), default=0.0)

    def text(self) -> str:
        status = self.status
        if status == "pass":
            return f"pass ({len(self.cases)})"
        if status == "fail":
            u = self.max_ulps()
            shown = "inf" if not np.isfinite(u) else f"{u:.3g}"
            return f"FAIL {len(self.failures)}/{len(self.cases)} ({shown} ulp)"
        if status == "build error":
            return "BUILD ERROR"
        return status


@dataclass
class ConformanceReport:
    """What `check_target` found: a cell per (op or composite, element type) with cases, and
    the ops and patterns the kit could not exercise, with why."""

    target: str
    origin: str
    dtypes: tuple[str, ...]
    cells: list[Cell]
    uncovered: dict[str, str]
    """op or composite -> why no case of it ran."""

    @property
    def ok(self) -> bool:
        return all(c.status in ("pass", "not offloaded") for c in self.cells)

    def failed(self) -> list[Cell]:
        return [c for c in self.cells if c.status in ("fail", "build error")]

    def cell(self, name: str, dtype: str) -> Cell | None:
        return next((c for c in self.cells if c.name == name and c.dtype == dtype), None)

    def table(self) -> str:
        """The op x element type table, then each failing cell's first case as MLIR."""
        names = list(dict.fromkeys(c.name for c in self.cells))
        dtypes = [d for d in self.dtypes if any(c.dtype == d for c in self.cells)]
        by = {(c.name, c.dtype): c for c in self.cells}
        w0 = max([len("op / composite"), *(len(n) for n in names)]) + 2
        widths = [max(len(d), *(len(c.text()) for c in self.cells if c.dtype == d)) + 2 for d in dtypes]
        lines = [f"target {self.target}: {self.origin}", ""]
        lines.append("op / composite".ljust(w0) + "".join(d.ljust(w) for d, w in zip(dtypes, widths, strict=True)))
        lines.append("-" * (w0 + sum(widths)))
        for n in names:
            row = n.ljust(w0)
            for d, w in zip(dtypes, widths, strict=True):
                cell = by.get((n, d))
                row += (cell.text() if cell is not None else "-").ljust(w)
            lines.append(row.rstrip())
        for cell in self.failed():
            found = cell.first_failure()
            assert found is not None
            case, failure = found
            lines += [
                "",
                f"{cell.name} on {cell.dtype}: {failure.check}: {failure.message}",
                f"  first failing case: {case.label}; reproduce with this module "
                f"(inputs: numpy default_rng({case.seed + 1}), `byoc.conformance.cases.draw`):",
            ]
            lines += ["    " + line for line in str(case.module()).splitlines()]
        if self.uncovered:
            lines += ["", "not exercised:"]
            lines += [f"  {n}: {why}" for n, why in sorted(self.uncovered.items())]
        total = sum(len(c.cases) for c in self.cells)
        bad = len(self.failed())
        lines += ["", f"{total} cases in {len(self.cells)} cells: " + ("all pass" if not bad else f"{bad} cells fail")]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Choosing the cases
# --------------------------------------------------------------------------


def _composites_formed(case: Case, target: str) -> Counter[str]:
    """The composites the target's whole pattern table forms on the case (merge-composite
    alone: whether the build then offloads them is checked on the built executable)."""
    from byoc.context import make_context
    from byoc.dialects.byoc import CompositeOp
    from byoc.passes.merge_composite import MergeCompositePass

    module = case.module()
    MergeCompositePass(targets=(target,)).apply(make_context(), module)
    return Counter(op.composite.data for op in module.walk() if isinstance(op, CompositeOp))


def select_cells(
    name: str, dtypes: Sequence[str], max_cases: int, only: Sequence[str] = ()
) -> tuple[list[Cell], dict[str, str]]:
    """The cells of target `name` and the ops / composites without any case."""
    from byoc.targets import get_target

    target = get_target(name)
    known = {*target.support, *(f"{name}.{e.name}" for e in target.patterns)}
    unknown = [o for o in only if o not in known]
    if unknown:
        raise ValueError(
            f"target '{name}' has no op or composite {unknown[0]!r} (it has: {', '.join(sorted(known))})"
        )
    cells: list[Cell] = []
    uncovered: dict[str, str] = {}
    for op in sorted(target.support):
        if only and op not in only:
            continue
        if generator_for(op) is None:
            uncovered[op] = "the kit has no generator for this op"
            continue
        takes = _taker(target, op)
        found = False
        for dtype in dtypes:
            cases = [c for c in op_cases(op, dtype) if accepts(c, takes)]
            if cases:
                found = True
                cells.append(Cell(op, dtype, _spread(cases, max_cases)))
        if not found:
            built = any(op_cases(op, d) for d in dtypes)
            uncovered[op] = (
                "its predicate accepts none of the generated cases"
                if built
                else f"no generated case builds on {', '.join(dtypes)}"
            )
    for entry in target.patterns:
        composite = f"{name}.{entry.name}"
        if only and composite not in only:
            continue
        found = False
        for dtype in dtypes:
            kept: list[Case] = []
            for case in pattern_cases(composite, entry.pattern, dtype):
                if _composites_formed(case, name).get(composite):
                    kept.append(case)
                if len(kept) >= max_cases:
                    break
            if kept:
                found = True
                cells.append(Cell(composite, dtype, kept))
        if not found:
            uncovered[composite] = "no generated graph forms this composite"
    return cells, uncovered


def _taker(target: Any, op: str) -> Callable[[Any], bool]:
    """The target's test of one op: its predicate, and a layout it implements."""
    predicate = target.support[op]
    return lambda o: bool(predicate(o)) and bool(target.implements_layouts(o))


def _spread(cases: list[Case], n: int) -> list[Case]:
    """At most `n` cases, taken evenly across the list (shapes and attributes both vary)."""
    if len(cases) <= n:
        return cases
    picks = np.linspace(0, len(cases) - 1, n).round().astype(int)
    return [cases[i] for i in dict.fromkeys(int(i) for i in picks)]


# --------------------------------------------------------------------------
# Running the cases
# --------------------------------------------------------------------------

Slot = tuple[Cell, int]
"""A case: its cell and its index there."""


def _special(inputs: list[Array], case: Case) -> list[Array] | None:
    """The case's inputs with SPECIAL_VALUES at the start of its first float input.

    Where the case sums products (a conv2d, a dense), +-3e38 are left out: whether such a
    sum overflows to +-inf (and inf - inf to NaN) depends on the order of the terms, which
    the bound lets an implementation choose. NaN and infinities give the same result in
    every order."""
    from byoc.conformance.bounds import reduction_length

    values = SPECIAL_VALUES
    if reduction_length(case.module()) > 1:
        values = tuple(v for v in values if np.isnan(v) or np.isinf(v) or v == 0)
    out = [np.array(x, copy=True) for x in inputs]
    for x in out:
        if x.dtype.kind == "f" and x.size:
            flat = x.reshape(-1)
            k = min(flat.size, len(values))
            flat[:k] = np.array(values[:k]).astype(x.dtype)
            return out
    return None


class _Batch:
    """Cases built into one module: their inputs, reference outputs and bounds."""

    def __init__(self, slots: Sequence[Slot]):
        self.slots = list(slots)
        self.cases = [cell.cases[i] for cell, i in self.slots]
        self.module = batch_module(self.cases)
        self.inputs = [c.draw_inputs() for c in self.cases]
        self.expected = self._reference(self.inputs)
        self.bounds = [
            graph_bounds(c.module(), x, e) for c, x, e in zip(self.cases, self.inputs, self.expected, strict=True)
        ]

    def _reference(self, inputs: list[list[Array]]) -> list[list[Array]]:
        from byoc.interpreters import run_reference

        with np.errstate(all="ignore"):
            flat = run_reference(self.module, *[x for xs in inputs for x in xs])
        out: list[list[Array]] = []
        at = 0
        for c in self.cases:
            n = _num_outputs(c)
            out.append(flat[at : at + n])
            at += n
        return out

    def flat(self, inputs: list[list[Array]]) -> list[Array]:
        return [x for xs in inputs for x in xs]

    def split(self, outputs: Sequence[Array]) -> list[list[Array]]:
        out: list[list[Array]] = []
        at = 0
        for c in self.cases:
            n = _num_outputs(c)
            out.append(list(outputs[at : at + n]))
            at += n
        return out

    def check(
        self,
        check: str,
        outputs: Sequence[Array],
        expected: list[list[Array]] | None = None,
        bounds: list[list[Array]] | None = None,
    ) -> None:
        """Record, per case, the first output outside its bound."""
        expected = self.expected if expected is None else expected
        bounds = self.bounds if bounds is None else bounds
        for (cell, i), got, want, bound in zip(self.slots, self.split(outputs), expected, bounds, strict=True):
            if i in cell.failures:
                continue
            for g, e, b in zip(got, want, bound, strict=True):
                mismatch = compare(g, e, b)
                if mismatch is not None:
                    cell.failures[i] = CaseFailure(check, mismatch.message, mismatch.ulps)
                    break

    def fail_all(self, check: str, message: str) -> None:
        for cell, i in self.slots:
            cell.failures.setdefault(i, CaseFailure(check, message, float("inf")))


def _num_outputs(case: Case) -> int:
    from byoc.dialects.nn import NN_OPS

    cls = NN_OPS[case.steps[-1].op]
    return len(cls.get_irdl_definition().results)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def run_batch(
    target: str,
    batch: _Batch,
    threads: Sequence[int],
    concurrency: int,
    artifact: bool,
) -> bool:
    """Build and check `batch`; False if it could not be built or run as a whole (the caller
    then retries its cases one by one)."""
    import byoc

    try:
        exe = byoc.build(  # a build error is the target's result here, not a reason to fall back
            batch.module, targets=[target], num_threads=threads[0] if threads else 1, fallback=False
        )
    except Exception as e:  # noqa: BLE001 - any build failure is the target's to report
        if len(batch.cases) == 1:
            batch.fail_all("build", _one_line(e))
            return True
        return False
    try:
        _check_offloaded(batch, exe, target)
        inputs = batch.flat(batch.inputs)
        for n in threads:
            exe.set_num_threads(n)
            batch.check(f"threads={n}", exe.run(*inputs))
        specials = [_special(x, c) or x for x, c in zip(batch.inputs, batch.cases, strict=True)]
        if any(c.dtype in FLOATS for c in batch.cases):
            expected = batch._reference(specials)
            bounds = [
                graph_bounds(c.module(), x, e)
                for c, x, e in zip(batch.cases, specials, expected, strict=True)
            ]
            batch.check("nan-inf", exe.run(*batch.flat(specials)), expected, bounds)
        if concurrency > 1:
            _concurrent(batch, exe, concurrency)
        if artifact:
            with tempfile.TemporaryDirectory(prefix="byoc-check-") as tmp:
                path = Path(tmp) / "kit.byoc"
                exe.export_library(str(path))
                loaded = byoc.load_module(str(path))
                batch.check("artifact", loaded.run(*inputs))
    except Exception as e:  # noqa: BLE001 - a run that raises fails its case
        if len(batch.cases) == 1:
            batch.fail_all("run", _one_line(e))
            return True
        return False
    return True


def _check_offloaded(batch: _Batch, exe: Any, target: str) -> None:
    """Mark the cells whose op (or composite) did not all reach the target's partitions."""
    done: Counter[str] = Counter()
    for info in exe.partitions:
        if info.target == target:
            done.update(info.ops)
    wanted: Counter[str] = Counter(cell.name for cell, _ in batch.slots)
    for cell, _ in batch.slots:
        if done[cell.name] < wanted[cell.name]:
            cell.not_offloaded = True


def _concurrent(batch: _Batch, exe: Any, n: int) -> None:
    """`n` runs at once from threads, on two different sets of inputs."""
    second = [[_perturb(x) for x in xs] for xs in batch.inputs]
    sets = [batch.inputs, second]
    references = [batch.expected, batch._reference(second)]
    bounds = [
        batch.bounds,
        [graph_bounds(c.module(), x, e) for c, x, e in zip(batch.cases, second, references[1], strict=True)],
    ]
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(exe.run, *batch.flat(sets[k % 2])) for k in range(n)]
        results = [f.result() for f in futures]
    for k, outputs in enumerate(results):
        batch.check("concurrent", outputs, references[k % 2], bounds[k % 2])


def _perturb(x: Array) -> Array:
    """Other inputs of the same kind: reversed (index inputs stay in range)."""
    return x.reshape(-1)[::-1].reshape(x.shape).copy()


def check_target(
    name: str,
    *,
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    threads: Sequence[int] = (1, 2),
    concurrency: int = 4,
    artifact: bool = True,
    max_cases: int = 6,
    only: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> ConformanceReport:
    """Run the conformance kit on target `name` (see the module docstring).

    `dtypes`: element types to try; `threads`: the thread counts each batch runs with;
    `concurrency`: simultaneous runs (1: none); `artifact`: the export/load round trip;
    `max_cases`: cases per cell; `only`: op or composite names to restrict to."""
    from byoc.targets import target_origin

    # NaN, Inf and overflow are inputs here on purpose: numpy's warnings about them are noise
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        cells, uncovered = _check(name, dtypes, threads, concurrency, artifact, max_cases, only, progress)
    return ConformanceReport(name, target_origin(name), tuple(dtypes), cells, uncovered)


def _check(
    name: str,
    dtypes: Sequence[str],
    threads: Sequence[int],
    concurrency: int,
    artifact: bool,
    max_cases: int,
    only: Sequence[str],
    progress: Callable[[str], None] | None,
) -> tuple[list[Cell], dict[str, str]]:
    cells, uncovered = select_cells(name, dtypes, max_cases, only)
    slots: list[Slot] = [(cell, i) for cell in cells for i in range(len(cell.cases))]
    for start in range(0, len(slots), BATCH):
        part = slots[start : start + BATCH]
        if progress is not None:
            progress(f"cases {start + 1}-{start + len(part)} of {len(slots)}")
        if not run_batch(name, _Batch(part), threads, concurrency, artifact):
            for slot in part:  # attribute the failure to its cases
                run_batch(name, _Batch([slot]), threads, concurrency, artifact)
    return cells, uncovered


__all__ = ["Cell", "ConformanceReport", "check_target"]
