"""`place`: choose a target per unit by measurement (or by the cost model), then partition.

    chosen = place(module, ["dnnl", "ccompiler"], mode="measure")   # module partitioned in place
    chosen.why(partition_func)      # {"reason": "measured", "measured": (("dnnl", 1e-4), ...)}

The steps (docs/placement.md):

1. split-dequantize and merge-composite with the targets' tables; the units and their
   candidates (`units.py`).
2. Candidate regions per target: each unit alone, each maximal run of consecutive units
   the target accepts, and a probe partition (one op on one element) for the call cost;
   their times from the cache, the misses measured with one build per target
   (`measure.RegionJob`) on the values of a reference run.
3. The search (`search.py`) on the region times; the segments it chose that were only
   estimated are measured and the search runs again.
4. The check end to end: the chosen assignment, each target alone and each priority order
   of the targets, each built whole and timed interleaved in one job (`measure.ModelJob`);
   the simplest within `NOISE_MARGIN` of the fastest wins (`choose`).
5. The winner is applied: measured, by tagging each unit (`byoc.target`) and running
   merge-compiler-regions and partition; a simple configuration, by the `byoc` pipeline.
"""

from __future__ import annotations

import hashlib
import itertools
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from byoc.dialects.byoc import TARGET_ATTR, CompositeOp
from byoc.passes.annotate_target import TargetSupport
from byoc.placement.cache import MeasurementCache, default_cache_path
from byoc.placement.cost_model import CostModel
from byoc.placement.measure import (
    BuildFn,
    ModelJob,
    Reference,
    RegionJob,
    default_build,
    default_executor,
    reference_run,
    run_job,
    sample_arrays,
)
from byoc.placement.regions import (
    Candidate,
    inline_for,
    measurement_module,
    partition_tagged,
    region_digest,
)
from byoc.placement.search import HOST, Assignment, CostTable, search
from byoc.placement.units import BytesIn, Unit, find_units, main_function

MODES = ("priority", "measure", "cost-model")
"""`byoc.build(placement=...)`; the pass option says `measured` for `measure`."""

MEASURED = "measured"
"""The name of the searched assignment among the configurations checked end to end."""

MAX_ORDERS = 6
"""Priority orders checked end to end: every order of up to three targets, else the given one."""

REGIONS_PER_JOB = 64
"""Candidate regions timed by one build. A measurement module holds two functions per
region (the region's and its partition's), and verifying a call looks its callee up among
all of them: one module for the 600 regions of a 300-op model spent most of its build
there. Smaller jobs also spread over the executor's workers."""

END_TO_END_RUNS = 3
"""Timed runs per turn of the end-to-end check, at least (`ModelJob.repeats`)."""

HOST_REPEATS = 3
"""Runs of the reference run whose median is each unit's host time."""

NOISE_MARGIN = 0.02
"""End-to-end times within this fraction of the fastest are a tie, won by the simplest
configuration (`choose`): the check's timings vary by about that much from run to run."""


class PlacementError(ValueError):
    pass


def normalise_mode(mode: str) -> str:
    mode = "measure" if mode == "measured" else mode
    if mode not in MODES:
        raise PlacementError(
            f"placement '{mode}' is not known (choose one of: priority, measure, cost-model)"
        )
    return mode


