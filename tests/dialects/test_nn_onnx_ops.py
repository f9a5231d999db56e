"""The nn ops the ONNX frontend added: type relations, verifier errors, and kernels
checked against onnx's reference evaluator (or numpy) on random shapes and attributes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from support.bounds import assert_within, reduction_bound, ulp_bound
from support.onnx_harness import onnxruntime_execute
from xdsl.dialects.builtin import f32, i64
from xdsl.dialects.test import TestOp as _TestOp
from xdsl.utils.exceptions import VerifyException

from byoc import parse_module, run_reference
from byoc.dialects import nn
from byoc.interpreters.kernels import KERNELS

SETTINGS = settings(max_examples=40, deadline=None)


def value(shape: tuple[int, ...], element_type: Any = f32) -> Any:
    return _TestOp.create(result_types=[nn.tensor(shape, element_type)]).results[0]


def onnx_ref(
    op: str, inputs: list[np.ndarray[Any, Any]], names: list[str], runtime: str = "reference", **attrs: Any
) -> Any:
    """One ONNX node run by onnx's reference evaluator or by onnxruntime."""
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names if n],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    given = list(inputs)  # one array per non-empty name
    if runtime == "onnxruntime":
        return onnxruntime_execute(model, given)[0]
    feeds = {n: a for n, a in zip([n for n in names if n], given, strict=True)}
    return ReferenceEvaluator(model).run(None, feeds)[0]


# --------------------------------------------------------------------------
# conv2d_transpose
# --------------------------------------------------------------------------


