"""Issue 14 item 8 on the ONNX side: shapes nn cannot represent are import errors, and
values known at import time are folded only up to a size limit (larger ones stay ops)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc.frontend.onnx import OnnxImportError, UnsupportedOnnxError, import_model
from byoc.frontend.onnx.base import FOLD_LIMIT_BYTES

Array = np.ndarray[Any, Any]


def model(
    nodes: Sequence[Any],
    out_type: int,
    inits: Sequence[tuple[str, Array]] = (),
    inputs: Sequence[Any] = (),
) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        list(inputs),
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(a, n) for n, a in inits],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def constant_of_shape(shape: Sequence[int], value: Array) -> onnx.ModelProto:
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], value=numpy_helper.from_array(value))
    out = helper.np_dtype_to_tensor_dtype(value.dtype)
    return model([node], out, [("s", np.asarray(shape, np.int64))])


def arange(start: float, limit: float, delta: float, dtype: Any) -> onnx.ModelProto:
    node = helper.make_node("Range", ["a", "b", "c"], ["y"])
    inits = [(n, np.asarray(v, dtype)) for n, v in zip("abc", (start, limit, delta), strict=True)]
    return model([node], helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), inits)


def ops_of(module: Any) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def run_everywhere(m: onnx.ModelProto, fold_limit_bytes: int) -> list[Array]:
    outs = []
    for targets in ([], ["ccompiler"], ["examplejson"]):
        exe = byoc.build(import_model(m, fold_limit_bytes=fold_limit_bytes), targets=targets)
        (y,) = exe.run()
        outs.append(np.asarray(y))
    return outs


# ---- negative and oversized dims -------------------------------------------------


@pytest.mark.parametrize("dims", [[1, -3, 8, 8], [2**62, 4]])
def test_graph_input_dims_nn_cannot_hold_are_import_errors(dims: list[int]) -> None:
    m = model(
        [helper.make_node("Relu", ["x"], ["y"])],
        TensorProto.FLOAT,
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
    )
    with pytest.raises(OnnxImportError, match="graph input 'x'"):
        import_model(m)


def test_input_shapes_with_a_negative_dim_is_an_import_error() -> None:
    m = model(
        [helper.make_node("Relu", ["x"], ["y"])],
        TensorProto.FLOAT,
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
    )
    with pytest.raises(OnnxImportError, match="static, non-negative shape"):
        import_model(m, input_shapes={"x": (-3, 3)})


def test_constant_of_shape_with_a_negative_dim_is_an_import_error() -> None:
    with pytest.raises(OnnxImportError, match="negative dimension"):
        import_model(constant_of_shape([2, -1], np.array([1.0], np.float32)))


@pytest.mark.parametrize("bounds", [(0, 5, 0), (0, np.inf, 1)])
def test_range_with_zero_delta_or_infinite_bounds_is_an_import_error(bounds: tuple[float, ...]) -> None:
    with pytest.raises(OnnxImportError, match="non-zero delta"):
        import_model(arange(*bounds, np.float32))


# ---- the fold limit ------------------------------------------------------------------


def test_small_values_still_fold() -> None:
    module = import_model(constant_of_shape([3, 4], np.array([2.5], np.float32)))
    assert ops_of(module) == ["nn.constant"]
    module = import_model(arange(1, 30, 3, np.int64))
    assert ops_of(module) == ["nn.constant"]


def test_huge_constant_of_shape_and_range_are_kept_not_allocated() -> None:
    """ConstantOfShape([60000, 60000]) would be 13.4 GiB and Range(0, 3e9) 11.2 GiB:
    both import at once, as ops computing the value at run time."""
    start = time.perf_counter()
    cos = import_model(constant_of_shape([60000, 60000], np.array([1.5], np.float32)))
    rng = import_model(arange(0, 3e9, 1, np.float32))
    assert time.perf_counter() - start < 10
    assert ops_of(cos) == ["nn.constant", "nn.pad"]
    assert "tensor<60000x60000xf32>" in str(cos.body.ops.first)
    assert "nn.add" in ops_of(rng) and ops_of(rng)[-1] == "nn.add"
    # the constants the kept ops read are small (about sqrt(3e9) elements)
    sizes = [op.ndarray().nbytes for op in rng.walk() if isinstance(op, byoc.dialects.nn.ConstantOp)]
    assert max(sizes) < 1 << 20
    assert FOLD_LIMIT_BYTES == 1 << 30


@pytest.mark.parametrize(
    ("m", "want"),
    [
        (constant_of_shape([3, 4], np.array([2.5], np.float32)), np.full((3, 4), 2.5, np.float32)),
        (constant_of_shape([2, 3], np.array([-7], np.int64)), np.full((2, 3), -7, np.int64)),
        (arange(1, 30, 3, np.int64), np.arange(1, 30, 3, dtype=np.int64)),
        (arange(0.5, 7.25, 0.5, np.float32), np.arange(0.5, 7.25, 0.5, dtype=np.float32)),
        (arange(10, -30, -2, np.int32), np.arange(10, -30, -2, dtype=np.int32)),
    ],
    ids=["cos-f32", "cos-i64", "range-i64", "range-f32", "range-i32-down"],
)
def test_kept_ops_compute_the_folded_value_on_every_executor(m: onnx.ModelProto, want: Array) -> None:
    # a 40-byte limit keeps every one of these as ops
    assert ops_of(import_model(m, fold_limit_bytes=40)) != ["nn.constant"]
    for got in run_everywhere(m, fold_limit_bytes=40):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_an_op_over_constants_with_a_huge_result_is_kept() -> None:
    """Not only ConstantOfShape/Range: any op whose known operands give a result above
    the limit stays an op (here a broadcast add of two 4-element constants)."""
    nodes = [helper.make_node("Add", ["a", "b"], ["y"])]
    inits = [("a", np.arange(4, dtype=np.float32).reshape(4, 1)), ("b", np.ones((1, 4), np.float32))]
    m = model(nodes, TensorProto.FLOAT, inits)
    assert ops_of(import_model(m)) == ["nn.constant"]
    assert ops_of(import_model(m, fold_limit_bytes=32)) == ["nn.constant", "nn.constant", "nn.add"]
    for got in run_everywhere(m, fold_limit_bytes=32):
        np.testing.assert_array_equal(got, np.arange(4, dtype=np.float32).reshape(4, 1) + np.ones((1, 4), np.float32))


def test_a_range_too_large_even_for_the_kept_form_is_unsupported() -> None:
    with pytest.raises(UnsupportedOnnxError, match="too large to fold"):
        import_model(arange(0, 1000, 1, np.int64), fold_limit_bytes=64)


def test_running_a_kept_value_the_machine_cannot_hold_is_a_memory_error() -> None:
    """The kept ConstantOfShape([60000, 60000]) builds (lower-to-c does not fold it
    either: its folding has the same limit) and runs as a C pad into a 13.4 GiB output;
    with 4 GiB of address space, run() raises numpy's MemoryError when it allocates
    the output. The process does not crash."""
    code = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import numpy as np, byoc
        from test_onnx_limits import constant_of_shape
        from byoc.frontend.onnx import import_model
        m = import_model(constant_of_shape([60000, 60000], np.array([1.5], np.float32)))
        exe = byoc.build(m, targets=["ccompiler"])
        print("built")
        try:
            exe.run()
        except MemoryError as e:
            print("MemoryError:", e)
        """
    )
    here = Path(__file__).parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(here), str(here.parent.parent), env.get("PYTHONPATH", "")])
    env["OPENBLAS_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=here
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "built\nMemoryError: Unable to allocate 13.4 GiB" in proc.stdout
