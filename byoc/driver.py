"""`byoc.build`: partition (when asked), compile each target's partitions, plan the host.

    exe = byoc.build(module, params={"w": w}, targets=["ccompiler", "examplejson"])
    (y,) = exe.run(x)

The driver above every layer. Per target (`byoc.targets.Target`), every
partition function at once (so all C partitions go into one shared library):
either the target's own `codegen`, or its `lowering` pass (by CLI name) on a
module of the partitions, then the runtime component of its `component` kind
built from the lowered module (`COMPONENT_BUILDERS`).

Fallback (`fallback=True`, the default): a listed target that cannot run here is left
out and its ops are placed on the remaining targets, with a `TargetFallbackWarning`
naming it and the cause. "Cannot run here" is decided before partitioning where it can
be (`Target.unavailable_reason()`: a missing extra, a CPU without the ISA its kernels
need; a plugin that failed to load), and otherwise when building the target's runtime
component raises (its codegen, the C compile, loading the library or an entry point): the
module is then partitioned again without it, until every component builds. Only build
errors fall back; what a built component computes is never second-guessed
(docs/targets.md, "When a target cannot run here").
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation

from byoc.dialects import nn
from byoc.dialects.byoc import COMPILER_ATTR, CompositeOp, YieldOp, partition_target
from byoc.dialects.nn.types import check_value_types
from byoc.dialects.verify import ChangeVerifier
from byoc.runtime.component import RuntimeComponent
from byoc.runtime.executable import Executable, PartitionInfo, TargetFallback
from byoc.runtime.host import input_name, plan_function
from byoc.targets import Target, get_target
from byoc.targets import register_target as _register_in_registry
from byoc.utils.env import EnvError
from byoc.utils.gc import paused_gc

if TYPE_CHECKING:
    from byoc.placement.place import Placement


class BuildError(ValueError):
    pass


class TargetFallbackWarning(UserWarning):
    """`byoc.build` left out a target it was asked for, because the target cannot run here;
    its ops went to the remaining targets or the host. The message names the target and
    the cause; `Executable.fallbacks` and `Executable.placement()` record it too."""


ComponentBuilder = Callable[[ModuleOp, Target], RuntimeComponent]


TIERED: ContextVar[bool] = ContextVar("byoc_tiered", default=False)
"""Whether the C components `build` makes now are tiered (`build(..., tiered=)`)."""


def _c_library(unit: ModuleOp, target: Target) -> RuntimeComponent:
    """The `c.module` of `unit` compiled into one shared library; tiered (running on the
    first tier at once, compiled in the background) when `TIERED` is set and the target
    links no library of its own."""
    from byoc.lowering.c_build import build_c_module

    if target.c_build_options is None:
        if TIERED.get():
            from byoc.lowering.c_build import tiered_c_module

            tiered = tiered_c_module(unit)
            if tiered is not None:
                return tiered
        return build_c_module(unit)
    flags, libs = target.c_build_options()
    return build_c_module(unit, flags=flags, libs=libs)


def _examplejson_module(unit: ModuleOp, target: Target) -> RuntimeComponent:
    """An ExampleJSON runtime module holding every subgraph of `unit`."""
    from byoc.runtime.examplejson_module import ExampleJsonModule

    return ExampleJsonModule.from_ir(unit, "<build>")


def _graph_module(unit: ModuleOp, target: Target) -> RuntimeComponent:
    """Every graph of `unit` in one blob, run by the target's engine on the native graph runtime."""
    from byoc.runtime.graph_module import GraphModule

    if target.graph_engine is None:
        raise BuildError(f"target '{target.name}' builds a graph component but names no engine")
    return GraphModule.from_ir(unit, target.graph_engine)


COMPONENT_BUILDERS: dict[str, ComponentBuilder] = {
    "c": _c_library,
    "examplejson": _examplejson_module,
    "graph": _graph_module,
}
"""Runtime component kind (`Target.component`) -> how a lowered module becomes one."""


