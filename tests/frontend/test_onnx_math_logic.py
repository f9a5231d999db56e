"""The ONNX ops of issue #16 part A (math, activations, comparisons, logic, reductions, arg/scan
ops, Expand, Tile, Einsum, CastLike, the element types beyond f32/i32/i64): their node tests
on the reference and through `byoc.build`, the f32 ones in generated C, and hand-made models
against onnxruntime.

The node tests are built once per session (`load_node_cases` is cached per process); their
results, on the reference and through build, are shared with test_onnx_conformance.py (the same
xdist group, so one worker computes them once)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from support.bounds import assert_within, ulp_bound
from support.onnx_harness import (
    DEFAULT_TARGETS,
    CaseResult,
    load_node_cases,
    node_results_through_build,
    onnxruntime_execute,
    run_cases,
    select_cases,
)

import byoc
from byoc.frontend.onnx import (
    SUPPORTED_OPS,
    OnnxImportError,
    StaticValueRequired,
    UnsupportedOnnxError,
    import_model,
)
from byoc.interpreters import run_reference
from byoc.targets.ccompiler import MATH_POINTWISE_OPS

# one pytest-xdist worker runs every file of this group (`--dist loadgroup`), so the node
# tests' results below are computed once in the run, not once per worker
pytestmark = pytest.mark.xdist_group("onnx-node-tests")

Array = np.ndarray[Any, Any]

PART_A_OPS = """
Expand Where Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor Not BitwiseAnd BitwiseOr
BitwiseXor BitwiseNot BitShift CumSum ArgMax ArgMin TopK Einsum Gelu Mish Softplus Softsign Selu
Elu Celu ThresholdedRelu Swish Shrink Mod Sign Floor Ceil Round Sin Cos Tan Asin Acos Atan Sinh
Cosh Asinh Acosh Atanh IsNaN IsInf ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceProd
ReduceMin ReduceSumSquare Tile CastLike CumProd LogSoftmax Hardmax EyeLike BitCast Det SwiGLU
""".split()
"""The ONNX ops this part added; each passes at least one node test."""


@pytest.fixture(scope="session")
def part_a_cases() -> list[Any]:
    return [c for c in select_cases(load_node_cases()) if {n.op_type for n in c.model.graph.node} & set(PART_A_OPS)]


@pytest.fixture(scope="session")
def part_a_reference(part_a_cases: list[Any]) -> list[CaseResult]:
    return run_cases(part_a_cases)


@pytest.fixture(scope="session")
def part_a_built(part_a_cases: list[Any]) -> list[CaseResult]:
    by_name = node_results_through_build(DEFAULT_TARGETS)
    return [by_name[c.name] for c in part_a_cases]


def test_part_a_ops_are_supported() -> None:
    assert set(PART_A_OPS) <= SUPPORTED_OPS


@pytest.mark.parametrize("executor", ["reference", "build"])
def test_node_tests_pass_or_are_skipped_cleanly(
    executor: str, part_a_reference: list[CaseResult], part_a_built: list[CaseResult]
) -> None:
    results = part_a_reference if executor == "reference" else part_a_built
    failed = [f"{r.name}: {r.reason}" for r in results if r.status == "failed"]
    assert failed == []
    passed_ops = {op for r in results if r.status == "passed" for op in r.op_types}
    assert sorted(set(PART_A_OPS) - passed_ops) == []


def test_reference_and_build_agree_case_by_case(
    part_a_reference: list[CaseResult], part_a_built: list[CaseResult]
) -> None:
    assert [(r.name, r.status) for r in part_a_reference] == [
        (r.name, r.status) for r in part_a_built
    ]


# --------------------------------------------------------------------------
# The f32 pointwise ops in generated C
# --------------------------------------------------------------------------

_ONNX_OF: dict[str, tuple[str, dict[str, Any]]] = {
    "nn.sin": ("Sin", {}), "nn.cos": ("Cos", {}), "nn.tan": ("Tan", {}), "nn.asin": ("Asin", {}),
    "nn.acos": ("Acos", {}), "nn.atan": ("Atan", {}), "nn.sinh": ("Sinh", {}),
    "nn.cosh": ("Cosh", {}), "nn.asinh": ("Asinh", {}), "nn.acosh": ("Acosh", {}),
    "nn.atanh": ("Atanh", {}), "nn.floor": ("Floor", {}), "nn.ceil": ("Ceil", {}),
    "nn.round": ("Round", {}), "nn.softplus": ("Softplus", {}), "nn.softsign": ("Softsign", {}),
    "nn.mish": ("Mish", {}), "nn.gelu": ("Gelu", {"approximate": "tanh"}),
    "nn.elu": ("Elu", {"alpha": 0.5}), "nn.selu": ("Selu", {}), "nn.celu": ("Celu", {"alpha": 2.0}),
    "nn.thresholded_relu": ("ThresholdedRelu", {"alpha": 0.3}), "nn.swish": ("Swish", {"alpha": 1.5}),
    "nn.shrink": ("Shrink", {"bias": 0.2, "lambd": 0.4}), "nn.sign": ("Sign", {}),
    "nn.mod": ("Mod", {"fmod": 0}),
}  # fmt: skip


def _single_op_model(op: str, attrs: dict[str, Any], binary: bool, opset: int = 24) -> Any:
    inputs = ["x", "d"] if binary else ["x"]
    node = helper.make_node(op, inputs, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 64]) for n in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _input_for(name: str) -> Array:
    rng = np.random.default_rng(7)
    if name in ("nn.asin", "nn.acos", "nn.atanh"):
        x = rng.uniform(-0.99, 0.99, (4, 64))
    elif name == "nn.acosh":
        x = rng.uniform(1.0, 5.0, (4, 64))
    else:
        x = rng.uniform(-6.0, 6.0, (4, 64))
        x[0, :6] = [0.5, 1.5, 2.5, -0.5, -2.5, 0.0]  # ties of round-half-to-even
    return x.astype(np.float32)


@pytest.mark.parametrize("name", sorted(MATH_POINTWISE_OPS))
def test_f32_math_op_runs_in_c_and_matches_the_reference(name: str) -> None:
    op, attrs = _ONNX_OF[name]
    binary = name == "nn.mod"
    module = import_model(_single_op_model(op, attrs, binary))
    x = _input_for(name)
    inputs = [x, np.random.default_rng(8).uniform(0.5, 2.0, 64).astype(np.float32) * np.where(
        np.arange(64) % 2, 1, -1
    ).astype(np.float32)] if binary else [x]
    if binary:
        inputs[1] = np.broadcast_to(inputs[1], (4, 64)).copy()
    (expected,) = run_reference(module, *inputs)
    exe = byoc.build(module, targets=["ccompiler"])
    assert [s.name for s in exe.plan.steps if s.kind == "kernel"] == []  # nothing on the host
    assert {op for p in exe.partitions for op in p.ops} == {name}
    (got,) = exe.run(*inputs)
    # an f32 libm function is within a few ulps of the result, or of the argument's
    # magnitude where the formula cancels (gelu, mish and softplus of large negative x)
    assert_within(got, expected, ulp_bound(expected) + ulp_bound(np.abs(x)), name)


# --------------------------------------------------------------------------
# Hand-made models against onnxruntime
# --------------------------------------------------------------------------


def _model(
    nodes: list[Any], inputs: list[Any], outputs: list[str], inits: Any = (), opset: int = 18
) -> Any:
    """A model whose output types onnx's shape inference fills in."""
    import onnx

    graph = helper.make_graph(
        nodes, "g", inputs, [onnx.ValueInfoProto(name=o) for o in outputs], list(inits)
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = {vi.name: vi for vi in onnx.shape_inference.infer_shapes(model).graph.value_info}
    for out in model.graph.output:
        if out.name in inferred:
            out.CopyFrom(inferred[out.name])
    return model


def _check_against_onnxruntime(model: Any, inputs: list[Array], targets: list[str]) -> Any:
    expected = onnxruntime_execute(model, inputs)
    module = import_model(model)
    exe = byoc.build(module, targets=targets)
    got = exe.run(*inputs)
    for g, e in zip(got, expected, strict=True):
        assert_within(g, e, ulp_bound(e))
    return exe


def test_one_hot_with_expand_equal_where() -> None:
    """A one-hot built the way exporters write it: Expand a class range, Equal the labels,
    Where picks on/off values (the detector-head pattern of issue 16)."""
    t = TensorProto
    labels = helper.make_tensor_value_info("labels", t.INT64, [6, 1])
    nodes = [
        helper.make_node("Range", ["zero", "n", "one"], ["classes"]),
        helper.make_node("Expand", ["classes", "shape"], ["grid"]),
        helper.make_node("Equal", ["grid", "labels"], ["hit"]),
        helper.make_node("Where", ["hit", "on", "off"], ["onehot"]),
        helper.make_node("Not", ["hit"], ["miss"]),
        helper.make_node("Cast", ["miss"], ["miss_f"], to=t.FLOAT),
    ]
    inits = [
        helper.make_tensor("zero", t.INT64, [], [0]),
        helper.make_tensor("n", t.INT64, [], [5]),
        helper.make_tensor("one", t.INT64, [], [1]),
        helper.make_tensor("shape", t.INT64, [2], [6, 5]),
        helper.make_tensor("on", t.FLOAT, [], [0.9]),
        helper.make_tensor("off", t.FLOAT, [], [0.025]),
    ]
    model = _model(nodes, [labels], ["onehot", "miss_f"], inits)
    x = np.array([[0], [4], [2], [2], [7], [1]], dtype=np.int64)
    exe = _check_against_onnxruntime(model, [x], ["ccompiler", "examplejson"])
    where = {p.target for p in exe.partitions for op in p.ops if op in ("nn.equal", "nn.where")}
    assert where == {"ccompiler"}  # the first target listed; its loops hold bool tensors


def test_arg_topk_cumsum_einsum_tile() -> None:
    t = TensorProto
    x = helper.make_tensor_value_info("x", t.FLOAT, [3, 6])
    nodes = [
        helper.make_node("ArgMax", ["x"], ["amax"], axis=1, select_last_index=1),
        helper.make_node("ArgMin", ["x"], ["amin"], axis=0, keepdims=0),
        helper.make_node("TopK", ["x", "k"], ["vals", "idx"], axis=1, largest=1),
        helper.make_node("CumSum", ["x", "axis"], ["cs"], exclusive=1, reverse=1),
        helper.make_node("Einsum", ["x", "x"], ["gram"], equation="ij,kj->ik"),
        helper.make_node("Tile", ["x", "reps"], ["tiled"]),
    ]
    inits = [
        helper.make_tensor("k", t.INT64, [1], [4]),
        helper.make_tensor("axis", t.INT32, [], [1]),
        helper.make_tensor("reps", t.INT64, [2], [2, 1]),
    ]
    model = _model(nodes, [x], ["amax", "amin", "vals", "idx", "cs", "gram", "tiled"], inits)
    data = np.round(np.random.default_rng(3).standard_normal((3, 6)), 1).astype(np.float32)
    data[0, :3] = 2.0  # ties: the first index for TopK, the last for ArgMax
    expected = onnxruntime_execute(model, [data])
    got = byoc.build(import_model(model), targets=["ccompiler", "examplejson"]).run(data)
    for name, g, e in zip(["amax", "amin", "vals", "idx", "cs", "gram", "tiled"], got, expected, strict=True):
        assert_within(g, e, ulp_bound(e) * 6, name)  # cs and gram sum up to 6 terms


def test_reductions_with_axes_inputs_and_noop() -> None:
    t = TensorProto
    x = helper.make_tensor_value_info("x", t.FLOAT, [2, 3, 4])
    ops = ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceProd", "ReduceMin", "ReduceSumSquare"]
    nodes = [helper.make_node(op, ["x", "axes"], [op], keepdims=k % 2) for k, op in enumerate(ops[:3])]
    nodes += [helper.make_node(op, ["x"], [op]) for op in ops[3:]]
    nodes.append(helper.make_node("ReduceMin", ["x", "none"], ["noop"], noop_with_empty_axes=1))
    inits = [helper.make_tensor("axes", t.INT64, [2], [0, -1]), helper.make_tensor("none", t.INT64, [0], [])]
    model = _model(nodes, [x], [*ops, "noop"], inits)
    data = np.random.default_rng(4).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    module = import_model(model)
    assert module.body.block.ops.first is not None
    expected = onnxruntime_execute(model, [data])
    got = byoc.build(module, targets=["ccompiler", "examplejson"]).run(data)
    for name, g, e in zip([*ops, "noop"], got, expected, strict=True):
        assert_within(g, e, ulp_bound(e) * 24, name)  # up to 24 terms each
    np.testing.assert_array_equal(got[-1], data)


def test_integer_and_bool_element_types() -> None:
    """uint8/bool graph inputs, integer Mod, Div, Pow, BitShift, logical Xor and CastLike."""
    t = TensorProto
    a = helper.make_tensor_value_info("a", t.INT32, [5])
    b = helper.make_tensor_value_info("b", t.INT32, [5])
    u = helper.make_tensor_value_info("u", t.UINT8, [5])
    flag = helper.make_tensor_value_info("flag", t.BOOL, [5])
    nodes = [
        helper.make_node("Mod", ["a", "b"], ["mod"]),
        helper.make_node("Mod", ["a", "b"], ["fmod"], fmod=1),
        helper.make_node("Div", ["a", "b"], ["div"]),
        helper.make_node("Pow", ["a", "two"], ["pow"]),
        helper.make_node("BitShift", ["u", "s"], ["shl"], direction="LEFT"),
        helper.make_node("Xor", ["flag", "flag2"], ["xor"]),
        helper.make_node("CastLike", ["u", "a"], ["u16"]),
    ]
    inits = [
        helper.make_tensor("two", t.INT32, [], [2]),
        helper.make_tensor("s", t.UINT8, [5], [0, 1, 2, 7, 3]),
        helper.make_tensor("flag2", t.BOOL, [5], [True, False, True, False, True]),
    ]
    model = _model(nodes, [a, b, u, flag], ["mod", "fmod", "div", "pow", "shl", "xor", "u16"], inits)
    inputs = [
        np.array([7, -7, 7, -7, 100], np.int32),
        np.array([3, 3, -3, -3, 7], np.int32),
        np.array([1, 2, 255, 3, 16], np.uint8),
        np.array([True, True, False, False, True]),
    ]
    _check_against_onnxruntime(model, inputs, ["ccompiler", "examplejson"])


# --------------------------------------------------------------------------
# Clear errors
# --------------------------------------------------------------------------


def _import_one(op: str, attrs: dict[str, Any], inputs: list[Any], inits: Any = ()) -> Any:
    node = helper.make_node(op, [i.name for i in inputs] + [i.name for i in inits], ["y"], **attrs)
    return import_model(_model([node], inputs, ["y"], inits))


def test_topk_with_k_computed_at_run_time_names_the_input() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    with pytest.raises(StaticValueRequired, match="bind_inputs") as info:
        import_model(_model([helper.make_node("TopK", ["x", "k"], ["v", "i"])], [x, k], ["v"]))
    assert info.value.input_name == "k"


def test_expand_to_an_incompatible_shape_is_an_import_error() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2, 4])
    with pytest.raises(OnnxImportError, match=r"Expand shape \[2, 4\] does not broadcast with \[3\]"):
        _import_one("Expand", {}, [x], [shape])


def test_cast_to_a_type_nn_lacks_is_unsupported() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    with pytest.raises(UnsupportedOnnxError, match="Cast to BFLOAT16 is not supported"):
        _import_one("Cast", {"to": TensorProto.BFLOAT16}, [x])


def test_an_op_outside_its_element_types_is_unsupported() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.INT32, [3])
    with pytest.raises(UnsupportedOnnxError, match="'nn.sin': element type i32 is not supported"):
        _import_one("Sin", {}, [x])
