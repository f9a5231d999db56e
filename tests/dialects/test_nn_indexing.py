"""The nn ops of byoc/dialects/nn/indexing.py (ONNX coverage part B): text round trip,
type relations and their errors, and the numpy kernels against onnx's reference evaluator."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from support.bounds import assert_within, reduction_bound, ulp_bound
from xdsl.dialects.builtin import f32, i1, i64
from xdsl.dialects.test import TestOp as _TestOp
from xdsl.utils.exceptions import VerifyException

from byoc import parse_module, run_reference
from byoc.dialects import nn
from byoc.dialects.nn import indexing as nni
from byoc.interpreters.kernels import KERNELS
from byoc.op_registry import get_op

NEW_OPS = [
    "nn.gather_elements",
    "nn.gather_nd",
    "nn.scatter_elements",
    "nn.scatter_nd",
    "nn.trilu",
    "nn.one_hot",
    "nn.reverse_sequence",
    "nn.layer_norm",
    "nn.rms_norm",
    "nn.log_softmax",
    "nn.hardmax",
    "nn.resize",
    "nn.attention",
    "nn.nll_loss",
    "nn.grid_sample",
    "nn.col2im",
]


def value(shape: tuple[int, ...], element_type: Any = f32) -> Any:
    return _TestOp.create(result_types=[nn.tensor(shape, element_type)]).results[0]


def onnx_ref(op: str, inputs: list[Any], opset: int = 21, **attrs: Any) -> Any:
    """One ONNX node run by onnx's reference evaluator (inputs named a, b, c...; '' skips one)."""
    names = [chr(ord("a") + i) if v is not None else "" for i, v in enumerate(inputs)]
    node = helper.make_node(op, names, ["y"], **attrs)
    given = [(n, v) for n, v in zip(names, inputs, strict=True) if v is not None]
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), None) for n, v in given],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model).run(None, dict(given))[0]


def test_every_new_op_is_registered_with_a_kernel() -> None:
    for name in NEW_OPS:
        assert name in nn.NN_OPS and name in KERNELS
        assert get_op(name).reference is KERNELS[name]


def test_new_ops_round_trip_through_text() -> None:
    text = """
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2x3x4xi64>, %n: tensor<2x1xi64>, %u: tensor<2x3x4xf32>, %l: tensor<3xi64>, %v: tensor<2xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x6x2xf32>) {
  %ge = nn.gather_elements %x, %i {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xi64>) -> tensor<2x3x4xf32>
  %gn = nn.gather_nd %x, %n : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x3x4xf32>
  %se = nn.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<2x3x4xf32>, tensor<2x3x4xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %sn = nn.scatter_nd %x, %n, %u {reduction = "max"} : (tensor<2x3x4xf32>, tensor<2x1xi64>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %tr = nn.trilu %x {k = -1 : i64, upper = false} : tensor<2x3x4xf32>
  %oh = nn.one_hot %i, %v {depth = 5 : i64} : (tensor<2x3x4xi64>, tensor<2xf32>) -> tensor<2x3x4x5xf32>
  %rs = nn.reverse_sequence %x, %l {batch_axis = 1 : i64, time_axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %g = nn.constant dense<1.5> : tensor<4xf32>
  %b = nn.constant dense<0.25> : tensor<4xf32>
  %ln = nn.layer_norm %x, %g, %b {epsilon = 1.000000e-03 : f64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %ls = nn.log_softmax %x {axis = 1 : i64} : tensor<2x3x4xf32>
  %hm = nn.hardmax %x : tensor<2x3x4xf32>
  %rz = nn.resize %x {size = array<i64: 4, 6, 2>, scales = array<f64: 2.0, 2.0, 0.5>, mode = "cubic", antialias = true} : (tensor<2x3x4xf32>) -> tensor<4x6x2xf32>
  func.return %ge, %gn, %se, %sn, %tr, %oh, %rs, %ln, %ls, %hm, %x, %rz : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x6x2xf32>
}
"""
    module = parse_module(text)
    again = parse_module(str(module))
    assert str(again) == str(module)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    i = rng.integers(-3, 3, (2, 3, 4))
    n = np.array([[1], [-2]])
    u = rng.standard_normal((2, 3, 4)).astype(np.float32)
    lens = np.array([4, 1, 2])
    v = np.array([-1.0, 2.0], np.float32)
    outs = run_reference(again, x, i, n, u, lens, v)
    np.testing.assert_array_equal(outs[0], np.take_along_axis(x, i % 4, axis=2))
    np.testing.assert_array_equal(outs[1], x[[1, 0]])
    np.testing.assert_array_equal(outs[4], np.tril(x, -1))
    np.testing.assert_array_equal(outs[5], onnx_ref("OneHot", [i, np.array(5), v]))
    np.testing.assert_array_equal(outs[6][:, 0], x[:, 0, ::-1])
    np.testing.assert_array_equal(outs[6][:, 1], x[:, 1])
    assert outs[9].sum() == 6 and outs[9].dtype == np.float32
    assert outs[11].shape == (4, 6, 2)


