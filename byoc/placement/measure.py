"""Timing: the jobs an executor runs, and the reference run that gives their inputs.

A job is picklable data (IR text, thread count, input arrays, repeat count) plus the build
function, which pickles by reference (`byoc.build`); `run_job` parses the text, builds it,
runs it `repeats` times after a warm-up and returns median seconds. Any
`concurrent.futures.Executor` runs jobs: a process pool, a thread pool, or a
`dask.distributed` client's executor (docs/placement.md, "Executor").

- `RegionJob`: a measurement module (`regions.measurement_module`), already tagged;
  returns seconds per candidate function (profiled per partition).
- `ModelJob`: whole-model configurations (each built with a priority order of targets,
  or already partitioned), built once each in one process and timed there in interleaved
  rounds, so load from elsewhere falls on all of them alike; returns the seconds of one
  run, end to end, per configuration.

The reference run (`reference_run`) executes the model once on the host executor with
every unit's results kept: the inputs of each candidate region are then the values it
really sees in the model (indices stay in range, masks stay masks), and the host time of
each unit is measured on the way.
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from types import ModuleType
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import ReturnOp
from xdsl.ir import SSAValue

from byoc.dialects.nn import ConstantOp, NNOp
from byoc.placement.regions import candidate_of_symbol
from byoc.placement.units import Unit, inner_ops, main_function

Array = np.ndarray[Any, Any]
BuildFn = Callable[..., Any]
"""`byoc.build`'s signature: (module, params=None, targets=None, *, num_threads=...)."""


def default_build() -> BuildFn:
    """`byoc.build`, the public entry point (resolved lazily by the `byoc` package)."""
    import byoc

    build: BuildFn = byoc.build
    return build


@dataclass(frozen=True)
class RegionJob:
    text: str
    threads: int
    inputs: tuple[Array, ...]
    repeats: int
    build: BuildFn


@dataclass(frozen=True)
class ModelJob:
    configurations: tuple[tuple[str, str, tuple[str, ...]], ...]
    """(name, IR text, priority order) per configuration; an empty order: the text is
    partitioned already."""
    threads: int
    inputs: tuple[Array, ...]
    repeats: int
    """Timed runs per turn, at least."""
    rounds: int
    build: BuildFn
    turn_seconds: float = 0.02
    """Each turn also runs until this much time is spent, so a fast model is timed over
    many runs (a median of a few runs of 50 us is mostly timer and wake-up noise)."""
    prune_after: int = 3
    """After this many rounds, a configuration slower than `prune_ratio` times the fastest
    (medians so far) is timed no more: it cannot come within the choice's noise margin."""
    prune_ratio: float = 1.25


def run_job(job: RegionJob | ModelJob) -> dict[int, float] | dict[str, float]:
    """Run one job (module doc); in whatever process the executor chose."""
    from byoc.context import parse_module

    if isinstance(job, ModelJob):
        return _run_models(job)
    module = parse_module(job.text)
    exe = job.build(module, num_threads=job.threads)
    inputs = list(job.inputs)
    exe.run_profiled(*inputs)
    per: dict[int, list[float]] = {}
    for _ in range(job.repeats):
        _, table = exe.run_profiled(*inputs)
        seen: dict[int, float] = {}
        for symbol, seconds in table.items():
            k = candidate_of_symbol(symbol)
            if k is not None:
                seen[k] = seen.get(k, 0.0) + seconds
        for k, s in seen.items():
            per.setdefault(k, []).append(s)
    return {k: statistics.median(v) for k, v in per.items()}


def _run_models(job: ModelJob) -> dict[str, float]:
    """Build every configuration once, then time them in `rounds` rounds taking turns (the
    order reversed every other round). A turn is one untimed run (it wakes the threads and
    brings the configuration's buffers back into the caches after the others' turns), then
    runs until both `repeats` runs and `turn_seconds` are done; its figure is their median.
    Seconds per configuration: the median over its rounds. A configuration that fails to
    build is left out; one that falls far behind is pruned (`ModelJob.prune_after`)."""
    from byoc.context import parse_module

    inputs = list(job.inputs)
    built: dict[str, Any] = {}
    for name, text, order in job.configurations:
        try:
            exe = job.build(parse_module(text), targets=list(order) or None, num_threads=job.threads)
            exe.run(*inputs)  # warm-up: first-touch of buffers, the engines' own set-up
        except Exception:  # noqa: BLE001 - a configuration that cannot build is not chosen
            continue
        built[name] = exe
    rounds: dict[str, list[float]] = {name: [] for name in built}
    live = list(built)
    for r in range(job.rounds):
        for name in live if r % 2 == 0 else live[::-1]:
            rounds[name].append(_turn(built[name], inputs, job.repeats, job.turn_seconds))
        if r + 1 >= job.prune_after and live:
            so_far = {name: statistics.median(rounds[name]) for name in live}
            fastest = min(so_far.values())
            live = [name for name in live if so_far[name] <= job.prune_ratio * fastest]
    return {name: statistics.median(v) for name, v in rounds.items()}


