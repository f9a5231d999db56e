"""`lower-to-c`: every partition of a C-lowered target becomes C dialect IR.

Contract. Expects functions `func.func @<sym>(...) attributes {byoc.compiler =
"<target>"}` of a target whose `lowering` is `lower-to-c` (ccompiler, cblas,
myaccel...), whose bodies hold `nn` ops that `ccompiler.unsupported_reason`
accepts and `byoc.composite` ops (inlined, or handed to the target's
`composite_lowering` hook); anything else is a `PassError` at the op. Guarantees: one `c.module` (created once, appended to)
holds, per partition, under the C name `E = byoc_p_<sym>` (`c_entry_symbol`: the
user's `<sym>` is never a C name of its own, so `@expf` or `@byoc_fail` build),

    E_<k>            one static kernel per step (a loop nest or a library call)
    E_               the subgraph function: typed pointers in, calls the kernels
    E_wrapper        the seed-style typed entry `int32_t (DLTensor* in0, ..., DLTensor* out0)`:
                     checks every argument, takes the per-thread workspace
    E                the packed entry `int32_t (DLTensor** args, int32_t num_args)`
    E_c<n>           constants

plus `byoc_init(const void* const* consts, int32_t n)`, which binds the
constants too large to print (more than `const_threshold` elements) at load
time. The partition function itself becomes a body-less declaration: the host
graph keeps calling `@<sym>`, now implemented by the C library.

Two modes:

- `fuse=true` (default): chains of elementwise/broadcast ops with one output
  shape become one loop nest (a value used outside its chain is also stored,
  so diamonds and multi-output chains stay one loop); every other op calls a
  kernel of `byoc_kernels.h`; intermediate buffers are packed into one
  workspace by liveness (a buffer is reused once its last reader has run).
- `fuse=false`: the per-op kernel mode — one kernel per op and one buffer per
  intermediate value (a developer knob, docs/runtime.md).

Before/after (seed subgraph, fused):

    func.func private @ccompiler_main_0(%a, %b, %c, %d) -> tensor<10x10xf32>
        attributes {byoc.compiler = "ccompiler"} {
      %0 = nn.add %a, %b ...   %1 = nn.subtract %0, %c ...   %2 = nn.multiply %1, %d ...
    }
    ==>
    func.func private @ccompiler_main_0(...) -> tensor<10x10xf32> attributes {byoc.compiler = "ccompiler"}
    c.module {
      c.func static noalias @ccompiler_main_0_0(%in0, %in1, %in2, %in3, %out0) {
        c.for %i0 = 0 to 100 { ... c.store ... }
      } ...
    }
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp, StringAttr, i32
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from byoc.diagnostics import PassError
from byoc.dialects import c
from byoc.dialects.byoc import partition_target
from byoc.lowering.nn_to_c.emission import INIT_FUNCTION, CBuilder, PartitionLowering
from byoc.lowering.nn_to_c.graph import CompositeLowering
from byoc.runtime.c_module import c_entry_symbol
from byoc.targets import Target, UnknownTargetError, get_target
from byoc.utils.lazy import LazyValue

index = IndexType()


COMPOSITE_LOWERINGS: dict[str, Callable[[], CompositeLowering]] = {
    "cblas": LazyValue[CompositeLowering]("byoc.lowering.nn_to_c.cblas", "lower_composite"),
    # ccompiler's QDQ composites (byoc_qkernels.h)
    "qnn": LazyValue[CompositeLowering]("byoc.lowering.nn_to_c.quant", "lower_composite"),
}
"""Target.composite_lowering name -> lazy hook turning a composite into graph nodes."""


def register_composite_lowering(name: str, hook: CompositeLowering) -> None:
    """Make `hook` available as `Target(composite_lowering=name)` (an out-of-tree target)."""
    if name in COMPOSITE_LOWERINGS:
        raise ValueError(f"composite lowering '{name}' is already registered")
    COMPOSITE_LOWERINGS[name] = lambda: hook


def composite_lowering(target: Target) -> CompositeLowering | None:
    """The hook `target` names, or None; an unknown name is an error."""
    name = target.composite_lowering
    if name is None:
        return None
    factory = COMPOSITE_LOWERINGS.get(name)
    if factory is None:
        raise ValueError(
            f"target '{target.name}' names composite lowering '{name}', which is not registered "
            f"(known: {', '.join(sorted(COMPOSITE_LOWERINGS))})"
        )
    return factory()


def _c_lowered_target(f: Operation) -> Target | None:
    """The target of partition `f` if its lowering is this pass, else None."""
    if not isinstance(f, func.FuncOp) or not f.body.blocks:
        return None
    name = partition_target(f)
    if name is None:
        return None
    try:
        target = get_target(name)
    except UnknownTargetError:
        return None
    return target if target.lowering == LowerToCPass.name else None


def _unit(module: ModuleOp) -> c.ModuleOp:
    for op in module.ops:
        if isinstance(op, c.ModuleOp):
            return op
    unit = c.ModuleOp(
        [
            c.IncludeOp("byoc_runtime.h"),
            c.IncludeOp("byoc_kernels.h"),
        ]
    )
    module.body.block.add_op(unit)
    return unit


def _add_include(unit: c.ModuleOp, header: str) -> None:
    includes = [op for op in unit.ops if isinstance(op, c.IncludeOp)]
    if any(op.include.data == header for op in includes):
        return
    new = c.IncludeOp(header)
    block = unit.body.block
    if includes:
        block.insert_op_after(new, includes[-1])
    elif block.first_op is not None:
        block.insert_op_before(new, block.first_op)
    else:
        block.add_op(new)


def _init_func(unit: c.ModuleOp) -> c.FuncOp:
    """`int32_t byoc_init(const void* const* consts, int32_t n)`: bind every `init` global."""
    for op in list(unit.ops):
        if isinstance(op, c.FuncOp) and op.sym_name.data == INIT_FUNCTION:
            op.detach()
            op.erase()
    bound = sorted(
        (op for op in unit.ops if isinstance(op, c.GlobalOp) and op.init_index is not None),
        key=lambda g: g.init_index.value.data,  # type: ignore[union-attr]
    )
    void_ptr = c.PtrType(c.VOID, True)
    f = c.FuncOp(INIT_FUNCTION, [c.PtrType(void_ptr, True), i32], [i32], (), arg_names=["consts", "num_consts"])
    block = f.body.block
    b = CBuilder(block)
    b.add(c.CheckArgCountOp(block.args[1], len(bound), 0))
    for g in bound:
        raw = b.add(c.LoadOp(block.args[0], b.const(g.init_index.value.data, index)))  # type: ignore[union-attr]
        typed = b.add(c.CastOp(raw, c.PtrType(g.element_type, True)))
        b.add(c.BindGlobalOp(g.sym_name.data, typed))
    b.add(c.ReturnOp(b.const(0, i32)))
    return f


def c_helper_base(sym: str, names: Collection[str]) -> str:
    """What the C names of partition `sym`'s helpers extend: its entry's name `E`
    (`E_0`, `E_`, `E_wrapper`, `E_c0`), unless another entry or global has one of those
    names (partitions `@f` and `@f_0`: `f`'s first kernel would be `f_0`'s entry);
    then `byoc_h<len(sym)>_<sym>`, which no entry starts with and which names the
    partition unambiguously (the length says where `sym` ends)."""
    entry = c_entry_symbol(sym)
    helper = re.compile(re.escape(entry) + r"_(\d*|wrapper|c\d+)")
    if any(helper.fullmatch(n) for n in names):
        return f"byoc_h{len(sym)}_{sym}"
    return entry


@dataclass(frozen=True)
class LowerToCPass(ModulePass):
    """Lower every partition of a target whose lowering is `lower-to-c` to the `c` dialect."""

    name: ClassVar[str] = "lower-to-c"

    fuse: bool = True
    """Fuse elementwise/broadcast chains into one loop and reuse buffers by liveness;
    false selects the per-op kernel mode: one kernel per op, one buffer per intermediate."""

    const_threshold: int = 1024
    """Constants with more elements are bound at load time by byoc_init instead of being
    printed into the C source."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        partitions = [
            (f, target)
            for f in op.ops
            if isinstance(f, func.FuncOp) and (target := _c_lowered_target(f)) is not None
        ]
        if not partitions and not any(isinstance(x, c.ModuleOp) for x in op.ops):
            return
        unit = _unit(op)
        init_base = sum(1 for g in unit.ops if isinstance(g, c.GlobalOp) and g.init_index is not None)
        defined = {
            x.sym_name.data for x in unit.ops if isinstance(x, c.FuncOp | c.GlobalOp)
        }
        entries = defined | {c_entry_symbol(fn.sym_name.data) for fn, _ in partitions}
        for fn, target in partitions:
            for header in target.c_includes:
                _add_include(unit, header)
            try:
                hook = composite_lowering(target)
            except ValueError as e:
                raise PassError(fn, f"lower-to-c: {e}") from None
            helpers = c_helper_base(fn.sym_name.data, entries)
            lowering = PartitionLowering(fn, self.fuse, self.const_threshold, init_base, hook, helpers)
            new_ops = lowering.lower()
            init_base += len(lowering.init_arrays)
            callees = _opaque_callees(new_ops)  # one walk for the three checks
            if _calls_qkernels(callees):  # included only where an int8 kernel is called
                _add_include(unit, "byoc_qkernels.h")
            if _calls_qpool(callees):  # the int8 average pooling (byoc_qpool.h)
                _add_include(unit, "byoc_qpool.h")
            if _calls_math(callees):  # the inline f32 functions (byoc_math.h)
                _add_include(unit, "byoc_math.h")
            for new in new_ops:
                assert isinstance(new, c.FuncOp | c.GlobalOp)
                name = new.sym_name.data
                if name in defined:
                    raise PassError(fn, f"lower-to-c: symbol '@{name}' is already defined in the c.module")
                defined.add(name)
                unit.body.block.add_op(new)
            fn.body.detach_block(fn.body.block).erase()
            fn.properties["sym_visibility"] = StringAttr("private")
        unit.body.block.add_op(_init_func(unit))