@dataclass
class Placement:
    """What `place` chose, and why (module doc)."""

    mode: str
    units: list[Unit]
    targets: tuple[str, ...]
    """The target of each unit (`host` for the host) in the configuration applied."""
    configuration: str
    """`measured`, or the priority order (`dnnl,ccompiler`) that was faster end to end."""
    unit_seconds: list[dict[str, float]]
    """Per unit: seconds per candidate target (measured one-unit partitions, or modelled)."""
    end_to_end: dict[str, float] = field(default_factory=dict[str, float])
    """Seconds of one run per configuration checked end to end (empty for the cost model)."""
    measurements: int = 0
    """Timings run by this call (0 when every figure came from the cache)."""
    search_seconds: float = 0.0
    """Wall time of the choice: finding the units and their candidates, the cache keys,
    the measurements and the search, up to the decision. The byoc pipeline's own work, which
    every build does (merge-composite before, partitioning after), is not in it."""
    unpriced: tuple[str, ...] = ()
    """Cost model: unit kinds it could not price (placed by priority)."""
    _unit_of: dict[int, int] = field(default_factory=dict[int, int])

    @property
    def reason(self) -> str:
        return "cost-model" if self.mode == "cost-model" else "measured"

    def why(self, func: FuncOp) -> dict[str, Any]:
        """The `PartitionInfo` fields of a partition: its reason, and per candidate target
        the seconds of its units (summed), fastest first."""
        found: list[int] = []
        for op in func.body.walk():
            k = self._unit_of.get(id(op))
            if k is not None and k not in found:
                found.append(k)
        if not found:
            return {"reason": self.reason, "measured": ()}
        per: dict[str, float] = {}
        common = set(self.unit_seconds[found[0]])
        for k in found[1:]:
            common &= set(self.unit_seconds[k])
        for t in common:
            per[t] = sum(self.unit_seconds[k][t] for k in found)
        reason = self.reason
        if self.unpriced and any(self.units[k].kind in self.unpriced for k in found):
            reason = "priority"
        return {"reason": reason, "measured": tuple(sorted(per.items(), key=lambda x: x[1]))}


@dataclass
class _Timer:
    """Region times: from the cache, or measured through the executor (and then cached)."""

    units: list[Unit]
    cache: MeasurementCache
    threads: int
    build: BuildFn
    executor: Executor | None
    inputs: Callable[[], Reference]
    repeats: int
    measurements: int = 0
    own_executor: Executor | None = None
    kind: str | None = None
    """Recorded as every entry's unit kind when set (`call` for the probes)."""
    digests: dict[tuple[int, int], str] = field(default_factory=dict[tuple[int, int], str])
    constants: dict[int, str] = field(default_factory=dict[int, str])
    """Digest of each constant op (by id), shared by every region's canonical form."""

    def digest(self, c: Candidate) -> str:
        """The region's digest; one per interval (the target is in the key, not the form)."""
        found = self.digests.get((c.start, c.stop))
        if found is None:
            found = self.digests[(c.start, c.stop)] = region_digest(self.units, c, self.constants)
        return found

    def key(self, c: Candidate) -> str:
        return self.cache.key(self.digest(c), c.target, self.threads)

    def pool(self) -> Executor:
        if self.executor is not None:
            return self.executor
        if self.own_executor is None:
            self.own_executor = default_executor(self.threads)
        return self.own_executor

    def close(self) -> None:
        if self.own_executor is not None:
            self.own_executor.shutdown()
            self.own_executor = None

    def info(self, c: Candidate) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "target": c.target,
            "fingerprint": self.cache.fingerprint(self.threads),
        }
        if self.kind is not None:
            entry["kind"] = self.kind
        elif c.stop - c.start == 1:
            u = self.units[c.start]
            entry.update(kind=u.kind, flops=u.flops, bytes=u.bytes)
        return entry

    def times(self, candidates: Iterable[Candidate]) -> dict[Candidate, float]:
        """Seconds per candidate; a candidate whose target failed to build is left out."""
        out: dict[Candidate, float] = {}
        missing: dict[str, list[Candidate]] = {}
        for c in dict.fromkeys(candidates):
            seconds = self.cache.get(self.key(c))
            if seconds is not None:
                out[c] = seconds
            else:
                missing.setdefault(c.target, []).append(c)
        if not missing:
            return out
        reference = self.inputs()
        for c in missing.pop(HOST, []):
            seconds = sum(reference.host_seconds[c.start : c.stop])
            self.cache.put(self.key(c), seconds, **self.info(c))
            out[c] = seconds
        jobs: list[tuple[str, list[Candidate], Future[Any]]] = []
        for target, all_cands in missing.items():
            for first in range(0, len(all_cands), REGIONS_PER_JOB):
                cands = all_cands[first : first + REGIONS_PER_JOB]
                module, args = measurement_module(self.units, cands)
                inputs = tuple(reference.values[v] for v in args)
                job = RegionJob(str(module), self.threads, inputs, self.repeats, self.build)
                self.measurements += 1
                jobs.append((target, cands, self.pool().submit(run_job, job)))
        for target, cands, future in jobs:
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - a target that cannot build is not chosen
                warnings.warn(
                    f"placement: measuring target '{target}' failed ({type(exc).__name__}: "
                    f"{exc}); its candidate regions are not used",
                    stacklevel=3,
                )
                continue
            assert isinstance(result, dict)
            for k, c in enumerate(cands):
                seconds = result.get(k)
                if seconds is not None:
                    self.cache.put(self.key(c), seconds, **self.info(c))
                    out[c] = seconds
        self.cache.save()
        return out