@pytest.mark.parametrize(
    ("cls", "types", "attrs", "message"),
    [
        (nni.GatherElementsOp, [(2, 3), ((2,), i64)], {}, "rank"),
        (nni.GatherElementsOp, [(2, 3), ((2, 3), f32)], {}, "i32 or i64"),
        (nni.GatherNDOp, [(2, 3), ((4, 3), i64)], {}, "indices.shape[-1]"),
        (nni.GatherNDOp, [(2, 3), ((3, 1), i64)], {"batch_dims": 1}, "batch dims"),
        (nni.ScatterElementsOp, [(2, 3), ((2, 3), i64), (2, 2)], {}, "one shape"),
        (nni.ScatterElementsOp, [(2, 3), ((2, 3), i64), (2, 3)], {"reduction": "sub"}, "reduction"),
        (nni.ScatterNDOp, [(2, 3), ((2, 1), i64), (2, 2)], {}, "updates has shape"),
        (nni.TriluOp, [(3,)], {}, "rank at least 2"),
        (nni.OneHotOp, [((3,), i64), (3,)], {"depth": 4}, "shape [2]"),
        (nni.OneHotOp, [((3,), i64), (2,)], {"depth": 0}, "depth"),
        (nni.ReverseSequenceOp, [(4, 3), ((2,), i64)], {}, "sequence_lens"),
        (nni.ReverseSequenceOp, [(4, 3), ((3,), i64)], {"time_axis": 1}, "differ"),
        (nni.LayerNormOp, [(2, 4), (3,), (4,)], {}, "broadcast"),
        (nni.LayerNormOp, [((2, 4), i64), ((4,), i64), ((4,), i64)], {}, "not supported"),
        (nni.LogSoftmaxOp, [(2, 4)], {"axis": 2}, "out of range"),
        (nni.ResizeOp, [(1, 2, 3)], {"size": (1, 2)}, "3 values"),
        (nni.ResizeOp, [(1, 2, 3)], {"size": (1, 2, 6), "mode": "area"}, "mode"),
        (nni.ResizeOp, [(1, 2, 3)], {"size": (1, 2, 6), "antialias": True}, "antialias"),
        (nni.AttentionOp, [(1, 2, 3, 4), (1, 2, 5, 4)], {}, "expected 3 operands"),
        (nni.AttentionOp, [(1, 2, 3, 4), (1, 2, 5, 3), (1, 2, 5, 3)], {}, "disagree"),
        (nni.AttentionOp, [(1, 3, 8), (1, 5, 8), (1, 5, 8)], {"q_num_heads": 3, "kv_num_heads": 2}, "3-D inputs"),
        (nni.AttentionOp, [(1, 3, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], {}, "multiple of kv heads"),
        (nni.NLLLossOp, [(2, 3, 4), ((2, 3), i64)], {}, "does not fit"),
        (nni.GridSampleOp, [(1, 2, 3, 4), (1, 5, 5, 3)], {}, "does not fit"),
        (nni.Col2ImOp, [(1, 8, 5)], {"image_shape": (3, 4), "block_shape": (2, 2)}, "must be (N, C * 4, 6)"),
        (nni.Col2ImOp, [(1, 8, 5)], {"image_shape": (3, 4), "block_shape": (5, 2)}, "does not fit"),
        (nni.GridSampleOp, [(1, 2, 3, 4), (1, 5, 5, 2)], {"padding_mode": "wrap"}, "padding_mode"),
        (nni.NLLLossOp, [(2, 3), ((2,), i64), (2,)], {}, "weight must have shape [3]"),
    ],
)
def test_relation_errors(cls: type[nn.NNOp], types: list[Any], attrs: dict[str, Any], message: str) -> None:
    operands = [value(t) if isinstance(t[0], int) else value(*t) for t in types]
    with pytest.raises((VerifyException, TypeError), match=re.escape(message)):
        op = cls.build(*operands, **attrs)
        op.verify()


def test_data_movement_ops_take_every_element_type() -> None:
    x = value((2, 3), i1)
    assert nni.TriluOp.build(x).results[0].type == nn.tensor((2, 3), i1)
    g = nni.GatherElementsOp.build(x, value((2, 3), i64))
    g.verify()


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatters_match_onnx_with_duplicate_indices(reduction: str) -> None:
    rng = np.random.default_rng(1)
    data = rng.standard_normal((4, 3)).astype(np.float32)
    idx = np.array([[1, 0, 2], [1, -1, 2]])
    upd = rng.standard_normal((2, 3)).astype(np.float32)
    got = KERNELS["nn.scatter_elements"](data, idx, upd, axis=1, reduction=reduction)
    want = onnx_ref("ScatterElements", [data, idx, upd], axis=1, reduction=reduction)
    np.testing.assert_array_equal(got, want)
    nd_idx = np.array([[0], [2], [0]])
    nd_upd = rng.standard_normal((3, 3)).astype(np.float32)
    got = KERNELS["nn.scatter_nd"](data, nd_idx, nd_upd, reduction=reduction)
    if reduction == "none":  # duplicates are undefined in ONNX: the last one wins here
        nd_idx, nd_upd = nd_idx[1:], nd_upd[1:]
        got = KERNELS["nn.scatter_nd"](data, nd_idx, nd_upd, reduction=reduction)
    np.testing.assert_array_equal(got, onnx_ref("ScatterND", [data, nd_idx, nd_upd], reduction=reduction))


def test_gather_nd_batch_dims_matches_onnx() -> None:
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[[1, -1], [0, 2]], [[2, 3], [1, 0]]])
    got = KERNELS["nn.gather_nd"](data, idx, batch_dims=1)
    np.testing.assert_array_equal(got, onnx_ref("GatherND", [data, idx], batch_dims=1))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_norms_match_onnx(axis: int) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    w = rng.standard_normal(x.shape[axis % 3 :]).astype(np.float32)
    b = rng.standard_normal(x.shape[axis % 3 :]).astype(np.float32)
    got = KERNELS["nn.layer_norm"](x, w, b, axis=axis, epsilon=1e-5)
    want = onnx_ref("LayerNormalization", [x, w, b], axis=axis)
    assert_within(got, want, 1e-5 * (np.abs(want) + 1))
    for op, name in (("LogSoftmax", "nn.log_softmax"), ("Hardmax", "nn.hardmax")):
        got = KERNELS[name](x, axis=axis)
        want = onnx_ref(op, [x], axis=axis)
        assert_within(got, want, ulp_bound(want, 64))


