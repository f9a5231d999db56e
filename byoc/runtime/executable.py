"""`Executable`: a built model — the host plan, its constants and the targets' runtime components.

A run is one native call when the plan compiles (`native_plan.py`: static shapes and at
least one partition with a C entry); otherwise the Python host executor (`host.py`, the
reference) runs it step by step. `export_library(path)` writes it as one artifact
(`artifact.py`, the container); `load_executable(path)` reads it back, each component
through the loader of its kind (`component.py`), with no recompilation.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from byoc.runtime.artifact import ArtifactError, ArtifactWriter, brief, read_artifact
from byoc.runtime.component import RuntimeComponent, kind_of_blobs, load_component
from byoc.runtime.host import BoundPlan, HostPlan, PlanError, check_input_shapes, check_plan
from byoc.runtime.native_plan import NativePlan, compile_plan, runner_library
from byoc.runtime.parallel import BranchGraph, HostPool, run_branches
from byoc.runtime.tensor import checked_dtype, checked_shape
from byoc.runtime.threads import check_num_threads, resolve_num_threads
from byoc.runtime.toolchain import CompileError
from byoc.utils.aligned import aligned_array

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class PartitionInfo:
    symbol: str
    target: str
    ops: tuple[str, ...]
    """The op names inside the partition, in order."""
    reason: str = "priority"
    """Why this target runs the partition: "priority", "measured", "cost-model" or "fallback"."""
    measured: tuple[tuple[str, float], ...] = ()
    """(target, seconds) per candidate target timed for this partition's ops, fastest first."""
    fallback: str | None = None
    """When a listed target could not take these ops: which one and why."""

    @property
    def num_ops(self) -> int:
        return len(self.ops)


@dataclass(frozen=True)
class TargetFallback:
    """A target `byoc.build` was asked for but left out, because it cannot run here."""

    target: str
    cause: str
    """Why: it is not available here (a missing extra, the CPU), or its build failed (the error)."""

    def __str__(self) -> str:
        return f"{self.target}: {self.cause}"


@dataclass(frozen=True)
class Placement:
    """Which target runs each partition and why: what `Executable.placement()` returns.

    `str(placement)` is a table: one row per partition (symbol, target, op count, reason,
    the measured time per candidate target, the fallback cause), then the targets left out
    and why. A model with dynamic input dims is built once per input shape: `specializations`
    holds the placement of each shape built so far (least recently used first), and
    `partitions` and `fallbacks` are those of the most recently used one."""

    partitions: tuple[PartitionInfo, ...]
    """Each partition: symbol, target, ops, and why that target runs it."""
    fallbacks: tuple[TargetFallback, ...] = ()
    """The targets asked for but left out, in the order they were left out."""
    specializations: tuple[tuple[tuple[tuple[int, ...], ...], Placement], ...] = ()
    """(input shapes, their placement) per specialisation of a dynamic-shape model."""

    def __iter__(self) -> Iterator[PartitionInfo]:
        return iter(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    def __str__(self) -> str:
        if self.specializations:
            blocks: list[str] = []
            for shapes, placement in self.specializations:
                shown = " ".join("x".join(map(str, s)) or "scalar" for s in shapes)
                blocks.append(f"input shapes {shown}:\n{placement}")
            return "\n".join(blocks)
        return "\n".join(placement_lines(self.partitions, self.fallbacks))


PLACEMENT_COLUMNS = ("partition", "target", "ops", "reason", "measured (ms)", "fallback")
"""The columns of the placement table (`Placement.__str__`)."""


def placement_lines(
    partitions: Sequence[PartitionInfo], fallbacks: Sequence[TargetFallback]
) -> list[str]:
    """The placement table (`Placement.__str__`): a header, a row per partition, then a line
    per target left out. Candidate times are milliseconds, fastest first; `-` is none."""
    lines: list[str] = []
    if partitions:
        rows = [PLACEMENT_COLUMNS] + [
            (
                f"@{p.symbol}",
                p.target,
                str(p.num_ops),
                p.reason,
                ", ".join(f"{t} {sec * 1e3:.3f}" for t, sec in p.measured) or "-",
                p.fallback or "-",
            )
            for p in partitions
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(PLACEMENT_COLUMNS) - 1)]
        for row in rows:
            cells = [
                cell.rjust(w) if i == 2 else cell.ljust(w)  # the op count is a number
                for i, (cell, w) in enumerate(zip(row, widths, strict=False))
            ]
            lines.append("  ".join([*cells, row[-1]]).rstrip())
    else:
        lines.append("no partitions: every op runs on the host")
    lines += [f"left out: {f}" for f in fallbacks]
    return lines


