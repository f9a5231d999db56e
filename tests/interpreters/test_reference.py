"""The numpy reference (`byoc.run_reference`): every nn op has an implementation,
and each is checked against onnxruntime on small inputs or against values
computed by hand. `@covers` records which ops a test checks; the last test
asserts that together they cover every op of the dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import (
    assert_within,
    det_bound,
    layer_norm_bound,
    normwise_bound,
    reduction_bound,
    reduction_depth,
    reduction_length,
    ulp_bound,
)
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from byoc import parse_module, run_reference
from byoc.dialects import nn
from byoc.interpreters.nn import NnFunctions

Array = np.ndarray[Any, Any]
COVERED: set[str] = set()
RNG = np.random.default_rng(20240229)
"""Reseeded for each test from its name (tests/conftest.py)."""


def covers(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    COVERED.update(names)
    return lambda fn: fn


def rand(*shape: int, low: float = -2.0, high: float = 2.0) -> Array:
    return RNG.uniform(low, high, size=shape).astype(np.float32)


_last_graph: list[Any] = []
"""The module and inputs of the latest `run_op`: `close` derives its bound from them."""


def run_op(cls: type[nn.NNOp], inputs: Sequence[Array], **attrs: Any) -> list[Array]:
    """Build `@main` around one op (result types from `infer`) and run the reference."""
    arg_types = [nn.tensor(a.shape, nn.element_type_of(a.dtype)) for a in inputs]
    block = Block(arg_types=arg_types)
    op = cls.build(*block.args, **attrs)
    block.add_op(op)
    block.add_op(ReturnOp(*op.results))
    func = FuncOp(
        "main", FunctionType.from_lists(arg_types, [r.type for r in op.results]), Region(block)
    )
    module = ModuleOp([func])
    module.verify()
    _last_graph[:] = [module, list(inputs)]
    outputs = run_reference(module, *inputs)
    for out, result in zip(outputs, op.results, strict=True):
        assert out.shape == nn.shape_of(result.type), (
            f"{cls.name}: shape differs from the inferred type"
        )
        assert out.dtype == nn.numpy_dtype(result.type.element_type), f"{cls.name}: dtype"  # type: ignore[attr-defined]
    return outputs


_ONNX_DTYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
}


def ort(
    op_type: str,
    inputs: Sequence[Array | None],
    consts: Sequence[Array | None] = (),
    outputs: int = 1,
    opset: int = 19,
    **attrs: Any,
) -> list[Array]:
    """Run one ONNX node with onnxruntime (one thread): `inputs` are graph inputs,
    `consts` further node inputs given as initializers (None: an omitted input)."""
    import onnxruntime

    names: list[str] = []
    graph_inputs = []
    feeds: dict[str, Array] = {}
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        name = f"x{i}"
        names.append(name)
        graph_inputs.append(helper.make_tensor_value_info(name, _ONNX_DTYPES[a.dtype], a.shape))
        feeds[name] = a
    initializers = []
    for i, c in enumerate(consts):
        if c is None:
            names.append("")
            continue
        name = f"c{i}"
        names.append(name)
        initializers.append(numpy_helper.from_array(c, name))
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        graph_inputs,
        [helper.make_empty_tensor_value_info(o) for o in outs],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return [np.asarray(o) for o in session.run(None, feeds)]


def max_magnitude(module: Any, inputs: Any, expected: Array) -> Array:
    """The magnitude of the output shaped like `expected` (and at least |expected|)."""
    from support.bounds import magnitude

    e = np.abs(np.asarray(expected, dtype=np.float64))
    for m in magnitude(module, inputs):
        if m.shape == e.shape:
            return np.maximum(m, e)
    return e


def close(actual: Array, expected: Array, module: Any = None, inputs: Any = None) -> None:
    """`actual` (our reference) within the f32 bound (tests/support/bounds.py) of `expected`
    (onnxruntime or numpy), for the graph of the latest `run_op` unless one is given."""
    module, inputs = (module, inputs) if module is not None else _last_graph
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    expected = expected.astype(actual.dtype)
    k = reduction_length(module)
    if reduction_depth(module) > 1:
        bound = normwise_bound(k, expected)
    else:
        bound = reduction_bound(k, max_magnitude(module, inputs, expected)) + ulp_bound(expected)
    assert_within(actual, expected, bound)


# --------------------------------------------------------------------------
# every op has an implementation
# --------------------------------------------------------------------------


def test_every_nn_op_has_a_reference_implementation() -> None:
    implemented = {op.name for op, _ in NnFunctions._impls()}  # pyright: ignore[reportPrivateUsage]
    assert implemented == set(nn.NN_OPS)


# --------------------------------------------------------------------------
# elementwise
# --------------------------------------------------------------------------

BINARY = [
    ("nn.add", "Add"),
    ("nn.subtract", "Sub"),
    ("nn.multiply", "Mul"),
    ("nn.divide", "Div"),
    ("nn.maximum", "Max"),
    ("nn.minimum", "Min"),
    ("nn.power", "Pow"),
    ("nn.prelu", "PRelu"),
]


@covers(*[n for n, _ in BINARY])
@pytest.mark.parametrize(("name", "onnx_op"), BINARY)
def test_binary_ops_broadcast_like_onnx(name: str, onnx_op: str) -> None:
    a = rand(2, 3, 4, low=0.5, high=2.0) if name == "nn.power" else rand(2, 3, 4)
    b = rand(3, 1, low=0.5, high=2.0) if name in ("nn.divide", "nn.power") else rand(3, 1)
    if name == "nn.prelu":
        b = rand(4)  # the slope broadcasts against x (unidirectionally)
    (got,) = run_op(nn.NN_OPS[name], [a, b])
    (want,) = ort(onnx_op, [a, b])
    close(got, want)


def test_binary_int_ops_by_hand() -> None:
    a = np.array([[1, -2, 3]], dtype=np.int32)
    b = np.array([[4], [-5]], dtype=np.int32)
    assert run_op(nn.AddOp, [a, b])[0].tolist() == [[5, 2, 7], [-4, -7, -2]]
    assert run_op(nn.SubtractOp, [a, b])[0].tolist() == [[-3, -6, -1], [6, 3, 8]]
    assert run_op(nn.MultiplyOp, [a, b])[0].tolist() == [[4, -8, 12], [-5, 10, -15]]
    assert run_op(nn.MaximumOp, [a, b])[0].tolist() == [[4, 4, 4], [1, -2, 3]]
    assert run_op(nn.MinimumOp, [a, b])[0].tolist() == [[1, -2, 3], [-5, -5, -5]]
    c = np.array([2**40, -3], dtype=np.int64)
    assert run_op(nn.AddOp, [c, c])[0].tolist() == [2**41, -6]


UNARY = [
    ("nn.relu", "Relu", {}),
    ("nn.sigmoid", "Sigmoid", {}),
    ("nn.tanh", "Tanh", {}),
    ("nn.exp", "Exp", {}),
    ("nn.log", "Log", {}),
    ("nn.sqrt", "Sqrt", {}),
    ("nn.negative", "Neg", {}),
    ("nn.abs", "Abs", {}),
    ("nn.erf", "Erf", {}),
    ("nn.reciprocal", "Reciprocal", {}),
    ("nn.hard_swish", "HardSwish", {}),
    ("nn.leaky_relu", "LeakyRelu", {"alpha": 0.3}),
    ("nn.hard_sigmoid", "HardSigmoid", {"alpha": 0.25, "beta": 0.4}),
]


@covers(*[n for n, _, _ in UNARY])
@pytest.mark.parametrize(("name", "onnx_op", "attrs"), UNARY)
def test_unary_ops_match_onnx(name: str, onnx_op: str, attrs: dict[str, float]) -> None:
    positive = name in ("nn.log", "nn.sqrt", "nn.reciprocal")
    x = rand(2, 3, 5, low=0.1, high=4.0) if positive else rand(2, 3, 5, low=-4.0, high=4.0)
    (got,) = run_op(nn.NN_OPS[name], [x], **attrs)
    (want,) = ort(onnx_op, [x], **attrs)
    close(got, want)


def test_unary_int_ops_by_hand() -> None:
    x = np.array([-3, 0, 5], dtype=np.int64)
    assert run_op(nn.ReluOp, [x])[0].tolist() == [0, 0, 5]
    assert run_op(nn.NegativeOp, [x])[0].tolist() == [3, 0, -5]
    assert run_op(nn.AbsOp, [x])[0].tolist() == [3, 0, 5]


@covers("nn.clip")
def test_clip_matches_onnx_and_clamps_integers() -> None:
    x = rand(4, 6, low=-8.0, high=8.0)
    (got,) = run_op(nn.ClipOp, [x], a_min=-1.5, a_max=6.0)
    (want,) = ort("Clip", [x], [np.array(-1.5, np.float32), np.array(6.0, np.float32)])
    close(got, want)
    (unbounded,) = run_op(nn.ClipOp, [x])
    close(unbounded, x)
    small = np.array([-10.0, -1.0, 0.0, 3.0, 9.0], dtype=np.float32)
    assert run_op(nn.ClipOp, [small], a_min=-0.5, a_max=2.5)[0].tolist() == [
        -0.5,
        -0.5,
        0.0,
        2.5,
        2.5,
    ]


@covers("nn.cast")
def test_cast_truncates_like_onnx() -> None:
    x = np.array([-2.7, -0.5, 0.0, 1.5, 3.9], dtype=np.float32)
    (to_i32,) = run_op(nn.CastOp, [x], dtype="i32")
    (want,) = ort("Cast", [x], to=TensorProto.INT32)
    assert to_i32.dtype == np.int32 and to_i32.tolist() == want.tolist() == [-2, 0, 0, 1, 3]
    (back,) = run_op(nn.CastOp, [np.array([7, -1], dtype=np.int64)], dtype="f32")
    assert back.dtype == np.float32 and back.tolist() == [7.0, -1.0]


# --------------------------------------------------------------------------
# convolution, linear algebra, normalisation
# --------------------------------------------------------------------------

CONV_CASES = [
    # (N, C, H, W), (O, I, KH, KW), strides, padding (t, l, b, r), dilation, groups
    ((1, 3, 7, 7), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((2, 3, 8, 9), (5, 3, 3, 2), (2, 3), (1, 0, 2, 1), (1, 1), 1),
    ((2, 4, 9, 9), (6, 2, 3, 3), (1, 2), (1, 1, 1, 1), (2, 1), 2),
    ((1, 6, 6, 6), (6, 1, 3, 3), (2, 2), (1, 1, 0, 0), (1, 2), 6),  # depthwise
]


@covers("nn.conv2d")
@pytest.mark.parametrize(("xs", "ws", "strides", "padding", "dilation", "groups"), CONV_CASES)
def test_conv2d_matches_onnx(
    xs: tuple[int, ...],
    ws: tuple[int, ...],
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int],
    groups: int,
) -> None:
    x, w = rand(*xs), rand(*ws)
    (got,) = run_op(
        nn.Conv2DOp, [x, w], strides=strides, padding=padding, dilation=dilation, groups=groups
    )
    (want,) = ort(
        "Conv",
        [x, w],
        strides=list(strides),
        pads=list(padding),
        dilations=list(dilation),
        group=groups,
    )
    close(got, want)


def test_conv2d_by_hand() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), dtype=np.float32)
    (got,) = run_op(nn.Conv2DOp, [x, w], strides=(2, 2))
    # window sums of [[0,1],[4,5]], [[2,3],[6,7]], ...
    assert got.reshape(2, 2).tolist() == [[10.0, 18.0], [42.0, 50.0]]


@covers("nn.conv2d_transpose")
@pytest.mark.parametrize(
    ("xs", "ws", "strides", "padding", "output_padding", "groups"),
    [
        ((1, 2, 3, 3), (2, 3, 3, 3), (1, 1), (0, 0, 0, 0), (0, 0), 1),
        ((2, 4, 3, 4), (4, 1, 3, 2), (2, 2), (1, 0, 1, 1), (1, 1), 2),
    ],
)
def test_conv2d_transpose_matches_onnx(
    xs: tuple[int, ...],
    ws: tuple[int, ...],
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    output_padding: tuple[int, int],
    groups: int,
) -> None:
    x, w = rand(*xs), rand(*ws)
    (got,) = run_op(
        nn.Conv2DTransposeOp,
        [x, w],
        strides=strides,
        padding=padding,
        output_padding=output_padding,
        groups=groups,
    )
    (want,) = ort(
        "ConvTranspose",
        [x, w],
        strides=list(strides),
        pads=list(padding),
        output_padding=list(output_padding),
        group=groups,
    )
    close(got, want)


@covers("nn.dense")
def test_dense_is_x_times_w_transposed() -> None:
    x, w = rand(3, 5), rand(4, 5)
    (got,) = run_op(nn.DenseOp, [x, w])
    (want,) = ort("Gemm", [x, w], transB=1)
    close(got, want)
    x3 = rand(2, 3, 5)
    (got3,) = run_op(nn.DenseOp, [x3, w])
    close(got3, np.einsum("bik,nk->bin", x3, w))
    small = run_op(
        nn.DenseOp,
        [np.array([[1.0, 2.0]], np.float32), np.array([[3.0, 4.0], [5.0, -6.0]], np.float32)],
    )
    assert small[0].tolist() == [[11.0, -7.0]]


@covers("nn.matmul")
@pytest.mark.parametrize(
    ("a", "b"), [((3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))]
)
def test_matmul_matches_onnx(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    x, y = rand(*a), rand(*b)
    (got,) = run_op(nn.MatmulOp, [x, y])
    (want,) = ort("MatMul", [x, y])
    close(got, want)


@covers("nn.bias_add")
def test_bias_add_by_hand() -> None:
    x = np.zeros((2, 3, 1, 2), dtype=np.float32)
    b = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    (got,) = run_op(nn.BiasAddOp, [x, b])
    assert got[1, :, 0, 1].tolist() == [1.0, 2.0, 3.0]
    assert got[0, 2].tolist() == [[3.0, 3.0]]
    (last,) = run_op(nn.BiasAddOp, [np.ones((2, 3), np.float32), b], axis=-1)
    assert last.tolist() == [[2.0, 3.0, 4.0], [2.0, 3.0, 4.0]]


@covers("nn.batch_norm")
def test_batch_norm_matches_onnx() -> None:
    x = rand(2, 3, 4, 5)
    gamma, beta, mean = rand(3), rand(3), rand(3)
    var = rand(3, low=0.5, high=2.0)
    (got,) = run_op(nn.BatchNormOp, [x, gamma, beta, mean, var], epsilon=1e-3)
    (want,) = ort("BatchNormalization", [x, gamma, beta, mean, var], epsilon=1e-3)
    close(got, want)


@covers("nn.softmax")
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax_matches_onnx(axis: int) -> None:
    x = rand(2, 3, 4, low=-5.0, high=5.0)
    (got,) = run_op(nn.SoftmaxOp, [x], axis=axis)
    (want,) = ort("Softmax", [x], axis=axis)
    close(got, want)


@covers("nn.lrn")
def test_lrn_matches_onnx() -> None:
    x = rand(2, 5, 3, 3)
    (got,) = run_op(nn.LRNOp, [x], size=3, alpha=2e-4, beta=0.6, bias=1.5)
    (want,) = ort("LRN", [x], size=3, alpha=2e-4, beta=0.6, bias=1.5)
    close(got, want)


# --------------------------------------------------------------------------
# pools
# --------------------------------------------------------------------------

POOL_CASES = [
    # (N, C, H, W), kernel, strides, padding, dilation, ceil_mode
    ((1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 1, 7, 8), (2, 3), (2, 2), (0, 1, 0, 1), (1, 1), True),
    ((1, 2, 9, 9), (3, 2), (3, 2), (1, 0, 1, 0), (1, 1), True),
    ((1, 1, 9, 9), (2, 2), (1, 1), (0, 0, 0, 0), (2, 3), False),
]


@covers("nn.max_pool2d")
@pytest.mark.parametrize(
    ("xs", "kernel", "strides", "padding", "dilation", "ceil_mode"), POOL_CASES
)
def test_max_pool2d_matches_onnx(
    xs: tuple[int, ...],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int],
    ceil_mode: bool,
) -> None:
    x = rand(*xs)
    attrs = {"pool_size": kernel, "strides": strides, "padding": padding, "dilation": dilation}
    (got,) = run_op(nn.MaxPool2DOp, [x], ceil_mode=ceil_mode, **attrs)
    (want,) = ort(
        "MaxPool",
        [x],
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(padding),
        dilations=list(dilation),
        ceil_mode=int(ceil_mode),
    )
    close(got, want)


@covers("nn.avg_pool2d")
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize(
    ("xs", "kernel", "strides", "padding", "ceil_mode"),
    [
        ((1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0), False),
        ((2, 3, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), False),
        ((2, 1, 7, 8), (2, 3), (2, 2), (0, 1, 0, 1), True),
        ((1, 2, 5, 5), (3, 3), (2, 2), (1, 1, 1, 1), True),
    ],
)
def test_avg_pool2d_matches_onnx(
    xs: tuple[int, ...],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    ceil_mode: bool,
    count_include_pad: bool,
) -> None:
    x = rand(*xs)
    (got,) = run_op(
        nn.AvgPool2DOp,
        [x],
        pool_size=kernel,
        strides=strides,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )
    (want,) = ort(
        "AveragePool",
        [x],
        kernel_shape=list(kernel),
        strides=list(strides),
        pads=list(padding),
        ceil_mode=int(ceil_mode),
        count_include_pad=int(count_include_pad),
    )
    close(got, want)


def test_avg_pool2d_padding_by_hand() -> None:
    x = np.ones((1, 1, 2, 2), dtype=np.float32)
    attrs = {"pool_size": (2, 2), "padding": (1, 1, 0, 0)}
    (excluded,) = run_op(nn.AvgPool2DOp, [x], **attrs)
    (included,) = run_op(nn.AvgPool2DOp, [x], count_include_pad=True, **attrs)
    assert excluded.reshape(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    # corner window holds one real 1 and three padded zeros; edges two and two
    assert included.reshape(2, 2).tolist() == [[0.25, 0.5], [0.5, 1.0]]


@covers("nn.global_avg_pool2d", "nn.global_max_pool2d")
def test_global_pools_match_onnx() -> None:
    x = rand(2, 3, 4, 5)
    close(run_op(nn.GlobalAvgPool2DOp, [x])[0], ort("GlobalAveragePool", [x])[0])
    close(run_op(nn.GlobalMaxPool2DOp, [x])[0], ort("GlobalMaxPool", [x])[0])


# --------------------------------------------------------------------------
# layout
# --------------------------------------------------------------------------


@covers("nn.reshape", "nn.flatten", "nn.transpose")
def test_reshape_flatten_transpose_match_onnx() -> None:
    x = rand(2, 3, 4)
    close(
        run_op(nn.ReshapeOp, [x], newshape=(4, 6))[0],
        ort("Reshape", [x], [np.array([4, 6], np.int64)])[0],
    )
    for axis in (0, 1, 2, 3, -1):
        close(run_op(nn.FlattenOp, [x], axis=axis)[0], ort("Flatten", [x], axis=axis)[0])
    close(run_op(nn.TransposeOp, [x], axes=(1, 2, 0))[0], ort("Transpose", [x], perm=[1, 2, 0])[0])
    close(run_op(nn.TransposeOp, [x])[0], x.T)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert run_op(nn.TransposeOp, [ints])[0].tolist() == [[0, 3], [1, 4], [2, 5]]


@covers("nn.concatenate")
def test_concatenate_matches_onnx() -> None:
    a, b, c = rand(2, 1, 3), rand(2, 4, 3), rand(2, 2, 3)
    close(run_op(nn.ConcatenateOp, [a, b, c], axis=1)[0], ort("Concat", [a, b, c], axis=1)[0])
    close(run_op(nn.ConcatenateOp, [a, a], axis=-1)[0], ort("Concat", [a, a], axis=-1)[0])


@covers("nn.pad")
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_matches_onnx(mode: str) -> None:
    x = rand(2, 3, 4)
    pad_width = (0, 1, 2, 1, 1, 2)  # (before, after) per axis
    onnx_pads = np.array([0, 2, 1, 1, 1, 2], dtype=np.int64)  # all befores, then all afters
    attrs: dict[str, Any] = {"pad_width": pad_width, "pad_mode": mode}
    consts: list[Array | None] = [onnx_pads]
    if mode == "constant":
        attrs["pad_value"] = 2.5
        consts.append(np.array(2.5, np.float32))
    (got,) = run_op(nn.PadOp, [x], **attrs)
    (want,) = ort("Pad", [x], consts, mode=mode)
    close(got, want)


@covers("nn.split")
def test_split_matches_onnx() -> None:
    x = rand(3, 7)
    got = run_op(nn.SplitOp, [x], indices=(2, 3), axis=1)
    want = ort("Split", [x], [np.array([2, 1, 4], np.int64)], outputs=3, axis=1)
    for g, w in zip(got, want, strict=True):
        close(g, w)


@covers("nn.strided_slice")
def test_strided_slice_matches_onnx() -> None:
    x = rand(5, 6)
    (got,) = run_op(nn.StridedSliceOp, [x], begin=(4, 1), end=(0, 6), strides=(-2, 2))
    (want,) = ort(
        "Slice",
        [x],
        [
            np.array([4, 1], np.int64),
            np.array([0, 6], np.int64),
            np.array([0, 1], np.int64),
            np.array([-2, 2], np.int64),
        ],
    )
    close(got, want)
    assert run_op(
        nn.StridedSliceOp, [np.arange(4, dtype=np.int64)], begin=(3,), end=(-1,), strides=(-1,)
    )[0].tolist() == [3, 2, 1, 0]


@covers("nn.take")
def test_take_matches_onnx() -> None:
    x = rand(4, 3)
    idx = np.array([[0, 3], [1, -1]], dtype=np.int64)
    (got,) = run_op(nn.TakeOp, [x, idx], axis=0)
    (want,) = ort("Gather", [x, idx], axis=0)
    close(got, want)
    (cols,) = run_op(nn.TakeOp, [x, np.array([2, 0], np.int32)], axis=1)
    close(cols, x[:, [2, 0]])


@covers("nn.resize2d")
@pytest.mark.parametrize(
    ("method", "mode"),
    [("nearest_neighbor", "asymmetric"), ("linear", "half_pixel"), ("linear", "align_corners")],
)
def test_resize2d_matches_onnx(method: str, mode: str) -> None:
    x = rand(1, 2, 3, 4)
    (got,) = run_op(
        nn.Resize2DOp, [x], size=(6, 8), method=method, coordinate_transformation_mode=mode
    )
    (want,) = ort(
        "Resize",
        [x],
        [None, None, np.array([1, 2, 6, 8], np.int64)],
        mode="nearest" if method == "nearest_neighbor" else "linear",
        coordinate_transformation_mode=mode,
        nearest_mode="round_prefer_floor",
    )
    close(got, want)


# --------------------------------------------------------------------------
# reductions and constants
# --------------------------------------------------------------------------

REDUCE = [
    ("nn.reduce_mean", "ReduceMean"),
    ("nn.reduce_sum", "ReduceSum"),
    ("nn.reduce_max", "ReduceMax"),
]


@covers(*[n for n, _ in REDUCE])
@pytest.mark.parametrize(("name", "onnx_op"), REDUCE)
@pytest.mark.parametrize(("axes", "keepdims"), [((1,), False), ((0, -1), True), ((), False)])
def test_reductions_match_onnx(
    name: str, onnx_op: str, axes: tuple[int, ...], keepdims: bool
) -> None:
    x = rand(2, 3, 4)
    (got,) = run_op(nn.NN_OPS[name], [x], axes=axes, keepdims=keepdims)
    consts = [np.array(axes, np.int64)] if axes else []
    (want,) = ort(onnx_op, [x], consts, keepdims=int(keepdims), opset=18)
    close(got, want)


def test_integer_reductions_by_hand() -> None:
    x = np.array([[1, 5, -2], [4, 0, 7]], dtype=np.int64)
    assert run_op(nn.ReduceSumOp, [x], axes=(0,))[0].tolist() == [5, 5, 5]
    assert run_op(nn.ReduceMaxOp, [x], axes=(1,), keepdims=True)[0].tolist() == [[5], [7]]


@covers("nn.constant")
def test_constants_through_text() -> None:
    big = np.arange(20, dtype=np.float32) / 4
    hex_text = big.tobytes().hex().upper()
    module = parse_module(
        f"""
        func.func @main(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<20xf32>, tensor<3xi64>) {{
          %c = nn.constant dense<[[1.0, -2.0], [0.5, 4.0]]> : tensor<2x2xf32>
          %h = nn.constant dense<"0x{hex_text}"> : tensor<20xf32>
          %i = nn.constant dense<7> : tensor<3xi64>
          %s = nn.add %x, %c : tensor<2x2xf32>
          func.return %s, %h, %i : tensor<2x2xf32>, tensor<20xf32>, tensor<3xi64>
        }}
        """
    )
    s, h, i = run_reference(module, np.ones((2, 2), np.float32))
    assert s.tolist() == [[2.0, -1.0], [1.5, 5.0]]
    assert h.dtype == np.float32 and h.tolist() == big.tolist()
    assert i.dtype == np.int64 and i.tolist() == [7, 7, 7]


def test_a_graph_runs_end_to_end_with_named_inputs() -> None:
    module = parse_module(
        """
        func.func @main(%a: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3xf32> {
          %0 = nn.conv2d %a, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
          %1 = nn.relu %0 : tensor<1x3x4x4xf32>
          %2 = nn.global_avg_pool2d %1 : (tensor<1x3x4x4xf32>) -> tensor<1x3x1x1xf32>
          %3 = nn.flatten %2 : (tensor<1x3x1x1xf32>) -> tensor<1x3xf32>
          %4 = nn.softmax %3 : tensor<1x3xf32>
          func.return %4 : tensor<1x3xf32>
        }
        """
    )
    a, w = rand(1, 2, 4, 4), rand(3, 2, 3, 3)
    (by_position,) = run_reference(module, a, w)
    (by_name,) = run_reference(module, w=w, a=a)
    (mixed,) = run_reference(module, a, w=w)
    conv = ort("Conv", [a, w], pads=[1, 1, 1, 1])[0]
    pooled = np.maximum(conv, 0).mean(axis=(2, 3))
    e = np.exp(pooled - pooled.max())
    close(by_position, (e / e.sum()).astype(np.float32), module, [a, w])
    assert by_name.tolist() == by_position.tolist() == mixed.tolist()


def test_func_call_between_functions() -> None:
    module = parse_module(
        """
        func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
          %0 = func.call @twice(%a) : (tensor<3xf32>) -> tensor<3xf32>
          %1 = func.call @twice(%0) : (tensor<3xf32>) -> tensor<3xf32>
          func.return %1 : tensor<3xf32>
        }
        func.func private @twice(%x: tensor<3xf32>) -> tensor<3xf32> {
          %0 = nn.add %x, %x : tensor<3xf32>
          func.return %0 : tensor<3xf32>
        }
        """
    )
    (out,) = run_reference(module, np.array([1.0, -2.0, 0.5], np.float32))
    assert out.tolist() == [4.0, -8.0, 2.0]


def test_inputs_are_checked_against_the_signature() -> None:
    module = parse_module(
        "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  func.return %a : tensor<3xf32>\n}"
    )
    with pytest.raises(ValueError, match="has shape"):
        run_reference(module, np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="dtype"):
        run_reference(module, np.zeros(3, np.float64))
    with pytest.raises(ValueError, match="takes 1 inputs"):
        run_reference(module)
    with pytest.raises(ValueError, match="given twice"):
        run_reference(module, np.zeros(3, np.float32), a=np.zeros(3, np.float32))
    with pytest.raises(KeyError, match="unknown input"):
        run_reference(module, b=np.zeros(3, np.float32))


def test_inputs_come_as_arguments_as_executable_run_takes_them() -> None:
    """A list of inputs is one (wrong) input, as for `Executable.run`: the error says so."""
    module = parse_module(
        "func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {\n"
        "  %0 = nn.add %a, %b : tensor<3xf32>\n  func.return %0 : tensor<3xf32>\n}"
    )
    a, b = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    with pytest.raises(TypeError, match=r"as Executable.run does: run_reference\(module, \*inputs\)"):
        run_reference(module, [a, b])
    (out,) = run_reference(module, *[a, b])
    assert out.tolist() == [3.0, 3.0, 3.0]


@covers(
    "nn.quantize", "nn.dequantize", "nn.requantize", "nn.qconv2d", "nn.qdense", "nn.qmatmul",
    "nn.dynamic_quantize",
)
def test_quantized_ops_run_in_the_interpreter() -> None:
    """Issue #13: the interpreter runs the quantized ops; exact integer arithmetic here (the
    kernels are compared with onnxruntime in test_qkernels.py)."""
    module = parse_module(
        """
        func.func @main(%x: tensor<1x2x3x3xf32>, %m: tensor<2x4xui8>) -> (tensor<1x3x3x3xf32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x4xui8>) {
          %s = nn.constant dense<0.5> : tensor<f32>
          %z = nn.constant dense<10> : tensor<ui8>
          %q = nn.quantize %x, %s, %z : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x3x3xui8>
          %w = nn.constant dense<[1, -1, 1, -1, 1, -1]> : tensor<3x2x1x1xi8>
          %wz = nn.constant dense<0> : tensor<3xi8>
          %a = nn.qconv2d %q, %w, %z, %wz : (tensor<1x2x3x3xui8>, tensor<3x2x1x1xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x3x3xi32>
          %si = nn.constant dense<0.5> : tensor<f32>
          %zi = nn.constant dense<0> : tensor<i32>
          %r = nn.requantize %a, %si, %zi, %s, %z : (tensor<1x3x3x3xi32>, tensor<f32>, tensor<i32>, tensor<f32>, tensor<ui8>) -> tensor<1x3x3x3xui8>
          %d = nn.dequantize %r, %s, %z : (tensor<1x3x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x3x3x3xf32>
          %wd = nn.constant dense<2> : tensor<3x4xui8>
          %k = nn.qdense %m, %wd, %z, %z : (tensor<2x4xui8>, tensor<3x4xui8>, tensor<ui8>, tensor<ui8>) -> tensor<2x3xi32>
          %wm = nn.constant dense<2> : tensor<4x3xui8>
          %l = nn.qmatmul %m, %wm, %z, %z : (tensor<2x4xui8>, tensor<4x3xui8>, tensor<ui8>, tensor<ui8>) -> tensor<2x3xi32>
          %y, %ys, %yz = nn.dynamic_quantize %x : (tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xui8>, tensor<f32>, tensor<ui8>)
          %yd = nn.dequantize %y, %ys, %yz : (tensor<1x2x3x3xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x3x3xf32>
          %yq = nn.quantize %yd, %s, %z : (tensor<1x2x3x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x2x3x3xui8>
          func.return %d, %k, %l, %m : tensor<1x3x3x3xf32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x4xui8>
        }
        """
    )
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3) - 8.25  # ties of x / 0.5 at .5
    m = np.arange(8, dtype=np.uint8).reshape(2, 4) * 30
    d, k, lm, m2 = run_reference(module, x, m)
    q = np.clip(np.rint(x / 0.5) + 10, 0, 255)
    acc = (q[:, 0] - 10) - (q[:, 1] - 10)  # every output channel: w = (1, -1)
    r = np.clip(np.rint(acc * 0.5 / 0.5) + 10, 0, 255)
    np.testing.assert_array_equal(d, np.broadcast_to((r - 10) * 0.5, (1, 3, 3, 3)).astype(np.float32))
    want = ((m.astype(np.int64) - 10) @ np.full((4, 3), -8)).astype(np.int32)
    np.testing.assert_array_equal(k, want)
    np.testing.assert_array_equal(lm, want)
    np.testing.assert_array_equal(m2, m)


@covers("nn.lstm", "nn.gru", "nn.rnn")
@pytest.mark.parametrize(("cls", "onnx_op", "gates"), [(nn.LSTMOp, "LSTM", 4), (nn.GRUOp, "GRU", 3), (nn.RNNOp, "RNN", 1)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_ops_match_onnx(cls: type[nn.NNOp], onnx_op: str, gates: int, direction: str) -> None:
    """All inputs given (more cases, and absent ones: tests/frontend/test_onnx_recurrent.py)."""
    from support.bounds import normwise_bound

    t, b, i, h = 4, 2, 3, 5
    d = 2 if direction == "bidirectional" else 1
    x = rand(t, b, i)
    w, r = rand(d, gates * h, i, low=-0.6, high=0.6), rand(d, gates * h, h, low=-0.6, high=0.6)
    bias = rand(d, 2 * gates * h, low=-0.5, high=0.5)
    seq = np.array([4, 2], np.int32)
    h0 = rand(d, b, h, low=-1.0, high=1.0)
    extra = [h0, rand(d, b, h), rand(d, 3 * h)] if cls is nn.LSTMOp else [h0]
    outs = 3 if cls is nn.LSTMOp else 2
    got = run_op(cls, [x, w, r, bias, seq, *extra], hidden_size=h, direction=direction)
    want = ort(onnx_op, [x, w, r, bias, seq, *extra], outputs=outs, opset=14, hidden_size=h, direction=direction)
    k = reduction_length(_last_graph[0])
    for a, e in zip(got, want, strict=True):
        assert_within(a, e, normwise_bound(k, e))


def test_every_nn_op_is_checked_here() -> None:
    assert set(nn.NN_OPS) - COVERED == set(), "nn ops without a reference test"
    assert COVERED - set(nn.NN_OPS) == set(), "tests cover ops the dialect lacks"


# --------------------------------------------------------------------------
# The ops of nn.math_ops and nn.logic_ops (ONNX coverage, issue #16)
# --------------------------------------------------------------------------

_ONNX_DTYPES.update(
    {
        np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.uint8): TensorProto.UINT8,
        np.dtype(np.int8): TensorProto.INT8,
        np.dtype(np.bool_): TensorProto.BOOL,
    }
)

MATH_UNARY = [
    # (nn op, ONNX op, attrs, low, high, opset)
    *[(f"nn.{n.lower()}", n, {}, -0.95, 0.95, 19) for n in ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Atanh")],
    *[(f"nn.{n.lower()}", n, {}, -3.0, 3.0, 19) for n in ("Sinh", "Cosh", "Asinh", "Floor", "Ceil", "Round", "Sign")],
    ("nn.acosh", "Acosh", {}, 1.0, 4.0, 19),
    ("nn.softplus", "Softplus", {}, -4.0, 4.0, 19),
    ("nn.softsign", "Softsign", {}, -4.0, 4.0, 19),
    ("nn.mish", "Mish", {}, -4.0, 4.0, 19),
    ("nn.gelu", "Gelu", {"approximate": "tanh"}, -4.0, 4.0, 20),
    ("nn.elu", "Elu", {"alpha": 0.5}, -4.0, 4.0, 19),
    ("nn.selu", "Selu", {"alpha": 1.5, "gamma": 1.1}, -4.0, 4.0, 19),
    ("nn.celu", "Celu", {"alpha": 2.0}, -4.0, 4.0, 19),
    ("nn.thresholded_relu", "ThresholdedRelu", {"alpha": 0.5}, -4.0, 4.0, 19),
    ("nn.shrink", "Shrink", {"bias": 0.25, "lambd": 1.0}, -4.0, 4.0, 19),
]  # fmt: skip


@covers(*[n for n, *_ in MATH_UNARY])
@pytest.mark.parametrize(("name", "onnx_op", "attrs", "low", "high", "opset"), MATH_UNARY)
def test_math_unary_ops_match_onnx(
    name: str, onnx_op: str, attrs: dict[str, Any], low: float, high: float, opset: int
) -> None:
    x = rand(2, 3, 5, low=low, high=high)
    if name == "nn.round":
        x.reshape(-1)[:4] = [0.5, 1.5, 2.5, -2.5]  # half to even
    if name in ("nn.elu", "nn.selu", "nn.celu"):  # away from 0, where exp(x) - 1 cancels in f32
        x = np.where(x < 0, x - 0.5, x + 0.5).astype(np.float32)
    (got,) = run_op(nn.NN_OPS[name], [x], **attrs)
    (want,) = ort(onnx_op, [x], opset=opset, **attrs)
    close(got, want)


@covers("nn.swish", "nn.is_nan", "nn.is_inf")
def test_swish_and_float_predicates_by_hand() -> None:
    x = rand(7, low=-4.0, high=4.0).astype(np.float64)
    (got,) = run_op(nn.NN_OPS["nn.swish"], [x], alpha=1.5)
    np.testing.assert_allclose(got, x / (1 + np.exp(-1.5 * x)), rtol=4 * np.finfo(np.float64).eps)
    y = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    assert run_op(nn.NN_OPS["nn.is_nan"], [y])[0].tolist() == [False, True, False, False, False]
    (pos,) = run_op(nn.NN_OPS["nn.is_inf"], [y], detect_negative=False)
    assert pos.tolist() == [False, False, True, False, False]


@covers("nn.mod", "nn.bitwise_and", "nn.bitwise_or", "nn.bitwise_xor", "nn.bitwise_not", "nn.bit_shift")
def test_integer_binary_ops_match_onnx() -> None:
    a = np.array([7, -7, 7, -7, 0, 9], np.int32)
    b = np.array([3, 3, -3, -3, 5, 4], np.int32)
    for fmod in (0, 1):
        (got,) = run_op(nn.NN_OPS["nn.mod"], [a, b], fmod=bool(fmod))
        np.testing.assert_array_equal(got, ort("Mod", [a, b], fmod=fmod)[0])
    f = rand(6, low=-5.0, high=5.0)
    (got,) = run_op(nn.NN_OPS["nn.mod"], [f, rand(6, low=0.5, high=2.0)], fmod=True)
    assert got.dtype == np.float32
    u, v = np.array([12, 200, 7, 255], np.uint8), np.array([10, 3, 1, 8], np.uint8)
    for name, onnx_op in (("nn.bitwise_and", "BitwiseAnd"), ("nn.bitwise_or", "BitwiseOr"), ("nn.bitwise_xor", "BitwiseXor")):
        np.testing.assert_array_equal(run_op(nn.NN_OPS[name], [u, v])[0], ort(onnx_op, [u, v], opset=18)[0])
    np.testing.assert_array_equal(run_op(nn.NN_OPS["nn.bitwise_not"], [u])[0], ort("BitwiseNot", [u], opset=18)[0])
    shift = np.array([1, 3, 7, 0], np.uint8)
    for direction in ("LEFT", "RIGHT"):
        (got,) = run_op(nn.NN_OPS["nn.bit_shift"], [u, shift], direction=direction.lower())
        np.testing.assert_array_equal(got, ort("BitShift", [u, shift], direction=direction)[0])


MATH_REDUCE = [
    ("nn.reduce_min", "ReduceMin"),
    ("nn.reduce_prod", "ReduceProd"),
    ("nn.reduce_l1", "ReduceL1"),
    ("nn.reduce_l2", "ReduceL2"),
    ("nn.reduce_sum_square", "ReduceSumSquare"),
    ("nn.reduce_log_sum", "ReduceLogSum"),
    ("nn.reduce_log_sum_exp", "ReduceLogSumExp"),
]


@covers(*[n for n, _ in MATH_REDUCE])
@pytest.mark.parametrize(("name", "onnx_op"), MATH_REDUCE)
@pytest.mark.parametrize(("axes", "keepdims"), [((1,), True), ((0, 2), False), ((), False)])
def test_math_reductions_match_onnx(name: str, onnx_op: str, axes: tuple[int, ...], keepdims: bool) -> None:
    x = rand(2, 3, 4, low=0.5, high=1.5)
    (got,) = run_op(nn.NN_OPS[name], [x], axes=axes, keepdims=keepdims)
    consts = [np.array(axes, np.int64)] if axes else []
    (want,) = ort(onnx_op, [x], consts, opset=18, keepdims=int(keepdims))
    close(got, want)


def test_empty_reductions_give_the_identity() -> None:
    x = np.zeros((2, 0), np.float32)
    assert run_op(nn.NN_OPS["nn.reduce_min"], [x], axes=(1,))[0].tolist() == [np.inf, np.inf]
    assert run_op(nn.NN_OPS["nn.reduce_prod"], [x], axes=(1,))[0].tolist() == [1.0, 1.0]
    assert run_op(nn.NN_OPS["nn.reduce_log_sum_exp"], [x], axes=(1,))[0].tolist() == [-np.inf, -np.inf]


@covers("nn.argmax", "nn.argmin", "nn.cumsum", "nn.cumprod", "nn.topk", "nn.einsum")
def test_index_scan_and_einsum_ops_match_onnx() -> None:
    x = np.round(rand(3, 5), 0)  # ties
    for name, onnx_op in (("nn.argmax", "ArgMax"), ("nn.argmin", "ArgMin")):
        for last in (False, True):
            (got,) = run_op(nn.NN_OPS[name], [x], axis=1, keepdims=False, select_last_index=last)
            (want,) = ort(onnx_op, [x], axis=1, keepdims=0, select_last_index=int(last))
            np.testing.assert_array_equal(got, want)
    for exclusive in (False, True):
        for reverse in (False, True):
            (got,) = run_op(nn.NN_OPS["nn.cumsum"], [x], axis=1, exclusive=exclusive, reverse=reverse)
            (want,) = ort("CumSum", [x], [np.array(1, np.int64)], exclusive=int(exclusive), reverse=int(reverse))
            close(got, want)
    (got,) = run_op(nn.NN_OPS["nn.cumprod"], [x], axis=0, exclusive=True)
    np.testing.assert_array_equal(got, np.concatenate([np.ones((1, 5), np.float32), np.cumprod(x, 0)[:-1]]))
    for largest in (True, False):
        values, indices = run_op(nn.NN_OPS["nn.topk"], [x], k=3, axis=1, largest=largest)
        want_v, want_i = ort("TopK", [x], [np.array([3], np.int64)], outputs=2, axis=1, largest=int(largest))
        np.testing.assert_array_equal(values, want_v)
        np.testing.assert_array_equal(indices, want_i)
    a, b = rand(2, 3, 4), rand(2, 4, 5)
    (got,) = run_op(nn.NN_OPS["nn.einsum"], [a, b], equation="bij,bjk->bik")
    close(got, ort("Einsum", [a, b], equation="bij,bjk->bik")[0])


@covers("nn.tile", "nn.broadcast_to", "nn.bitcast", "nn.det")
def test_tile_broadcast_to_and_bitcast_match_onnx() -> None:
    x = rand(2, 1, 3)
    (got,) = run_op(nn.NN_OPS["nn.tile"], [x], reps=(2, 3, 1))
    np.testing.assert_array_equal(got, ort("Tile", [x], [np.array([2, 3, 1], np.int64)])[0])
    (got,) = run_op(nn.NN_OPS["nn.broadcast_to"], [x], shape=(4, 1, 2, 1))
    np.testing.assert_array_equal(got, ort("Expand", [x], [np.array([4, 1, 2, 1], np.int64)])[0])
    (got,) = run_op(nn.NN_OPS["nn.bitcast"], [x], dtype="i32")
    np.testing.assert_array_equal(got, x.view(np.int32))  # ONNX's reference: numpy's view
    m = rand(2, 3, 3)
    (got,) = run_op(nn.NN_OPS["nn.det"], [m])
    assert_within(got, want := ort("Det", [m])[0], det_bound(m, want))  # the terms cancel


LOGIC = [
    ("nn.equal", "Equal"),
    ("nn.less", "Less"),
    ("nn.greater", "Greater"),
    ("nn.less_equal", "LessOrEqual"),
    ("nn.greater_equal", "GreaterOrEqual"),
]


@covers(*[n for n, _ in LOGIC], "nn.logical_and", "nn.logical_or", "nn.logical_xor", "nn.logical_not", "nn.where")
def test_comparisons_logic_and_where_match_onnx() -> None:
    a, b = np.round(rand(2, 3)), np.round(rand(3))
    for name, onnx_op in LOGIC:
        np.testing.assert_array_equal(run_op(nn.NN_OPS[name], [a, b])[0], ort(onnx_op, [a, b])[0])
    p, q = a > 0, b > 0
    for name, onnx_op in (("nn.logical_and", "And"), ("nn.logical_or", "Or"), ("nn.logical_xor", "Xor")):
        np.testing.assert_array_equal(run_op(nn.NN_OPS[name], [p, q])[0], ort(onnx_op, [p, q])[0])
    np.testing.assert_array_equal(run_op(nn.NN_OPS["nn.logical_not"], [p])[0], ort("Not", [p])[0])
    (got,) = run_op(nn.NN_OPS["nn.where"], [q, a, b])
    np.testing.assert_array_equal(got, ort("Where", [q, a, b])[0])


# ---- ONNX coverage, part B (byoc/dialects/nn/indexing.py) ----------------------------


@covers(
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
)
def test_part_b_ops_match_onnxruntime() -> None:
    """Each op through the reference interpreter against onnxruntime's node (opsets 17-19)."""
    from byoc.dialects.nn import indexing as nni

    x = rand(3, 4)
    idx = np.array([[0, 3, -1, 2], [1, 1, 0, -4], [2, 0, 3, 3]], np.int64)
    nd = np.array([[2, -1], [0, 1]], np.int64)
    upd = rand(2)
    close(run_op(nni.GatherElementsOp, [x, idx], axis=1)[0], ort("GatherElements", [x, idx], axis=1)[0])
    close(run_op(nni.GatherNDOp, [x, nd])[0], ort("GatherND", [x, nd])[0])
    close(
        run_op(nni.ScatterNDOp, [x, nd, upd], reduction="add")[0],
        ort("ScatterND", [x, nd, upd], reduction="add")[0],
    )
    scat_idx, scat_upd = idx[:, :2] % 4, rand(3, 2)
    close(
        run_op(nni.ScatterElementsOp, [x, scat_idx, scat_upd], axis=1, reduction="max")[0],
        ort("ScatterElements", [x, scat_idx, scat_upd], axis=1, reduction="max", opset=18)[0],
    )
    close(run_op(nni.TriluOp, [x], k=1, upper=False)[0], ort("Trilu", [x], [np.array(1, np.int64)], upper=0)[0])
    close(run_op(nni.LogSoftmaxOp, [x], axis=0)[0], ort("LogSoftmax", [x], axis=0)[0])
    close(run_op(nni.HardmaxOp, [x], axis=0)[0], ort("Hardmax", [x], axis=0)[0])
    w, b = rand(4), rand(4)
    # x - mean cancels: the layer norm's own bound, not the componentwise one of `close`
    assert_within(
        run_op(nni.LayerNormOp, [x, w, b], axis=-1, epsilon=1e-5)[0],
        want := ort("LayerNormalization", [x, w, b], axis=-1, opset=17)[0],
        layer_norm_bound(x, w, b, -1, want),
    )
    rms = run_op(nni.RMSNormOp, [x, w], axis=-1, epsilon=1e-5)[0]
    x64 = x.astype(np.float64)
    close(rms, (x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-5) * w).astype(np.float32))
    image = rand(1, 1, 4, 5)
    # resize is a weighted sum of 4 x 4 taps, each weight below 1.5 in magnitude
    assert_within(
        run_op(nni.ResizeOp, [image], size=(1, 1, 8, 3), mode="cubic")[0],
        ort("Resize", [image], [None, None, np.array([1, 1, 8, 3], np.int64)], mode="cubic")[0],
        reduction_bound(16, 16 * 1.5 * np.abs(image).max()),
    )
    rev = run_op(nni.ReverseSequenceOp, [x, np.array([4, 1, 2], np.int64)], batch_axis=0, time_axis=1)[0]
    np.testing.assert_array_equal(rev[0], x[0, ::-1])
    np.testing.assert_array_equal(rev[2], [x[2, 1], x[2, 0], x[2, 2], x[2, 3]])
    hot = run_op(nni.OneHotOp, [np.array([0, 2, -1, 7], np.int64), np.array([0, 5], np.float32)], depth=3)[0]
    np.testing.assert_array_equal(hot, [[5, 0, 0], [0, 0, 5], [0, 0, 5], [0, 0, 0]])
    # attention and the NLL loss, against onnxruntime's nodes (opsets 23 and 22)
    q, kk, vv = rand(1, 2, 3, 4), rand(1, 2, 5, 4), rand(1, 2, 5, 4)
    (y,) = run_op(nni.AttentionOp, [q, kk, vv], is_causal=True)
    close(y, ort("Attention", [q, kk, vv], opset=23, is_causal=1)[0])
    target = np.array([[0, 2, 1], [1, 1, 0]], np.int64)
    logits = rand(2, 3, 3)
    (loss,) = run_op(nni.NLLLossOp, [logits, target], reduction="mean")
    close(loss, ort("NegativeLogLikelihoodLoss", [logits, target], opset=22)[0])
    image, grid = rand(1, 2, 4, 5), rand(1, 3, 2, 2) * 0.6
    (sampled,) = run_op(nni.GridSampleOp, [image, grid], mode="linear", padding_mode="border")
    # a weighted sum of 4 taps, each weight in [0, 1]
    assert_within(
        sampled,
        ort("GridSample", [image, grid], opset=20, mode="linear", padding_mode="border")[0],
        reduction_bound(4, 4 * np.abs(image).max()),
    )
    cols = rand(1, 8, 6)
    (image,) = run_op(nni.Col2ImOp, [cols], image_shape=(3, 4), block_shape=(2, 2))
    want = ort("Col2Im", [cols], [np.array([3, 4], np.int64), np.array([2, 2], np.int64)], opset=18)[0]
    assert_within(image, want, reduction_bound(4, 4 * np.abs(cols).max()))


def _onnx_reference(op_type: str, inputs: Sequence[Array | None], outputs: int, opset: int, **attrs: Any) -> list[Array]:
    """One ONNX node on onnx's ReferenceEvaluator (ops newer than onnxruntime's opsets)."""
    from onnx.reference import ReferenceEvaluator

    names = ["" if a is None else f"x{i}" for i, a in enumerate(inputs)]
    feeds = {n: a for n, a in zip(names, inputs, strict=True) if a is not None}
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(outputs)], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, _ONNX_DTYPES[a.dtype], a.shape) for n, a in feeds.items()],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.UNDEFINED, None) for i in range(outputs)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


