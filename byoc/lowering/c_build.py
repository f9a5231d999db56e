"""From IR after `lower-to-c` to what the C runtime loads: source, signatures, constants.

    lib = build_c_module(module)        # module after lower-to-c: compiled (or cached), loaded
    src = c_library(module)             # or the data alone: CLibrary(source, functions, constants)

The runtime takes the source and the signatures as data (`CModule.from_source`);
this module is the glue that reads them off the `c` dialect, so the runtime
never imports the lowering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from byoc.dialects import c
from byoc.lowering.emit.c import emit_c_source
from byoc.lowering.nn_to_c.lower_to_c import constants_of
from byoc.runtime.c_module import CModule, CSignature
from byoc.runtime.interface import RuntimeComponent
from byoc.runtime.tensor import TensorSpec
from byoc.runtime.toolchain import DEFAULT_FLAGS


@dataclass(frozen=True)
class CLibrary:
    """One translation unit of C partitions, ready for `CModule.from_source`."""

    source: str
    functions: dict[str, CSignature]
    """Partition symbol -> the arguments of its packed entry."""
    constants: list[np.ndarray[Any, Any]] = field(default_factory=list[np.ndarray[Any, Any]])
    """The arrays `byoc_init` binds, in order."""


def c_units(module: ModuleOp | c.ModuleOp) -> list[c.ModuleOp]:
    """Every `c.module` in `module` (itself included), in walk order: at any depth outside
    a `c.module`, and among a `c.module`'s top-level ops (its functions, thousands of ops
    after lower-to-c, are not walked: nothing nests a translation unit in a function)."""
    found: list[c.ModuleOp] = []
    stack: list[Operation] = [module]
    while stack:
        op = stack.pop()
        if isinstance(op, c.ModuleOp):
            found.append(op)
            stack.extend(reversed([o for o in op.ops if isinstance(o, c.ModuleOp)]))
            continue
        stack.extend(reversed([o for region in op.regions for block in region.blocks for o in block.ops]))
    return found


def signatures_of(module: ModuleOp | c.ModuleOp) -> dict[str, CSignature]:
    """Partition name -> signature, read from the argument checks of the typed wrapper
    each packed entry calls.
    The partition's name is the entry's `c.diagnostic_name` (its C name is
    `c_entry_symbol(name)`), or the C name of a hand-written entry without one."""
    out: dict[str, CSignature] = {}
    for unit in c_units(module):
        funcs = {f.sym_name.data: f for f in unit.ops if isinstance(f, c.FuncOp)}
        for name, f in funcs.items():
            if f.is_static:
                continue
            # the packed entry calls its typed wrapper (`<helper base>_wrapper`)
            callees = [op.callee.root_reference.data for op in f.body.block.ops if isinstance(op, c.CallOp)]
            wrapper = next((funcs[n] for n in callees if n.endswith("_wrapper") and n in funcs), None)
            if wrapper is None:
                continue
            ins: list[TensorSpec] = []
            outs: list[TensorSpec] = []
            for op in wrapper.body.block.ops:
                if isinstance(op, c.CheckTensorOp):
                    spec = TensorSpec.of(op.expected, op.arg_name.data)
                    (ins if op.role.data == "input" else outs).append(spec)
            label = f.attributes.get("c.diagnostic_name")
            out[label.data if isinstance(label, StringAttr) else name] = CSignature(tuple(ins), tuple(outs))
    return out


def c_library(module: ModuleOp) -> CLibrary:
    """The C source of every `c.module` in `module`, their signatures and bound constants."""
    constants: list[np.ndarray[Any, Any]] = []
    for unit in c_units(module):
        constants.extend(constants_of(unit))
    return CLibrary(emit_c_source(module), signatures_of(module), constants)


def build_c_module(
    module: ModuleOp,
    *,
    flags: Sequence[str] = DEFAULT_FLAGS,
    directory: Path | None = None,
    libs: Sequence[str] = (),
) -> CModule:
    """Compile (or find in the cache) and load the `c.module` of a module after `lower-to-c`."""
    lib = c_library(module)
    return CModule.from_source(
        lib.source, lib.functions, lib.constants, flags=flags, directory=directory, libs=libs
    )


def tiered_c_module(module: ModuleOp) -> RuntimeComponent | None:
    """The `c.module` of a module after `lower-to-c` as a `TieredCModule`: the partitions
    the first tier can hold run at once, the C is emitted and compiled on a background
    thread (`build_c_module`). None when the first tier's library cannot be built here
    (the caller compiles as before)."""
    from byoc.runtime.first_tier import Program, compile_program, first_tier_library
    from byoc.runtime.tiered import TieredCModule
    from byoc.runtime.toolchain import CompileError

    try:
        library = first_tier_library()
    except (CompileError, OSError):
        return None
    units = c_units(module)
    functions = signatures_of(module)
    programs: dict[str, Program] = {}
    reasons: dict[str, str] = {}
    for sym in functions:
        found: Program | str = f"no c.module holds '{sym}'"
        for unit in units:
            found = compile_program(unit, sym, library)
            if isinstance(found, Program):
                break
        if isinstance(found, Program):
            programs[sym] = found
        else:
            reasons[sym] = found
    return TieredCModule.start(programs, functions, lambda: build_c_module(module), reasons)


__all__ = ["CLibrary", "build_c_module", "c_library", "c_units", "signatures_of", "tiered_c_module"]
