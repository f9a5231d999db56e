"""The `cblas` target: GEMM-shaped composites offloaded to OpenBLAS (a vendor library).

The seed's first scenario: the vendor already has an optimised C library and
only wants its heavy ops offloaded, each together with the cheap ops around it
(TVM's DNNL target did this with a pattern table). This target takes no single
op: its support is its pattern table, and every match becomes a composite
whose kernel calls `scipy_cblas_sgemm` (OpenBLAS as shipped in the
scipy-openblas32 wheel) and applies the rest in one pass over the GEMM output.

    byoc-opt model.onnx -p 'byoc{targets=cblas,ccompiler}'       # GEMMs on cblas, the rest on C
    exe = byoc.build(module, targets=["cblas", "ccompiler"])

Pattern table (earlier entries win; `<epilogue>` is any of, in this order and
each optional: `nn.bias_add` or `nn.add` of a per-channel value, an inference
`nn.batch_norm`, `nn.multiply` by a per-channel value, `nn.add` of a
per-channel value — at least one of them):

| composite                | matches                                 |
|--------------------------|-----------------------------------------|
| `cblas.conv2d_bias_relu` | conv2d -> <epilogue> -> relu             |
| `cblas.conv2d_bias`      | conv2d -> <epilogue>                     |
| `cblas.conv2d_relu`      | conv2d -> relu                           |
| `cblas.conv2d`           | conv2d                                   |
| `cblas.dense_bias_relu`, `cblas.dense_bias`, `cblas.dense_relu`, `cblas.dense` | the same over nn.dense |
| `cblas.matmul`           | nn.matmul (batched, numpy broadcasting)  |

"Per-channel" is the output channel: axis 1 of a conv2d (a value of shape
(O,), broadcast as (O, 1, 1) or (1, O, 1, 1), or a single element), the last
axis of a dense ((N,) or (1, N)). Each entry's check (`gemm_chain`) accepts
f32 only (every operand and result), conv2d with groups == 1 and strides up
to MAX_STRIDE (depthwise and grouped convolutions stay on ccompiler or the
host), bias_add and batch_norm on the channel axis, and no interior value
used outside the match (a kernel yields one value, so `extra-results` does
not apply). The whole epilogue becomes one `y * scale + shift`
(constants folded at compile time; values computed at run time are combined
per call, over the channels only), then ReLU.

Codegen: `lower-to-c` lowers cblas partitions with ccompiler's machinery
(`c_lowering_target` in byoc/lowering/lower_to_c.py): each composite is one
kernel node (`lower_composite_to_c`, in byoc/lowering/lower_to_c_cblas.py)
calling `byoc_cblas.h`; intermediates, padded images and im2col blocks live
in the per-thread workspace. `codegen` compiles all cblas partitions into one library linked
with the wheel's OpenBLAS (`build_options`); OpenBLAS runs on
`$BYOC_CBLAS_THREADS` threads (default 1), set when a library is loaded, or
`set_num_threads(n)`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation, OpResult, SSAValue

from byoc.dialects import nn
from byoc.patterns import Match, Pattern, is_op, wildcard

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    from byoc.dialects.byoc import CompositeOp
    from byoc.lowering.lower_to_c import GraphBuilder, TValue
    from byoc.runtime.c_module import CModule

NAME = "cblas"

C_INCLUDES = ("byoc_cblas.h",)
"""Headers (in byoc/runtime) the kernels of cblas composites need; lower-to-c includes them."""

THREADS_ENV = "BYOC_CBLAS_THREADS"
"""OpenBLAS threads for cblas kernels, read when a cblas library is loaded (default 1)."""

GEMM_OPS = ("nn.conv2d", "nn.dense", "nn.matmul")

MAX_STRIDE = 64
"""Largest conv2d stride the kernels take (byoc_cblas.h keeps one entry per stride phase)."""


def register() -> None:
    """Nothing to register: cblas supports no single op, only its composites."""


# --------------------------------------------------------------------------
# What a composite computes: gemm -> per-channel affine steps -> relu
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class EpilogueStep:
    """One per-channel step after the GEMM: `shift` (y + v), `scale` (y * v) or `batch_norm`."""

    kind: str
    op: Operation
    operands: tuple[SSAValue, ...]
    """`(v,)` for shift and scale, `(gamma, beta, mean, var)` for batch_norm."""


@dataclass(frozen=True)
class GemmChain:
    gemm: Operation
    """The nn.conv2d, nn.dense or nn.matmul."""
    steps: tuple[EpilogueStep, ...]
    relu: Operation | None
    channels: int
    """Output channels: O of a conv2d, N of a dense."""
    axis: int
    """The channel axis of the GEMM's result."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _is_f32(op: Operation) -> bool:
    return all(
        isinstance(v.type, TensorType) and v.type.element_type == f32
        for v in (*op.operands, *op.results)
    )


