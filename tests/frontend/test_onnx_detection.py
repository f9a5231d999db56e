"""NonMaxSuppression, RoiAlign and RotaryEmbedding (issue 16): the importer, the nn ops
of byoc/dialects/nn/detection.py and their numpy kernels, against onnxruntime and onnx's
reference, through byoc.build (the ExampleJSON runtime and the host)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from support.bounds import assert_within, ulp_bound
from support.onnx_harness import onnxruntime_execute
from xdsl.dialects.builtin import f32, i64
from xdsl.dialects.test import TestOp as _TestOp
from xdsl.utils.exceptions import VerifyException

import byoc
from byoc.dialects import nn
from byoc.dialects.nn import detection as nnd
from byoc.frontend.onnx import StaticValueRequired, import_model


def _model(
    node: Any, inputs: list[tuple[str, int, Any]], opset: int, inits: dict[str, np.ndarray] | None = None,
    out_type: int = TensorProto.FLOAT,
) -> Any:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(o, out_type, None) for o in node.output],
        [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# ---- RoiAlign ---------------------------------------------------------------------------


ROIS = np.array(
    [[0, 0, 9, 9], [0, 0, 4, 4], [4.5, 2, 9.5, 7.2], [-3, -2, 2, 12], [7, 7, 7.2, 7.1]], np.float32
)


@pytest.mark.parametrize(
    ("mode", "coord", "ratio", "opset"),
    [("avg", "half_pixel", 2, 16), ("max", "half_pixel", 0, 16), ("avg", "output_half_pixel", 0, 16), ("avg", None, 2, 10)],
)
@pytest.mark.parametrize("targets", [[], ["ccompiler", "examplejson"]])
def test_roi_align_matches_onnxruntime(mode: str, coord: str | None, ratio: int, opset: int, targets: list[str]) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 10, 10)).astype(np.float32)
    idx = np.array([0, 1, 1, 0, 1], np.int64)
    attrs: dict[str, Any] = {"output_height": 3, "output_width": 4, "sampling_ratio": ratio, "spatial_scale": 0.9}
    if opset >= 16:
        attrs.update(mode=mode, coordinate_transformation_mode=coord)
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    model = _model(
        node,
        [("x", TensorProto.FLOAT, x.shape), ("rois", TensorProto.FLOAT, ROIS.shape), ("idx", TensorProto.INT64, idx.shape)],
        opset,
    )
    (want,) = onnxruntime_execute(model, [x, ROIS, idx])
    module = import_model(model)
    assert "nn.roi_align" in str(module)
    exe = byoc.build(module, targets=targets)
    if targets:
        assert [p.ops for p in exe.partitions] == [("nn.roi_align",)]
        assert exe.partitions[0].target == "examplejson"
    (got,) = exe.run(x, ROIS, idx)
    # each output is a weighted sum of at most 4 * grid samples of |x| <= 5: float32 rounding
    assert_within(got, want, 1e-5 * (1 + np.abs(want)))


def test_roi_align_type_relation_rejects() -> None:
    def value(shape: tuple[int, ...], t: Any = f32) -> Any:
        return _TestOp(result_types=[nn.tensor(shape, t)]).results[0]

    x, rois, idx = value((1, 3, 8, 8)), value((5, 4)), value((5,), i64)
    with pytest.raises(VerifyException, match=r"\(R, 4\) and \(R,\)"):
        nnd.RoiAlignOp.build(x, value((5, 3)), idx)
    with pytest.raises(VerifyException, match="mode 'sum'"):
        nnd.RoiAlignOp.build(x, rois, idx, mode="sum")
    with pytest.raises(VerifyException, match="batch_indices must be i32 or i64"):
        nnd.RoiAlignOp.build(x, rois, value((5,)))


# ---- RotaryEmbedding -------------------------------------------------------------------------


@pytest.mark.parametrize(("rank", "interleaved", "dim", "positions"), [
    (3, 0, 0, True), (3, 1, 4, True), (4, 0, 4, True), (4, 1, 0, False),
])  # fmt: skip
@pytest.mark.parametrize("targets", [[], ["ccompiler", "examplejson"]])
def test_rotary_embedding_matches_onnx(rank: int, interleaved: int, dim: int, positions: bool, targets: list[str]) -> None:
    rng = np.random.default_rng(1)
    b, s, heads, head = 2, 3, 2, 8
    half = (dim or head) // 2
    x = rng.standard_normal((b, s, heads * head) if rank == 3 else (b, heads, s, head)).astype(np.float32)
    angles = rng.uniform(0, 6, (10, half))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    pos = rng.integers(0, 10, (b, s)).astype(np.int64)
    if not positions:
        cos, sin = cos[pos], sin[pos]
    attrs: dict[str, Any] = {"interleaved": interleaved, "rotary_embedding_dim": dim}
    if rank == 3:
        attrs["num_heads"] = heads
    names = ["x", "cos", "sin", *(["pos"] if positions else [])]
    node = helper.make_node("RotaryEmbedding", names, ["y"], **attrs)
    feeds = [x, cos, sin, *([pos] if positions else [])]
    types = [TensorProto.FLOAT] * 3 + [TensorProto.INT64]
    model = _model(node, [(n, t, a.shape) for n, t, a in zip(names, types, feeds, strict=False)], 23)
    (want,) = ReferenceEvaluator(model).run(None, dict(zip(names, feeds, strict=True)))
    exe = byoc.build(import_model(model), targets=targets)
    (got,) = exe.run(*feeds)
    # one product pair per element, computed in float64 then rounded: within 2 float32 ulps
    assert_within(got, want, ulp_bound(want, 4) + 1e-6)


def test_rotary_embedding_runs_in_onnxruntime_too() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 4, 16)).astype(np.float32)
    angles = rng.uniform(0, 6, (8, 4))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    pos = np.array([[0, 3, 5, 7]], np.int64)
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], num_heads=2)
    model = _model(
        node,
        [("x", TensorProto.FLOAT, x.shape), ("cos", TensorProto.FLOAT, cos.shape),
         ("sin", TensorProto.FLOAT, sin.shape), ("pos", TensorProto.INT64, pos.shape)],
        23,
    )  # fmt: skip
    try:
        (want,) = onnxruntime_execute(model, [x, cos, sin, pos])
    except Exception as e:  # noqa: BLE001  (an onnxruntime without the opset-23 kernel)
        pytest.skip(f"onnxruntime cannot run RotaryEmbedding-23: {str(e)[:100]}")
    (got,) = byoc.build(import_model(model), targets=["ccompiler", "examplejson"]).run(x, cos, sin, pos)
    assert_within(got, want, ulp_bound(want, 4) + 1e-6)


# ---- NonMaxSuppression --------------------------------------------------------------------


def _nms_model(center: int, with_score_threshold: bool, inits: dict[str, np.ndarray]) -> Any:
    names = ["boxes", "scores", "max_out", "iou", *(["score_th"] if with_score_threshold else [])]
    node = helper.make_node("NonMaxSuppression", names, ["selected"], center_point_box=center)
    return _model(
        node,
        [("boxes", TensorProto.FLOAT, [2, 12, 4]), ("scores", TensorProto.FLOAT, [2, 3, 12])],
        11,
        inits,
        TensorProto.INT64,
    )


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("with_score_threshold", [False, True])
def test_non_max_suppression_known_at_import_matches_onnxruntime(center: int, with_score_threshold: bool) -> None:
    rng = np.random.default_rng(3)
    corners = rng.uniform(0, 10, (2, 12, 4)).astype(np.float32)
    boxes = corners if center == 0 else np.concatenate([corners[..., :2], np.abs(corners[..., 2:]) / 2], -1)
    scores = rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    scores[0, 0, 3] = scores[0, 0, 5]  # a tie: the lower box index first
    inits = {"max_out": np.array([4], np.int64), "iou": np.array([0.3], np.float32)}
    if with_score_threshold:
        inits["score_th"] = np.array([0.4], np.float32)
    model = _nms_model(center, with_score_threshold, inits)
    (want,) = onnxruntime_execute(model, [boxes, scores])
    # the result's row count depends on the values: they must be known at import
    with pytest.raises(StaticValueRequired, match="boxes .*NonMaxSuppression's result shape") as e:
        import_model(model)
    assert e.value.input_name == "boxes"
    module = import_model(model, bind_inputs={"boxes": boxes, "scores": scores})
    (got,) = byoc.build(module, targets=["ccompiler"]).run()
    np.testing.assert_array_equal(got, want)
    assert 0 < len(want) <= 2 * 3 * 4


# ---- DeformConv -------------------------------------------------------------------------------


DEFORM_CASES = [
    (False, 1, 1, (1, 1), (0, 0, 0, 0)), (True, 2, 2, (2, 1), (1, 1, 1, 1)), (True, 1, 4, (1, 1), (1, 0, 2, 1)),
]  # fmt: skip


@functools.cache
def _deform_case(with_bias_mask: bool, group: int, offset_group: int, strides: tuple[int, ...], pads: tuple[int, ...]) -> Any:
    """(model, feeds, onnx reference output): the reference loops in Python, so once a case."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 4, 5, 4)).astype(np.float32)
    w = rng.standard_normal((4, 4 // group, 3, 2)).astype(np.float32)
    oh = (5 + pads[0] + pads[2] - 3) // strides[0] + 1
    ow = (4 + pads[1] + pads[3] - 2) // strides[1] + 1
    off = (2 * rng.standard_normal((1, offset_group * 3 * 2 * 2, oh, ow))).astype(np.float32)  # reaches past the edges
    feeds = [x, w, off]
    names = ["x", "w", "off"]
    if with_bias_mask:
        feeds += [rng.standard_normal(4).astype(np.float32), rng.uniform(0, 1, (1, offset_group * 6, oh, ow)).astype(np.float32)]
        names += ["b", "m"]
    node = helper.make_node(
        "DeformConv", names, ["y"], group=group, offset_group=offset_group, strides=list(strides), pads=list(pads),
        kernel_shape=[3, 2],
    )  # fmt: skip
    model = _model(node, [(n, TensorProto.FLOAT, a.shape) for n, a in zip(names, feeds, strict=True)], 19)
    (want,) = ReferenceEvaluator(model).run(None, dict(zip(names, feeds, strict=True)))
    return model, feeds, want


@pytest.mark.parametrize("case", range(len(DEFORM_CASES)))
@pytest.mark.parametrize("targets", [[], ["ccompiler", "examplejson"]])
def test_deform_conv_matches_onnx(case: int, targets: list[str]) -> None:
    with_bias_mask, group, offset_group, strides, pads = DEFORM_CASES[case]
    model, feeds, want = _deform_case(*DEFORM_CASES[case])
    module = import_model(model)
    assert "nn.deform_conv2d" in str(module)
    (got,) = byoc.build(module, targets=targets).run(*feeds)
    # a sum of 4 * C/group * 6 bilinear products, in float64 here and in float32 there
    k = 4 * (4 // group) * 6
    scale = np.abs(feeds[1]).max() * np.abs(feeds[0]).max() * k
    assert_within(got, want, 4 * k * np.finfo(np.float32).eps * scale)


def test_deform_conv_3d_is_a_clean_rejection() -> None:
    from byoc.frontend.onnx import UnsupportedOnnxError

    node = helper.make_node("DeformConv", ["x", "w", "off"], ["y"])
    model = _model(
        node,
        [("x", TensorProto.FLOAT, [1, 2, 4, 4, 4]), ("w", TensorProto.FLOAT, [2, 2, 1, 1, 1]),
         ("off", TensorProto.FLOAT, [1, 3, 4, 4, 4])],
        19,
    )  # fmt: skip
    with pytest.raises(UnsupportedOnnxError, match=r"rank-5 input \(3-D\)"):
        import_model(model)


# ---- TensorScatter ---------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "axis", "indices"), [("linear", -2, [0, 3]), ("circular", 2, [5, 1]), ("linear", 1, None)])
@pytest.mark.parametrize("targets", [[], ["ccompiler", "examplejson"]])
def test_tensor_scatter_matches_onnx(mode: str, axis: int, indices: list[int] | None, targets: list[str]) -> None:
    rng = np.random.default_rng(5)
    cache = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    shape = list(cache.shape)
    shape[axis] = 2
    update = rng.standard_normal(shape).astype(np.float32)
    feeds, names = [cache, update], ["cache", "update"]
    if indices is not None:
        feeds.append(np.array(indices, np.int64))
        names.append("idx")
    types = [TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64]
    node = helper.make_node("TensorScatter", names, ["y"], mode=mode, axis=axis)
    model = _model(node, [(n, t, a.shape) for n, t, a in zip(names, types, feeds, strict=False)], 24)
    (want,) = ReferenceEvaluator(model).run(None, dict(zip(names, feeds, strict=True)))
    (got,) = byoc.build(import_model(model), targets=targets).run(*feeds)
    np.testing.assert_array_equal(got, want)


def test_tensor_scatter_past_the_end_is_an_error_not_a_wrong_answer() -> None:
    from byoc.interpreters.kernels import KERNELS

    cache, update = np.zeros((1, 4, 2), np.float32), np.ones((1, 2, 2), np.float32)
    with pytest.raises(ValueError, match="writes positions 3..4 of a cache of 4"):
        KERNELS["nn.tensor_scatter"](cache, update, np.array([3]), mode="linear", axis=1)
    got = KERNELS["nn.tensor_scatter"](cache, update, np.array([3]), mode="circular", axis=1)
    np.testing.assert_array_equal(got[0, :, 0], [1, 0, 0, 1])


def test_docs_list_the_supported_ops() -> None:
    import re
    from pathlib import Path

    from byoc.frontend.onnx import SUPPORTED_OPS

    text = (Path(__file__).resolve().parents[2] / "docs" / "onnx.md").read_text()
    listed = re.search(r"<!-- supported-ops -->(.*?)<!-- /supported-ops -->", text, re.S)
    assert listed is not None
    assert sorted(listed.group(1).split()) == sorted(SUPPORTED_OPS)


# ---- CausalConvWithState (opset 27): nn ops that run in C ------------------------------------


@pytest.mark.parametrize(("activation", "with_state", "with_bias"), [("none", False, False), ("silu", True, True)])
def test_causal_conv_with_state_matches_onnx(activation: str, with_state: bool, with_bias: bool) -> None:
    rng = np.random.default_rng(6)
    b, c, length, k = 2, 5, 7, 4
    feeds = [rng.standard_normal((b, c, length)).astype(np.float32), rng.standard_normal((c, 1, k)).astype(np.float32)]
    names = ["x", "w", "", ""]
    if with_bias:
        feeds.append(rng.standard_normal(c).astype(np.float32))
        names[2] = "bias"
    if with_state:
        feeds.append(rng.standard_normal((b, c, k - 1)).astype(np.float32))
        names[3] = "state"
    used = [n for n in names if n]
    node = helper.make_node("CausalConvWithState", names, ["y", "present"], activation=activation)
    model = _model(node, [(n, TensorProto.FLOAT, a.shape) for n, a in zip(used, feeds, strict=True)], 27)
    want = ReferenceEvaluator(model).run(None, dict(zip(used, feeds, strict=True)))
    exe = byoc.build(import_model(model), targets=["ccompiler"])
    assert "nn.conv2d" in {op for p in exe.partitions for op in p.ops}
    got = exe.run(*feeds)
    # a k-tap dot product plus a bias (then SiLU): float32 rounding of terms up to |w| |x|
    scale = k * np.abs(feeds[1]).max() * max(np.abs(a).max() for a in feeds if a.ndim == 3) + 1
    assert_within(got[0], want[0], 4 * (k + 2) * np.finfo(np.float32).eps * scale)
    np.testing.assert_array_equal(got[1], want[1])


# ---- LinearAttention (opset 27): two results, on the host ------------------------------------


@pytest.mark.parametrize(("rule", "hq", "hkv", "with_past", "decay_per_key"), [
    ("linear", 2, 2, False, False), ("gated", 4, 2, True, True), ("delta", 2, 1, False, False),
    ("gated_delta", 4, 2, True, False),
])  # fmt: skip
def test_linear_attention_matches_onnx(rule: str, hq: int, hkv: int, with_past: bool, decay_per_key: bool) -> None:
    rng = np.random.default_rng(7)
    b, t, dk, dv = 2, 5, 4, 3
    feeds = {
        "q": rng.standard_normal((b, t, hq * dk)).astype(np.float32),
        "k": (rng.standard_normal((b, t, hkv * dk)) / 2).astype(np.float32),
        "v": rng.standard_normal((b, t, hkv * dv)).astype(np.float32),
    }
    names = ["q", "k", "v", "", "", ""]
    if with_past:
        feeds["past"] = rng.standard_normal((b, hkv, dk, dv)).astype(np.float32)
        names[3] = "past"
    if rule in ("gated", "gated_delta"):
        feeds["decay"] = -rng.uniform(0, 1, (b, t, hkv * dk if decay_per_key else hkv)).astype(np.float32)
        names[4] = "decay"
    if rule in ("delta", "gated_delta"):
        feeds["beta"] = rng.uniform(0, 1, (b, t, hkv)).astype(np.float32)
        names[5] = "beta"
    node = helper.make_node(
        "LinearAttention", names, ["y", "state"], q_num_heads=hq, kv_num_heads=hkv, update_rule=rule
    )
    model = _model(node, [(n, TensorProto.FLOAT, a.shape) for n, a in feeds.items()], 27)
    want = ReferenceEvaluator(model).run(None, feeds)
    exe = byoc.build(import_model(model), targets=["ccompiler", "examplejson"])
    assert exe.partitions == []  # two results: no target takes it, the host runs it
    got = exe.run(**feeds)
    for a, e in zip(got, want, strict=True):
        # the reference accumulates in float32 over t steps, the kernel in float64
        assert_within(a, e, 64 * t * np.finfo(np.float32).eps * (1 + np.abs(e)))
