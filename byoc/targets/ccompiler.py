"""The `ccompiler` target: partitions become C source (seed part 1), built into one library.

Support is the table `SUPPORT`: op name -> predicate on the typed op (see
`byoc.support`). The C codegen owns it, and derives it from
`byoc.lowering.lower_to_c.unsupported_reason`, the function `lower-to-c`
itself checks: an op is tagged for ccompiler exactly when lower-to-c can emit
it (the op, its element types — f32, plus i32 for elementwise, layout ops and
sum/max — and static, non-empty shapes of rank <= 16). An unsupported form
is left to the host, never miscompiled. `register()` puts each predicate in
the op registry as `target.ccompiler`; annotate-target reads it from there.

The C codegen fuses elementwise chains itself, so the pattern table is empty:
regions of single ops are what it wants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from byoc.lowering.lower_to_c import SUPPORTED_OPS, is_supported
from byoc.support import Predicate, register_support

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    from byoc.runtime.c_module import CModule

NAME = "ccompiler"


def _predicate(op_name: str) -> Predicate:
    types = ", ".join(SUPPORTED_OPS[op_name])
    return Predicate(is_supported, f"lower-to-c emits it (element types {types}, static shapes)")


SUPPORT: dict[str, Predicate] = {
    name: _predicate(name) for name in SUPPORTED_OPS if name != "nn.constant"
}
"""Every op lower-to-c lowers: elementwise and broadcast ops (fused loops), conv2d
(strides, padding, dilation, groups incl. depthwise), dense, matmul, pooling, softmax,
reductions, transpose, concatenate, pad, reshape/flatten, cast."""


def register() -> None:
    register_support(NAME, SUPPORT)


def pattern_table() -> list[tuple[object, ...]]:
    return []


def codegen(module: ModuleOp, funcs: list[FuncOp]) -> CModule:
    """Every ccompiler partition in one shared library (lower-to-c, then the C compiler)."""
    from xdsl.dialects.builtin import ModuleOp as Module

    from byoc.context import make_context
    from byoc.lowering.c_build import build_c_module
    from byoc.lowering.lower_to_c import LowerToCPass

    unit = Module([f.clone() for f in funcs])
    LowerToCPass().apply(make_context(), unit)
    return build_c_module(unit)


def load_component(blobs: dict[str, bytes]) -> CModule:
    """The library `codegen` built, from the blobs its `export()` wrote into an artifact."""
    from byoc.runtime.c_module import CModule

    return CModule.from_blobs(blobs)