def _opaque_callees(ops: list[Operation]) -> set[str]:
    """The names every `c.call_opaque` in `ops` calls."""
    return {o.callee.data for op in ops for o in op.walk() if type(o) is c.CallOpaqueOp}  # no subclass


def _calls_qkernels(callees: set[str]) -> bool:
    """Whether any of `callees` is a kernel of byoc_qkernels.h (`byoc_q*`, `byoc_(de)quantize_*`)."""
    return any(n.startswith(("byoc_q", "byoc_quantize_", "byoc_dequantize_")) for n in callees)


def _calls_math(callees: set[str]) -> bool:
    """Whether any of `callees` is a function of byoc_math.h (MATH_FUNCTIONS)."""
    return not MATH_FUNCTIONS.isdisjoint(callees)


MATH_FUNCTIONS = frozenset({"byoc_tanhf", "byoc_expf", "byoc_gelu_erff", "byoc_sigmoidf"})
"""The functions of byoc_math.h the fused loops call."""


def _calls_qpool(callees: set[str]) -> bool:
    """Whether any of `callees` is a kernel of byoc_qpool.h (`byoc_qavgpool_*`, `byoc_qconcat<n>`)."""
    return any(n.startswith(("byoc_qavgpool_", "byoc_qconcat")) for n in callees)


def constants_of(unit: c.ModuleOp) -> list[np.ndarray[Any, Any]]:
    """The arrays `byoc_init` expects, in order (views of the IR payloads, no copy)."""
    bound = sorted(
        (g for g in unit.ops if isinstance(g, c.GlobalOp) and g.init_index is not None),
        key=lambda g: g.init_index.value.data,  # type: ignore[union-attr]
    )
    return [g.array() for g in bound]


__all__ = [
    "COMPOSITE_LOWERINGS",
    "LowerToCPass",
    "composite_lowering",
    "constants_of",
    "register_composite_lowering",
]