def maximal_runs(units: Sequence[Unit], target: str) -> list[tuple[int, int]]:
    """The maximal intervals of consecutive units that all accept `target`."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for u in units:
        if target in u.candidates:
            if start is None:
                start = u.index
        elif start is not None:
            runs.append((start, u.index))
            start = None
    if start is not None:
        runs.append((start, len(units)))
    return runs


@dataclass
class RegionModel:
    """Region times for the search: measured where a region was measured, else estimated
    from its units' one-unit times scaled by the fusion factor of its maximal run
    (docs/placement.md, "Region times"). The one-unit times are summed through prefix
    sums, so a lookup costs O(1)."""

    units: list[Unit]
    call: dict[str, float]
    exact: dict[tuple[str, int, int], float]
    """Measured seconds of (target, start, stop), the call included."""
    runs: dict[str, list[tuple[int, int]]]
    _prefix: dict[str, tuple[list[float], list[int]]] = field(
        default_factory=dict[str, tuple[list[float], list[int]]]
    )
    _factor: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    def net(self, target: str, k: int) -> float | None:
        """Unit k's one-unit time on `target`, less the call (the host has none)."""
        s = self.exact.get((target, k, k + 1))
        if s is None:
            return None
        return s if target == HOST else max(s - self.call.get(target, 0.0), 0.0)

    def prefix(self, target: str) -> tuple[list[float], list[int]]:
        """Prefix sums of the net one-unit times, and of the units without one."""
        found = self._prefix.get(target)
        if found is None:
            sums, missing = [0.0], [0]
            for k in range(len(self.units)):
                s = self.net(target, k)
                sums.append(sums[-1] + (s or 0.0))
                missing.append(missing[-1] + (s is None))
            found = self._prefix[target] = (sums, missing)
        return found

    def net_sum(self, target: str, i: int, j: int) -> float | None:
        sums, missing = self.prefix(target)
        if missing[j] - missing[i]:
            return None
        return sums[j] - sums[i]

    def factor(self, target: str, k: int) -> float:
        """The fusion factor of the maximal run of `target` holding unit k (1 outside one)."""
        factors = self._factor.get(target)
        if factors is None:
            factors = [1.0] * len(self.units)
            for a, b in self.runs.get(target, []):
                whole = self.exact.get((target, a, b))
                parts = self.net_sum(target, a, b)
                if whole is None or parts is None or parts <= 0:
                    continue
                f = min(max((whole - self.call.get(target, 0.0)) / parts, 0.2), 5.0)
                factors[a:b] = [f] * (b - a)
            self._factor[target] = factors
        return factors[k]

    def __call__(self, i: int, j: int, target: str) -> float | None:
        exact = self.exact.get((target, i, j))
        if exact is not None:
            return exact if target == HOST else max(exact - self.call.get(target, 0.0), 0.0)
        parts = self.net_sum(target, i, j)
        if parts is None:
            return None
        if target == HOST:
            return parts
        return parts * self.factor(target, i)