@SETTINGS
@given(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 2),
    st.sampled_from([1, 2]),
    st.lists(st.integers(0, 1), min_size=4, max_size=4),
    st.integers(0, 1),
    st.data(),
)
def test_conv2d_transpose_matches_onnx(
    sh: int, sw: int, dil: int, groups: int, pads: list[int], out_pad: int, data: Any
) -> None:
    out_pad = min(out_pad, max(sh, sw) - 1)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    c, og = 2 * groups, data.draw(st.integers(1, 3))
    x = rng.standard_normal((1, c, 4, 3)).astype(np.float32)
    w = rng.standard_normal((c, og, 3, 2)).astype(np.float32)
    op = nn.Conv2DTransposeOp.build(
        value(x.shape),
        value(w.shape),
        strides=(sh, sw),
        padding=pads,
        output_padding=(out_pad if sh > out_pad else 0, out_pad if sw > out_pad else 0),
        dilation=(dil, dil),
        groups=groups,
    )
    attrs = op.attr_values()
    ours = KERNELS["nn.conv2d_transpose"](x, w, **attrs)
    assert ours.shape == nn.shape_of(op.result.type)
    # onnx's reference evaluator mishandles groups > 1: compare with onnxruntime
    expected = onnx_ref(
        "ConvTranspose",
        [x, w],
        ["x", "w"],
        runtime="onnxruntime",
        strides=[sh, sw],
        pads=[pads[0], pads[1], pads[2], pads[3]],
        dilations=[dil, dil],
        group=groups,
        output_padding=list(attrs["output_padding"]),
    )
    # each output sums at most C/G * 3 * 2 products; their magnitude is the same
    # transposed convolution of the absolute values
    magnitude = KERNELS["nn.conv2d_transpose"](np.abs(x), np.abs(w), **attrs)
    bound = reduction_bound(c // groups * 3 * 2, magnitude) + ulp_bound(expected)
    assert_within(ours, expected.astype(np.float32), bound)


def test_conv2d_transpose_relation_errors() -> None:
    with pytest.raises(VerifyException, match="weight has 3 input channels, data has 4"):
        nn.Conv2DTransposeOp.build(value((1, 4, 5, 5)), value((3, 2, 3, 3)))
    with pytest.raises(VerifyException, match="groups 3 must divide the input channels 4"):
        nn.Conv2DTransposeOp.build(value((1, 4, 5, 5)), value((4, 2, 3, 3)), groups=3)
    with pytest.raises(VerifyException, match="leaves an empty output"):
        nn.Conv2DTransposeOp.build(value((1, 4, 1, 1)), value((4, 2, 1, 1)), padding=(1, 0, 0, 0))
    op = nn.Conv2DTransposeOp.build(value((1, 4, 5, 5)), value((4, 3, 3, 3)), groups=2, strides=(2, 2))
    assert nn.shape_of(op.result.type) == (1, 6, 11, 11)


# --------------------------------------------------------------------------
# lrn, split, strided_slice, take
# --------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn_matches_onnx_formula(size: int) -> None:
    x = np.random.default_rng(size).standard_normal((2, 6, 3, 3)).astype(np.float32)
    ours = KERNELS["nn.lrn"](x, size=size, axis=1, alpha=2e-2, beta=0.6, bias=1.5)
    lo, hi = math.floor((size - 1) / 2), math.ceil((size - 1) / 2)
    square_sum = np.zeros_like(x)
    for c in range(6):
        square_sum[:, c] = (x[:, max(0, c - lo) : min(6, c + hi + 1)] ** 2).sum(axis=1)
    expected = x / (1.5 + 2e-2 / size * square_sum) ** 0.6
    # a sum of `size` squares, then a power and a division: rounded a few times
    assert_within(ours, expected, reduction_bound(size + 4, np.abs(expected)) + ulp_bound(expected))
    with pytest.raises(VerifyException, match="size 0 must be positive"):
        nn.LRNOp.build(value(x.shape), size=0)


@SETTINGS
@given(st.integers(0, 2), st.lists(st.integers(0, 6), max_size=4))
def test_split_matches_numpy(axis: int, cuts: list[int]) -> None:
    x = np.arange(6 * 6 * 6, dtype=np.float32).reshape(6, 6, 6)
    indices = tuple(sorted(cuts))
    op = nn.SplitOp.build(value(x.shape), indices=indices, axis=axis)
    parts = KERNELS["nn.split"](x, indices=indices, axis=axis)
    assert len(op.results) == len(parts) == len(indices) + 1
    for r, p, e in zip(op.results, parts, np.split(x, list(indices), axis=axis), strict=True):
        assert nn.shape_of(r.type) == p.shape
        np.testing.assert_array_equal(p, e)


def test_split_relation_errors() -> None:
    with pytest.raises(VerifyException, match="must be non-decreasing within"):
        nn.SplitOp.build(value((6,)), indices=(4, 2))
    with pytest.raises(VerifyException, match="must be non-decreasing within"):
        nn.SplitOp.build(value((6,)), indices=(7,))


def _python_slice(dim: int, begin: int, end: int, stride: int) -> slice:
    return slice(begin, None if end < 0 else end, stride)


@SETTINGS
@given(st.data())
def test_strided_slice_matches_python_slicing(data: Any) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    begin, end, strides = [], [], []
    for d in shape:
        s = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
        lo, hi = (0, d) if s > 0 else (-1, d - 1)
        begin.append(data.draw(st.integers(lo, hi)))
        end.append(data.draw(st.integers(lo, hi)))
        strides.append(s)
    x = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    op = nn.StridedSliceOp.build(value(shape, i64), begin=begin, end=end, strides=strides)
    ours = KERNELS["nn.strided_slice"](x, begin=begin, end=end, strides=strides)
    assert ours.shape == nn.shape_of(op.result.type)
    if all(len(range(b, e, s)) for b, e, s in zip(begin, end, strides, strict=True)):
        index = tuple(_python_slice(*a) for a in zip(shape, begin, end, strides, strict=True))
        np.testing.assert_array_equal(ours, x[index])


def test_strided_slice_relation_errors() -> None:
    with pytest.raises(VerifyException, match=r"begin 6 / end 0 out of range \[0, 5\]"):
        nn.StridedSliceOp.build(value((5,)), begin=(6,), end=(0,))
    with pytest.raises(VerifyException, match=r"out of range \[-1, 4\] for size 5 and stride -1"):
        nn.StridedSliceOp.build(value((5,)), begin=(5,), end=(0,), strides=(-1,))
    with pytest.raises(VerifyException, match="strides must be non-zero"):
        nn.StridedSliceOp.build(value((5,)), begin=(0,), end=(5,), strides=(0,))
    with pytest.raises(VerifyException, match="'begin' must have 2 values"):
        nn.StridedSliceOp.build(value((5, 5)), begin=(0,), end=(5, 5))


def test_take_clamps_and_wraps_negative_indices() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[-1, 0], [3, 9]], dtype=np.int64)
    op = nn.TakeOp.build(value(x.shape), value(idx.shape, i64), axis=1)
    out = KERNELS["nn.take"](x, idx, axis=1)
    assert out.shape == nn.shape_of(op.result.type) == (3, 2, 2)
    np.testing.assert_array_equal(out, np.take(x, [[3, 0], [3, 3]], axis=1))
    with pytest.raises(VerifyException, match="indices must be i32 or i64"):
        nn.TakeOp.build(value(x.shape), value((2,)))


