"""The fused int8 composites of the ccompiler target (issue #13): `qlut`, `qadd`, `qmaxpool` and
`qconcat` (byoc/targets/qdq.py, byoc_qkernels.h) give exactly the integers of the float QDQ
block — byoc's numpy reference, and onnxruntime evaluating the same float graph op by op —
on the best CPU path and the baseline one, at 1 and 2 threads."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc import run_reference
from byoc.frontend.onnx import import_model

sys.path.insert(0, str(Path(__file__).parents[1] / "frontend"))
sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_quant import ort_session, quantize_static_model, small_cnn  # noqa: E402

ort = pytest.importorskip("onnxruntime")
Array = np.ndarray[Any, Any]
ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def composites(model: onnx.ModelProto) -> list[str]:
    module = import_model(model)
    byoc.partition_for(module, targets=["ccompiler"])
    return [op.composite.data for op in module.walk() if op.name == "byoc.composite"]


def qdq_model(
    body: list[onnx.NodeProto], inputs: dict[str, tuple[type, float, int]], y: tuple[type, float, int],
    shape: list[int], consts: dict[str, Array] | None = None, out_shape: list[int] | None = None,
) -> onnx.ModelProto:
    """Each input `n` (float) -> Q(n_s, n_z) -> `n_q`; DQ -> `n_d`; then `body`, whose last node
    writes `f`; Q(y) -> output `yq`."""
    nodes, inits = [], dict(consts or {})
    for name, (dtype, scale, zp) in inputs.items():
        inits[f"{name}_s"], inits[f"{name}_z"] = np.asarray(scale, np.float32), np.asarray(zp, dtype)
        nodes += [
            helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]),
            helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"]),
        ]
    inits["y_s"], inits["y_z"] = np.asarray(y[1], np.float32), np.asarray(y[2], y[0])
    nodes += [*body, helper.make_node("QuantizeLinear", ["f", "y_s", "y_z"], ["yq"])]
    graph = helper.make_graph(
        nodes, "qfused", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in inputs],
        [helper.make_tensor_value_info("yq", ONNX_TYPE[y[0]], out_shape)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def check(model: onnx.ModelProto, want: str, shape: list[int], *, ort_exact: bool = True, seed: int = 0) -> None:
    """The composite `want` is formed; C at 1 and 2 threads = the numpy reference = onnxruntime
    without graph optimisations (the float QDQ graph op by op), or within one step of it."""
    assert f"ccompiler.{want}" in composites(model)
    rng = np.random.default_rng(seed)
    names = [i.name for i in model.graph.input]
    # a spread that saturates both ends and hits many exact halves
    xs = [np.round(rng.standard_normal(shape) * 80).astype(np.float32) / 16 for _ in names]
    ref = run_reference(import_model(model), *xs)[0]
    ort_out = ort_session(model, optimize=False).run(None, dict(zip(names, xs, strict=True)))[0]
    for threads in (1, 2):
        exe = byoc.build(import_model(model), targets=["ccompiler"], num_threads=threads)
        got = exe.run(*xs)[0]
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
    diff = np.abs(got.astype(np.int32) - ort_out.astype(np.int32)).max()
    assert diff == 0 if ort_exact else diff <= 1


SHAPE = [1, 8, 96, 96]  # 73,728 elements: the elementwise kernels split across 2 threads


@pytest.mark.parametrize("x_dtype,y_dtype", [(np.uint8, np.uint8), (np.int8, np.int8)])
def test_qlut_batch_norm_relu_per_channel(x_dtype: type, y_dtype: type, dispatch: str) -> None:
    rng = np.random.default_rng(1)
    c = SHAPE[1]
    consts = {
        "g": (rng.random(c) + 0.5).astype(np.float32), "b": rng.standard_normal(c).astype(np.float32),
        "m": rng.standard_normal(c).astype(np.float32), "v": (rng.random(c) + 0.1).astype(np.float32),
    }
    body = [helper.make_node("BatchNormalization", ["x_d", "g", "b", "m", "v"], ["bn"]),
            helper.make_node("Relu", ["bn"], ["f"])]
    xz = 128 if x_dtype == np.uint8 else 0
    model = qdq_model(body, {"x": (x_dtype, 0.05, xz)}, (y_dtype, 0.03, 3 if y_dtype == np.uint8 else -2), SHAPE, consts)
    # onnxruntime's BatchNormalization associates its f32 operations its own way: a step at most
    check(model, "qlut", SHAPE, ort_exact=False)


@pytest.mark.parametrize("op", ["HardSwish", "Sigmoid", "requantize"])
def test_qlut_unary_per_tensor(op: str, dispatch: str) -> None:
    body = [helper.make_node("Identity", ["x_d"], ["f"])] if op == "requantize" else [helper.make_node(op, ["x_d"], ["f"])]
    model = qdq_model(body, {"x": (np.uint8, 0.05, 120)}, (np.uint8, 0.0123, 7), SHAPE)
    # onnxruntime's HardSwish/Sigmoid are not numpy's expression: a step at most
    check(model, "qlut", SHAPE, ort_exact=op == "requantize")


@pytest.mark.parametrize("op,relu,types", [
    ("Add", False, (np.uint8, np.uint8, np.uint8)),
    ("Add", True, (np.uint8, np.int8, np.uint8)),
    ("Add", False, (np.int8, np.int8, np.int8)),
    ("Mul", False, (np.uint8, np.uint8, np.int8)),
])
def test_qadd_matches_the_float_block(op: str, relu: bool, types: tuple[type, type, type], dispatch: str) -> None:
    body = [helper.make_node(op, ["a_d", "b_d"], ["s" if relu else "f"])]
    if relu:
        body.append(helper.make_node("Relu", ["s"], ["f"]))
    za = 128 if types[0] == np.uint8 else 3
    zb = 100 if types[1] == np.uint8 else -5
    zy = 90 if types[2] == np.uint8 else 1
    sy = 0.07 if op == "Add" else 0.3
    model = qdq_model(body, {"a": (types[0], 0.05, za), "b": (types[1], 0.0625, zb)}, (types[2], sy, zy), SHAPE)
    check(model, "qadd", SHAPE)


@pytest.mark.parametrize("pool,same", [
    ("max3x3s2", True), ("max3x3s2", False), ("max2x2-pad-ceil", False), ("max3x3s1-dilated", True),
    ("global", False),
])
def test_qmaxpool_is_the_max_over_the_integers(pool: str, same: bool, dispatch: str) -> None:
    attrs: dict[str, Any] = {
        "max3x3s2": dict(kernel_shape=[3, 3], strides=[2, 2]),
        "max2x2-pad-ceil": dict(kernel_shape=[2, 3], strides=[2, 2], pads=[1, 0, 0, 2], ceil_mode=1),
        "max3x3s1-dilated": dict(kernel_shape=[3, 3], strides=[1, 1], pads=[2, 2, 2, 2], dilations=[2, 2]),
        "global": {},
    }[pool]
    node = helper.make_node("GlobalMaxPool" if pool == "global" else "MaxPool", ["x_d"], ["f"], **attrs)
    y = (np.int8, 0.05, -3) if same else (np.uint8, 0.031, 10)
    model = qdq_model([node], {"x": (np.int8, 0.05, -3)}, y, SHAPE)
    check(model, "qmaxpool", SHAPE)


@pytest.mark.parametrize("same", [True, False])
def test_qconcat_copies_or_requantizes_each_input(same: bool, dispatch: str) -> None:
    node = helper.make_node("Concat", ["a_d", "b_d", "c_d"], ["f"], axis=1)
    inputs = {
        "a": (np.uint8, 0.05, 128),
        "b": (np.uint8, 0.05, 128) if same else (np.int8, 0.02, 4),
        "c": (np.uint8, 0.05, 128) if same else (np.uint8, 0.09, 17),
    }
    model = qdq_model([node], inputs, (np.uint8, 0.05, 128), SHAPE)
    check(model, "qconcat", SHAPE)


def test_max_commutes_with_dequantize_quantize_on_every_byte() -> None:
    """The exactness argument of qmaxpool, on all pairs of bytes and several scales: dequantize
    is non-decreasing, so max(d(p), d(q)) = d(max(p, q)) and quantize(d(q)) = q for equal
    parameters."""
    from byoc.interpreters.qkernels import dequantize, quantize

    for dtype in (np.uint8, np.int8):
        q = np.arange(256, dtype=np.uint8).view(dtype) if dtype == np.int8 else np.arange(256, dtype=np.uint8)
        for scale in (np.float32(1e-4), np.float32(0.05), np.float32(0.3333333), np.float32(7.1)):
            zp = np.asarray(5, dtype)
            d = dequantize(q, np.asarray(scale), zp, axis=1, block_size=0)
            p, r = np.meshgrid(q, q)
            dp = dequantize(p, np.asarray(scale), zp, axis=1, block_size=0)
            dr = dequantize(r, np.asarray(scale), zp, axis=1, block_size=0)
            dm = dequantize(np.maximum(p, r), np.asarray(scale), zp, axis=1, block_size=0)
            np.testing.assert_array_equal(np.maximum(dp, dr), dm)
            np.testing.assert_array_equal(quantize(d, np.asarray(scale), zp, axis=1, block_size=0), q)


def test_a_block_the_fused_kernels_cannot_take_stays_float() -> None:
    """A per-tensor add whose operand is broadcast is no `qadd`: it runs in float and still gives
    the reference's integers."""
    node = helper.make_node("Add", ["a_d", "b_d"], ["f"])
    model = qdq_model([node], {"a": (np.uint8, 0.05, 128), "b": (np.uint8, 0.05, 128)}, (np.uint8, 0.07, 90), [1, 4, 5, 5])
    # make b a broadcast [1, 4, 1, 1] input
    model.graph.input[1].CopyFrom(helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4, 1, 1]))
    assert "ccompiler.qadd" not in composites(model)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1, 4, 5, 5)).astype(np.float32), rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    exe = byoc.build(import_model(model), targets=["ccompiler"])
    np.testing.assert_array_equal(exe.run(a, b)[0], run_reference(import_model(model), a, b)[0])


