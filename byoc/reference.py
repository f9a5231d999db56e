"""The numpy reference: xDSL interpreter functions for every `nn` and `byoc` op.

`run_reference(module, inputs)` runs `@main` (or any function) of a module
with numpy arrays and returns the outputs. Every `nn` op is implemented by its
kernel in `byoc.kernels`, called with the op's properties; `func.call`
between functions, `byoc.region` (run in place) and `byoc.composite` (run as
a call of its body) are supported, so a module gives the same answer before
and after partitioning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions

from byoc.dialects import byoc as byoc_d
from byoc.dialects import nn
from byoc.kernels import KERNELS


def _nn_impl(op_class: type[nn.NNOp]):
    kernel = KERNELS[op_class.name]

    def run(
        self: InterpreterFunctions, interpreter: Interpreter, op: nn.NNOp, args: PythonValues
    ) -> PythonValues:
        out = kernel(*args, **op.attr_values())
        return tuple(out) if isinstance(out, tuple) else (out,)

    run.__name__ = "run_" + op_class.name.removeprefix("nn.")
    return impl(op_class)(run)


@register_impls
class NnFunctions(InterpreterFunctions):
    """`@impl(nn.<Op>)` for every nn op: the op's kernel with its properties."""

    locals().update({"run_" + c.name.removeprefix("nn."): _nn_impl(c) for c in nn.NN_OPS.values()})


@register_impls
class ByocFunctions(InterpreterFunctions):
    @impl(byoc_d.RegionOp)
    def run_region(
        self, interpreter: Interpreter, op: byoc_d.RegionOp, args: PythonValues
    ) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, (), "byoc.region")

    @impl(byoc_d.CompositeOp)
    def run_composite(
        self, interpreter: Interpreter, op: byoc_d.CompositeOp, args: PythonValues
    ) -> PythonValues:
        return interpreter.run_ssacfg_region(op.body, args, op.composite.data)

    @impl_terminator(byoc_d.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: byoc_d.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()


def make_interpreter(module: ModuleOp) -> Interpreter:
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(NnFunctions())
    interpreter.register_implementations(ByocFunctions())
    return interpreter


def find_function(module: ModuleOp, name: str) -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return op
    names = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
    raise KeyError(f"no function '@{name}' in the module (functions: {', '.join(names) or 'none'})")


def coerce_inputs(
    func: FuncOp, inputs: Sequence[Any] | Mapping[str, Any]
) -> list[np.ndarray[Any, Any]]:
    """Order and check inputs against the function signature (by position or arg name)."""
    arg_types = list(func.function_type.inputs)
    block_args = func.body.block.args if func.body.blocks else ()
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(block_args)] or [
        f"arg{i}" for i in range(len(arg_types))
    ]
    if isinstance(inputs, Mapping):
        unknown = set(inputs) - set(names)
        if unknown:
            raise KeyError(f"unknown input(s) {sorted(unknown)}; inputs are {names}")
        missing = [n for n in names if n not in inputs]
        if missing:
            raise KeyError(f"missing input(s) {missing}")
        values = [inputs[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(arg_types):
            raise ValueError(f"@{func.sym_name.data} takes {len(arg_types)} inputs, got {len(values)}")
    out: list[np.ndarray[Any, Any]] = []
    for name, value, ty in zip(names, values, arg_types, strict=True):
        assert isinstance(ty, TensorType)
        arr = np.asarray(value)
        want_dtype = nn.numpy_dtype(ty.element_type)
        want_shape = tuple(ty.get_shape())
        if arr.shape != want_shape:
            raise ValueError(f"input '{name}' has shape {arr.shape}, expected {want_shape}")
        if arr.dtype != want_dtype:
            raise TypeError(f"input '{name}' has dtype {arr.dtype}, expected {want_dtype}")
        out.append(arr)
    return out


def run_reference(
    module: ModuleOp,
    inputs: Sequence[Any] | Mapping[str, Any],
    function: str = "main",
) -> list[np.ndarray[Any, Any]]:
    """Run `@function` of `module` on numpy inputs with the numpy reference; return its outputs."""
    func = find_function(module, function)
    args = coerce_inputs(func, inputs)
    results = make_interpreter(module).call_op(function, tuple(args))
    return [np.asarray(r) for r in results]