# --------------------------------------------------------------------------
# resize2d
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "mode", "rounding"),
    [
        ("nearest_neighbor", "half_pixel", "round_prefer_floor"),
        ("nearest_neighbor", "asymmetric", "floor"),
        ("nearest_neighbor", "align_corners", "round_prefer_ceil"),
        ("nearest_neighbor", "half_pixel", "ceil"),
        ("linear", "half_pixel", "round_prefer_floor"),
        ("linear", "align_corners", "round_prefer_floor"),
        ("linear", "asymmetric", "round_prefer_floor"),
        ("linear", "pytorch_half_pixel", "round_prefer_floor"),
        ("linear", "half_pixel_symmetric", "round_prefer_floor"),
    ],
)
@pytest.mark.parametrize("scales", [(2.0, 1.5), (0.6, 0.8), (1.0, 3.0)])
def test_resize2d_matches_onnx(method: str, mode: str, rounding: str, scales: tuple[float, float]) -> None:
    x = np.random.default_rng(3).standard_normal((1, 2, 5, 4)).astype(np.float32)
    size = tuple(int(math.floor(d * np.float32(s))) for d, s in zip(x.shape[2:], scales, strict=True))
    op = nn.Resize2DOp.build(
        value(x.shape),
        size=size,
        method=method,
        coordinate_transformation_mode=mode,
        rounding_method=rounding,
        scale_h=float(np.float32(scales[0])),
        scale_w=float(np.float32(scales[1])),
    )
    ours = KERNELS["nn.resize2d"](x, **op.attr_values())
    assert ours.shape == nn.shape_of(op.result.type)
    expected = onnx_ref(
        "Resize",
        [x, np.array([1, 1, *scales], dtype=np.float32)],
        ["x", "", "scales"],
        mode="nearest" if method == "nearest_neighbor" else "linear",
        coordinate_transformation_mode=mode,
        nearest_mode=rounding,
    )
    # 4 taps whose weights come from a source coordinate computed in float32, off by up
    # to u * (the input's size); nearest neighbour copies (see tests/support/bounds.py)
    k = 4 * (max(x.shape[2:]) + 4)
    bound = reduction_bound(k, np.abs(x).max()) if method != "nearest_neighbor" else 0.0
    assert_within(ours, expected.astype(np.float32), bound)


def test_resize2d_relation_errors() -> None:
    with pytest.raises(VerifyException, match="method 'cubic' is not one of nearest_neighbor, linear"):
        nn.Resize2DOp.build(value((1, 1, 2, 2)), size=(4, 4), method="cubic")
    with pytest.raises(VerifyException, match="data must have rank 4"):
        nn.Resize2DOp.build(value((1, 2, 2)), size=(4, 4))