def check_target(target: Target) -> None:
    """The names `target` uses (lowering pass, component kind, composite lowering) exist."""
    from byoc.lowering.nn_to_c import COMPOSITE_LOWERINGS
    from byoc.passes import ALL_PASSES

    if target.lowering is not None and target.lowering not in ALL_PASSES:
        raise BuildError(
            f"target '{target.name}' names lowering '{target.lowering}', which is not a "
            f"registered pass (passes: {', '.join(sorted(ALL_PASSES))})"
        )
    if target.component is not None and target.component not in COMPONENT_BUILDERS:
        raise BuildError(
            f"target '{target.name}' names component kind '{target.component}', which is not "
            f"known (kinds: {', '.join(sorted(COMPONENT_BUILDERS))})"
        )
    for name in target.prepare:
        if name not in ALL_PASSES:
            raise BuildError(
                f"target '{target.name}' names prepare pass '{name}', which is not a "
                f"registered pass (passes: {', '.join(sorted(ALL_PASSES))})"
            )
    if target.composite_lowering is not None and (
        target.composite_lowering not in COMPOSITE_LOWERINGS
    ):
        raise BuildError(
            f"target '{target.name}' names composite lowering '{target.composite_lowering}', "
            f"which is not registered (known: {', '.join(sorted(COMPOSITE_LOWERINGS))})"
        )


def register_target(target: Target) -> Target:
    """`byoc.register_target`: check the names `target` uses, then register it
    (`byoc.targets.register_target`)."""
    check_target(target)
    _register_in_registry(target)
    return target


def codegen(target: Target, module: ModuleOp, funcs: Sequence[FuncOp]) -> RuntimeComponent:
    """The runtime component of `target` holding every partition of `funcs`."""
    if target.codegen is not None:
        return target.codegen(module, funcs)
    if target.lowering is None or target.component is None:
        raise BuildError(
            f"target '{target.name}' has neither a lowering nor a codegen; it can annotate and "
            "partition but not build"
        )
    check_target(target)
    from byoc.context import make_context
    from byoc.passes import ALL_PASSES

    unit = ModuleOp([f.clone() for f in funcs])
    ALL_PASSES[target.lowering]()().apply(make_context(), unit)
    left = [f.sym_name.data for f in unit.ops if isinstance(f, FuncOp) and f.body.blocks]
    if left:
        raise BuildError(
            f"target '{target.name}': its lowering '{target.lowering}' did not lower "
            f"{', '.join('@' + name for name in left)}"
        )
    return COMPONENT_BUILDERS[target.component](unit, target)


def bind_params(module: ModuleOp, params: Mapping[str, Any], function: str = "main") -> None:
    """Replace the named inputs of `@function` by constants (TVM's bind_params_by_name)."""
    func = next(
        (op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == function), None
    )
    if func is None:
        raise BuildError(f"no function @{function} to bind params into")
    block = func.body.block
    by_name = {input_name(func, a.index): a for a in block.args}
    for name, value in params.items():
        arg = by_name.get(name)
        if arg is None:
            raise BuildError(
                f"param '{name}' is not an input of @{function} (inputs: {', '.join(by_name)})"
            )
        arr = np.ascontiguousarray(np.asarray(value))
        const = nn.ConstantOp.from_array(arr)
        if const.result.type != arg.type:
            raise BuildError(f"param '{name}' has type {const.result.type}, the input is {arg.type}")
        block.insert_op_before(const, block.first_op) if block.first_op else block.add_op(const)
        arg.replace_all_uses_with(const.result)
        if func.arg_attrs is not None:  # keep the argument attributes in step
            attrs = list(func.arg_attrs.data)
            del attrs[arg.index]
            func.arg_attrs = ArrayAttr(attrs)
        block.erase_arg(arg)
    func.update_function_type()


def prepare_for(module: ModuleOp, targets: Sequence[str]) -> None:
    """Run the `prepare` passes of `targets` (each once, in target order) on `module`."""
    from byoc.context import make_context
    from byoc.passes import ALL_PASSES
    from byoc.targets import UnknownTargetError

    seen: list[str] = []
    for name in targets:
        try:
            target = get_target(name)
        except UnknownTargetError:
            continue  # the byoc pipeline reports it, with the list of targets
        for p in target.prepare:
            if p not in seen:
                check_target(target)
                seen.append(p)
    for p in seen:
        ALL_PASSES[p]()().apply(make_context(), module)


