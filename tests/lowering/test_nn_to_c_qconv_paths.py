"""Every code path of the int8 conv2d / dense kernels (byoc_qkernels.h) against onnxruntime's
QLinearConv / QGemm integers: the implicit GEMM over phase planes (AVX-512 VNNI: 1x1 read in
place, stride 1 and 2 and 3, padding, dilation, groups, odd channel counts, several packed
blocks and a partial one), depthwise (the VBMI form at strides 1-3 with dilation, and the
int16 one where the strides, weights or plane size rule it out), the int16 forms (AVX2, baseline; and weights whose centred values do
not fit int8, at every level), the dense dot products (K tails, several rows, i8 inputs).

All the layers are branches of one model (one C build per dispatch level), run at 1 and 2
threads."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc.frontend.onnx import import_model

ort = pytest.importorskip("onnxruntime")

# name: (x dtype, y dtype, x shape, out channels, kernel, strides, pads, dilations, groups, w_zp, relu)
CONVS: dict[str, tuple[Any, ...]] = {
    "1x1-direct-i8": (np.int8, np.uint8, (1, 40, 12, 12), 33, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, 0, False),
    "1x1-direct-tiles": (np.uint8, np.uint8, (1, 2048, 10, 10), 13, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, 0, False),
    "1x1-padded": (np.uint8, np.uint8, (1, 9, 7, 5), 8, 1, (1, 1), (1, 0, 2, 1), (1, 1), 1, 0, True),
    "1x1-stride2": (np.uint8, np.int8, (2, 24, 11, 13), 16, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, 0, False),
    "3x3-s1-big-blocks": (np.uint8, np.uint8, (1, 64, 30, 29), 24, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, 0, True),
    "3x3-s2-p1": (np.int8, np.int8, (1, 16, 15, 14), 12, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, 0, False),
    "7x7-s2-p3-rgb": (np.uint8, np.uint8, (1, 3, 33, 31), 8, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, 0, True),
    "3x3-s2-d2": (np.uint8, np.uint8, (1, 5, 17, 16), 7, 3, (2, 2), (2, 2, 2, 2), (2, 2), 1, 0, False),
    "3x3-s3-d2-asym": (np.uint8, np.int8, (1, 6, 19, 17), 9, 3, (3, 3), (1, 2, 0, 1), (2, 2), 1, 0, False),
    "3x3-s2x1-asym": (np.int8, np.uint8, (1, 7, 10, 9), 5, 3, (2, 1), (0, 2, 1, 0), (1, 1), 1, 0, False),
    "grouped-s2": (np.uint8, np.uint8, (1, 12, 12, 11), 9, 3, (2, 2), (1, 1, 1, 1), (1, 1), 3, 0, False),
    "wide-weights-int16": (np.uint8, np.uint8, (1, 8, 9, 10), 6, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, -100, False),
    # depthwise (groups == channels): the VBMI form (vpermb + vpdpbusd) and its fallbacks
    "dw-3x3-s1": (np.uint8, np.uint8, (2, 6, 20, 37), 6, 3, (1, 1), (1, 1, 1, 1), (1, 1), 6, 0, True),
    "dw-5x5-s2-i8": (np.int8, np.int8, (1, 5, 19, 18), 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 5, 0, False),
    "dw-3x3-s3-d2-asym": (np.uint8, np.int8, (1, 4, 23, 21), 4, 3, (3, 3), (0, 2, 1, 1), (2, 2), 4, 0, False),
    "dw-s4-d2-fallback": (np.int8, np.uint8, (1, 3, 21, 40), 3, 3, (4, 4), (1, 1, 1, 1), (2, 2), 3, 0, False),
    "dw-wide-weights": (np.uint8, np.uint8, (1, 4, 9, 10), 4, 3, (1, 1), (1, 1, 1, 1), (1, 1), 4, -100, False),
    "dw-3x3-two-threads": (np.uint8, np.uint8, (1, 16, 64, 64), 16, 3, (1, 1), (1, 1, 1, 1), (1, 1), 16, 0, True),
    "dw-tiny-plane": (np.uint8, np.uint8, (1, 3, 2, 3), 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 3, 0, False),
}

# name: (x dtype, y dtype, rows, K, N, w_zp)
DENSES: dict[str, tuple[Any, ...]] = {
    "dense-row": (np.uint8, np.uint8, 1, 2048 + 37, 13, 0),
    "dense-rows-i8": (np.int8, np.int8, 3, 70, 7, 0),
    "dense-wide-weights": (np.uint8, np.uint8, 2, 50, 5, -90),
}


def _qparams(rng: np.random.Generator, dtype: Any, zp_shift: int) -> tuple[Any, Any]:
    info = np.iinfo(dtype)
    return np.float32(0.02 + rng.random() / 50), np.asarray((info.min + info.max + 1) // 2 + zp_shift, dtype)


def model_and_inputs() -> tuple[onnx.ModelProto, dict[str, Any]]:
    rng = np.random.default_rng(7)
    nodes: list[onnx.NodeProto] = []
    inits: dict[str, Any] = {}
    inputs, outputs, feed = [], [], {}
    elem = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}

    def block(name: str, x_dtype: Any, y_dtype: Any, x_shape: tuple[int, ...], o: int, k: int,
              w_shape: tuple[int, ...], wz: int, op: onnx.NodeProto | None, relu: bool) -> None:
        xs, xz = _qparams(rng, x_dtype, -9)
        ws = ((rng.random(o) + 0.5) / 200).astype(np.float32)
        lo = max(-127, -127 - wz) if wz < 0 else -127
        w = rng.integers(lo, 127, w_shape, endpoint=True).astype(np.int8)
        # about 40 output steps per standard deviation of the sums (x, w spread about 73 each)
        ys = np.float32(xs * float(ws.mean()) * 73 * 73 * np.sqrt(k) / 40 * (1 if wz == 0 else 4))
        info = np.iinfo(y_dtype)
        yz = np.asarray(info.min if relu else (info.min + info.max + 1) // 2 + 3, y_dtype)
        p = f"{name}_"
        inits.update({
            p + "xs": np.asarray(xs), p + "xz": xz, p + "w": w, p + "ws": ws,
            p + "wz": np.full(o, wz, np.int8), p + "b": rng.integers(-5000, 5000, o).astype(np.int32),
            p + "bs": (xs * ws).astype(np.float32), p + "bz": np.zeros(o, np.int32),
            p + "ys": np.asarray(ys, np.float32), p + "yz": yz,
        })
        nodes.extend([
            helper.make_node("DequantizeLinear", [p + "x", p + "xs", p + "xz"], [p + "xd"]),
            helper.make_node("DequantizeLinear", [p + "w", p + "ws", p + "wz"], [p + "wd"], axis=0),
            helper.make_node("DequantizeLinear", [p + "b", p + "bs", p + "bz"], [p + "bd"], axis=0),
        ])
        assert op is not None
        nodes.append(op)
        last = p + "c"
        if relu:
            nodes.append(helper.make_node("Relu", [last], [p + "r"]))
            last = p + "r"
        nodes.append(helper.make_node("QuantizeLinear", [last, p + "ys", p + "yz"], [p + "y"]))
        inputs.append(helper.make_tensor_value_info(p + "x", elem[x_dtype], list(x_shape)))
        outputs.append(helper.make_tensor_value_info(p + "y", elem[y_dtype], None))
        info_x = np.iinfo(x_dtype)
        feed[p + "x"] = rng.integers(info_x.min, info_x.max, x_shape, endpoint=True).astype(x_dtype)

    for name, (xt, yt, shape, o, kk, strides, pads, dil, groups, wz, relu) in CONVS.items():
        p = f"{name}_"
        conv = helper.make_node("Conv", [p + "xd", p + "wd", p + "bd"], [p + "c"], group=groups,
                                strides=list(strides), pads=list(pads), dilations=list(dil))
        block(name, xt, yt, shape, o, shape[1] // groups * kk * kk, (o, shape[1] // groups, kk, kk), wz, conv, relu)
    for name, (xt, yt, m, k, n, wz) in DENSES.items():
        p = f"{name}_"
        gemm = helper.make_node("Gemm", [p + "xd", p + "wd", p + "bd"], [p + "c"], transB=1)
        block(name, xt, yt, (m, k), n, k, (n, k), wz, gemm, False)
    graph = helper.make_graph(nodes, "qconv_paths", inputs, outputs,
                              [numpy_helper.from_array(v, key) for key, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, feed


def test_every_int8_conv_and_dense_path_gives_onnxruntimes_integers(dispatch: str) -> None:
    model, feed = model_and_inputs()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    want = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feed)
    module = import_model(model)
    byoc.partition_for(module, targets=["ccompiler"])
    kinds = [op.composite.data for op in module.walk() if op.name == "byoc.composite"]
    assert kinds.count("ccompiler.qconv2d") == len(CONVS) and kinds.count("ccompiler.qdense") == len(DENSES)
    names = list(CONVS) + list(DENSES)
    for threads in (1, 2):
        exe = byoc.build(import_model(model), targets=["ccompiler"], num_threads=threads)
        got = exe.run(*feed.values())
        for name, g, w in zip(names, got, want, strict=True):
            assert g.dtype == w.dtype, name
            np.testing.assert_array_equal(g, w, err_msg=f"{name} at {threads} threads")