def _turn(exe: Any, inputs: list[Any], repeats: int, seconds: float) -> float:
    """One configuration's turn in a round (`_run_models`): median seconds of a run."""
    exe.run(*inputs)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        exe.run(*inputs)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class LocalPool(ProcessPoolExecutor):
    """A process pool of spawned workers that never import the caller's `__main__`.

    Spawned, not forked: a fork of a process whose OpenMP or oneDNN threads have run can
    deadlock in the child. A spawned worker normally re-runs the main script (so a script
    calling `byoc.build` at top level, without an `if __name__ == "__main__":` guard, would
    build again in each worker); jobs only name byoc's own functions, so while a worker
    starts (`submit` may start one) the main module is hidden from multiprocessing."""

    def __init__(self, max_workers: int):
        super().__init__(max_workers=max_workers, mp_context=get_context("spawn"))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with _LOCK:
            main = sys.modules.get("__main__")
            sys.modules["__main__"] = ModuleType("__main__")
            try:
                return super().submit(fn, *args, **kwargs)
            finally:
                if main is not None:
                    sys.modules["__main__"] = main


_LOCK = threading.Lock()


def default_executor(threads: int) -> Executor:
    """A `LocalPool` of max(1, cores // threads) workers: as many timings at once as there
    are cores for their threads, so they do not share a core."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    return LocalPool(max(1, cores // max(1, threads)))


@dataclass
class Reference:
    """What the reference run gives: each value of `@main` it computed, each unit's host seconds."""

    values: dict[SSAValue, Array]
    host_seconds: list[float]


def sample_arrays(module: ModuleOp, sample_inputs: Any, seed: int = 0) -> list[Array]:
    """The inputs of `@main`: the caller's (a sequence, or a mapping by input name), else
    seeded random arrays of the right shape and dtype (floats normal, integers 0 or 1,
    booleans fair coins)."""
    from byoc.runtime.host import input_name
    from byoc.runtime.tensor import TensorSpec

    func = main_function(module)
    args = func.body.block.args
    if sample_inputs is not None:
        if isinstance(sample_inputs, Mapping):
            named: Mapping[str, Any] = sample_inputs
            return [np.asarray(named[input_name(func, a.index)]) for a in args]
        return [np.asarray(v) for v in sample_inputs]
    rng = np.random.default_rng(seed)
    out: list[Array] = []
    for a in args:
        spec = TensorSpec.of(a.type)
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            out.append(rng.standard_normal(spec.shape).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, spec.shape).astype(bool))
        else:
            out.append(rng.integers(0, 2, spec.shape).astype(dtype))
    return out


def reference_run(
    module: ModuleOp, units: Sequence[Unit], inputs: Sequence[Array], repeats: int
) -> Reference:
    """Run `module`'s `@main` on the host with every unit result kept (module doc)."""
    from byoc.runtime.host import BoundPlan, plan_function

    work = module.clone()
    func = main_function(work)
    original = main_function(module)
    block = func.body.block
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    by_position = {
        id(o): k for k, o in enumerate(original.body.block.ops)
    }
    work_ops = list(block.ops)
    kept: list[SSAValue] = []
    owners: list[SSAValue] = []
    for u in units:
        twin = work_ops[by_position[id(u.op)]]
        for r, orig in zip(twin.results, u.op.results, strict=True):
            kept.append(r)
            owners.append(orig)
    ret.operands = [*ret.operands, *kept]
    func.update_function_type()
    plan, constants = plan_function(work, func.sym_name.data)

    def no_partition(target: str, symbol: str) -> Callable[..., Any]:
        raise ValueError(f"the reference run has no partitions (@{symbol})")

    bound = BoundPlan.bind(plan, constants, no_partition)
    steps_of = [sum(1 for o in inner_ops(u.op) if isinstance(o, NNOp) and not isinstance(o, ConstantOp)) for u in units]
    if sum(steps_of) != len(plan.steps):
        raise ValueError(
            f"placement: the host plan has {len(plan.steps)} steps, the units {sum(steps_of)}"
        )
    outputs, _ = bound.run_profiled(list(inputs))
    per_step: list[list[float]] = [[] for _ in plan.steps]
    for _ in range(repeats):
        _, times = bound.run_profiled(list(inputs))
        for k, t in enumerate(times):
            per_step[k].append(t)
    medians = [statistics.median(t) for t in per_step]
    host: list[float] = []
    k = 0
    for n in steps_of:
        host.append(sum(medians[k : k + n]))
        k += n
    first_kept = len(outputs) - len(kept)
    values = {
        v: np.asarray(outputs[first_kept + n]) for n, v in enumerate(owners)
    }
    for a, x in zip(original.body.block.args, inputs, strict=True):
        values[a] = np.asarray(x)
    return Reference(values, host)


__all__ = [
    "BuildFn",
    "ModelJob",
    "Reference",
    "RegionJob",
    "default_build",
    "default_executor",
    "LocalPool",
    "reference_run",
    "run_job",
    "sample_arrays",
]