def _ops_of(func: FuncOp) -> tuple[str, ...]:
    names: list[str] = []
    for op in func.body.walk():
        if op is func or isinstance(op, ReturnOp | YieldOp | nn.ConstantOp):
            continue
        if isinstance(op, CompositeOp):
            names.append(op.composite.data)
            continue
        if _inside_composite(op):
            continue
        names.append(op.name)
    return tuple(names)


def _inside_composite(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, CompositeOp):
            return True
        parent = parent.parent_op()
    return False


# --------------------------------------------------------------------------
# Fallback: leaving out the targets that cannot run here
# --------------------------------------------------------------------------

_ORIGIN_ATTR = "byoc.fallback_origin"
"""Discardable attribute numbering the ops of a module while a fallback is reported: it
says which ops a left-out target would have run (`_origins`); removed before lowering."""


_NOT_A_FALLBACK: tuple[type[Exception], ...] = (BuildError, EnvError)
"""Errors of a component build that are raised with fallback=True too: they hold on every
machine (a target's definition, the user's `BYOC_*` settings), so another target is no fix."""


class _ComponentFailed(Exception):
    """Building the runtime component of `target` raised `error` (fallback=True only)."""

    def __init__(self, target: str, error: Exception):
        super().__init__(target, error)
        self.target = target
        self.error = error


@dataclass
class Placed:
    """A module partitioned for the targets that build here, and their components."""

    module: ModuleOp
    by_target: dict[str, list[FuncOp]]
    components: dict[str, RuntimeComponent]
    fallbacks: list[TargetFallback] = field(default_factory=list[TargetFallback])
    displaced: dict[str, str] = field(default_factory=dict[str, str])
    """Partition symbol -> the fallback (`<target>: <cause>`) whose ops it took over."""
    why: Callable[[FuncOp], dict[str, Any]] | None = None
    """A measured or modelled placement's `PartitionInfo` fields (reason, measured) of a partition."""

    def partition_infos(self) -> list[PartitionInfo]:
        infos: list[PartitionInfo] = []
        for target, funcs in self.by_target.items():
            for f in funcs:
                name = f.sym_name.data
                why = self.displaced.get(name)
                fields = self.why(f) if self.why is not None else {}
                if why is None:
                    infos.append(PartitionInfo(name, target, _ops_of(f), **fields))
                else:  # the fallback is the reason; a measured placement's figures stay
                    measured = fields.get("measured", ())
                    infos.append(PartitionInfo(name, target, _ops_of(f), "fallback", measured, why))
        return infos