def _per_channel(v: SSAValue, rank: int, axis: int, channels: int) -> bool:
    """Whether `v` broadcasts against the GEMM result as one value per channel (or one value)."""
    shape = _shape(v)
    if len(shape) > rank:
        return False
    padded = (1,) * (rank - len(shape)) + shape
    return all(d == 1 for i, d in enumerate(padded) if i != axis) and padded[axis] in (1, channels)


def gemm_chain(root: Operation, members: Collection[Operation]) -> GemmChain | str:
    """The structure of the match (or composite body) `members` rooted at `root`, or why
    cblas does not take it."""
    inside = {id(op) for op in members}

    def member_operand(op: Operation) -> int | None:
        found = [
            i
            for i, v in enumerate(op.operands)
            if isinstance(v, OpResult)
            and id(v.op) in inside
            and not isinstance(v.op, nn.ConstantOp)
        ]
        return found[0] if len(found) == 1 else None

    relu = root if root.name == "nn.relu" else None
    steps: list[EpilogueStep] = []
    op = root
    if relu is not None:
        prev = relu.operands[0]
        if not isinstance(prev, OpResult) or id(prev.op) not in inside:
            return "a relu alone is not a cblas composite"
        op = prev.op
    while op.name not in GEMM_OPS:
        i = member_operand(op)
        if op.name in ("nn.bias_add", "nn.batch_norm") and i == 0:
            kind = "shift" if op.name == "nn.bias_add" else "batch_norm"
            steps.append(EpilogueStep(kind, op, tuple(op.operands[1:])))
        elif op.name in ("nn.add", "nn.multiply") and i is not None:
            kind = "shift" if op.name == "nn.add" else "scale"
            steps.append(EpilogueStep(kind, op, (op.operands[1 - i],)))
        else:
            return f"'{op.name}' is not a per-channel epilogue of a GEMM"
        prev = op.operands[i]
        assert isinstance(prev, OpResult)
        op = prev.op
    gemm = op
    steps.reverse()
    for o in (gemm, *(s.op for s in steps)):
        if o is not root and any(id(use.operation) not in inside for use in o.results[0].uses):
            return f"the result of '{o.name}' is also used outside (a kernel yields one value)"
    for o in (gemm, *(s.op for s in steps), *([relu] if relu else [])):
        if not _is_f32(o):
            return f"'{o.name}' is not f32 (cblas computes in f32 only)"
        if any(d <= 0 for v in (*o.operands, *o.results) for d in _shape(v)):
            return f"'{o.name}' has a dynamic or empty shape"
    out_shape = _shape(gemm.results[0])
    rank = len(out_shape)
    attrs = gemm.attr_values() if isinstance(gemm, nn.NNOp) else {}
    if gemm.name == "nn.conv2d":
        if attrs["groups"] != 1:
            return f"conv2d with groups={attrs['groups']} (cblas takes groups == 1)"
        if max(attrs["strides"]) > MAX_STRIDE:
            return (
                f"conv2d with strides {list(attrs['strides'])} (cblas takes at most {MAX_STRIDE})"
            )
        channels, axis = out_shape[1], 1
    elif gemm.name == "nn.dense":
        channels, axis = out_shape[-1], rank - 1
    else:
        if steps or relu is not None:
            return "cblas.matmul has no epilogue"
        return GemmChain(gemm, (), None, 0, 0)
    for s in steps:
        if _shape(s.op.results[0]) != out_shape:
            return f"'{s.op.name}' broadcasts the GEMM result to a larger shape"
        if s.op.name in ("nn.bias_add", "nn.batch_norm"):
            step_axis = s.op.attr_values()["axis"] % rank  # type: ignore[attr-defined]
            if step_axis != axis:
                return f"'{s.op.name}' on axis {step_axis}, not the channel axis {axis}"
        elif not _per_channel(s.operands[0], rank, axis, channels):
            return (
                f"'{s.op.name}' operand of shape {list(_shape(s.operands[0]))} is not one value "
                f"per channel"
            )
    return GemmChain(gemm, tuple(steps), relu, channels, axis)


# --------------------------------------------------------------------------
# The pattern table
# --------------------------------------------------------------------------


def _epilogue(p: Pattern) -> Pattern:
    """p -> [bias_add | add] -> [batch_norm] -> [multiply] -> [add], each part optional."""
    p = p.optional(lambda q: is_op("nn.bias_add")(q, wildcard()) | is_op("nn.add")(q, wildcard()))
    p = p.optional(
        lambda q: is_op("nn.batch_norm")(q, wildcard(), wildcard(), wildcard(), wildcard())
    )
    p = p.optional(lambda q: is_op("nn.multiply")(q, wildcard()))
    return p.optional(lambda q: is_op("nn.add")(q, wildcard()))


