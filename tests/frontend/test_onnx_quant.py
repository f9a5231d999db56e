"""The ONNX quantization ops (issue #13): each imports to the quantized nn ops and runs on the
numpy reference with exactly onnxruntime's integers; models quantized by onnxruntime's
`quantize_static` (QDQ) and `quantize_dynamic` import and agree with onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from byoc import run_reference
from byoc.frontend.onnx import UnsupportedOnnxError, import_model
from byoc.frontend.onnx.errors import OnnxImportError

ort = pytest.importorskip("onnxruntime")

Array = np.ndarray[Any, Any]
TYPES = {np.float32: TensorProto.FLOAT, np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8,
         np.int32: TensorProto.INT32, np.int16: TensorProto.INT16, np.uint16: TensorProto.UINT16}


def model_of(nodes: list[Any], inputs: dict[str, Array], outputs: list[str], opset: int,
             inits: dict[str, Array] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "q",
        [helper.make_tensor_value_info(k, TYPES[v.dtype.type], v.shape) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(k) for k in outputs],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    return model


def ort_session(model: onnx.ModelProto | str, optimize: bool = True) -> Any:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])


def check_exact(model: onnx.ModelProto, inputs: dict[str, Array]) -> list[Array]:
    """Import, run on the reference and compare every output with onnxruntime, bit for bit."""
    want = ort_session(model).run(None, inputs)
    got = run_reference(import_model(model), *inputs.values())
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return got


RNG = np.random.default_rng(13)


@pytest.mark.parametrize("opset", [10, 13, 19, 21])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_quantize_dequantize_per_tensor(opset: int, dtype: type) -> None:
    x = (RNG.standard_normal((2, 3, 4)) * 3).astype(np.float32)
    inits = {"s": np.asarray(0.05, np.float32), "z": np.asarray(3, dtype)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    check_exact(model_of(nodes, {"x": x}, ["q", "y"], opset, inits), {"x": x})


def test_quantize_without_zero_point_is_uint8() -> None:
    x = (RNG.standard_normal((5,)) * 3).astype(np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"])]
    (q,) = check_exact(model_of(nodes, {"x": x}, ["q"], 13, {"s": np.asarray(0.1, np.float32)}), {"x": x})
    assert q.dtype == np.uint8


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_per_axis(axis: int) -> None:
    x = (RNG.standard_normal((3, 4, 5)) * 3).astype(np.float32)
    n = x.shape[axis]
    inits = {"s": (RNG.random(n).astype(np.float32) + 0.05) / 10, "z": RNG.integers(-5, 5, n).astype(np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)]
    check_exact(model_of(nodes, {"x": x}, ["q", "y"], 13, inits), {"x": x})


def test_blocked_and_output_dtype_opset21() -> None:
    x = (RNG.standard_normal((4, 10)) * 3).astype(np.float32)
    inits = {"s": (RNG.random((4, 3)).astype(np.float32) + 0.05) / 10}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=1, block_size=4,
                              output_dtype=TensorProto.INT8),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=1, block_size=4)]
    q, _ = check_exact(model_of(nodes, {"x": x}, ["q", "y"], 21, inits), {"x": x})
    assert q.dtype == np.int8


def test_quantized_graph_inputs_and_outputs() -> None:
    q = RNG.integers(0, 255, (2, 6), endpoint=True).astype(np.uint8)
    inits = {"s": np.asarray(0.5, np.float32), "z": np.asarray(128, np.uint8), "s2": np.asarray(0.25, np.float32),
             "z2": np.asarray(-3, np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["f"]),
             helper.make_node("QuantizeLinear", ["f", "s2", "z2"], ["y"])]
    check_exact(model_of(nodes, {"q": q}, ["y"], 13, inits), {"q": q})


def test_dequantize_int32_bias() -> None:
    b = np.asarray([-(2**20), -7, 0, 9, 2**24 + 1], np.int32)
    nodes = [helper.make_node("DequantizeLinear", ["b", "s"], ["y"])]
    check_exact(model_of(nodes, {"b": b}, ["y"], 13, {"s": np.asarray(0.003, np.float32)}), {"b": b})


def test_dynamic_quantize_linear() -> None:
    x = (RNG.standard_normal((3, 7)) * 2 + 0.5).astype(np.float32)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])]
    check_exact(model_of(nodes, {"x": x}, ["y", "s", "z"], 11), {"x": x})


@pytest.mark.parametrize(("wt", "groups", "per_channel", "bias"),
                         [(np.int8, 1, True, True), (np.uint8, 1, False, False), (np.int8, 4, True, True)])
def test_qlinear_conv(wt: type, groups: int, per_channel: bool, bias: bool) -> None:
    x = RNG.integers(0, 255, (1, 4, 7, 7), endpoint=True).astype(np.uint8)
    info = np.iinfo(wt)
    w = RNG.integers(info.min, info.max, (8, 4 // groups, 3, 3), endpoint=True).astype(wt)
    n = 8 if per_channel else 1
    inits = {
        "xs": np.asarray(0.02, np.float32), "xz": np.asarray(117, np.uint8), "w": w,
        "ws": ((RNG.random(n) + 0.1) / 50).astype(np.float32).reshape(-1 if per_channel else ()),
        "wz": np.zeros(n, wt).reshape(-1 if per_channel else ()) if wt == np.int8 else np.asarray(128, wt),
        "ys": np.asarray(0.15, np.float32), "yz": np.asarray(100, np.uint8),
        "b": RNG.integers(-5000, 5000, 8).astype(np.int32),
    }
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"] + (["b"] if bias else [])
    nodes = [helper.make_node("QLinearConv", names, ["y"], pads=[1, 0, 1, 2], strides=[1, 2], group=groups)]
    check_exact(model_of(nodes, {"x": x}, ["y"], 13, inits), {"x": x})


def test_qlinear_matmul_per_column() -> None:
    a = RNG.integers(0, 255, (2, 5, 16), endpoint=True).astype(np.uint8)
    inits = {
        "as": np.asarray(0.03, np.float32), "az": np.asarray(120, np.uint8),
        "b": RNG.integers(-128, 127, (16, 6), endpoint=True).astype(np.int8),
        "bs": ((RNG.random(6) + 0.1) / 40).astype(np.float32), "bz": np.zeros(6, np.int8),
        "ys": np.asarray(0.2, np.float32), "yz": np.asarray(4, np.uint8),
    }
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])]
    check_exact(model_of(nodes, {"a": a}, ["y"], 13, inits), {"a": a})


def test_conv_integer_and_matmul_integer() -> None:
    x = RNG.integers(0, 255, (1, 3, 6, 6), endpoint=True).astype(np.uint8)
    inits = {"w": RNG.integers(0, 255, (4, 3, 3, 3), endpoint=True).astype(np.uint8),
             "xz": np.asarray(9, np.uint8), "wz": np.asarray(131, np.uint8),
             "b": RNG.integers(-128, 127, (16, 3), endpoint=True).astype(np.int8),
             "az": np.asarray(3, np.uint8)}
    a = RNG.integers(0, 255, (5, 16), endpoint=True).astype(np.uint8)
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("MatMulInteger", ["a", "b", "az"], ["m"])]
    inits["b"] = RNG.integers(0, 255, (16, 3), endpoint=True).astype(np.uint8)
    check_exact(model_of(nodes, {"x": x, "a": a}, ["c", "m"], 10, inits), {"x": x, "a": a})


def test_unsupported_quantized_types_are_clean_errors() -> None:
    x = np.zeros((2,), np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], output_dtype=TensorProto.INT4)]
    with pytest.raises(UnsupportedOnnxError, match="int4"):
        import_model(model_of(nodes, {"x": x}, ["q"], 21, {"s": np.asarray(0.1, np.float32)}))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])]
    with pytest.raises(OnnxImportError, match="per-tensor scale only"):
        import_model(model_of(nodes, {"x": x}, ["q"], 10, {"s": np.ones(2, np.float32), "z": np.zeros(2, np.uint8)}))
    m = RNG.integers(0, 9, (2, 4)).astype(np.uint8)
    nodes = [helper.make_node("MatMulInteger", ["m", "b", "az"], ["y"])]
    inits = {"b": np.ones((4, 3), np.uint8), "az": np.zeros(2, np.uint8)}
    with pytest.raises(UnsupportedOnnxError, match="per-axis a zero point"):
        import_model(model_of(nodes, {"m": m}, ["y"], 10, inits))


# ---- models quantized by onnxruntime's quantizer ----------------------------------------


def small_cnn(seed: int = 0) -> onnx.ModelProto:
    """conv+relu, depthwise conv+relu, maxpool, global pool, flatten, gemm, add (a residual)."""
    rng = np.random.default_rng(seed)
    inits = {
        "W1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
        "B1": rng.standard_normal(8).astype(np.float32) * 0.1,
        "W2": rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.3,
        "W3": rng.standard_normal((10, 8)).astype(np.float32) * 0.3,
        "B3": rng.standard_normal(10).astype(np.float32) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "W2"], ["c2"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Add", ["r1", "r2"], ["s"]),
        helper.make_node("MaxPool", ["s"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "W3", "B3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def quantize_static_model(model: onnx.ModelProto, path: Any, activation: str = "u8", per_channel: bool = True,
                          seed: int = 0) -> onnx.ModelProto:
    """onnxruntime's quantize_static (QDQ, s8 weights) calibrated on seeded random inputs."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    inits = {i.name for i in model.graph.initializer}
    shapes = {
        i.name: [d.dim_value or 1 for d in i.type.tensor_type.shape.dim]
        for i in model.graph.input
        if i.name not in inits
    }
    rng = np.random.default_rng(seed)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
                            for _ in range(4)])

        def get_next(self) -> dict[str, Array] | None:
            return next(self.it, None)

    src, dst = path / "f.onnx", path / "q.onnx"
    onnx.save(model, src)
    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QUInt8 if activation == "u8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    return onnx.load(dst)