def _error_text(e: BaseException) -> str:
    """`Type: first line` of an error, and its first line naming an error after that (a C
    compiler's diagnostic under `C compilation failed ...`)."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    text = f"{type(e).__name__}: {lines[0]}"
    detail = next((line for line in lines[1:] if "error" in line.lower()), None)
    return f"{text} {detail}" if detail else text


def _unavailable(name: str) -> str | None:
    """Why target `name` cannot run here (`Target.unavailable_reason()`, or the failure of
    the plugin that declares it); None when it can. An unknown name is not a reason: the
    pipeline reports it as an error."""
    from byoc.targets import UnknownTargetError
    from byoc.targets.plugins import PluginError

    try:
        target = get_target(name)
    except UnknownTargetError:
        return None
    except PluginError as e:
        return str(e)
    return target.unavailable_reason()


def _leave_out(fallbacks: list[TargetFallback], target: str, cause: str) -> None:
    fallback = TargetFallback(target, cause)
    fallbacks.append(fallback)
    warnings.warn(
        f"target '{target}' cannot run here and was left out ({cause}); its ops go to the "
        "remaining targets or the host",
        TargetFallbackWarning,
        stacklevel=4,
    )


def _compile(
    module: ModuleOp,
    by_target: Mapping[str, Sequence[FuncOp]],
    progress: Callable[[str], None] | None,
    fallback: bool,
) -> dict[str, RuntimeComponent]:
    """Each target's runtime component. With `fallback`, a component whose build (codegen,
    compile, load, entry points) raises is a `_ComponentFailed`, unless the error is one of
    `_NOT_A_FALLBACK`: a target that can build nowhere (no lowering, an unknown name in it,
    a lowering that leaves a partition) or a bad `BYOC_*` variable raises as without."""
    components: dict[str, RuntimeComponent] = {}
    for target, funcs in by_target.items():
        if progress is not None:
            progress(f"compiling {len(funcs)} {target} partition(s)")
        found = get_target(target)
        if not fallback or not found.builds:  # a target without a lowering never builds
            components[target] = codegen(found, module, funcs)
            continue
        check_target(found)  # the names it uses exist, wherever it runs
        try:
            component = codegen(found, module, funcs)
            for f in funcs:  # the library loads and holds every entry point
                component.get_function(f.sym_name.data)
        except _NOT_A_FALLBACK:
            raise
        except Exception as e:  # noqa: BLE001 - reported: the caller warns and re-partitions
            raise _ComponentFailed(target, e) from e
        components[target] = component
    return components


def _partitions_by_target(module: ModuleOp) -> dict[str, list[FuncOp]]:
    by_target: dict[str, list[FuncOp]] = {}
    for op in module.ops:
        if isinstance(op, FuncOp):
            target = partition_target(op)
            if target is not None:
                by_target.setdefault(target, []).append(op)
    return by_target


def _number_ops(module: ModuleOp) -> None:
    """Give every op outside the partitions (constants and terminators aside) its number."""
    n = 0
    for func in module.ops:
        if not isinstance(func, FuncOp) or partition_target(func) is not None:
            continue
        for op in func.body.walk():
            if isinstance(op, ReturnOp | YieldOp | nn.ConstantOp | CompositeOp):
                continue
            op.attributes[_ORIGIN_ATTR] = IntegerAttr(n, i64)
            n += 1


def _origins(funcs: Sequence[FuncOp]) -> set[int]:
    """The numbers (`_number_ops`) of the ops inside `funcs`."""
    found: set[int] = set()
    for f in funcs:
        for op in f.body.walk():
            tag = op.attributes.get(_ORIGIN_ATTR)
            if isinstance(tag, IntegerAttr):
                found.add(tag.value.data)
    return found


def _drop_numbers(module: ModuleOp) -> None:
    for op in module.walk():
        op.attributes.pop(_ORIGIN_ATTR, None)


def _partition(
    module: ModuleOp,
    targets: Sequence[str],
    hosted: set[str],
    partition: Callable[[ModuleOp, list[str]], None] | None = None,
) -> None:
    """Partition `module` in place for `targets`; the partitions it already holds for a
    target of `hosted` become plain functions first (the host runs them, or the pipeline
    re-places their ops)."""
    for op in module.ops:
        if isinstance(op, FuncOp) and partition_target(op) in hosted:
            op.attributes.pop(COMPILER_ATTR)
    if targets:
        from byoc.passes.byoc_pipeline import partition_for

        prepare_for(module, list(targets))
        if partition is None:
            partition_for(module, list(targets))
        else:
            partition(module, list(targets))


def place_and_compile(
    module: ModuleOp,
    targets: Sequence[str],
    *,
    fallback: bool = True,
    progress: Callable[[str], None] | None = None,
    fresh: Callable[[], ModuleOp] | None = None,
    partition: Callable[[ModuleOp, list[str]], None] | None = None,
) -> Placed:
    """Partition `module` (modified) for `targets` and build each target's component; with
    `fallback`, leave out each target that cannot run here and partition again without it,
    until every component builds. `fresh` makes another copy of `module` as it is now
    (unpartitioned) for the next try; without it, `module` is cloned up front. `partition`
    (default: the `byoc` pipeline in priority order) partitions a copy for the targets left,
    after their `prepare` passes (a measured placement passes its own)."""
    listed = list(targets)
    fallbacks: list[TargetFallback] = []
    if fallback:  # the listed targets, and those the module is partitioned for already
        for name in dict.fromkeys([*listed, *_partitions_by_target(module)]):
            reason = _unavailable(name)
            if reason is not None:
                _leave_out(fallbacks, name, f"not available: {reason}")
    if fresh is None and fallback and (listed or _partitions_by_target(module)):
        fresh = module.clone().clone
    unused: ModuleOp | None = module
    while True:
        left_out = {f.target for f in fallbacks}
        if unused is not None:
            work, unused = unused, None
        else:
            assert fresh is not None  # a second try is only made with fallback
            work = fresh()
        if fallbacks:
            _number_ops(work)
        _partition(work, [t for t in listed if t not in left_out], left_out, partition)
        by_target = _partitions_by_target(work)
        origins: dict[str, set[int]] = {}
        if fallbacks:
            origins = {f.sym_name.data: _origins([f]) for fs in by_target.values() for f in fs}
            _drop_numbers(work)
        ChangeVerifier().verify(work)  # each `nn` op signature once (byoc/dialects/verify.py)
        try:
            components = _compile(work, by_target, progress, fallback)
        except _ComponentFailed as e:
            _leave_out(fallbacks, e.target, f"its build failed: {_error_text(e.error)}")
            continue
        placed = Placed(work, by_target, components, fallbacks)
        if fallbacks and listed and fresh is not None:
            placed.displaced = _displaced(fresh(), listed, fallbacks, origins)
        return placed


def _displaced(
    reference: ModuleOp,
    listed: Sequence[str],
    fallbacks: Sequence[TargetFallback],
    origins: Mapping[str, set[int]],
) -> dict[str, str]:
    """Partition symbol -> the fallbacks whose ops it runs (`; `-separated, in the order the
    targets were left out). `reference`, a copy of the module before partitioning, is
    partitioned for every listed target that can be looked up (nothing is built): its
    partitions say which ops each left-out target would have run. When that partitioning
    raises (a left-out target's predicates need what is missing), no partition can be
    told apart, and a warning says so."""
    from byoc.passes.byoc_pipeline import partition_for

    known = [t for t in listed if _lookup_ok(t)]
    _number_ops(reference)
    try:
        prepare_for(reference, known)
        partition_for(reference, known)
    except Exception as e:  # noqa: BLE001 - the build stands; the report says what it lacks
        warnings.warn(
            f"cannot tell which partitions took over the ops of the left-out target(s) "
            f"{', '.join(f.target for f in fallbacks)}: partitioning for them raised "
            f"{_error_text(e)}",
            TargetFallbackWarning,
            stacklevel=5,
        )
        return {}
    would_run = _partitions_by_target(reference)
    displaced: dict[str, list[str]] = {}
    for fb in fallbacks:
        theirs = _origins(would_run.get(fb.target, []))
        for symbol, ops in origins.items():
            if ops & theirs:
                displaced.setdefault(symbol, []).append(str(fb))
    return {symbol: "; ".join(causes) for symbol, causes in displaced.items()}


def _lookup_ok(name: str) -> bool:
    try:
        get_target(name)
    except ValueError:
        return False
    return True


def _own_copy(module: ModuleOp, params: Mapping[str, Any] | None) -> ModuleOp:
    """A copy of `module` that `build` may change, its types checked and `params` bound."""
    module = module.clone()
    check_value_types(module)  # a dim xDSL took but no tensor can have
    if params:
        bind_params(module, params)
    return module


def _measuring_build(*args: Any, **kwargs: Any) -> Executable:
    """`build` for placement's measurements: never tiered (they time the compiled code)."""
    return build(*args, **kwargs, tiered=False)


def build(
    module: ModuleOp,
    params: Mapping[str, Any] | None = None,
    targets: Sequence[str] | str | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    num_threads: int | None = None,
    fallback: bool = True,
    placement: str = "priority",
    placement_cache: str | Path | None = None,
    measure_executor: Executor | None = None,
    sample_inputs: Sequence[Any] | Mapping[str, Any] | None = None,
    tiered: bool | None = None,
) -> Executable:
    """Build `module` (not modified) into an `Executable`.

    With `targets`, the `byoc` pipeline partitions it first; without, the module
    may already be partitioned (functions with `byoc.compiler`) or run on the host.
    `num_threads` bounds the threads of every run (default `$BYOC_NUM_THREADS`, else
    the cores the process may use; `Executable.set_num_threads` changes it; docs/threads.md).
    When an input of `@main` has a `?` dim and targets are given, the result is a
    `byoc.specialize.SpecializingExecutable`: the host runs any shape, and the
    partitions are built per distinct input shape on first use.
    `fallback` (default True): a listed target that cannot run here (not available, or its
    component fails to build) is left out with a `TargetFallbackWarning` and its ops are
    placed on the remaining targets (`Executable.placement()` reports it); False raises
    the target's error instead.
    `placement` chooses which target runs each op (docs/placement.md): "priority" (the
    order of `targets`), "measure" (timed on `sample_inputs`, else seeded random inputs,
    through `measure_executor`; figures cached in `placement_cache`) or "cost-model".
    `tiered` (default `$BYOC_TIERED`, else off): C partitions run at once on the first tier
    (the kernel library's kernels, fused loops interpreted; no compiler run for the model)
    while their C compiles in the background, then on the compiled library
    (`Executable.wait_compiled()`; docs/runtime.md, "Tiered execution").
    """
    # A build in priority order makes long-lived IR and little garbage: collections in
    # between would rescan it all. A measured placement builds and drops many candidate
    # modules, whose cycles are collected as it goes.
    paused = paused_gc() if placement == "priority" else contextlib.nullcontext()
    with paused:
        return _build(
            module, params, targets, progress=progress, num_threads=num_threads,
            fallback=fallback, placement=placement, placement_cache=placement_cache,
            measure_executor=measure_executor, sample_inputs=sample_inputs, tiered=tiered,
        )  # fmt: skip


def _build(
    module: ModuleOp,
    params: Mapping[str, Any] | None,
    targets: Sequence[str] | str | None,
    *,
    progress: Callable[[str], None] | None,
    num_threads: int | None,
    fallback: bool,
    placement: str,
    placement_cache: str | Path | None,
    measure_executor: Executor | None,
    sample_inputs: Sequence[Any] | Mapping[str, Any] | None,
    tiered: bool | None,
) -> Executable:
    if tiered is None:
        from byoc.runtime.tiered import tiered_default

        tiered = tiered_default()
    if num_threads is not None:
        from byoc.runtime.threads import check_num_threads

        check_num_threads(num_threads)
    if placement != "priority":
        from byoc.placement import normalise_mode

        placement = normalise_mode(placement)
    source = module
    module = _own_copy(source, params)
    if isinstance(targets, str):
        targets = [t for t in targets.split(",") if t]
    if targets:
        from byoc.specialize import SpecializingExecutable, has_dynamic_inputs

        if has_dynamic_inputs(module):
            chosen = list(targets)
            generic = build(module, progress=progress)
            return SpecializingExecutable(
                generic,
                module,
                lambda m: build(m, targets=chosen, progress=progress, fallback=fallback, tiered=False),
            )
    # partition for the targets, then each target's component (`place_and_compile`)
    chosen: list[Placement] = []
    partition: Callable[[ModuleOp, list[str]], None] | None = None
    if placement != "priority":

        def partition(work: ModuleOp, remaining: list[str]) -> None:
            from byoc.placement import place

            chosen.append(
                place(
                    work, remaining, mode=placement, cache=placement_cache,
                    executor=measure_executor, sample_inputs=sample_inputs,
                    num_threads=num_threads, build=_measuring_build, progress=progress,
                )
            )

    token = TIERED.set(tiered)
    try:
        placed = place_and_compile(
            module,
            list(targets or ()),
            fallback=fallback,
            progress=progress,
            fresh=lambda: _own_copy(source, params),  # another try starts from the model again
            partition=partition,
        )
    finally:
        TIERED.reset(token)
    module = placed.module
    if chosen:
        placed.why = chosen[-1].why

    plan, constants = plan_function(module)
    return Executable(
        plan,
        constants,
        placed.components,
        placed.partition_infos(),
        num_threads=num_threads,
        fallbacks=placed.fallbacks,
    )