RESIZE_CASES = [
    # (mode, coordinate mode, extras, scales or None, sizes or None)
    ("cubic", "half_pixel", {}, [1, 1, 0.6, 1.7], None),
    ("cubic", "align_corners", {"exclude_outside": 1, "cubic_coeff_a": -0.5}, None, [1, 2, 7, 3]),
    ("linear", "half_pixel", {"antialias": 1}, [1, 1, 0.5, 0.7], None),
    ("cubic", "half_pixel", {"antialias": 1}, [1, 1, 0.4, 0.8], None),
    ("nearest", "half_pixel", {"nearest_mode": "round_prefer_ceil"}, [1, 1, 1.5, 2], None),
    ("nearest", "asymmetric", {"nearest_mode": "ceil"}, [1, 1, 2.5, 0.5], None),
    ("linear", "pytorch_half_pixel", {}, None, [1, 2, 1, 9]),
    ("linear", "half_pixel_symmetric", {}, [1, 1, 1.3, 0.7], None),
    ("linear", "tf_crop_and_resize", {"extrapolation_value": 7.0}, None, [1, 2, 3, 3]),
]


@pytest.mark.parametrize(("mode", "coord", "extra", "scales", "sizes"), RESIZE_CASES)
def test_resize_matches_onnx(mode: str, coord: str, extra: dict[str, Any], scales: Any, sizes: Any) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    roi = np.array([0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2], np.float32) if coord == "tf_crop_and_resize" else None
    s = None if scales is None else np.array(scales, np.float32)
    z = None if sizes is None else np.array(sizes, np.int64)
    want = onnx_ref(
        "Resize", [x, roi, s, z], mode=mode, coordinate_transformation_mode=coord, **extra
    )
    out = sizes if sizes is not None else [int(d * v) for d, v in zip(x.shape, scales, strict=True)]
    got = KERNELS["nn.resize"](
        x,
        size=tuple(out),
        scales=tuple(float(v) for v in (s if s is not None else np.array(out) / np.array(x.shape))),
        roi=() if roi is None else tuple(float(v) for v in roi),
        mode=mode,
        coordinate_transformation_mode=coord,
        nearest_mode=extra.get("nearest_mode", "round_prefer_floor"),
        cubic_coeff_a=extra.get("cubic_coeff_a", -0.75),
        exclude_outside=bool(extra.get("exclude_outside", 0)),
        antialias=bool(extra.get("antialias", 0)),
        extrapolation_value=extra.get("extrapolation_value", 0.0),
    )
    # onnx's evaluator computes the filter taps in float32 (cubic_coeff_a is a float32
    # attribute), this kernel in float64: a sum of at most 16 taps per output, each tap
    # weight at most 1.5 times an input
    assert_within(got, want, reduction_bound(16, 16 * 1.5 * np.abs(x).max()))


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"is_causal": 1, "softcap": 2.0, "qk_matmul_output_mode": 2},
        {"left_window_size": 1, "right_window_size": 0, "qk_matmul_output_mode": 3},
    ],
)
def test_attention_matches_onnx(attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 4, 3, 8)).astype(np.float32)
    k = rng.standard_normal((2, 2, 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, 2, 5, 6)).astype(np.float32)
    mask = rng.random((3, 4)) > 0.3  # shorter than the keys: padded as masked
    pk = rng.standard_normal((2, 2, 1, 8)).astype(np.float32)
    pv = rng.standard_normal((2, 2, 1, 6)).astype(np.float32)
    names = ["q", "k", "v", "m", "pk", "pv"]
    node = helper.make_node("Attention", names, ["y", "ck", "cv", "qk"], **attrs)
    given = [q, k, v, mask, pk, pv]
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in zip(names, given, strict=True)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "ck", "cv", "qk")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    want = ReferenceEvaluator(model).run(None, dict(zip(names, given, strict=True)))
    got = KERNELS["nn.attention"](
        *given,
        has_mask=True,
        has_past=True,
        has_nonpad=False,
        num_outputs=4,
        is_causal=bool(attrs.get("is_causal", 0)),
        q_num_heads=0,
        kv_num_heads=0,
        scale=0.0,
        softcap=attrs.get("softcap", 0.0),
        qk_matmul_output_mode=attrs.get("qk_matmul_output_mode", 0),
        softmax_precision=0,
        left_window_size=attrs.get("left_window_size", -1),
        right_window_size=attrs.get("right_window_size", -1),
    )
    for a, e in zip(got, want, strict=True):
        # two matmuls of at most 8 terms, a softmax of 6 (exp: ULPS)
        assert_within(a, e, reduction_bound(16, 16 * np.abs(e).max() + 16) + ulp_bound(e, 64))