def final_step(model: onnx.ModelProto) -> float:
    """The scale of the QuantizeLinear that feeds the graph output's DequantizeLinear."""
    (out,) = [n for n in model.graph.node if n.output[0] == model.graph.output[0].name]
    assert out.op_type == "DequantizeLinear"
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return float(inits[out.input[1]])


@pytest.mark.parametrize("activation", ["u8", "s8"])
def test_quantize_static_small_cnn_matches_onnxruntime(tmp_path: Any, activation: str) -> None:
    q = quantize_static_model(small_cnn(), tmp_path, activation)
    module = import_model(q)
    step = final_step(q)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
        (got,) = run_reference(module, x)
        # the unfused QDQ graph: the same float arithmetic up to summation order
        (plain,) = ort_session(q, optimize=False).run(None, {"x": x})
        assert np.abs(got - plain).max() <= step * 1.0001
        # onnxruntime's fused integer kernels (QLinearConv...): within one quantization step
        (fused,) = ort_session(q).run(None, {"x": x})
        assert np.abs(got - fused).max() <= step * 1.0001
        assert got.argmax() == fused.argmax()


def test_quantize_dynamic_matmul_matches_onnxruntime(tmp_path: Any) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(2)
    inits = {"W": rng.standard_normal((16, 12)).astype(np.float32), "B": rng.standard_normal(12).astype(np.float32),
             "W2": rng.standard_normal((12, 5)).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "f.onnx")
    quantize_dynamic(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), weight_type=QuantType.QInt8)
    q = onnx.load(tmp_path / "q.onnx")
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= {n.op_type for n in q.graph.node}
    x = rng.standard_normal((4, 16)).astype(np.float32)
    (got,) = run_reference(import_model(q), x)
    (want,) = ort_session(q).run(None, {"x": x})
    # integer products are exact; the float epilogue (cast, scale multiply, bias) is the same f32 arithmetic
    np.testing.assert_allclose(got, want, rtol=0, atol=float(np.abs(want).max()) * 2.0**-20)
