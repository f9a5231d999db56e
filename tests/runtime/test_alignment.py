"""Every constant the runtime hands to C starts at a 64-byte boundary (`byoc.utils.aligned`).

The C kernels read weights with full-width vector loads; a constant at another offset
makes the same library slower in one process than in the next (docs/runtime.md,
"Alignment"). The constants here are placed at 16 bytes past a 64-byte boundary on
purpose, so each binding site has to copy them; the results must not change.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.bounds import assert_within, graph_bounds

import byoc
from byoc.runtime.c_module import CModule
from byoc.runtime.executable import Executable
from byoc.utils.aligned import ALIGN, address, aligned_array, aligned_empty, is_aligned

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(7)

# w: 33x64 = 2112 elements, more than lower-to-c's const_threshold: bound by byoc_init;
# b: 33 elements, printed into the C source as a static const global
DENSE = """
func.func @main(%x: tensor<5x64xf32>) -> tensor<5x33xf32> {
  %w = nn.constant dense<0.0> : tensor<33x64xf32>
  %b = nn.constant dense<0.0> : tensor<33xf32>
  %0 = nn.dense %x, %w : (tensor<5x64xf32>, tensor<33x64xf32>) -> tensor<5x33xf32>
  %1 = nn.bias_add %0, %b : (tensor<5x33xf32>, tensor<33xf32>) -> tensor<5x33xf32>
  %2 = nn.tanh %1 : tensor<5x33xf32>
  func.return %2 : tensor<5x33xf32>
}"""

W = RNG.standard_normal((33, 64)).astype(np.float32)
B = RNG.standard_normal(33).astype(np.float32)
X = RNG.standard_normal((5, 64)).astype(np.float32)


def misaligned(arr: Array, offset: int = 16, writeable: bool = False) -> Array:
    """A copy of `arr` whose data starts `offset` bytes past a 64-byte boundary."""
    raw = np.empty(arr.nbytes + 2 * ALIGN, np.uint8)
    start = -address(raw) % ALIGN + offset
    out = raw[start : start + arr.nbytes].view(arr.dtype).reshape(arr.shape)
    out[...] = arr
    out.flags.writeable = writeable
    assert arr.nbytes == 0 or address(out) % ALIGN == offset
    return out


def module_with_weights() -> Any:
    """DENSE with W and B as its constants (hex literals)."""
    text = DENSE.replace("dense<0.0> : tensor<33x64xf32>", _dense_literal(W))
    return byoc.parse_module(text.replace("dense<0.0> : tensor<33xf32>", _dense_literal(B)))


def _dense_literal(arr: Array) -> str:
    shape = "x".join(map(str, arr.shape))
    return f'dense<"0x{arr.tobytes().hex().upper()}"> : tensor<{shape}xf32>'


def check_against_reference(got: Array) -> None:
    """`got` within the f32 bound (support.bounds) of the numpy reference."""
    module = module_with_weights()
    expected = byoc.run_reference(module, X)
    (bound,) = graph_bounds(module, [X], expected)
    assert_within(got, expected[0], bound)


# ---- the helper ------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [4, 16, 32, 48])
def test_a_misaligned_array_is_copied_to_a_boundary(offset: int) -> None:
    arr = misaligned(W, offset)
    out = aligned_array(arr)
    assert out is not arr and is_aligned(out) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, W)
    assert out.dtype == W.dtype and out.shape == W.shape
    assert not out.flags.writeable  # a read-only constant stays read-only


def test_an_aligned_array_is_returned_as_is() -> None:
    arr = aligned_array(misaligned(W, writeable=True))
    assert is_aligned(arr) and arr.flags.writeable  # a writable array gives a writable copy
    assert aligned_array(arr) is arr


def test_a_strided_view_becomes_a_contiguous_aligned_copy() -> None:
    view = aligned_empty((8, 8), np.float32)[:, ::2]
    view[...] = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = aligned_array(view)
    assert out.flags.c_contiguous and is_aligned(out)
    np.testing.assert_array_equal(out, view)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,), (7, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.bool_])
def test_aligned_empty_keeps_shape_and_dtype(shape: tuple[int, ...], dtype: Any) -> None:
    out = aligned_empty(shape, dtype)
    assert out.shape == shape and out.dtype == np.dtype(dtype) and out.flags.c_contiguous
    assert is_aligned(out) and out.flags.writeable
    src = np.ones(shape, dtype)
    assert aligned_array(misaligned(src, 8)).shape == shape


# ---- the binding sites -----------------------------------------------------------------


def test_byoc_init_constants_are_aligned() -> None:
    exe = byoc.build(module_with_weights(), targets=["ccompiler"], tiered=False, num_threads=1)
    lib = exe.components["ccompiler"]
    assert isinstance(lib, CModule)
    assert lib.constants, "the 33x64 weight is bound by byoc_init"
    assert all(is_aligned(a) for a in lib.constants)
    check_against_reference(exe.run(X)[0])

    # the same library handed constants at 16 bytes past a boundary binds aligned copies
    assert lib.source is not None
    given = [misaligned(a) for a in lib.constants]
    again = CModule.from_source(lib.source, lib.functions, given)
    assert all(is_aligned(a) for a in again.constants)
    assert all(a is not g for a, g in zip(again.constants, given, strict=True))
    (symbol,) = lib.functions
    np.testing.assert_array_equal(again.get_function(symbol)(X), lib.get_function(symbol)(X))


def test_plan_constants_are_aligned_on_both_runners() -> None:
    """The host plan's constants (here every op stays on the host) and the native plan's
    constant slots: the Executable binds aligned copies of what it is given."""
    exe = byoc.build(module_with_weights(), num_threads=1)
    assert exe.constants and all(is_aligned(a) for a in exe.constants)
    given = [misaligned(a) for a in exe.constants]
    again = Executable(exe.plan, given, exe.components, exe.partitions, num_threads=1)
    assert all(is_aligned(a) for a in again.constants)
    for a, g in zip(again.constants, given, strict=True):
        np.testing.assert_array_equal(a, g)
    np.testing.assert_array_equal(again.run(X)[0], exe.run(X)[0])  # the same kernels
    check_against_reference(again.run(X)[0])


def test_first_tier_constants_are_aligned() -> None:
    from xdsl.dialects.builtin import ModuleOp

    from byoc.context import make_context
    from byoc.dialects import c
    from byoc.driver import prepare_for
    from byoc.lowering import c_build
    from byoc.passes import ALL_PASSES
    from byoc.passes.byoc_pipeline import partition_for
    from byoc.runtime.first_tier import compile_program

    module = module_with_weights()
    prepare_for(module, ["ccompiler"])
    partition_for(module, ["ccompiler"])
    unit = ModuleOp([f.clone() for f in module.ops if "byoc.compiler" in f.attributes])
    ALL_PASSES["lower-to-c"]()().apply(make_context(), unit)
    cu = next(op for op in unit.walk() if isinstance(op, c.ModuleOp))
    (symbol,) = c_build.signatures_of(unit)
    program = compile_program(cu, symbol)
    assert not isinstance(program, str), program
    assert program.consts, "the weight and the bias are in the first tier's constant table"
    assert all(is_aligned(a) for a in program.consts)