def _probe_candidates(
    targets: Sequence[str], support: TargetSupport
) -> tuple[list[Unit], dict[str, Candidate]]:
    """A one-element op per target that accepts one (`nn.relu`, else `nn.add`, ...): its
    partition's time is the target's call cost."""
    from byoc.context import parse_module

    text = "\n".join(
        [
            "func.func @main(%x: tensor<1xf32>, %y: tensor<1xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) {",
            "  %0 = nn.relu %x : tensor<1xf32>",
            "  %1 = nn.add %x, %y : tensor<1xf32>",
            "  %2 = nn.abs %x : tensor<1xf32>",
            "  %3 = nn.tanh %x : tensor<1xf32>",
            "  func.return %0, %1, %2, %3 : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>",
            "}",
        ]
    )
    probe = parse_module(text)
    units = find_units(probe, support)
    chosen: dict[str, Candidate] = {}
    for t in targets:
        for u in units:
            if t in u.candidates:
                chosen[t] = Candidate(t, u.index, u.index + 1)
                break
    return units, chosen


def _orders(targets: Sequence[str]) -> list[tuple[str, ...]]:
    """The simple configurations: each target alone, then each priority order."""
    singles = [(t,) for t in targets]
    if len(targets) < 2:
        return singles
    if len(targets) <= 3:
        orders = list(itertools.permutations(targets))
    else:
        orders = [tuple(targets)]
    return singles + orders[:MAX_ORDERS]


