"""The ONNX importer: entry points, static shapes, folding, opset dispatch and its errors."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_graph_outputs
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from byoc import parse_module, run_reference
from byoc.dialects import nn
from byoc.frontend.onnx import (
    SUPPORTED_OPS,
    OnnxImportError,
    OnnxMissing,
    StaticValueRequired,
    UnknownInputError,
    UnsupportedOnnxError,
    import_model,
    import_model_from_bytes,
)

F = TensorProto.FLOAT


def make_model(
    nodes: Sequence[Any],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    initializers: Sequence[np.ndarray[Any, Any]] = (),
    names: Sequence[str] = (),
    opset: int = 13,
) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(a, n) for a, n in zip(initializers, names, strict=True)]
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def tensor_in(name: str, shape: Sequence[int | str | None] | None, elem: int = F) -> Any:
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def ops_of(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def ort_run(model: onnx.ModelProto, *inputs: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
    from support.onnx_harness import onnxruntime_execute

    return onnxruntime_execute(model, list(inputs))


def check_against_ort(model: onnx.ModelProto, *inputs: np.ndarray[Any, Any]) -> ModuleOp:
    module = import_model(model)
    ours = run_reference(module, *inputs)
    theirs = ort_run(model, *inputs)
    assert_graph_outputs(module, list(inputs), ours, theirs)
    return module


RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def relu_model() -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        [tensor_in("x", [2, 3])],
        [tensor_in("y", [2, 3])],
    )


def test_import_accepts_path_bytes_stream_and_proto(tmp_path: Any) -> None:
    model = relu_model()
    path = tmp_path / "relu.onnx"
    onnx.save(model, str(path))
    data = model.SerializeToString()
    texts = {
        str(m)
        for m in (
            import_model(model),
            import_model(str(path)),
            import_model(path),
            import_model(data),
            import_model(io.BytesIO(data)),
            import_model_from_bytes(data),
        )
    }
    assert len(texts) == 1
    assert "nn.relu %x : tensor<2x3xf32>" in texts.pop()


def test_import_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="path, bytes, a stream or a ModelProto"):
        import_model(42)


def test_import_without_the_onnx_package_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now fails as if not installed
    with pytest.raises(OnnxMissing) as info:
        import_model(b"")
    assert str(info.value) == (
        "reading ONNX models needs the 'onnx' package (pip install 'byoc[onnx]')"
    )
    assert isinstance(info.value, ImportError)


def test_module_is_main_and_round_trips_through_text() -> None:
    w = rand(4, 3, 3, 3)
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [tensor_in("x", [1, 3, 5, 5])],
        [tensor_in("y", [1, 4, 5, 5])],
        [w],
        ["w"],
    )
    module = import_model(model)
    (main,) = [op for op in module.ops if isinstance(op, FuncOp)]
    assert main.sym_name.data == "main"
    x = rand(1, 3, 5, 5)
    again = parse_module(str(module))
    np.testing.assert_array_equal(run_reference(module, x)[0], run_reference(again, x)[0])


def test_initializer_payload_stays_numpy() -> None:
    w = rand(5, 7)
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [tensor_in("x", [2, 5])],
        [tensor_in("y", [2, 7])],
        [w],
        ["w"],
    )
    module = import_model(model)
    (const,) = [op for op in module.walk() if isinstance(op, nn.ConstantOp)]
    # a constant 2-D MatMul operand becomes nn.dense with the weight stored transposed
    np.testing.assert_array_equal(const.ndarray(), w.T)
    assert ops_of(module) == ["nn.constant", "nn.dense"]


# --------------------------------------------------------------------------
# Static shapes
# --------------------------------------------------------------------------


def test_symbolic_dims_stay_dynamic_unless_input_shapes_gives_them() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [tensor_in("x", ["N", 3])],
        [tensor_in("y", ["N", 3])],
    )
    assert "tensor<?x3xf32>" in str(import_model(model))
    module = import_model(model, input_shapes={"x": (4, 3)})
    assert "tensor<4x3xf32>" in str(module)


def test_input_shapes_naming_no_graph_input_is_an_error() -> None:
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [tensor_in("x", ["N", 3])],
        [tensor_in("y", ["N", 3])],
        initializers=[np.ones(3, np.float32)],
        names=["w"],
    )
    with pytest.raises(UnknownInputError) as info:
        import_model(model, input_shapes={"x": (2, 3), "w": (3,), "z": (1,)})
    assert (info.value.unknown, info.value.inputs) == (["w", "z"], ["x"])
    assert str(info.value) == "input_shapes names no graph input 'w', 'z'; inputs: x"


def test_input_shapes_must_agree_with_declared_dims() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [tensor_in("x", ["N", 3])],
        [tensor_in("y", ["N", 3])],
    )
    with pytest.raises(OnnxImportError, match=r"gives 'x' the shape \[4, 5\]"):
        import_model(model, input_shapes={"x": (4, 5)})


def test_shape_computation_is_folded_into_a_static_reshape() -> None:
    # y = reshape(x, concat(shape(x)[0:1], [-1])): the PyTorch flatten idiom
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0))),
            helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
            helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
            helper.make_node("Constant", [], ["minus1"], value_ints=[-1]),
            helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
            helper.make_node("Cast", ["shape"], ["shape64"], to=TensorProto.INT64),
            helper.make_node("Reshape", ["x", "shape64"], ["y"]),
        ],
        [tensor_in("x", [2, 3, 4])],
        [tensor_in("y", [2, 12])],
        [np.array([0], dtype=np.int64)],
        ["axes"],
    )
    module = import_model(model)
    assert ops_of(module) == ["nn.reshape"]
    assert "newshape = array<i64: 2, 12>" in str(module)


def test_constant_of_shape_and_range_fold() -> None:
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node(
                "ConstantOfShape",
                ["s"],
                ["ones"],
                value=numpy_helper.from_array(np.array([1.5], dtype=np.float32)),
            ),
            helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
            helper.make_node("Cast", ["r"], ["rf"], to=F),
            helper.make_node("Mul", ["x", "ones"], ["m"]),
            helper.make_node("Add", ["m", "rf"], ["y"]),
        ],
        [tensor_in("x", [2, 4])],
        [tensor_in("y", [2, 4])],
        [np.array(1, np.int64), np.array(9, np.int64), np.array(2, np.int64)],
        ["start", "limit", "delta"],
    )
    module = import_model(model)
    assert ops_of(module) == ["nn.constant", "nn.multiply", "nn.constant", "nn.add"]
    x = rand(2, 4)
    np.testing.assert_allclose(run_reference(module, x)[0], x * 1.5 + [1, 3, 5, 7], rtol=1e-6)


def test_identity_and_dropout_disappear() -> None:
    model = make_model(
        [
            helper.make_node("Identity", ["x"], ["a"]),
            helper.make_node("Dropout", ["a"], ["b", "mask"], name="drop"),
            helper.make_node("Relu", ["b"], ["y"]),
        ],
        [tensor_in("x", [3])],
        [tensor_in("y", [3])],
    )
    assert ops_of(import_model(model)) == ["nn.relu"]


def test_a_graph_output_can_be_a_constant_or_an_input() -> None:
    model = make_model(
        [
            helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0]),
            helper.make_node("Identity", ["x"], ["y"]),
        ],
        [tensor_in("x", [2])],
        [tensor_in("c", [2]), tensor_in("y", [2])],
    )
    c, y = run_reference(import_model(model), np.array([5, 6], np.float32))
    np.testing.assert_array_equal(c, [1, 2])
    np.testing.assert_array_equal(y, [5, 6])


def test_static_value_required_names_the_graph_input_and_bind_inputs_fixes_it() -> None:
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs")],
        [tensor_in("x", [2, 6]), tensor_in("shape", [2], TensorProto.INT64)],
        [tensor_in("y", [3, 4])],
    )
    with pytest.raises(StaticValueRequired, match=r"node 'rs' \(Reshape-\d+\).*bind_inputs=\{'shape'") as info:
        import_model(model)
    assert info.value.input_name == "shape"
    module = import_model(model, bind_inputs={"shape": np.array([3, -1])})
    x = rand(2, 6)
    np.testing.assert_array_equal(run_reference(module, x)[0], x.reshape(3, 4))
    with pytest.raises(OnnxImportError, match="unknown graph input"):
        import_model(model, bind_inputs={"nope": np.array([1])})


def test_input_names_are_sanitised_and_kept_as_arg_attrs() -> None:
    model = make_model(
        [helper.make_node("Relu", ["gpu_0/data_0"], ["y"])],
        [tensor_in("gpu_0/data_0", [2])],
        [tensor_in("y", [2])],
    )
    text = str(import_model(model))
    assert '{onnx.name = "gpu_0/data_0"}' in text
    assert "%gpu_0_data" in text


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_unsupported_op_names_type_node_and_supported_list() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Bernoulli", ["a"], ["y"], name="my_bernoulli")],
        [tensor_in("x", [2])],
        [tensor_in("y", [2])],
    )
    with pytest.raises(UnsupportedOnnxError) as info:
        import_model(model)
    message = str(info.value)
    assert "unsupported ONNX op type 'Bernoulli'" in message
    assert "node 'my_bernoulli'" in message
    assert "supported: Abs, " in message
    assert all(op in message for op in SUPPORTED_OPS)


def test_custom_domain_op_is_unsupported() -> None:
    node = helper.make_node("Foo", ["x"], ["y"], domain="com.vendor")
    model = make_model([node], [tensor_in("x", [2])], [tensor_in("y", [2])])
    model.opset_import.append(helper.make_opsetid("com.vendor", 1))
    with pytest.raises(UnsupportedOnnxError, match="'com.vendor.Foo'"):
        import_model(model)


@pytest.mark.parametrize(
    ("elem", "name"),
    [
        (TensorProto.BFLOAT16, "BFLOAT16"),
        (TensorProto.FLOAT8E4M3FN, "FLOAT8E4M3FN"),
        (TensorProto.INT4, "INT4"),
        (TensorProto.STRING, "STRING"),
    ],
)
def test_non_nn_element_types_are_rejected_not_converted(elem: int, name: str) -> None:
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])], [tensor_in("x", [2], elem)], [tensor_in("y", [2], elem)]
    )
    with pytest.raises(UnsupportedOnnxError, match=f"element type {name}, which nn has no element type for"):
        import_model(model)


@pytest.mark.parametrize("elem", [TensorProto.DOUBLE, TensorProto.UINT8, TensorProto.BOOL, TensorProto.FLOAT16])
def test_data_movement_takes_every_nn_element_type(elem: int) -> None:
    model = make_model(
        [helper.make_node("Transpose", ["x"], ["y"])], [tensor_in("x", [2, 3], elem)], [tensor_in("y", [3, 2], elem)]
    )
    x = (np.arange(6).reshape(2, 3) % 2).astype(helper.tensor_dtype_to_np_dtype(elem))
    (y,) = run_reference(import_model(model), x)
    np.testing.assert_array_equal(y, x.T)
    assert y.dtype == x.dtype


def test_integer_ops_outside_nn_are_rejected() -> None:
    i32 = TensorProto.INT32
    model = make_model(
        [helper.make_node("Sigmoid", ["x"], ["y"], name="s")], [tensor_in("x", [2], i32)], [tensor_in("y", [2], i32)]
    )
    with pytest.raises(UnsupportedOnnxError, match=r"node 's' \(Sigmoid-13\): 'nn.sigmoid': element type i32"):
        import_model(model)


def test_type_relation_errors_name_the_node() -> None:
    model = make_model(
        [helper.make_node("Add", ["x", "z"], ["y"], name="bad_add")],
        [tensor_in("x", [2, 3]), tensor_in("z", [4])],
        [tensor_in("y", [2, 3])],
    )
    with pytest.raises(OnnxImportError, match=r"node 'bad_add' \(Add-\d+\): operand shapes 2x3, 4 are not"):
        import_model(model)


def test_used_unsupported_outputs_are_rejected_unused_ones_ignored() -> None:
    def pool(outputs: list[str], graph_outputs: list[str]) -> onnx.ModelProto:
        return make_model(
            [helper.make_node("MaxPool", ["x"], outputs, kernel_shape=[2, 2])],
            [tensor_in("x", [1, 1, 4, 4])],
            [tensor_in(o, None) for o in graph_outputs],
            opset=12,
        )

    assert ops_of(import_model(pool(["y", "idx"], ["y"]))) == ["nn.max_pool2d"]
    with pytest.raises(UnsupportedOnnxError, match=r"output #1 \('idx'\) of MaxPool"):
        import_model(pool(["y", "idx"], ["y", "idx"]))


# --------------------------------------------------------------------------
# Opsets and semantics, checked against onnxruntime
# --------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_before_and_after_opset_13(opset: int, axis: int) -> None:
    model = make_model(
        [helper.make_node("Softmax", ["x"], ["y"], axis=axis)],
        [tensor_in("x", [2, 3, 4])],
        [tensor_in("y", [2, 3, 4])],
        opset=opset,
    )
    check_against_ort(model, rand(2, 3, 4))


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"transA": 1},
        {"transB": 1},
        {"alpha": 0.5, "beta": 2.0},
        {"alpha": 0.25, "transA": 1, "transB": 1},
    ],
)
@pytest.mark.parametrize("constant_b", [True, False])
@pytest.mark.parametrize("bias_shape", [(5,), (3, 5), (1,), None])
def test_gemm(attrs: dict[str, Any], constant_b: bool, bias_shape: tuple[int, ...] | None) -> None:
    a_shape = (4, 3) if attrs.get("transA") else (3, 4)
    b_shape = (5, 4) if attrs.get("transB") else (4, 5)
    b, c = rand(*b_shape), None if bias_shape is None else rand(*bias_shape)
    inits, names = ([b], ["b"]) if constant_b else ([], [])
    inputs = [tensor_in("a", a_shape)] + ([] if constant_b else [tensor_in("b", b_shape)])
    if c is not None:
        inits, names = [*inits, c], [*names, "c"]
    node = helper.make_node("Gemm", ["a", "b"] + (["c"] if c is not None else []), ["y"], **attrs)
    model = make_model([node], inputs, [tensor_in("y", [3, 5])], inits, names)
    args = [rand(*a_shape)] + ([] if constant_b else [b])
    module = check_against_ort(model, *args)
    assert "nn.dense" in ops_of(module)


@pytest.mark.parametrize(
    ("a", "b"), [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))]
)
def test_matmul_batched_and_broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    out = np.matmul(np.zeros(a), np.zeros(b)).shape
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        [tensor_in("a", a), tensor_in("b", b)],
        [tensor_in("y", out)],
    )
    check_against_ort(model, rand(*a), rand(*b))


@pytest.mark.parametrize(
    "attrs",
    [
        {"pads": [1, 2, 0, 1]},
        {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"strides": [2, 1], "auto_pad": "SAME_LOWER"},
        {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
        {"group": 2},
        {"group": 4, "strides": [2, 2], "auto_pad": "VALID"},
    ],
)
def test_conv_attributes_with_bias(attrs: dict[str, Any]) -> None:
    groups = attrs.get("group", 1)
    w, bias = rand(8, 4 // groups, 3, 3), rand(8)
    model = make_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
        [tensor_in("x", [1, 4, 9, 8])],
        [tensor_in("y", None)],
        [w, bias],
        ["w", "b"],
    )
    check_against_ort(model, rand(1, 4, 9, 8))


def test_conv_1d_runs_as_2d() -> None:
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 2], strides=[2])],
        [tensor_in("x", [2, 3, 11])],
        [tensor_in("y", None)],
        [rand(5, 3, 4)],
        ["w"],
    )
    check_against_ort(model, rand(2, 3, 11))


@pytest.mark.parametrize(
    "attrs",
    [
        {"strides": [2, 2]},
        {"strides": [2, 3], "pads": [1, 0, 1, 2], "output_padding": [1, 1]},
        {"strides": [2, 2], "output_shape": [13, 12]},
        {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"dilations": [2, 1], "group": 2},
    ],
)
def test_conv_transpose(attrs: dict[str, Any]) -> None:
    groups = attrs.get("group", 1)
    model = make_model(
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
        [tensor_in("x", [1, 4, 6, 5])],
        [tensor_in("y", None)],
        [rand(4, 6 // groups, 3, 3), rand(6)],
        ["w", "b"],
    )
    check_against_ort(model, rand(1, 4, 6, 5))


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ("MaxPool", {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1], "dilations": [2, 2]}),
        ("MaxPool", {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
        ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0}),
        ("AveragePool", {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}),
    ],
)
def test_pools(op: str, attrs: dict[str, Any]) -> None:
    model = make_model(
        [helper.make_node(op, ["x"], ["y"], **attrs)],
        [tensor_in("x", [1, 2, 9, 8])],
        [tensor_in("y", None)],
    )
    check_against_ort(model, rand(1, 2, 9, 8))


def test_opset_7_model_with_attribute_forms() -> None:
    # opset 7: Slice/Pad/Squeeze/Unsqueeze/ReduceSum/Split take attributes, Clip has min/max attributes
    model = make_model(
        [
            helper.make_node("Slice", ["x"], ["s"], starts=[1, 0], ends=[3, 100], axes=[0, 1]),
            helper.make_node("Pad", ["s"], ["p"], pads=[0, 1, 0, 2], value=0.5),
            helper.make_node("Clip", ["p"], ["c"], min=-0.5, max=0.75),
            helper.make_node("Unsqueeze", ["c"], ["u"], axes=[0]),
            helper.make_node("Squeeze", ["u"], ["q"], axes=[0]),
            helper.make_node("ReduceSum", ["q"], ["r"], axes=[1], keepdims=1),
            helper.make_node("Split", ["q"], ["a", "b"], axis=1, split=[2, 5]),
            helper.make_node("Sum", ["a", "a", "a"], ["y1"]),
            helper.make_node("Mean", ["b", "b"], ["y2"]),
        ],
        [tensor_in("x", [4, 4])],
        [tensor_in("r", None), tensor_in("y1", None), tensor_in("y2", None)],
        opset=7,
    )
    check_against_ort(model, rand(4, 4))


def test_opset_below_7_is_converted_first() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [tensor_in("x", [3])], [tensor_in("y", [3])], opset=6
    )
    x = rand(3)
    np.testing.assert_array_equal(run_reference(import_model(model), x)[0], np.maximum(x, 0))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_modes_and_negative_pads(mode: str) -> None:
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode=mode)],
        [tensor_in("x", [3, 5])],
        [tensor_in("y", None)],
        [np.array([1, -1, 2, 2], np.int64), np.array(1.5, np.float32)],
        ["pads", "value"],
    )
    check_against_ort(model, rand(3, 5))


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps"),
    [
        ([1, -3], [100, -1], [0, 1], [1, 1]),
        ([-1], [-100], [1], [-2]),
        ([4, 0], [0, 10], [0, 1], [-1, 3]),
        ([0], [2], [-1], [1]),
    ],
)
def test_slice_inputs(starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> None:
    arrays = [np.array(v, np.int64) for v in (starts, ends, axes, steps)]
    model = make_model(
        [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
        [tensor_in("x", [5, 6])],
        [tensor_in("y", None)],
        arrays,
        ["s", "e", "a", "st"],
    )
    check_against_ort(model, rand(5, 6))


@pytest.mark.parametrize(
    "attrs",
    [
        {"mode": "nearest"},
        {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
        {"mode": "linear"},
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
    ],
)
@pytest.mark.parametrize("scales", [[1, 1, 2, 1.5], [1, 1, 0.6, 0.5]])
def test_resize(attrs: dict[str, Any], scales: list[float]) -> None:
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)],
        [tensor_in("x", [1, 2, 5, 6])],
        [tensor_in("y", None)],
        [np.array(scales, np.float32)],
        ["scales"],
    )
    check_against_ort(model, rand(1, 2, 5, 6))


def test_resize_cubic_is_nn_resize() -> None:
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic")],
        [tensor_in("x", [1, 2, 5, 6])],
        [tensor_in("y", None)],
        [np.array([1, 1, 2, 2], np.float32)],
        ["scales"],
    )
    assert "nn.resize " in str(import_model(model))
    check_against_ort(model, rand(1, 2, 5, 6))


def test_batchnorm_lrn_prelu_hard_activations() -> None:
    c = 6
    model = make_model(
        [
            helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["bn"], epsilon=1e-3),
            helper.make_node("LRN", ["bn"], ["lrn"], size=3, alpha=1e-2, beta=0.5, bias=2.0),
            helper.make_node("PRelu", ["lrn", "slope"], ["pr"]),
            helper.make_node("HardSigmoid", ["pr"], ["hs"], alpha=0.3),
            helper.make_node("HardSwish", ["hs"], ["hw"]),
            helper.make_node("LeakyRelu", ["hw"], ["lr"], alpha=0.2),
            helper.make_node("GlobalAveragePool", ["lr"], ["gap"]),
            helper.make_node("GlobalMaxPool", ["lr"], ["gmp"]),
        ],
        [tensor_in("x", [2, c, 4, 4])],
        [tensor_in("gap", None), tensor_in("gmp", None)],
        [rand(c), rand(c), rand(c), np.abs(rand(c)) + 0.5, rand(c, 1, 1)],
        ["g", "b", "m", "v", "slope"],
        opset=14,
    )
    check_against_ort(model, rand(2, c, 4, 4))


def test_gather_on_run_time_data_is_nn_take() -> None:
    model = make_model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
        [tensor_in("x", [3, 5])],
        [tensor_in("y", None)],
        [np.array([[0, -1], [2, 2]], np.int64)],
        ["i"],
    )
    module = check_against_ort(model, rand(3, 5))
    assert "nn.take" in ops_of(module)


def test_reductions_keepdims_and_noop() -> None:
    model = make_model(
        [
            helper.make_node("ReduceMean", ["x"], ["a"], axes=[1], keepdims=0),
            helper.make_node("ReduceMax", ["x"], ["b"], axes=[-1, 0]),
            helper.make_node("ReduceSum", ["x", "none"], ["c"], noop_with_empty_axes=1),
        ],
        [tensor_in("x", [3, 4, 5])],
        [tensor_in("a", None), tensor_in("b", None), tensor_in("c", None)],
        [np.array([], np.int64)],
        ["none"],
    )
    check_against_ort(model, rand(3, 4, 5))


def test_an_op_newer_than_the_model_opset_is_an_error() -> None:
    model = make_model(
        [helper.make_node("HardSwish", ["x"], ["y"])], [tensor_in("x", [2])], [tensor_in("y", [2])], opset=13
    )
    with pytest.raises(OnnxImportError, match=r"'HardSwish' does not exist in opset 13"):
        import_model(model)