def test_nll_loss_matches_onnx() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    t = np.array([[0, 3], [9, 1], [2, 9]])
    w = rng.random(4).astype(np.float32)
    for reduction in ("none", "sum", "mean"):
        want = onnx_ref("NegativeLogLikelihoodLoss", [x, t, w], opset=22, reduction=reduction, ignore_index=9)
        got = KERNELS["nn.nll_loss"](x, t, w, reduction=reduction, ignore_index=9, has_ignore=True)
        assert_within(got, want, reduction_bound(6, np.abs(x).max() * 6))


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_matches_onnx(mode: str, padding_mode: str, align_corners: int) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (1, 3, 6, 2)).astype(np.float32)
    want = onnx_ref("GridSample", [x, grid], opset=22, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    got = KERNELS["nn.grid_sample"](x, grid, mode=mode, padding_mode=padding_mode, align_corners=bool(align_corners))
    # onnx's evaluator sums the taps in float32, this kernel in float64: at most 16 taps
    assert_within(got, want, reduction_bound(16, 16 * 1.5 * np.abs(x).max()))


def test_col2im_matches_onnx() -> None:
    x = np.random.default_rng(10).standard_normal((2, 12, 6)).astype(np.float32)
    attrs = {"dilations": [1, 2], "pads": [1, 0, 0, 1], "strides": [2, 1]}
    image, block = np.array([3, 4]), np.array([2, 2])
    want = onnx_ref("Col2Im", [x, image, block], opset=18, **attrs)
    got = KERNELS["nn.col2im"](
        x, image_shape=(3, 4), block_shape=(2, 2), **{k: tuple(v) for k, v in attrs.items()}
    )
    assert_within(got, want, reduction_bound(4, 4 * np.abs(x).max()))
