"""`byoc.build`: partition (when asked), compile each target's partitions, plan the host.

    exe = byoc.build(module, params={"w": w}, targets=["ccompiler", "examplejson"])
    (y,) = exe.run(x)

The driver above every layer. Per target (`byoc.targets.Target`), every
partition function at once (so all C partitions go into one shared library):
either the target's own `codegen`, or its `lowering` pass (by CLI name) on a
module of the partitions, then the runtime component of its `component` kind
built from the lowered module (`COMPONENT_BUILDERS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation

from byoc.dialects import nn
from byoc.dialects.byoc import CompositeOp, YieldOp, partition_target
from byoc.dialects.nn.types import check_value_types
from byoc.runtime.component import RuntimeComponent
from byoc.runtime.executable import Executable, PartitionInfo
from byoc.runtime.host import input_name, plan_function
from byoc.targets import Target, get_target
from byoc.targets import register_target as _register_in_registry

if TYPE_CHECKING:
    from byoc.placement.place import Placement


class BuildError(ValueError):
    pass


ComponentBuilder = Callable[[ModuleOp, Target], RuntimeComponent]


def _c_library(unit: ModuleOp, target: Target) -> RuntimeComponent:
    """The `c.module` of `unit` compiled into one shared library."""
    from byoc.lowering.c_build import build_c_module

    if target.c_build_options is None:
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


def build(
    module: ModuleOp,
    params: Mapping[str, Any] | None = None,
    targets: Sequence[str] | str | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    num_threads: int | None = None,
    placement: str = "priority",
    placement_cache: str | Path | None = None,
    measure_executor: Executor | None = None,
    sample_inputs: Sequence[Any] | Mapping[str, Any] | None = None,
) -> Executable:
    """Build `module` (not modified) into an `Executable`.

    With `targets`, the `byoc` pipeline partitions it first; without, the module
    may already be partitioned (functions with `byoc.compiler`) or run on the host.
    `num_threads` bounds the threads of every run (default `$BYOC_NUM_THREADS`, else
    the cores the process may use; `Executable.set_num_threads` changes it; docs/threads.md).
    When an input of `@main` has a `?` dim and targets are given, the result is a
    `byoc.specialize.SpecializingExecutable`: the host runs any shape, and the
    partitions are built per distinct input shape on first use.
    `placement` chooses which target runs each op (docs/placement.md): "priority" (the
    order of `targets`), "measure" (timed on `sample_inputs`, else seeded random inputs,
    through `measure_executor`; figures cached in `placement_cache`) or "cost-model".
    """
    if num_threads is not None:
        from byoc.runtime.threads import check_num_threads

        check_num_threads(num_threads)
    if placement != "priority":
        from byoc.placement import normalise_mode

        placement = normalise_mode(placement)
    module = module.clone()
    check_value_types(module)  # a dim xDSL took but no tensor can have
    if params:
        bind_params(module, params)
    if isinstance(targets, str):
        targets = [t for t in targets.split(",") if t]
    if targets:
        from byoc.specialize import SpecializingExecutable, has_dynamic_inputs

        if has_dynamic_inputs(module):
            chosen = list(targets)
            generic = build(module, progress=progress)
            return SpecializingExecutable(
                generic, module, lambda m: build(m, targets=chosen, progress=progress)
            )
    placed: Placement | None = None
    if targets:
        from byoc.passes.byoc_pipeline import partition_for

        prepare_for(module, list(targets))
        if placement == "priority":
            partition_for(module, list(targets))
        else:
            from byoc.placement import place

            placed = place(
                module, list(targets), mode=placement, cache=placement_cache,
                executor=measure_executor, sample_inputs=sample_inputs,
                num_threads=num_threads, build=build, progress=progress,
            )
    module.verify()

    by_target: dict[str, list[FuncOp]] = {}
    for op in module.ops:
        if isinstance(op, FuncOp):
            target = partition_target(op)
            if target is not None:
                by_target.setdefault(target, []).append(op)

    components: dict[str, RuntimeComponent] = {}
    for target, funcs in by_target.items():
        if progress is not None:
            progress(f"compiling {len(funcs)} {target} partition(s)")
        components[target] = codegen(get_target(target), module, funcs)

    plan, constants = plan_function(module)
    partitions = [
        PartitionInfo(f.sym_name.data, target, _ops_of(f), **placed.why(f))
        if placed is not None
        else PartitionInfo(f.sym_name.data, target, _ops_of(f))
        for target, funcs in by_target.items()
        for f in funcs
    ]
    return Executable(plan, constants, components, partitions, num_threads=num_threads)