@covers("nn.roi_align", "nn.rotary_embedding", "nn.deform_conv2d", "nn.tensor_scatter", "nn.linear_attention")
def test_detection_and_sequence_ops_match_onnx() -> None:
    """One case each (more: tests/frontend/test_onnx_detection.py)."""
    x = rand(1, 2, 6, 6)
    rois = np.array([[0, 0, 4, 4], [1, 0.5, 5.5, 3]], np.float32)
    idx = np.zeros(2, np.int64)
    (got,) = run_op(nn.detection.RoiAlignOp, [x, rois, idx], output_height=2, output_width=3, sampling_ratio=2)
    (want,) = ort("RoiAlign", [x, rois, idx], opset=16, output_height=2, output_width=3, sampling_ratio=2)
    assert_within(got, want, 1e-5 * (1 + np.abs(want)))

    q, cos, sin, pos = rand(1, 3, 8), rand(4, 2), rand(4, 2), np.array([[0, 3, 1]], np.int64)
    (got,) = run_op(nn.detection.RotaryEmbeddingOp, [q, cos, sin, pos], num_heads=2)
    (want,) = _onnx_reference("RotaryEmbedding", [q, cos, sin, pos], 1, 23, num_heads=2)
    assert_within(got, want, ulp_bound(want, 4) + 1e-6)

    w, off, empty = rand(3, 2, 2, 2), rand(1, 8, 5, 5), np.zeros((0,), np.float32)
    (got,) = run_op(nn.detection.DeformConv2DOp, [x, w, off, empty, empty])
    (want,) = _onnx_reference("DeformConv", [x, w, off], 1, 19)
    # 8 taps, each a bilinear mix (weights summing to at most 1) of |x| <= 2 times |w| <= 2
    assert_within(got, want, 16 * 8 * np.finfo(np.float32).eps * 32)

    cache, update = rand(2, 5, 3), rand(2, 2, 3)
    wi = np.array([4, 1], np.int64)
    (got,) = run_op(nn.detection.TensorScatterOp, [cache, update, wi], mode="circular", axis=1)
    (want,) = _onnx_reference("TensorScatter", [cache, update, wi], 1, 24, mode="circular", axis=1)
    np.testing.assert_array_equal(got, want)

    qa, ka, va = rand(1, 4, 8), rand(1, 4, 4, low=-0.5, high=0.5), rand(1, 4, 6)
    got = run_op(
        nn.detection.LinearAttentionOp, [qa, ka, va, empty, empty, empty],
        q_num_heads=2, kv_num_heads=1, update_rule="linear",
    )  # fmt: skip
    want = _onnx_reference("LinearAttention", [qa, ka, va], 2, 27, q_num_heads=2, kv_num_heads=1, update_rule="linear")
    for a, e in zip(got, want, strict=True):  # 4 steps of rank-1 updates; float32 there, float64 here
        assert_within(a, e, 256 * np.finfo(np.float32).eps * (1 + np.abs(e)))