DYNAMIC = -(2**63)
"""A dynamic dim in a spec (`?`, xDSL's DYNAMIC_INDEX): any size fits it."""


def shape_fits(actual: Sequence[int], spec: Sequence[int]) -> bool:
    """Whether an array shape fits a spec whose `?` dims take any size."""
    return len(actual) == len(spec) and all(
        d == DYNAMIC or d == a for a, d in zip(actual, spec, strict=True)
    )


def shape_repr(spec: Sequence[int]) -> str:
    """`(?, 4)`: a spec as a message shows it, never an INT64_MIN."""
    dims = ["?" if d == DYNAMIC else str(d) for d in spec]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


class InputError(ValueError):
    """An input does not match the model's signature; the message names the input."""


def as_array(value: Any, name: str) -> Array:
    """A numpy view of an input: ndarray, any `__dlpack__` exporter, or array-like.

    An ndarray subclass (`np.matrix`, a masked array) is viewed as a plain ndarray of its
    data, as `np.asarray` does: its operators (`*` is a matrix product on `np.matrix`)
    must not reach the kernels."""
    if isinstance(value, np.ndarray):
        return value if type(value) is np.ndarray else value.view(np.ndarray)
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError) as exc:
            raise InputError(f"input '{name}': cannot import it through DLPack ({exc})") from exc
    try:
        return np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - report what numpy says, naming the input
        raise InputError(f"input '{name}': not an array ({exc})") from exc