@pytest.mark.parametrize("activation", ["u8", "s8"])
def test_quantize_static_small_cnn_is_fused_and_exact(tmp_path: Any, activation: str, dispatch: str) -> None:
    """The small CNN of the quantizer tests: its residual add is a qadd and its integers are
    onnxruntime's (optimised: QLinearConv, QLinearAdd, ...), at 1 and 2 threads."""
    q = quantize_static_model(small_cnn(), tmp_path, activation)
    assert "ccompiler.qadd" in composites(q)
    (name,) = [i.name for i in q.graph.input if i.name not in {t.name for t in q.graph.initializer}]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = ort_session(q).run(None, {name: x})
    for threads in (1, 2):
        got = byoc.build(import_model(q), targets=["ccompiler"], num_threads=threads).run(x)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("groups,x_dtype", [(1, np.uint8), (1, np.int8), (32, np.uint8)])
def test_qconv2d_is_identical_at_1_and_2_threads(groups: int, x_dtype: type, dispatch: str) -> None:
    """A conv2d big enough to split its output channels (and a depthwise one its planes) across
    two threads gives onnxruntime's integers (QLinearConv) at both thread counts."""
    from test_nn_to_c_quant import qdq_conv_model

    model = qdq_conv_model(x_dtype, np.uint8, c=32, o=32, groups=groups, relu=True)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_value, dims[2].dim_value, dims[3].dim_value = 1, 48, 48
    x = np.random.default_rng(3).standard_normal((1, 32, 48, 48)).astype(np.float32)
    want = ort_session(model).run(None, {"x": x})
    for threads in (1, 2):
        got = byoc.build(import_model(model), targets=["ccompiler"], num_threads=threads).run(x)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