def _relu(p: Pattern) -> Pattern:
    return is_op("nn.relu")(p)


def _check(*, epilogue: bool) -> Any:
    """The check of an entry: `gemm_chain` accepts the match (with at least one epilogue
    step when `epilogue`)."""

    def check(match: Match) -> bool:
        chain = gemm_chain(match.root, match.ops)
        return isinstance(chain, GemmChain) and bool(chain.steps) == epilogue

    check.__name__ = "check_with_epilogue" if epilogue else "check"
    return check


def pattern_table() -> list[tuple[object, ...]]:
    """(name, pattern, check) entries; the composites are `cblas.<name>`."""
    table: list[tuple[object, ...]] = []
    for op in ("conv2d", "dense"):

        def gemm(name: str = op) -> Pattern:
            return is_op(f"nn.{name}")(wildcard(), wildcard())

        table += [
            (f"{op}_bias_relu", _relu(_epilogue(gemm())), _check(epilogue=True)),
            (f"{op}_bias", _epilogue(gemm()), _check(epilogue=True)),
            (f"{op}_relu", _relu(gemm()), _check(epilogue=False)),
            (op, gemm(), _check(epilogue=False)),
        ]
    table.append(("matmul", is_op("nn.matmul")(wildcard(), wildcard()), _check(epilogue=False)))
    return table


# --------------------------------------------------------------------------
# Codegen
# --------------------------------------------------------------------------


def lower_composite_to_c(
    builder: GraphBuilder, composite: CompositeOp, inputs: Sequence[TValue]
) -> list[TValue]:
    """lower-to-c's hook: the composite becomes one kernel node (byoc_cblas.h)."""
    from byoc.lowering.lower_to_c_cblas import lower_composite

    return lower_composite(builder, composite, inputs)


def build_options() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Compiler flags and linker arguments for a library holding cblas kernels: the
    wheel's header and library, found through its helpers; the library directory is
    also the run path, so the library loads from a fresh process and from an artifact."""
    from byoc.runtime.cpu import native_load

    try:
        with native_load():  # importing the wheel loads OpenBLAS, which reads its core type
            import scipy_openblas32 as openblas
    except ImportError as e:  # pragma: no cover - a dependency of the cblas extra
        raise RuntimeError(
            "the cblas target needs OpenBLAS from the scipy-openblas32 wheel: "
            "pip install 'byoc[cblas]'"
        ) from e
    from byoc.runtime.toolchain import DEFAULT_FLAGS

    libdir = openblas.get_lib_dir()
    flags = (*DEFAULT_FLAGS, "-D_GNU_SOURCE", f"-I{openblas.get_include_dir()}")
    libs = (f"-L{libdir}", f"-l{openblas.get_library()}", f"-Wl,-rpath,{libdir}")
    return flags, libs


def codegen(module: ModuleOp, funcs: list[FuncOp]) -> CModule:
    """Every cblas partition in one shared library linked with OpenBLAS."""
    from xdsl.dialects.builtin import ModuleOp as Module

    from byoc.context import make_context
    from byoc.lowering.c_build import build_c_module
    from byoc.lowering.lower_to_c import LowerToCPass

    unit = Module([f.clone() for f in funcs])
    LowerToCPass().apply(make_context(), unit)
    flags, libs = build_options()
    return build_c_module(unit, flags=flags, libs=libs)


def load_component(blobs: dict[str, bytes]) -> CModule:
    """The library `codegen` built, from an artifact; it finds OpenBLAS by its run path."""
    from byoc.runtime.c_module import CModule

    return CModule.from_blobs(blobs)


def set_num_threads(n: int) -> None:
    """OpenBLAS threads for cblas kernels from now on, in this process (and in libraries
    loaded later, through $BYOC_CBLAS_THREADS)."""
    if n < 1:
        raise ValueError(f"set_num_threads: need at least 1 thread, got {n}")
    _openblas().scipy_openblas_set_num_threads(int(n))
    os.environ[THREADS_ENV] = str(int(n))


def get_num_threads() -> int:
    """The number of threads OpenBLAS uses now."""
    return int(_openblas().scipy_openblas_get_num_threads())


def _openblas() -> Any:
    import ctypes

    from byoc.runtime.cpu import native_load

    with native_load():  # the import loads OpenBLAS
        import scipy_openblas32 as openblas

    path = os.path.join(openblas.get_lib_dir(), openblas.get_library(fullname=True))
    return ctypes.CDLL(path)


__all__ = [
    "NAME",
    "GemmChain",
    "EpilogueStep",
    "build_options",
    "codegen",
    "gemm_chain",
    "get_num_threads",
    "load_component",
    "lower_composite_to_c",
    "pattern_table",
    "register",
    "set_num_threads",
]