def place(
    module: ModuleOp,
    targets: Sequence[str],
    *,
    mode: str = "measure",
    cache: str | Path | MeasurementCache | None = None,
    executor: Executor | None = None,
    sample_inputs: Sequence[Any] | Mapping[str, Any] | None = None,
    num_threads: int | None = None,
    build: BuildFn | None = None,
    repeats: int = 7,
    rounds: int = 7,
    check_end_to_end: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Placement:
    """Choose the targets of `module`'s units and partition it in place (module doc).

    `cache`: a path, a `MeasurementCache`, or None for the default file. `executor`: where
    timings run (default: `measure.default_executor`). `build`: the build function timings
    use (default `byoc.build`). `repeats`: timed runs per measurement (their median);
    `rounds`: turns of each configuration checked end to end (the median of its turns).
    """
    from byoc.context import make_context
    from byoc.passes.annotate_target import AnnotateTargetPass
    from byoc.passes.merge_composite import MergeCompositePass
    from byoc.passes.split_dequantize import SplitDequantizePass
    from byoc.runtime.threads import resolve_num_threads

    mode = normalise_mode(mode)
    if mode == "priority":
        raise PlacementError("placement 'priority' is the byoc pipeline; place() searches")
    targets = tuple(targets)
    threads = resolve_num_threads(num_threads)
    build = build if build is not None else default_build()
    store = cache if isinstance(cache, MeasurementCache) else MeasurementCache(
        Path(cache) if cache is not None else default_cache_path()
    )
    pristine = module.clone()
    ctx = make_context()
    SplitDequantizePass().apply(ctx, module)
    MergeCompositePass(targets=targets).apply(ctx, module)
    started = time.perf_counter()
    support = TargetSupport(AnnotateTargetPass(targets=targets).support())
    units = find_units(module, support)

    reference: list[Reference] = []

    def inputs() -> Reference:
        if not reference:
            if progress is not None:
                progress("placement: reference run on the host")
            arrays = sample_arrays(module, sample_inputs)
            reference.append(reference_run(module, units, arrays, min(repeats, HOST_REPEATS)))
        return reference[0]

    timer = _Timer(units, store, threads, build, executor, inputs, repeats)
    if mode == "cost-model":
        chosen = _cost_model_assignment(units, store, threads, targets)
        placement = Placement(
            mode, units, chosen[0].targets, MEASURED, chosen[1], unpriced=chosen[2]
        )
        placement.search_seconds = time.perf_counter() - started
        placement._unit_of = _apply(module, units, chosen[0].targets)
        return placement
    try:
        problem = _Problem(
            module, pristine, units, targets, support, timer, rounds, check_end_to_end, progress
        )
        placement = _measured(problem, started)
    finally:
        timer.close()
    placement.measurements = timer.measurements
    return placement


@dataclass(frozen=True)
class _Problem:
    """What the measured search works on: the module (its composites made by
    merge-composite with `targets`), a clone from before that pass, its units, the
    targets with their support, the timer, and the search's settings (`place`'s)."""

    module: ModuleOp
    pristine: ModuleOp
    units: list[Unit]
    targets: tuple[str, ...]
    support: TargetSupport
    timer: _Timer
    rounds: int
    check_end_to_end: bool
    progress: Callable[[str], None] | None


def _measured(problem: _Problem, started: float) -> Placement:
    decision_key = problem.timer.cache.key(
        _module_digest(problem.units, problem.timer),
        f"placement:{','.join(problem.targets)}:{int(problem.check_end_to_end)}",
        problem.timer.threads,
    )
    decided = problem.timer.cache.entries.get(decision_key)
    if decided is not None and _valid_decision(decided, problem.units):
        chosen = tuple(decided["assignment"])
        configuration = decided["configuration"]
        end_to_end = dict(decided["end_to_end"])
    else:
        chosen, configuration, end_to_end = _decide(problem)
        problem.timer.cache.put(
            decision_key,
            0.0,
            assignment=list(chosen),
            configuration=configuration,
            end_to_end=end_to_end,
        )
        problem.timer.cache.save()
    timer = problem.timer
    unit_seconds = [
        {
            t: s
            for t in u.candidates
            if (s := timer.cache.get(timer.key(Candidate(t, u.index, u.index + 1)))) is not None
        }
        for u in problem.units
    ]
    placement = Placement("measure", problem.units, chosen, configuration, unit_seconds, end_to_end)
    placement.search_seconds = time.perf_counter() - started
    if configuration == MEASURED:
        placement._unit_of = _apply(problem.module, problem.units, chosen)
    else:
        order = tuple(configuration.split(","))
        if order == problem.targets:  # merge-composite ran with this order already
            placement.targets, placement._unit_of = _annotate_in_place(
                problem.module, problem.units, order
            )
        else:
            placement.targets, placement._unit_of = _apply_order(
                problem.module, problem.pristine, problem.units, order
            )
    return placement


def _annotate_in_place(
    module: ModuleOp, units: Sequence[Unit], order: tuple[str, ...]
) -> tuple[tuple[str, ...], dict[int, int]]:
    """The rest of the byoc pipeline with `order` on `module`, whose composites that
    order's merge-composite made: annotate-target, merge-compiler-regions, partition."""
    from byoc.context import make_context
    from byoc.passes.annotate_target import AnnotateTargetPass

    AnnotateTargetPass(targets=order).apply(make_context(), module)
    chosen: list[str] = []
    for u in units:
        tag = u.op.attributes.get(TARGET_ATTR)
        chosen.append(tag.data if isinstance(tag, StringAttr) else HOST)
    unit_of = {id(u.op): u.index for u in units}
    partition_tagged(module)
    return tuple(chosen), unit_of


def _valid_decision(entry: Mapping[str, Any], units: Sequence[Unit]) -> bool:
    """A cached decision fits these units (each target among the unit's candidates)."""
    chosen = entry.get("assignment")
    configuration = entry.get("configuration")
    timings = entry.get("end_to_end")
    return (
        isinstance(chosen, list)
        and len(chosen) == len(units)
        and all(t in u.candidates for t, u in zip(chosen, units, strict=True))
        and isinstance(configuration, str)
        and isinstance(timings, dict)
    )


def _decide(problem: _Problem) -> tuple[tuple[str, ...], str, dict[str, float]]:
    """Steps 2-4 of the module doc: the searched assignment, the winning configuration and
    the end-to-end seconds of each configuration checked."""
    if problem.progress is not None:
        targets = ", ".join(problem.targets)
        problem.progress(f"placement: timing {len(problem.units)} units on {targets} and the host")
    runs = {
        t: [r for r in maximal_runs(problem.units, t) if r[1] - r[0] >= 2] for t in problem.targets
    }
    wanted = [Candidate(t, u.index, u.index + 1) for u in problem.units for t in u.candidates]
    wanted += [Candidate(t, a, b) for t in problem.targets for a, b in runs[t]]
    probe_units, probes = _probe_candidates(problem.targets, problem.support)
    probe_timer = _Timer(
        probe_units,
        problem.timer.cache,
        problem.timer.threads,
        problem.timer.build,
        problem.timer.executor,
        lambda: _probe_reference(probe_units),
        problem.timer.repeats,
        kind="call",
    )
    probe_timer.executor = problem.timer.executor or problem.timer.pool()
    probe_times = probe_timer.times(probes.values())
    problem.timer.measurements += probe_timer.measurements
    measured = problem.timer.times(wanted)
    call = {t: probe_times.get(c, 0.0) for t, c in probes.items()}
    exact = {(c.target, c.start, c.stop): s for c, s in measured.items()}
    model = RegionModel(problem.units, call, exact, runs)
    units = problem.units
    table = CostTable([u.candidates for u in units], model, call, {}, BytesIn(units))
    best = search(table)
    estimated = [Candidate(t, i, j) for i, j, t in best.segments if t != HOST and (t, i, j) not in exact]
    if estimated:
        for c, s in problem.timer.times(estimated).items():
            exact[(c.target, c.start, c.stop)] = s
        best = search(table)
    if not problem.check_end_to_end:
        return best.targets, MEASURED, {}
    end_to_end = _end_to_end(problem, best)
    if not end_to_end:  # nothing ran end to end (warned): the search's answer stands
        return best.targets, MEASURED, {}
    return best.targets, choose(end_to_end, problem.targets), end_to_end


def choose(end_to_end: Mapping[str, float], targets: Sequence[str]) -> str:
    """The configuration to apply: the simplest whose end-to-end time is within
    `NOISE_MARGIN` of the fastest. Simplest: a single target (in list order), then a
    priority order (in `_orders`' order), then the searched assignment; a difference within
    the noise does not buy the searched assignment's extra partition boundaries."""
    fastest = min(end_to_end.values())
    rank = {",".join(o): k for k, o in enumerate(_orders(targets))}
    near = [name for name, s in end_to_end.items() if s <= fastest * (1 + NOISE_MARGIN)]
    return min(near, key=lambda name: (rank.get(name, len(rank)), end_to_end[name]))


def _probe_reference(units: list[Unit]) -> Reference:
    import numpy as np

    values: dict[SSAValue, Any] = {}
    for u in units:
        for v in u.inputs:
            values[v] = np.full((1,), 0.5, np.float32)
    return Reference(values, [0.0] * len(units))


def _module_digest(units: Sequence[Unit], timer: _Timer) -> str:
    """The digest of the model's canonical form: each unit's digest (its one-unit region)
    and where each of its inputs comes from (which unit's which result, or which argument
    of `@main`)."""
    source: dict[SSAValue, str] = {}
    for u in units:
        for n, r in enumerate(u.op.results):
            source[r] = f"{u.index}#{n}"
    parts: list[str] = []
    for u in units:
        inputs = ",".join(source.get(v, f"arg{getattr(v, 'index', '?')}") for v in u.inputs)
        parts.append(f"{timer.digest(Candidate('', u.index, u.index + 1))}({inputs})")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _end_to_end(problem: _Problem, best: Assignment) -> dict[str, float]:
    """Seconds of one run of each configuration, built whole (module doc, step 4)."""
    module, pristine, units = problem.module, problem.pristine, problem.units
    targets, timer = problem.targets, problem.timer
    rounds, progress = problem.rounds, problem.progress
    digest = _module_digest(units, timer)
    configs: dict[str, tuple[str, tuple[str, ...]]] = {}
    measured = module.clone()
    _apply(measured, _units_of_clone(module, measured, units), best.targets)
    configs[MEASURED] = (str(measured), ())
    plain = str(pristine)
    for order in _orders(targets):
        configs[",".join(order)] = (plain, order)
    cached: dict[str, float] = {}
    keys: dict[str, str] = {}
    for name in configs:
        assignment = ",".join(best.targets) if name == MEASURED else name
        keys[name] = timer.cache.key(
            hashlib.sha256(f"{digest}|{assignment}".encode()).hexdigest(), f"model:{name}", timer.threads
        )
        seconds = timer.cache.get(keys[name])
        if seconds is not None:
            cached[name] = seconds
    if len(cached) == len(configs):
        return cached
    # figures are only compared within one job: a miss times every configuration again
    todo = list(configs)
    out: dict[str, float] = {}
    if progress is not None:
        progress(f"placement: {len(todo)} configuration(s) end to end, {rounds} round(s)")
    arrays = tuple(timer.inputs().values[a] for a in main_function(module).body.block.args)
    job = ModelJob(
        tuple((name, *configs[name]) for name in todo),
        timer.threads,
        arrays,
        min(timer.repeats, END_TO_END_RUNS),
        rounds,
        timer.build,
    )
    timer.measurements += 1
    try:
        result = timer.pool().submit(run_job, job).result()
    except Exception as exc:  # noqa: BLE001 - then the search's answer stands
        warnings.warn(
            f"placement: the end-to-end check failed ({type(exc).__name__}: {exc})",
            stacklevel=4,
        )
        result = {}
    assert isinstance(result, dict)
    for name in todo:
        seconds = result.get(name)
        if seconds is None:
            warnings.warn(f"placement: configuration '{name}' did not build", stacklevel=4)
            continue
        out[name] = float(seconds)
        timer.cache.put(keys[name], out[name], target=f"model:{name}")
    timer.cache.save()
    return out


def _units_of_clone(original: ModuleOp, clone: ModuleOp, units: Sequence[Unit]) -> list[Unit]:
    """`units` with their ops replaced by the ops at the same places in `clone`."""
    a = list(main_function(original).body.block.ops)
    b = list(main_function(clone).body.block.ops)
    where = {id(o): k for k, o in enumerate(a)}
    return [
        Unit(u.index, b[where[id(u.op)]], u.kind, u.candidates, u.inputs, u.flops, u.bytes)
        for u in units
    ]


def _apply(module: ModuleOp, units: Sequence[Unit], chosen: Sequence[str]) -> dict[int, int]:
    """Tag each unit with its target (a composite of another target inlined first), then
    merge-compiler-regions and partition; returns id(op) -> unit for every op placed."""
    unit_of: dict[int, int] = {}
    for u, target in zip(units, chosen, strict=True):
        op = u.op
        op.attributes.pop(TARGET_ATTR, None)
        if target == HOST:
            unit_of[id(op)] = u.index
            continue
        if isinstance(op, CompositeOp) and op.target_name != target:
            for new in _inline(op, target):
                unit_of[id(new)] = u.index
            continue
        op.attributes[TARGET_ATTR] = StringAttr(target)
        unit_of[id(op)] = u.index
    partition_tagged(module)
    return unit_of


def _inline(op: CompositeOp, target: str) -> list[Operation]:
    """Replace a composite by its body's ops, tagged for `target`; return them."""
    mapper: dict[SSAValue, SSAValue] = {}
    ops = inline_for(op, target, mapper)
    tag = StringAttr(target)
    for new in ops:
        if new.name != "nn.constant":
            new.attributes[TARGET_ATTR] = tag
    Rewriter.insert_op(ops, InsertPoint.before(op))
    for r in op.results:
        r.replace_all_uses_with(mapper[r])
    Rewriter.erase_op(op)
    return ops


def _apply_order(
    module: ModuleOp, pristine: ModuleOp, units: Sequence[Unit], order: tuple[str, ...]
) -> tuple[tuple[str, ...], dict[int, int]]:
    """Replace `module`'s contents by `pristine` partitioned with the priority `order`."""
    from byoc.context import make_context
    from byoc.passes.annotate_target import AnnotateTargetPass
    from byoc.passes.merge_composite import MergeCompositePass
    from byoc.passes.split_dequantize import SplitDequantizePass

    fresh = pristine.clone()
    ctx = make_context()
    SplitDequantizePass().apply(ctx, fresh)
    MergeCompositePass(targets=order).apply(ctx, fresh)
    AnnotateTargetPass(targets=order).apply(ctx, fresh)
    ops = [o for o in main_function(fresh).body.block.ops if o.name not in ("nn.constant", "func.return")]
    unit_of: dict[int, int] = {}
    chosen: list[str] = []
    if len(ops) == len(units) and all(
        (o.composite.data if isinstance(o, CompositeOp) else o.name) == u.kind
        for o, u in zip(ops, units, strict=True)
    ):
        for o, u in zip(ops, units, strict=True):
            unit_of[id(o)] = u.index
            tag = o.attributes.get(TARGET_ATTR)
            chosen.append(tag.data if isinstance(tag, StringAttr) else HOST)
    partition_tagged(fresh)  # the rest of the byoc pipeline
    for op in list(module.ops):
        op.detach()
    for op in list(fresh.ops):
        op.detach()
        module.body.block.add_op(op)
    return tuple(chosen), unit_of


def _cost_model_assignment(
    units: list[Unit], store: MeasurementCache, threads: int, targets: tuple[str, ...]
) -> tuple[Assignment, list[dict[str, float]], tuple[str, ...]]:
    """The search on modelled unit times (no timing); a unit with a candidate the model
    cannot price keeps its priority target (the first that accepts it)."""
    model = CostModel.fit(store.samples(threads))
    unpriced: list[str] = []
    candidates: list[tuple[str, ...]] = []
    unit_seconds: list[dict[str, float]] = []
    for u in units:
        priced: dict[str, float] = {}
        for t in u.candidates:
            s = model.predict(t, u.kind, u.flops, u.bytes)
            if s is not None:
                priced[t] = s
        unit_seconds.append(priced)
        if len(priced) == len(u.candidates):
            candidates.append(u.candidates)
        else:
            if u.kind not in unpriced:
                unpriced.append(u.kind)
            candidates.append(u.candidates[:1])
    if unpriced:
        warnings.warn(
            "placement (cost model): no cached figures for "
            + ", ".join(unpriced)
            + " on some candidate target; those ops are placed by priority",
            stacklevel=3,
        )
    call = {t: model.call_cost.get(t, 0.0) for t in targets}

    def region_time(i: int, j: int, t: str) -> float | None:
        total = 0.0
        for k in range(i, j):
            s = unit_seconds[k].get(t)
            if s is None:
                # a unit placed by priority: its time does not change the choice
                if len(candidates[k]) == 1 and candidates[k][0] == t:
                    continue
                return None
            total += s if t == HOST else max(s - call.get(t, 0.0), 0.0)
        return total

    table = CostTable(candidates, region_time, call, {}, BytesIn(units))
    return search(table), unit_seconds, tuple(unpriced)


__all__ = ["MODES", "Placement", "PlacementError", "normalise_mode", "place"]