class Executable:
    """Run a built model: `run(*args, **kwargs)` / `__call__` return a list of numpy arrays.

    Thread-safe: each call has its own value slots (compiled: its own workspace and arena);
    partitions are re-entrant.

    Threads: `num_threads` (default `BYOC_NUM_THREADS`, else the cores the process may
    use; `set_num_threads` changes it) bounds every pool a run uses — each component's
    (`set_num_threads`, called on every component that has it) and the host's pool for
    independent branches (`byoc.runtime.parallel`), which this Executable owns and shuts
    down when it is freed.
    """

    def __init__(
        self,
        plan: HostPlan,
        constants: Sequence[Array],
        components: Mapping[str, RuntimeComponent],
        partitions: Sequence[PartitionInfo],
        *,
        num_threads: int | None = None,
        native: bool = True,
        fallbacks: Sequence[TargetFallback] = (),
    ):
        """`native=False` keeps every run on the Python host executor (the reference).
        `fallbacks`: the targets the build was asked for but left out, and why."""
        self.plan = plan
        self.constants = [aligned_array(np.asarray(a)) for a in constants]
        """The plan's constants, each at a 64-byte boundary: C partitions read them."""
        self.components = dict(components)
        self._partitions = list(partitions)
        self._fallbacks = tuple(fallbacks)

        self._bound = BoundPlan.bind(plan, self.constants, self._function)
        self._checks = [
            (name, spec.dtype, spec.shape)
            for name, spec in zip(plan.input_names, plan.input_specs, strict=True)
        ]
        self._dynamic = any(DYNAMIC in spec.shape for spec in plan.input_specs)
        self._shapes_ok: set[tuple[tuple[int, ...], ...]] = set()
        self._graph = BranchGraph.of(plan)
        self._setters: list[Callable[[int], None] | None] = [
            self.components[step.target].set_call_threads
            if step.kind == "call" and step.target in self.components
            else None
            for step in plan.steps
        ]
        holders = [c.hold_threads for c in self.components.values() if c.holds_threads]
        self._holders = holders if len(holders) == 1 and not self._graph.parallel else []
        """The component whose thread team a run holds awake (`hold_threads`): only when
        there is one and the plan has no branches to run at once; the idle team of another
        library, or of a component while the host's branches run, would spin on the cores
        the working threads need (docs/threads.md, "The team")."""
        self.native_plan: NativePlan | None = None
        """The compiled host plan (`byoc.runtime.native_plan`): a run is one native call.
        None when every run goes through the Python host executor; `native_reason` says why."""
        self.native_reason = "built with native=False"
        if native:
            self.native_plan, self.native_reason = compile_plan(
                plan, self.constants, self._bound, self.components
            )
        self._native: NativePlan | None = None
        """`native_plan` when the thread setting lets it run the plan (`_choose_runner`)."""
        self._native_holders: list[Callable[[bool], None]] = []
        self._pool: HostPool | None = None
        self._pool_lock = threading.Lock()
        self._tier_lock = threading.Lock()
        self._num_threads = 1
        self.set_num_threads(resolve_num_threads(num_threads))
        self._native_wanted = native
        tiered = [c for c in self.components.values() if c.tiered]
        if tiered:
            this = weakref.ref(self)

            def tier_up() -> None:
                exe = this()
                if exe is not None:
                    exe._tier_up()

            for component in tiered:  # compiled before we listen: switch now
                if not component.on_compiled(tier_up) and component.tier == "compiled":
                    self._tier_up()
        self._unstarted = tiered
        """Tiered components told to compile when a run ends (the first run's answer comes
        before their compile's Python shares the interpreter: `byoc.runtime.tiered`)."""

    def _function(self, target: str, symbol: str) -> Callable[..., Any]:
        component = self.components.get(target)
        if component is None:
            raise KeyError(f"no runtime module for target '{target}' (partition @{symbol})")
        return component.get_function(symbol)

    # ---- threads ----------------------------------------------------------------
    @property
    def num_threads(self) -> int:
        """The thread setting of this Executable (`set_num_threads`)."""
        return self._num_threads

    def set_num_threads(self, n: int) -> None:
        """Use at most `n` threads per run from now on (1: no thread is started). Tells
        every component (`set_num_threads(n)`), and resizes the host pool."""
        n = check_num_threads(n)
        self._num_threads = n
        for component in self.components.values():
            component.set_num_threads(n)
        with self._pool_lock:
            pool = self._pool
            if pool is not None and pool.workers != n:
                self._pool = None
                pool.retired = True
                if pool.users == 0:
                    pool.close()
        self._choose_runner(n)

    def _choose_runner(self, n: int) -> None:
        """The native plan runs one step after another on the calling thread: it runs the
        plan unless independent branches could run at once (more than one thread and a
        branchy plan), which the Python executor's pool does. With more than one thread, a
        run holds the component's team awake, as the Python executor does."""
        with self._tier_lock:
            native = self.native_plan
            if native is not None and n > 1 and self._graph.parallel:
                native = None
            self._native_holders = self._holders if n > 1 else []
            self._native = native

    # ---- tiers --------------------------------------------------------------------
    def _tier_up(self) -> None:
        """A tiered component's compiled library is in use (`byoc.runtime.tiered`): bind the
        plan and build the native plan over it, and switch to them. A run reads `_bound` or
        `_native` once, so a run in flight finishes on the tier it started on."""
        bound = BoundPlan.bind(self.plan, self.constants, self._function)
        native, why = (None, self.native_reason)
        if self._native_wanted:
            native, why = compile_plan(self.plan, self.constants, bound, self.components)
        with self._tier_lock:
            self._bound = bound
            self.native_plan, self.native_reason = native, why
        self._choose_runner(self._num_threads)

    def _start_compiles(self) -> None:
        unstarted, self._unstarted = self._unstarted, []
        for component in unstarted:
            component.start_compile()

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Block until every tiered component runs its compiled library (True), or until
        `timeout` seconds passed (False); at once True for an Executable built untiered.
        Raises a compile's error. Runs after it return use the compiled library only."""
        return all(component.wait_compiled(timeout) for component in self.components.values())

    @property
    def tier(self) -> str:
        """"first" while a tiered component runs its first tier, else "compiled"."""
        if any(component.tier == "first" for component in self.components.values()):
            return "first"
        return "compiled"

    def _acquire_pool(self) -> HostPool:
        """The host pool, sized by the setting now; started here on first use."""
        with self._pool_lock:
            n = self._num_threads
            pool = self._pool
            if pool is not None and pool.workers != n:
                pool.retired = True
                if pool.users == 0:
                    pool.close()
                pool = None
            if pool is None:
                hooks = [c.thread_release for c in self.components.values()]
                pool = self._pool = HostPool(self, n, hooks)
            pool.users += 1
            return pool

    def _release_pool(self, pool: HostPool) -> None:
        with self._pool_lock:
            pool.users -= 1
            if pool.retired and pool.users == 0:
                pool.close()

    def close(self) -> None:
        """Stop the host pool now (it is also stopped when the Executable is freed)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                pool.retired = True
                if pool.users == 0:
                    pool.close()

    # ---- inputs -----------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        return list(self.plan.input_names)

    def _coerce(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Array]:
        checks = self._checks
        if not kwargs and len(args) == len(checks):
            values: Sequence[Any] = args
        else:
            values = self._gather(args, kwargs)
        out: list[Array] = []
        for (name, dtype, shape), value in zip(checks, values, strict=True):
            arr = value if type(value) is np.ndarray else as_array(value, name)
            if arr.dtype != dtype or arr.shape != shape:
                if arr.dtype != dtype or not shape_fits(arr.shape, shape):
                    self._reject(name, dtype, shape, arr)
            flags = arr.flags
            if not (flags.c_contiguous and flags.aligned):
                if not flags.c_contiguous:
                    self._reject(name, dtype, shape, arr)
                # valid but misaligned (a view at an odd byte offset): every executor
                # gets an aligned copy; the C partitions would reject it
                arr = arr.copy()
            out.append(arr)
        if self._dynamic:
            self._check_shapes(out)
        return out

    def _check_shapes(self, arrays: Sequence[Array]) -> None:
        """Inputs that fill `?` dims: check once per distinct shapes that every host
        step's type relation holds for them (an InputError naming the step, not an
        error from inside a numpy kernel)."""
        key = tuple(a.shape for a in arrays)
        if key in self._shapes_ok:
            return
        why = check_input_shapes(self.plan, self.constants, key)
        if why is not None:
            shown = ", ".join(shape_repr(k) for k in key)
            raise InputError(f"inputs of shapes {shown}: {why}")
        if len(self._shapes_ok) >= 256:  # bounded: a stream of new shapes checks again
            self._shapes_ok.clear()
        self._shapes_ok.add(key)

    def _gather(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        names = self.plan.input_names
        if len(args) > len(names):
            raise InputError(f"the model takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
        values: dict[str, Any] = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in names:
                raise InputError(f"unknown input '{key}'; inputs are {', '.join(names)}")
            if key in values:
                raise InputError(f"input '{key}' given twice (by position and by name)")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise InputError(f"missing input(s): {', '.join(missing)}")
        return [values[n] for n in names]

    @staticmethod
    def _reject(name: str, dtype: np.dtype[Any], shape: tuple[int, ...], arr: Array) -> None:
        if arr.dtype != dtype:
            raise InputError(f"input '{name}' has dtype {arr.dtype}, expected {dtype}")
        if not shape_fits(arr.shape, shape):
            raise InputError(
                f"input '{name}' has shape {arr.shape}, expected {shape_repr(shape)}"
            )
        raise InputError(f"input '{name}' is not C-contiguous; pass np.ascontiguousarray(...)")

    # ---- running ----------------------------------------------------------------
    def run(self, *args: Any, **kwargs: Any) -> list[Array]:
        native = self._native
        if native is None:
            out = self._run_python(args, kwargs)
        elif not self._native_holders:
            out = None if kwargs else native.run_args(args)
            if out is None:
                out = native.run(self._coerce(args, kwargs))
        else:
            holders = self._native_holders
            for hold in holders:  # the C teams stay awake through the run (docs/threads.md)
                hold(True)
            try:
                out = None if kwargs else native.run_args(args)
                if out is None:
                    out = native.run(self._coerce(args, kwargs))
            finally:
                for hold in holders:
                    hold(False)
        if self._unstarted:
            self._start_compiles()
        return out

    __call__ = run

    def _run_python(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Array]:
        """A run on the Python host executor (module doc of `byoc.runtime.host`)."""
        inputs = self._coerce(args, kwargs)
        n = self._num_threads
        if n == 1:
            return self._bound.run(inputs)
        holders = self._holders
        for hold in holders:  # the C teams stay awake through the run (docs/threads.md)
            hold(True)
        try:
            if not self._graph.parallel:
                return self._bound.run(inputs)
            bound = self._bound
            slots = bound.start(inputs)
            pool = self._acquire_pool()
            try:
                run_branches(self._graph, bound.runners, self._setters, slots, pool.workers, pool)
            finally:
                self._release_pool(pool)
            return bound._outputs(slots, inputs)
        finally:
            for hold in holders:
                hold(False)

    def run_profiled(self, *args: Any, **kwargs: Any) -> tuple[list[Array], dict[str, float]]:
        """Run once and return the outputs and seconds per partition symbol, plus 'host'."""
        inputs = self._coerce(args, kwargs)
        holders = self._holders if self._num_threads > 1 else []
        for hold in holders:
            hold(True)
        try:
            outputs, times = self._bound.run_profiled(inputs)
        finally:
            for hold in holders:
                hold(False)
        table: dict[str, float] = {"host": 0.0}
        for step, t in zip(self.plan.steps, times, strict=True):
            key = step.name if step.kind == "call" else "host"
            table[key] = table.get(key, 0.0) + t
        return outputs, table

    @property
    def partitions(self) -> list[PartitionInfo]:
        """Each partition: its symbol, target and the ops inside it (a new list each time)."""
        return list(self._partitions)

    @property
    def fallbacks(self) -> tuple[TargetFallback, ...]:
        """The targets `byoc.build` was asked for but left out because they cannot run here
        (`fallback=True`), each with its cause, in the order they were left out."""
        return self._fallbacks

    def placement(self) -> Placement:
        """Which target runs each partition and why (`Placement`; `str()` of it is a table),
        with the targets left out by fallback."""
        return Placement(tuple(self._partitions), self.fallbacks)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {describe_executable(self)}>"

    def export_library(self, path: str) -> None:
        """Write one artifact file: library, ExampleJSON subgraphs, host graph, constants."""
        export_executable(self, path)


REPR_PARTITIONS = 4
"""How many partitions `repr(Executable)` names before it gives only their count."""


def describe_executable(exe: Executable) -> str:
    """`targets: ccompiler; partitions: [@ccompiler_main_0 (ccompiler, 8 ops)]; threads: 2`:
    the targets of the partitions (in the order of the partitions), each partition, the
    thread setting."""
    parts = exe.partitions
    targets = ", ".join(dict.fromkeys(p.target for p in parts)) or "none (host only)"
    shown = [f"@{p.symbol} ({p.target}, {p.num_ops} ops)" for p in parts[:REPR_PARTITIONS]]
    if len(parts) > REPR_PARTITIONS:
        shown.append(f"... {len(parts)} in all")
    return f"targets: {targets}; partitions: [{', '.join(shown)}]; threads: {exe.num_threads}"


def export_executable(exe: Executable, path: str | Path) -> None:
    named = [
        *zip(exe.plan.input_names, exe.plan.input_specs, strict=True),
        *((f"output #{i}", spec) for i, spec in enumerate(exe.plan.output_specs)),
    ]
    for name, spec in named:
        if DYNAMIC in spec.shape:
            raise InputError(
                f"a model with a dynamic (?) dim ({name}: "
                f"{shape_repr(spec.shape)}) cannot be exported yet: the artifact format "
                "states every shape; import or build it with static shapes "
                "(--input-shape NAME=DxDx... on the command line, "
                "byoc.import_onnx(path, input_shapes=...) in Python)"
            )
    writer = ArtifactWriter()
    constants = []
    for arr in exe.constants:
        a = np.ascontiguousarray(arr)
        constants.append(
            {"section": writer.add(a.tobytes()), "dtype": a.dtype.str, "shape": list(a.shape)}
        )
    components: dict[str, dict[str, Any]] = {}
    for target, component in sorted(exe.components.items()):
        blobs = {name: writer.add(blob) for name, blob in sorted(component.export().items())}
        components[target] = {"kind": component.kind, "blobs": blobs}
    header = {
        "plan": exe.plan.to_json(),
        "constants": constants,
        "components": components,
        "partitions": [_partition_json(p) for p in exe.partitions],
    }
    if exe.fallbacks:
        header["fallbacks"] = [{"target": f.target, "cause": f.cause} for f in exe.fallbacks]
    if exe.native_plan is not None:  # loading it then needs no compiler (native_plan.py)
        header["plan_runner"] = writer.add(runner_library().library)
    writer.write(path, header)


def _partition_json(p: PartitionInfo) -> dict[str, Any]:
    """A partition in the artifact header; the placement fields only when not the defaults."""
    entry: dict[str, Any] = {"symbol": p.symbol, "target": p.target, "ops": list(p.ops)}
    if p.reason != "priority":
        entry["reason"] = p.reason
    if p.measured:
        entry["measured"] = [[t, sec] for t, sec in p.measured]
    if p.fallback is not None:
        entry["fallback"] = p.fallback
    return entry


def _partition_of(p: Any) -> PartitionInfo:
    """A partition of the artifact header, every field checked."""
    symbol, target, ops = (p.get(k) if isinstance(p, dict) else None for k in ("symbol", "target", "ops"))
    if not (
        isinstance(symbol, str)
        and isinstance(target, str)
        and isinstance(ops, list)
        and all(isinstance(o, str) for o in ops)
    ):
        raise ArtifactError("a partition needs a 'symbol', a 'target' and a list of op names")
    assert isinstance(p, dict)
    reason = p.get("reason", "priority")
    measured = p.get("measured", [])
    fallback = p.get("fallback")
    if not isinstance(reason, str) or not (fallback is None or isinstance(fallback, str)):
        raise ArtifactError(f"partition '{symbol}': 'reason' and 'fallback' must be strings")
    if not isinstance(measured, list) or not all(
        isinstance(m, list)
        and len(m) == 2
        and isinstance(m[0], str)
        and isinstance(m[1], int | float)
        and not isinstance(m[1], bool)
        for m in measured
    ):
        raise ArtifactError(f"partition '{symbol}': 'measured' must be [target, seconds] pairs")
    return PartitionInfo(
        symbol,
        target,
        tuple(ops),
        reason,
        tuple((str(t), float(sec)) for t, sec in measured),
        fallback,
    )


def _fallbacks_of(header: dict[str, Any]) -> list[TargetFallback]:
    """The targets left out by fallback, from the artifact header (none before it recorded them)."""
    entries = header.get("fallbacks", [])
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("target"), str) and isinstance(e.get("cause"), str)
        for e in entries
    ):
        raise ArtifactError("the header: 'fallbacks' must be a list of {target, cause} objects")
    return [TargetFallback(e["target"], e["cause"]) for e in entries]


def load_executable(path: str | Path) -> Executable:
    """The executable `export_library` wrote to `path`; nothing is recompiled.

    Every header field is checked against what is done with it before it is used, so a
    file whose checksums are valid but whose header is not what `export_library` writes
    is an `ArtifactError` naming the field, never a KeyError, a huge allocation or a crash.
    The checks cannot vouch for the library itself: loading runs its native code."""
    num_threads = resolve_num_threads(None)  # a bad $BYOC_NUM_THREADS is not the file's fault
    header, sections = read_artifact(path)
    try:
        return _load(header, sections, num_threads)
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, ArtifactError):
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise ArtifactError(f"{path}: {message}") from exc


def _load(header: dict[str, Any], sections: list[bytes], num_threads: int | None = None) -> Executable:
    version = header.get("version", 1)
    constants = [_constant(c, sections, i) for i, c in enumerate(_list(header, "constants"))]
    plan = _plan(_dict(header, "plan"), len(constants))
    try:
        check_plan(plan, constants)
    except PlanError as exc:
        raise ArtifactError(f"the plan: {exc}") from None
    if "plan_runner" in header:  # used unless this process runs a runner already
        shipped = sections[_index(header["plan_runner"], len(sections), "the plan runner")]
        try:
            runner_library(shipped)
        except (CompileError, OSError):
            pass  # unusable here, and no compiler: the plan runs in Python (native_reason)
    components: dict[str, RuntimeComponent] = {}
    for target, entry in _dict(header, "components").items():
        if version >= 2:
            kind = _dict({"c": entry}, "c", f"component '{target}'").get("kind")
            if not isinstance(kind, str):
                raise ArtifactError(f"component '{target}' has no kind")
            indices = _dict(entry, "blobs", f"component '{target}'")
        else:  # format 1 did not record the kind: tell it by the blob names
            indices = _dict({"c": entry}, "c", f"component '{target}'")
            kind = None
        blobs = {name: sections[_index(i, len(sections), f"blob '{name}'")] for name, i in indices.items()}
        kind = kind or kind_of_blobs(blobs)
        if kind is None:
            raise ArtifactError(f"cannot tell the kind of the '{target}' component")
        try:
            components[target] = load_component(kind, blobs)
        except ValueError as exc:
            raise ArtifactError(f"component '{target}': {exc}") from exc
    partitions = [_partition_of(p) for p in _list(header, "partitions")]
    return Executable(
        plan,
        constants,
        components,
        partitions,
        num_threads=num_threads,
        fallbacks=_fallbacks_of(header),
    )


def _dict(obj: dict[str, Any], key: str, where: str = "the header") -> dict[str, Any]:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise ArtifactError(f"{where}: '{key}' must be an object, got {brief(value)}")
    return value


def _list(obj: dict[str, Any], key: str, where: str = "the header") -> list[Any]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise ArtifactError(f"{where}: '{key}' must be a list, got {brief(value)}")
    return value


def _index(value: Any, n: int, what: str) -> int:
    if type(value) is not int or not 0 <= value < n:
        raise ArtifactError(f"{what}: {brief(value)} is not an index below {n}")
    return value


def _constant(entry: Any, sections: list[bytes], i: int) -> Array:
    if not isinstance(entry, dict):
        raise ArtifactError(f"constant {i} must be an object")
    data = sections[_index(entry.get("section"), len(sections), f"constant {i}: section")]
    try:
        dtype = checked_dtype(entry.get("dtype"))
        shape = checked_shape(entry.get("shape"), dtype.itemsize)
    except ValueError as exc:
        raise ArtifactError(f"constant {i}: {exc}") from None
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise ArtifactError(
            f"constant {i}: {len(data)} bytes cannot hold {dtype}{list(shape)}"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _plan(data: dict[str, Any], num_constants: int) -> HostPlan:
    """The host plan, after checking that every slot it names exists and is defined once,
    by an input, a constant or a step (so `num_slots` is bounded by the plan's size)."""
    steps = _list(data, "steps", "the plan")
    num_slots = data.get("num_slots")
    defined = (
        len(_list(data, "input_slots", "the plan"))
        + len(_list(data, "constant_slots", "the plan"))
        + sum(len(s.get("outputs", ())) if isinstance(s, dict) else 0 for s in steps)
    )
    if type(num_slots) is not int or not 0 <= num_slots <= defined:
        raise ArtifactError(
            f"the plan: num_slots is {brief(num_slots)}, its inputs, constants and steps define {defined}"
        )

    def slots(values: Any, what: str) -> list[int]:
        if not isinstance(values, list):
            raise ArtifactError(f"the plan: {what} must be a list of slots")
        return [_index(v, num_slots, f"the plan: {what}") for v in values]

    inputs = slots(data["input_slots"], "input_slots")
    outputs = slots(data.get("output_slots"), "output_slots")
    pairs = data["constant_slots"]
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
        raise ArtifactError("the plan: constant_slots must be [slot, constant] pairs")
    for slot, cid in pairs:
        _index(slot, num_slots, "the plan: a constant slot")
        _index(cid, num_constants, "the plan: a constant index")
    names = _list(data, "input_names", "the plan")
    in_specs = _list(data, "input_specs", "the plan")
    out_specs = _list(data, "output_specs", "the plan")
    if not all(isinstance(n, str) for n in names) or not len(names) == len(in_specs) == len(inputs):
        raise ArtifactError("the plan: input_names, input_specs and input_slots must match")
    if len(out_specs) != len(outputs):
        raise ArtifactError("the plan: output_specs and output_slots must match")
    written = [*inputs, *(slot for slot, _ in pairs)]
    for k, step in enumerate(steps):
        if not isinstance(step, dict) or step.get("kind") not in ("kernel", "call"):
            raise ArtifactError(f"the plan: step {k} is not a kernel or a call")
        if not isinstance(step.get("name"), str) or not isinstance(step.get("attrs"), dict):
            raise ArtifactError(f"the plan: step {k} needs a 'name' and 'attrs'")
        if not isinstance(step.get("target", ""), str) or not isinstance(step.get("out_specs", []), list):
            raise ArtifactError(f"the plan: step {k} has a malformed 'target' or 'out_specs'")
        slots(step.get("inputs"), f"step {k} inputs")
        written += slots(step.get("outputs"), f"step {k} outputs")
    if len(set(written)) != len(written):
        raise ArtifactError("the plan: a slot is defined twice")
    try:
        return HostPlan.from_json(data)
    except ValueError as exc:
        raise ArtifactError(f"the plan: {exc}") from None


__all__ = [
    "Executable",
    "InputError",
    "PartitionInfo",
    "Placement",
    "RuntimeComponent",
    "TargetFallback",
    "as_array",
    "export_executable",
    "load_executable",
]
