"""The int8 kernels of the ccompiler target (issue #13): QDQ blocks become one kernel each and
give exactly onnxruntime's integers, on the best CPU path and on the baseline one; models
quantized by onnxruntime's `quantize_static` run whole in C."""

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
from test_onnx_quant import ort_session, quantize_static_model, small_cnn  # noqa: E402

ort = pytest.importorskip("onnxruntime")
Array = np.ndarray[Any, Any]


def composites(module: Any) -> list[str]:
    return [op.composite.data for op in module.walk() if op.name == "byoc.composite"]


def qdq_conv_model(
    x_dtype: type, y_dtype: type, *, groups: int = 1, c: int = 8, o: int = 8, kernel: int = 3,
    strides: tuple[int, int] = (1, 1), pads: tuple[int, ...] = (1, 1, 1, 1), dilations: tuple[int, int] = (1, 1),
    per_channel: bool = True, bias: bool = True, relu: bool = False, seed: int = 0,
) -> onnx.ModelProto:
    """Q(x) -> DQ -> Conv(DQ(W), DQ(B)) [-> Relu] -> Q -> DQ, the layout quantize_static writes."""
    rng = np.random.default_rng(seed)
    xi, yi = np.iinfo(x_dtype), np.iinfo(y_dtype)
    ws = ((rng.random(o if per_channel else 1) + 0.2) / 100).astype(np.float32)
    xs = np.float32(0.05)
    inits = {
        "xs": np.asarray(xs), "xz": np.asarray((xi.min + xi.max + 1) // 2 - 7, x_dtype),
        "w": rng.integers(-127, 127, (o, c // groups, kernel, kernel), endpoint=True).astype(np.int8),
        "ws": ws if per_channel else ws.reshape(()),
        "wz": np.zeros(o if per_channel else (), np.int8),
        "b": rng.integers(-3000, 3000, o).astype(np.int32),
        "bs": (xs * np.broadcast_to(ws, (o,))).astype(np.float32),
        "bz": np.zeros(o, np.int32),
        "ys": np.asarray(0.04, np.float32), "yz": np.asarray((yi.min + yi.max + 1) // 2 + 5, y_dtype),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
        helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0),
        helper.make_node("Conv", ["xd", "wd"] + (["bd"] if bias else []), ["c"], group=groups,
                         strides=list(strides), pads=list(pads), dilations=list(dilations)),
    ]
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    nodes += [helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(
        nodes, "qconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 9, 10])],
        [helper.make_tensor_value_info("yq", TensorProto.UINT8 if y_dtype == np.uint8 else TensorProto.INT8, None),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def check_c_against_ort(model: onnx.ModelProto, inputs: dict[str, Array], want_composites: set[str]) -> None:
    module = import_model(model)
    exe = byoc.build(module, targets=["ccompiler"])
    got = exe.run(*inputs.values())
    want = ort_session(model).run(None, inputs)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    partitioned = import_model(model)
    byoc.partition_for(partitioned, targets=["ccompiler"])
    assert want_composites <= set(composites(partitioned))


CASES = {
    "u8-u8": dict(x_dtype=np.uint8, y_dtype=np.uint8),
    "u8-i8-relu": dict(x_dtype=np.uint8, y_dtype=np.int8, relu=True),
    "i8-i8-strided-dilated": dict(x_dtype=np.int8, y_dtype=np.int8, strides=(2, 1), dilations=(1, 2), pads=(1, 2, 0, 1)),
    "i8-u8-per-tensor-no-bias": dict(x_dtype=np.int8, y_dtype=np.uint8, per_channel=False, bias=False),
    "grouped": dict(x_dtype=np.uint8, y_dtype=np.uint8, groups=2, o=6),
    "depthwise": dict(x_dtype=np.uint8, y_dtype=np.uint8, groups=8),
    "depthwise-strided-5x5": dict(x_dtype=np.int8, y_dtype=np.uint8, groups=8, kernel=5, strides=(2, 2), pads=(2, 2, 2, 2)),
    "1x1-wide": dict(x_dtype=np.uint8, y_dtype=np.uint8, c=40, o=33, kernel=1, pads=(0, 0, 0, 0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_qconv2d_kernel_matches_onnxruntime(case: str, dispatch: str) -> None:
    model = qdq_conv_model(**CASES[case])  # type: ignore[arg-type]
    x = (np.random.default_rng(1).standard_normal((2, model.graph.input[0].type.tensor_type.shape.dim[1].dim_value, 9, 10)) * 3).astype(np.float32)
    check_c_against_ort(model, {"x": x}, {"ccompiler.qconv2d", "ccompiler.quantize", "ccompiler.dequantize"})


@pytest.mark.parametrize("batched", [False, True])
def test_qmatmul_and_qdense_kernels_match_onnxruntime(batched: bool, dispatch: str) -> None:
    rng = np.random.default_rng(3)
    k, n = 37, 21
    shape = [2, 3, k] if batched else [5, k]
    inits = {
        "xs": np.asarray(0.03, np.float32), "xz": np.asarray(128, np.uint8),
        "w": rng.integers(-127, 127, (k, n), endpoint=True).astype(np.int8),
        "ws": ((rng.random(n) + 0.1) / 50).astype(np.float32), "wz": np.zeros(n, np.int8),
        "g": rng.integers(-127, 127, (7, n), endpoint=True).astype(np.int8),
        "gs": np.asarray(0.01, np.float32), "gz": np.asarray(0, np.int8),
        "ys": np.asarray(0.05, np.float32), "yz": np.asarray(120, np.uint8),
        "zs": np.asarray(0.1, np.float32), "zz": np.asarray(100, np.uint8),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=1),
        helper.make_node("MatMul", ["xd", "wd"], ["m"]),
        helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["mq"]),
        helper.make_node("DequantizeLinear", ["mq", "ys", "yz"], ["md"]),
        helper.make_node("DequantizeLinear", ["g", "gs", "gz"], ["gd"]),
        helper.make_node("Gemm", ["md2", "gd"], ["d"], transB=1),
        helper.make_node("QuantizeLinear", ["d", "zs", "zz"], ["dq"]),
        helper.make_node("DequantizeLinear", ["dq", "zs", "zz"], ["y"]),
    ]
    if batched:
        nodes.insert(7, helper.make_node("Reshape", ["md", "shape"], ["md2"]))
        inits["shape"] = np.asarray([-1, n], np.int64)
    else:
        nodes[7].input[0] = "md"
    graph = helper.make_graph(
        nodes, "qmm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("mq", TensorProto.UINT8, None), helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, key) for key, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    # batched: the Reshape between the blocks leaves the Gemm's input not a dequantize (float)
    check_c_against_ort(model, {"x": x}, {"ccompiler.qmatmul"} if batched else {"ccompiler.qmatmul", "ccompiler.qdense"})


def test_a_block_the_kernels_cannot_take_stays_float() -> None:
    """A bias whose scale is not x_scale * w_scale is not an int8 block: it stays float."""
    model = qdq_conv_model(np.uint8, np.uint8)
    for init in model.graph.initializer:
        if init.name == "bs":
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.5), "bs"))
    module = import_model(model)
    byoc.partition_for(module, targets=["ccompiler"])
    assert "ccompiler.qconv2d" not in composites(module)
    x = np.random.default_rng(2).standard_normal((2, 8, 9, 10)).astype(np.float32)
    (want_q, _) = run_reference(import_model(model), x)
    (got_q, _) = byoc.build(import_model(model), targets=["ccompiler"]).run(x)
    assert np.abs(got_q.astype(np.int32) - want_q.astype(np.int32)).max() <= 1


def test_a_target_without_int8_kernels_leaves_the_block_to_the_host() -> None:
    model = qdq_conv_model(np.uint8, np.uint8)
    module = import_model(model)
    byoc.partition_for(module, targets=["cblas"])
    host = [op.name for op in module.ops.first.body.block.ops]  # type: ignore[union-attr]
    assert "nn.quantize" in host and "nn.dequantize" in host
    x = np.random.default_rng(4).standard_normal((2, 8, 9, 10)).astype(np.float32)
    exe = byoc.build(import_model(model), targets=["cblas"])
    (q, y) = exe.run(x)
    (rq, ry) = run_reference(import_model(model), x)
    assert np.abs(q.astype(np.int32) - rq.astype(np.int32)).max() <= 1


def final_output_step(model: onnx.ModelProto, output: int = 0) -> float:
    name = model.graph.output[output].name
    (dq,) = [n for n in model.graph.node if name in n.output]
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return float(inits[dq.input[1]]) if dq.op_type == "DequantizeLinear" else 0.0


def check_quantized_model(q: onnx.ModelProto, x: Array, steps: int = 0) -> None:
    """Through ccompiler: identical to onnxruntime's int8 run (same integers before the last
    dequantize) when `steps` is 0, else within that many quantization steps of the output; the
    same top-1; the numpy reference (the float QDQ graph) within `max(steps, 1)` steps.

    Not exact: a model with ops byoc runs as dequantize -> float op -> quantize (pools,
    concatenation, add, softmax) where onnxruntime fuses its own integer kernel
    (QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax, ...): those round differently, by
    a step here and there, and a softmax near 1 can turn a step of its input into two of its
    output (shufflenet). docs/quantization.md lists which ops are bit-exact."""
    (name,) = [i.name for i in q.graph.input if i.name not in {t.name for t in q.graph.initializer}]
    exe = byoc.build(import_model(q), targets=["ccompiler"])
    got = exe.run(x)
    want = ort_session(q).run(None, {name: x})
    ref = run_reference(import_model(q), x)
    for i, (g, w, r) in enumerate(zip(got, want, ref, strict=True)):
        step = final_output_step(q, i)
        if not steps:
            np.testing.assert_array_equal(g, w)
        else:
            assert step and np.abs(g - w).max() <= steps * step * 1.0001
        assert g.reshape(g.shape[0], -1).argmax(1).tolist() == w.reshape(w.shape[0], -1).argmax(1).tolist()
        if step:
            assert np.abs(r - w).max() <= max(steps, 1) * step * 1.0001


@pytest.mark.parametrize("activation", ["u8", "s8"])
def test_quantize_static_small_cnn_through_ccompiler(tmp_path: Any, activation: str, dispatch: str) -> None:
    q = quantize_static_model(small_cnn(), tmp_path, activation)
    module = import_model(q)
    byoc.partition_for(module, targets=["ccompiler"])
    assert [op.name for op in module.ops.first.body.block.ops] == ["func.call", "func.return"]  # type: ignore[union-attr]
    rng = np.random.default_rng(5)
    for _ in range(3):
        check_quantized_model(q, rng.standard_normal((1, 3, 16, 16)).astype(np.float32))


LIGHT = {"squeezenet": 1, "shufflenet": 2}
"""Light model -> the quantization steps its output may differ from onnxruntime's (measured)."""


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_quantize_static_light_model_through_ccompiler(tmp_path: Any, name: str) -> None:
    from support.onnx_harness import light_models, randomize_weights

    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    model.ir_version = 7  # IR 3 wants initializers listed as inputs; the version converter does not
    model = onnx.version_converter.convert_version(model, 13)
    q = quantize_static_model(model, tmp_path, "u8")
    inits = {t.name for t in q.graph.initializer}
    (data,) = [i for i in q.graph.input if i.name not in inits]
    x = np.random.default_rng(6).standard_normal([d.dim_value for d in data.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    check_quantized_model(q, x, steps=LIGHT[name])
