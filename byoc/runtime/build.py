"""`byoc.build`: partition (when asked), compile each target's partitions, plan the host.

    exe = byoc.build(module, params={"w": w}, targets=["ccompiler", "examplejson"])
    (y,) = exe.run(x)

Each target module under `byoc/targets/` names its codegen hook:

    def codegen(module: ModuleOp, funcs: list[FuncOp]) -> RuntimeComponent
    def load_component(blobs: dict[str, bytes]) -> RuntimeComponent

`codegen` receives every partition function of that target at once (so all C
partitions go into one shared library); `load_component` rebuilds the
component from what its `export()` wrote into an artifact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation

from byoc.dialects import byoc as byoc_d
from byoc.dialects import nn
from byoc.runtime.executable import Executable, PartitionInfo, RuntimeComponent
from byoc.runtime.host import input_name, partition_target, plan_function


class BuildError(ValueError):
    pass


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


def _ops_of(func: FuncOp) -> tuple[str, ...]:
    names: list[str] = []
    for op in func.body.walk():
        if op is func or isinstance(op, ReturnOp | byoc_d.YieldOp | nn.ConstantOp):
            continue
        if isinstance(op, byoc_d.CompositeOp):
            names.append(op.composite.data)
            continue
        if _inside_composite(op):
            continue
        names.append(op.name)
    return tuple(names)


def _inside_composite(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, byoc_d.CompositeOp):
            return True
        parent = parent.parent_op()
    return False


def build(
    module: ModuleOp,
    params: Mapping[str, Any] | None = None,
    targets: Sequence[str] | str | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> Executable:
    """Build `module` (not modified) into an `Executable`.

    With `targets`, the `byoc` pipeline partitions it first; without, the module
    may already be partitioned (functions with `byoc.compiler`) or run on the host.
    """
    from byoc.targets import get_target

    module = module.clone()
    if params:
        bind_params(module, params)
    if isinstance(targets, str):
        targets = [t for t in targets.split(",") if t]
    if targets:
        from byoc.passes.byoc_pipeline import partition_for

        partition_for(module, list(targets))
    module.verify()

    by_target: dict[str, list[FuncOp]] = {}
    for op in module.ops:
        if isinstance(op, FuncOp):
            target = partition_target(op)
            if target is not None:
                by_target.setdefault(target, []).append(op)

    components: dict[str, RuntimeComponent] = {}
    for target, funcs in by_target.items():
        hook = get_target(target)
        codegen = getattr(hook, "codegen", None)
        if codegen is None:
            raise BuildError(
                f"target '{target}' has no codegen hook; it can annotate and partition but not build"
            )
        if progress is not None:
            progress(f"compiling {len(funcs)} {target} partition(s)")
        components[target] = codegen(module, funcs)

    plan, constants = plan_function(module)
    partitions = [
        PartitionInfo(f.sym_name.data, target, _ops_of(f))
        for target, funcs in by_target.items()
        for f in funcs
    ]
    return Executable(plan, constants, components, partitions)
