"""The numpy kernels of the quantized ops agree bit for bit with onnxruntime (and ONNX's
reference evaluator): rounding half to even at exact ties, saturation, per-axis and
blocked parameters, i32 accumulation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from byoc.interpreters.kernels import KERNELS  # noqa: E402

Array = np.ndarray[Any, Any]


def run_onnx(node: Any, inputs: dict[str, Array], outputs: list[str], opset: int = 21) -> list[Array]:
    """Run one node with onnxruntime; every input is a graph input."""
    dtypes = {np.float32: TensorProto.FLOAT, np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8,
              np.int32: TensorProto.INT32, np.int16: TensorProto.INT16, np.uint16: TensorProto.UINT16}
    ins = [helper.make_tensor_value_info(k, dtypes[v.dtype.type], v.shape) for k, v in inputs.items()]
    outs = [helper.make_empty_tensor_value_info(k) for k in outputs]
    graph = helper.make_graph([node], "g", ins, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(outputs, inputs)


def ties(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> Array:
    """Values at exact .5 ties of x / scale, plus random ones and out-of-range ones."""
    k = rng.integers(-300, 300, size=shape).astype(np.float32)
    x = ((k + 0.5) * np.float32(scale)).astype(np.float32)
    mask = rng.random(shape) < 0.5
    x[mask] = rng.standard_normal(mask.sum()).astype(np.float32) * 400 * scale
    return x


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16])
def test_quantize_per_tensor_matches_onnxruntime(dtype: type) -> None:
    rng = np.random.default_rng(1)
    x = ties(rng, (4, 64), 0.25)  # 0.25: the ties are exact in f32
    s, z = np.float32(0.25), np.asarray(3, dtype)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    (want,) = run_onnx(node, {"x": x, "s": np.asarray(s), "z": z}, ["y"])
    got = KERNELS["nn.quantize"](x, np.asarray(s), z, axis=1, block_size=0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_quantize_per_axis_and_dequantize_match_onnxruntime() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32) * 4
    s = (rng.random(5).astype(np.float32) + 0.01) / 10
    z = rng.integers(-20, 20, 5).astype(np.int8)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    (want,) = run_onnx(node, {"x": x, "s": s, "z": z}, ["y"])
    q = KERNELS["nn.quantize"](x, s, z, axis=1, block_size=0)
    np.testing.assert_array_equal(q, want)
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)
    (want,) = run_onnx(node, {"q": q, "s": s, "z": z}, ["y"])
    np.testing.assert_array_equal(KERNELS["nn.dequantize"](q, s, z, axis=1, block_size=0), want)


def test_blocked_quantize_and_dequantize_match_onnxruntime() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 10)).astype(np.float32)
    s = (rng.random((4, 3)).astype(np.float32) + 0.05) / 20
    z = rng.integers(0, 255, (4, 3)).astype(np.uint8)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1, block_size=4)
    (want,) = run_onnx(node, {"x": x, "s": s, "z": z}, ["y"])
    q = KERNELS["nn.quantize"](x, s, z, axis=1, block_size=4)
    np.testing.assert_array_equal(q, want)
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=4)
    (want,) = run_onnx(node, {"q": q, "s": s, "z": z}, ["y"])
    np.testing.assert_array_equal(KERNELS["nn.dequantize"](q, s, z, axis=1, block_size=4), want)


def test_dequantize_i32() -> None:
    x = np.asarray([-(2**31), -5, 0, 7, 2**31 - 1], np.int32)
    s, z = np.asarray(0.5, np.float32), np.asarray(0, np.int32)
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])
    (want,) = run_onnx(node, {"x": x, "s": s, "z": z}, ["y"])
    np.testing.assert_array_equal(KERNELS["nn.dequantize"](x, s, z, axis=1, block_size=0), want)


@pytest.mark.parametrize(
    ("xt", "wt", "per_channel", "groups"),
    [(np.uint8, np.uint8, False, 1), (np.uint8, np.int8, True, 1), (np.int8, np.int8, True, 4),
     (np.uint8, np.int8, False, 2)],
)
def test_qconv2d_matches_conv_integer(xt: type, wt: type, per_channel: bool, groups: int) -> None:
    rng = np.random.default_rng(4)
    info_x, info_w = np.iinfo(xt), np.iinfo(wt)
    x = rng.integers(info_x.min, info_x.max, (1, 4, 7, 6), endpoint=True).astype(xt)
    w = rng.integers(info_w.min, info_w.max, (8, 4 // groups, 3, 3), endpoint=True).astype(wt)
    xz = np.asarray(rng.integers(info_x.min, info_x.max), xt)
    wz = rng.integers(-3, 3, 8).astype(wt) if per_channel else np.asarray(7, wt)
    attrs = {"strides": (2, 1), "padding": (1, 0, 1, 2), "dilation": (1, 2), "groups": groups}
    node = helper.make_node(
        "ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=[2, 1], pads=[1, 0, 1, 2],
        dilations=[1, 2], group=groups,
    )
    feeds = {"x": x, "w": w, "xz": xz, "wz": wz}
    if per_channel:  # onnxruntime's ConvInteger takes a per-tensor w zero point only
        from onnx.reference import ReferenceEvaluator

        graph = helper.make_graph([node], "g", [], [helper.make_empty_tensor_value_info("y")])
        graph.input.extend(helper.make_tensor_value_info(k, TensorProto.INT8 if v.dtype == np.int8
                           else TensorProto.UINT8, v.shape) for k, v in feeds.items())
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
        (want,) = ReferenceEvaluator(model).run(None, feeds)
    else:
        (want,) = run_onnx(node, feeds, ["y"], opset=10)
    got = KERNELS["nn.qconv2d"](x, w, xz, wz, **attrs)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("at", "bt"), [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
def test_qmatmul_matches_matmul_integer(at: type, bt: type) -> None:
    rng = np.random.default_rng(5)
    ia, ib = np.iinfo(at), np.iinfo(bt)
    a = rng.integers(ia.min, ia.max, (2, 3, 17), endpoint=True).astype(at)
    b = rng.integers(ib.min, ib.max, (17, 5), endpoint=True).astype(bt)
    az = np.asarray(ia.min + 9, at)
    bz = rng.integers(ib.min, ib.max, 5).astype(bt)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    (want,) = run_onnx(node, {"a": a, "b": b, "az": az, "bz": bz}, ["y"], opset=10)
    np.testing.assert_array_equal(KERNELS["nn.qmatmul"](a, b, az, bz), want)
    np.testing.assert_array_equal(
        KERNELS["nn.qdense"](a, np.ascontiguousarray(b.T), az, bz), want
    )


def test_requantize_matches_qlinear_matmul() -> None:
    """QLinearMatMul = qmatmul then requantize with in_scale = sa * sb: bit-exact."""
    rng = np.random.default_rng(6)
    a = rng.integers(0, 255, (9, 33), endpoint=True).astype(np.uint8)
    b = rng.integers(-128, 127, (33, 6), endpoint=True).astype(np.int8)
    sa, sb, sy = np.float32(0.023), np.float32(0.0071), np.float32(0.05)
    za, zb, zy = np.uint8(120), np.int8(0), np.uint8(131)
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    feeds = {"a": a, "sa": np.asarray(sa), "za": np.asarray(za), "b": b, "sb": np.asarray(sb),
             "zb": np.asarray(zb), "sy": np.asarray(sy), "zy": np.asarray(zy)}
    (want,) = run_onnx(node, feeds, ["y"], opset=10)
    acc = KERNELS["nn.qmatmul"](a, b, np.asarray(za), np.asarray(zb))
    got = KERNELS["nn.requantize"](
        acc, np.asarray(sa * sb, np.float32), np.asarray(0, np.int32), np.asarray(sy), np.asarray(zy), axis=1
    )
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_requantize_saturates_and_rounds_half_to_even() -> None:
    x = np.asarray([-(2**31), -3, -1, 1, 3, 5, 2**31 - 1], np.int32)
    out = KERNELS["nn.requantize"](
        x, np.asarray(0.5, np.float32), np.asarray(0, np.int32), np.asarray(1.0, np.float32),
        np.asarray(0, np.int8), axis=1,
    )
    np.testing.assert_array_equal(out, np.asarray([-128, -2, 0, 0, 2, 2, 127], np.int8))


@pytest.mark.parametrize("case", ["random", "positive", "zeros"])
def test_dynamic_quantize_matches_onnxruntime(case: str) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 50)).astype(np.float32) * 3
    if case == "positive":
        x = np.abs(x) + 1
    elif case == "zeros":
        x = np.zeros((3, 4), np.float32)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    want = run_onnx(node, {"x": x}, ["y", "s", "z"], opset=11)
    got = KERNELS["nn.dynamic_quantize"](x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
