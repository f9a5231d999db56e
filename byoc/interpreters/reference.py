"""The numpy reference: run a function of a module in xDSL's interpreter.

`run_reference(module, *inputs, **named)` runs `@main` (or any function) of a
module on numpy arrays, given as `Executable.run` takes them, and returns the
outputs, with `func`, `nn` (`nn.py`) and `byoc` (`byoc.py`) implementations
registered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import Interpreter
from xdsl.traits import SymbolTable

from byoc.dialects import nn
from byoc.dialects.nn.types import DYNAMIC, shape_text
from byoc.interpreters.byoc import ByocFunctions
from byoc.interpreters.func import FuncFunctions
from byoc.interpreters.nn import NnFunctions


def make_interpreter(module: ModuleOp) -> Interpreter:
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(NnFunctions())
    interpreter.register_implementations(ByocFunctions())
    return interpreter


def find_function(module: ModuleOp, name: str) -> FuncOp:
    func = SymbolTable.lookup_symbol(module, name)
    if isinstance(func, FuncOp):
        return func
    names = [op.sym_name.data for op in module.ops if isinstance(op, FuncOp)]
    raise KeyError(f"no function '@{name}' in the module (functions: {', '.join(names) or 'none'})")


def input_names(func: FuncOp) -> list[str]:
    """The names inputs are given by: each argument's name hint, else `arg<i>`."""
    block_args = func.body.block.args if func.body.blocks else ()
    return [a.name_hint or f"arg{i}" for i, a in enumerate(block_args)] or [
        f"arg{i}" for i in range(len(func.function_type.inputs))
    ]


def coerce_inputs(
    func: FuncOp, inputs: Sequence[Any] | Mapping[str, Any]
) -> list[np.ndarray[Any, Any]]:
    """Order and check inputs against the function signature (by position or arg name)."""
    arg_types = list(func.function_type.inputs)
    names = input_names(func)
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
        if len(arr.shape) != len(want_shape) or any(
            w != DYNAMIC and a != w for a, w in zip(arr.shape, want_shape, strict=True)
        ):
            raise ValueError(
                f"input '{name}' has shape {arr.shape}, expected {ty} ({shape_text(want_shape)})"
            )
        if arr.dtype != want_dtype:
            raise TypeError(f"input '{name}' has dtype {arr.dtype}, expected {want_dtype}")
        out.append(arr)
    return out


def run_reference(
    module: ModuleOp, /, *inputs: Any, function: str = "main", **named: Any
) -> list[np.ndarray[Any, Any]]:
    """Run `@function` of `module` with the numpy reference; return its outputs.

    Inputs as `Executable.run` takes them: by position, by name, or both
    (`run_reference(module, x, w=w)`); each is a numpy array or array-like. An input
    named `function` cannot be given by name (that keyword picks the function)."""
    func = find_function(module, function)
    try:
        args = coerce_inputs(func, _by_name(func, inputs, named) if named else inputs)
    except (ValueError, TypeError) as e:
        if len(inputs) == 1 and isinstance(inputs[0], list | tuple) and not named:
            raise TypeError(
                f"{e}; run_reference takes the inputs as arguments, as Executable.run does: "
                "run_reference(module, *inputs)"
            ) from None
        raise
    results = make_interpreter(module).call_op(function, tuple(args))
    return [np.array(r) for r in results]  # fresh arrays: never an input or a view of one


def _by_name(func: FuncOp, inputs: Sequence[Any], named: Mapping[str, Any]) -> dict[str, Any]:
    """Positional inputs (the first arguments) and named ones, as one mapping by name."""
    names = input_names(func)
    if len(inputs) > len(names):
        raise ValueError(f"@{func.sym_name.data} takes {len(names)} inputs, got {len(inputs)}")
    values = dict(zip(names, inputs, strict=False))
    twice = [n for n in named if n in values]
    if twice:
        raise ValueError(f"input '{twice[0]}' given twice (by position and by name)")
    return {**values, **named}