# --------------------------------------------------------------------------
# Fixes the frontend relies on
# --------------------------------------------------------------------------


def test_pad_wrap_mode() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    op = nn.PadOp.build(value(x.shape), pad_width=(1, 0, 2, 4), pad_mode="wrap")
    out = KERNELS["nn.pad"](x, **op.attr_values())
    assert out.shape == nn.shape_of(op.result.type) == (3, 9)
    np.testing.assert_array_equal(out, np.pad(x, ((1, 0), (2, 4)), mode="wrap"))


@pytest.mark.parametrize("axis", [-3, -2, -1, 0, 1, 2, 3])
def test_flatten_negative_axis_counts_from_the_end(axis: int) -> None:
    x = np.zeros((2, 3, 4), dtype=np.float32)
    op = nn.FlattenOp.build(value(x.shape), axis=axis)
    k = axis + 3 if axis < 0 else axis
    expected = (math.prod(x.shape[:k]), math.prod(x.shape[k:]))
    assert nn.shape_of(op.result.type) == expected == KERNELS["nn.flatten"](x, axis=axis).shape


def test_scalar_constants_stay_rank_0() -> None:
    op = nn.ConstantOp.from_array(np.float32(2.5))
    assert nn.shape_of(op.result.type) == ()
    assert op.ndarray().shape == ()


def test_new_ops_round_trip_through_text() -> None:
    text = """
func.func @main(%x: tensor<1x4x6x6xf32>, %i: tensor<2xi64>) -> (tensor<1x1x6x6xf32>, tensor<1x3x6x6xf32>, tensor<1x4x3x2xf32>, tensor<1x4x12x12xf32>, tensor<1x4x11x11xf32>, tensor<1x4x6x6xf32>, tensor<1x4x2x6xf32>) {
  %a, %b = nn.split %x {indices = array<i64: 1>, axis = 1 : i64} : (tensor<1x4x6x6xf32>) -> (tensor<1x1x6x6xf32>, tensor<1x3x6x6xf32>)
  %s = nn.strided_slice %x {begin = array<i64: 0, 0, 5, 0>, end = array<i64: 1, 4, -1, 6>, strides = array<i64: 1, 1, -2, 3>} : (tensor<1x4x6x6xf32>) -> tensor<1x4x3x2xf32>
  %r = nn.resize2d %x {size = array<i64: 12, 12>, method = "linear"} : (tensor<1x4x6x6xf32>) -> tensor<1x4x12x12xf32>
  %w = nn.constant dense<0.5> : tensor<4x1x1x1xf32>
  %t = nn.conv2d_transpose %x, %w {strides = array<i64: 2, 2>, groups = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x1x1xf32>) -> tensor<1x4x11x11xf32>
  %l = nn.lrn %x {size = 3 : i64} : tensor<1x4x6x6xf32>
  %g = nn.take %x, %i {axis = 2 : i64} : (tensor<1x4x6x6xf32>, tensor<2xi64>) -> tensor<1x4x2x6xf32>
  func.return %a, %b, %s, %r, %t, %l, %g : tensor<1x1x6x6xf32>, tensor<1x3x6x6xf32>, tensor<1x4x3x2xf32>, tensor<1x4x12x12xf32>, tensor<1x4x11x11xf32>, tensor<1x4x6x6xf32>, tensor<1x4x2x6xf32>
}
"""
    module = parse_module(text)
    again = parse_module(str(module))
    assert str(again) == str(module)
    x = np.arange(144, dtype=np.float32).reshape(1, 4, 6, 6)
    outs = run_reference(again, x, np.array([-1, 2]))
    np.testing.assert_array_equal(outs[2][0, 0], x[0, 0, 5::-2, 0::3])
    np.testing.assert_array_equal(outs[6][0, 0], x[0, 0, [5, 2]])
    np.testing.assert_array_equal(outs[4][0, 0, ::2, ::2], 0.5 * x[0, 0])
