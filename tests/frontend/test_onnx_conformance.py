"""ONNX backend node tests through the importer: on the numpy reference, and through
`byoc.build` (the real flow: partitioning, the C library, the ExampleJSON runtime, the host).

The cases are built once (`load_node_cases`, 10-25 s; tests/frontend/conftest.py keeps them in
pytest's cache for later processes). On the reference they run one by one (`run_cases`, once
per process for all the files that check node tests). Through build they run in batches
(`node_results_through_build`, over `run_cases_batched`): the cases of a batch become one
model, so one C library is compiled per 100 cases instead of one per case (about 20 s with an
empty library cache instead of about 130 s); a case that fails in a batch is run again alone,
and that run is its result. Each test below then checks one op's share of the results. The
files that check node tests share an xdist group, so `make test` (`--dist loadgroup`) runs
them in one worker, which computes these results once. The slow test runs every case through its own `byoc.build`, as
`python benchmarks/conformance.py` does when it writes docs/conformance.md.
"""

from __future__ import annotations

import collections
from types import SimpleNamespace
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support.onnx_harness import (
    DEFAULT_TARGETS,
    HOST,
    BuildExecute,
    CaseResult,
    import_case,
    load_node_cases,
    merge_mains,
    misplaced_host_ops,
    node_results_through_build,
    render_markdown,
    run_case,
    run_cases,
    run_cases_batched,
    select_cases,
)

import byoc
from byoc.frontend.onnx import SUPPORTED_OPS, UnsupportedOnnxError

# one pytest-xdist worker runs every file of this group (`--dist loadgroup`), so the node
# tests' results below are computed once in the run, not once per worker
pytestmark = pytest.mark.xdist_group("onnx-node-tests")

# The ops issue 7 lists: each must pass at least one node test case.
REQUIRED_OPS = """
Conv ConvTranspose Gemm MatMul BatchNormalization MaxPool AveragePool GlobalAveragePool
GlobalMaxPool LRN Relu LeakyRelu PRelu Sigmoid HardSigmoid HardSwish Tanh Erf Exp Log Sqrt Pow
Reciprocal Neg Abs Clip Add Sub Mul Div Max Min Sum Mean Softmax Reshape Flatten Transpose
Concat Split Slice Squeeze Unsqueeze Pad ReduceMean ReduceSum ReduceMax Resize Cast Identity
Dropout Constant ConstantOfShape Shape Gather Range
""".split()


@pytest.fixture(scope="session")
def covered() -> list[Any]:
    return select_cases(load_node_cases())


@pytest.fixture(scope="session")
def results(covered: list[Any]) -> list[CaseResult]:
    return run_cases(covered)


@pytest.fixture(scope="session")
def built(covered: list[Any]) -> list[CaseResult]:
    """Through byoc.build for ccompiler then examplejson (what C rejects goes to ExampleJSON)."""
    by_name = node_results_through_build(DEFAULT_TARGETS)
    return [by_name[c.name] for c in covered]


@pytest.fixture(scope="session")
def built_examplejson(covered: list[Any]) -> list[CaseResult]:
    """Through byoc.build for examplejson alone: every op with a line runs in its runtime."""
    by_name = node_results_through_build(("examplejson",))
    return [by_name[c.name] for c in covered]


def test_required_ops_are_supported() -> None:
    assert set(REQUIRED_OPS) <= SUPPORTED_OPS


@pytest.mark.parametrize("op", sorted(SUPPORTED_OPS))
def test_no_case_fails(results: list[CaseResult], op: str) -> None:
    failed = [f"{r.name}: {r.reason}" for r in results if op in r.op_types and r.status == "failed"]
    assert failed == []


@pytest.mark.parametrize("op", REQUIRED_OPS)
def test_op_passes_some_case(results: list[CaseResult], op: str) -> None:
    passed = [r.name for r in results if op in r.op_types and r.status == "passed"]
    assert passed, f"no node test case using {op} passed"


def test_skips_are_clean_rejections(results: list[CaseResult]) -> None:
    # a skip carries the importer's message; a case with a wrong answer is never a skip
    skipped = [r for r in results if r.status == "skipped"]
    assert all(r.reason for r in skipped)
    assert not [r for r in skipped if r.bound_inputs]


def test_float32_core_cases_all_pass(results: list[CaseResult]) -> None:
    # the single-op float cases of the core CNN ops run unbound: nothing to skip there
    core = ("test_conv_", "test_basic_conv", "test_gemm_", "test_matmul_", "test_relu", "test_lrn")
    chosen = [r for r in results if r.name.startswith(core)]
    assert len(chosen) >= 25
    assert [r.name for r in chosen if r.status != "passed"] == []


# ---- through byoc.build ------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(SUPPORTED_OPS))
def test_no_case_fails_through_build(built: list[CaseResult], op: str) -> None:
    failed = [f"{r.name}: {r.reason}" for r in built if op in r.op_types and r.status == "failed"]
    assert failed == []


def test_build_agrees_with_the_reference(
    results: list[CaseResult], built: list[CaseResult], built_examplejson: list[CaseResult]
) -> None:
    # the same cases pass and the same are skipped: a build failure where the reference
    # passes would be a bug in lower-to-c, the C kernels, the ExampleJSON runtime or a predicate
    reference = {r.name: r.status for r in results}
    assert {r.name: r.status for r in built} == reference
    assert {r.name: r.status for r in built_examplejson} == reference
    assert collections.Counter(reference.values())["passed"] >= 400


def test_ops_run_on_the_targets(
    built: list[CaseResult], built_examplejson: list[CaseResult]
) -> None:
    where = collections.Counter(w for r in built for w in r.placement)
    on = {t: {op for op, w in where if w == t} for t in (*DEFAULT_TARGETS, HOST)}
    # C takes the CNN core and the glue of static shape (gathers, slices, splits);
    # ExampleJSON takes what C has no kernel for; the host keeps only ops no target
    # takes (split with an empty piece, topk, attention, dynamic_quantize: several results,
    # no ExampleJSON line, no C kernel; einsum: the cases are f64, or an equation such as
    # "ij->ji" that is no batched matmul, and ExampleJSON has no spelling for one)
    assert {
        "nn.conv2d", "nn.dense", "nn.matmul", "nn.max_pool2d", "nn.softmax", "nn.pad",
        "nn.resize2d", "nn.conv2d_transpose", "nn.lrn", "nn.take", "nn.strided_slice", "nn.split",
        "nn.lstm", "nn.gru", "nn.rnn",
    } <= on["ccompiler"]  # fmt: skip
    assert on[HOST] == {
        "nn.split", "nn.topk", "nn.einsum", "nn.attention", "nn.dynamic_quantize",
        "nn.linear_attention",
    }
    alone = {op for r in built_examplejson for op, w in r.placement if w == "examplejson"}
    # split's and the recurrent ops' several results have no ExampleJSON line
    assert on["ccompiler"] - {"nn.split", "nn.lstm", "nn.gru", "nn.rnn"} <= alone


def test_host_keeps_only_what_no_target_takes(covered: list[Any]) -> None:
    # every covered case side by side in one model, partitioned as build does it
    modules = []
    for case in covered:
        try:
            modules.append(import_case(case)[0])
        except UnsupportedOnnxError:
            continue  # skipped cases
    merged, _ = merge_mains(modules)
    assert misplaced_host_ops(merged, DEFAULT_TARGETS) == []
    assert misplaced_host_ops(merged, ("ccompiler",)) == []


def test_report_counts_and_placement(built: list[CaseResult]) -> None:
    text = render_markdown(built, total_cases=len(built), executor="build", command="cmd")
    count = collections.Counter(r.status for r in built)
    assert f"| {len(built)} | {count['passed']} | 0 | {count['skipped']} |" in text
    assert "## Where the nn ops ran" in text
    assert "| nn op | ccompiler | examplejson | host |" in text
    # split: in C where every piece has elements, on the host where one is empty
    in_c = sum(1 for r in built if ("nn.split", "ccompiler") in r.placement)
    on_host = sum(1 for r in built if ("nn.split", HOST) in r.placement)
    assert f"| nn.split | {in_c} | 0 | {on_host} |" in text and in_c > 0 and on_host > 0


@pytest.mark.slow
def test_every_case_through_its_own_build(covered: list[Any], results: list[CaseResult]) -> None:
    # one byoc.build per case (about 130 s with an empty library cache, 15 s with a warm one)
    own = run_cases(covered, BuildExecute(DEFAULT_TARGETS))
    assert [f"{r.name}: {r.reason}" for r in own if r.status == "failed"] == []
    assert {r.name: r.status for r in own} == {r.name: r.status for r in results}


# ---- the batch runner reports each case as if it ran alone --------------------------


def _case(name: str, model: onnx.ModelProto, inputs: list[Any], outputs: list[Any]) -> Any:
    return SimpleNamespace(
        name=name, model=model, data_sets=[(inputs, outputs)], rtol=1e-3, atol=1e-7
    )


def _unary(op: str, **attrs: Any) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], **attrs)],
        op.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_batch_failure_is_the_case_alone() -> None:
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    good = _case("relu", _unary("Relu"), [x], [np.maximum(x, 0)])
    wrong = _case("bad_expectation", _unary("Neg"), [x], [x])  # expects the input back
    skipped = _case("bfloat16", _unary("Relu"), [x], [x])
    skipped.model.graph.input[0].type.tensor_type.elem_type = TensorProto.BFLOAT16
    results = run_cases_batched([good, wrong, skipped, good], batch_size=3)
    assert [r.status for r in results] == ["passed", "failed", "skipped", "passed"]
    assert "Mismatched elements" in results[1].reason
    assert results[0].placement == (("nn.relu", "ccompiler"),)
    alone = run_case(wrong, BuildExecute())
    assert alone.status == "failed" and alone.placement == (("nn.negative", "ccompiler"),)


def test_merge_mains_keeps_inputs_and_results_in_order() -> None:
    a = byoc.parse_module(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = nn.relu %x : tensor<2xf32>\n  func.return %0 : tensor<2xf32>\n}"
    )
    b = byoc.parse_module(
        "func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {\n"
        "  %0 = nn.subtract %x, %y : tensor<3xf32>\n  func.return %0, %y : tensor<3xf32>, tensor<3xf32>\n}"
    )
    merged, spans = merge_mains([a, b])
    assert spans == [(0, 1), (1, 3)]
    x, p, q = np.array([-1, 2], np.float32), np.ones(3, np.float32), np.full(3, 4, np.float32)
    outs = byoc.build(merged, targets=["ccompiler"]).run(x, p, q)
    np.testing.assert_array_equal(outs[0], [0, 2])
    np.testing.assert_array_equal(outs[1], [-3, -3, -3])
    np.testing.assert_array_equal(outs[2], q)


# ---- regressions found by running the node tests through build -----------------------


def test_pad_wrap_through_c() -> None:
    # test_wrap_pad: nn.pad in numpy's wrap mode was tagged for ccompiler, but lower-to-c
    # had no wrap mode (KeyError while lowering); the C pad kernel now wraps
    module = byoc.parse_module(
        "func.func @main(%x: tensor<2x3xf32>) -> tensor<6x10xf32> {\n"
        '  %0 = nn.pad %x {pad_width = array<i64: 1, 3, 5, 2>, pad_mode = "wrap"}'
        " : (tensor<2x3xf32>) -> tensor<6x10xf32>\n"
        "  func.return %0 : tensor<6x10xf32>\n}"
    )
    exe = byoc.build(module, targets=["ccompiler"])
    assert [p.ops for p in exe.partitions] == [("nn.pad",)]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = exe.run(x)
    np.testing.assert_array_equal(y, np.pad(x, [(1, 3), (5, 2)], mode="wrap"))


def test_max_with_onnx_names_collapsing_to_one_hint() -> None:
    # test_max_two_inputs: inputs data_0 and data_1 both print as %data (xDSL drops `_<n>`);
    # positional inputs must still reach the right arguments
    graph = helper.make_graph(
        [helper.make_node("Max", ["data_0", "data_1"], ["y"])],
        "max",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("data_0", "data_1")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    a, b = np.array([3, 2, 1], np.float32), np.array([1, 4, 4], np.float32)
    (y,) = BuildExecute()(byoc.import_onnx(model), [a, b])
    np.testing.assert_array_equal(y, [3, 4, 4])
    # and by name: the executable's inputs carry their ONNX names
    exe = byoc.build(byoc.import_onnx(model), targets=["ccompiler"])
    assert exe.input_names == ["data_0", "data_1"]
    (y,) = exe.run(data_1=a, data_0=b)
    np.testing.assert_array_equal(y, [3, 4, 4])
    # params bind by ONNX name too, and the remaining inputs keep theirs
    exe = byoc.build(byoc.import_onnx(model), params={"data_0": a}, targets=["ccompiler"])
    assert exe.input_names == ["data_1"]
    (y,) = exe.run(data_1=b)
    np.testing.assert_array_equal(y, [3, 4, 4])


# ---- every case not passed falls under one named reason ------------------------------


def test_every_skip_has_a_named_reason(results: list[CaseResult]) -> None:
    from support.onnx_skip_reasons import UNCLASSIFIED, import_reason

    skipped = [r for r in results if r.status == "skipped"]
    assert [f"{r.name}: {r.reason}" for r in skipped if import_reason(r.reason) == UNCLASSIFIED] == []


def test_an_unconverted_op_inside_a_branch_is_filed_like_a_case_not_run() -> None:
    from support.onnx_skip_reasons import NOT_CONVERTED, UNCLASSIFIED, import_reason, op_reason

    message = "unsupported ONNX op type 'SequenceConstruct' (node '1'); supported: Abs, Add"
    assert import_reason(message) == op_reason(["SequenceConstruct"]) == "sequence and optional types"
    assert import_reason("graph input 's' is not a tensor") == "sequence and optional types"
    assert import_reason("unsupported ONNX op type 'Frobnicate' (node 'n')") == NOT_CONVERTED
    assert import_reason("something nobody wrote a rule for") == UNCLASSIFIED
    text = render_markdown(
        [CaseResult("test_if_seq", ("If",), "skipped", message)],
        total_cases=3,
        executor="build",
        command="cmd",
        unconverted=[("SequenceAt",), ("Loop",)],
    )
    assert "| sequence and optional types | 1 | 1 | 2 |" in text
    assert "| loops (Loop, Scan) | 0 | 1 | 1 |" in text
    assert "| **total** | 1 | 2 | 3 |" in text
    assert text.count("sequence and optional types") == 1  # each reason listed once


# ---- issue 16: the ops it names, and its goal ------------------------------------------

ISSUE16_OPS = """
Expand Where Equal Greater GreaterOrEqual Less LessOrEqual And Or Xor Not Tile Range CumSum
ArgMax ArgMin TopK Einsum LayerNormalization InstanceNormalization GroupNormalization Gelu
Mish Softplus Selu Elu Celu HardSwish PRelu Pow Sqrt Reciprocal Mod ReduceMean ReduceL1
ReduceL2 ReduceLogSumExp ReduceProd ReduceMin DepthToSpace SpaceToDepth GatherElements
GatherND ScatterElements ScatterND Trilu OneHot NonZero Resize Slice Pad Cast LSTM GRU RNN If
NonMaxSuppression RoiAlign RotaryEmbedding DeformConv TensorScatter CausalConvWithState LinearAttention
""".split()

ISSUE16_FORMS = {
    # the attribute forms the issue lists, by node test name prefix: every case passes
    "noop_with_empty_axes": ("test_reduce_sum_empty_axes_input_noop",),
    "Resize modes": ("test_resize_",),
    "Slice forms": ("test_slice",),
    "Pad forms": ("test_constant_pad", "test_edge_pad", "test_reflect_pad", "test_wrap_pad"),
    "LSTM/GRU/RNN": ("test_lstm_", "test_gru_", "test_rnn_", "test_simple_rnn"),
    "numeric Cast": tuple(
        f"test_cast_{a}_to_{b}"
        for a in ("FLOAT", "DOUBLE", "FLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8")
        for b in ("FLOAT", "DOUBLE", "FLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8")
        if a != b
    ),
}


@pytest.mark.parametrize("op", ISSUE16_OPS)
def test_issue16_op_passes_node_tests(results: list[CaseResult], op: str) -> None:
    assert op in SUPPORTED_OPS
    cases = [r for r in results if op in r.op_types]
    assert [r.name for r in cases if r.status == "passed"], f"no node test using {op} passed"
    assert [r.name for r in cases if r.status == "failed"] == []


@pytest.mark.parametrize("form", sorted(ISSUE16_FORMS))
def test_issue16_forms_pass(results: list[CaseResult], form: str) -> None:
    cases = [r for r in results if r.name.startswith(ISSUE16_FORMS[form])]
    assert cases, form
    # a Resize or Cast case outside nn's element types is a named skip, never a failure
    assert [f"{r.name}: {r.reason}" for r in cases if r.status == "failed"] == []
    kept = [r for r in cases if r.status == "skipped" and "element type" not in r.reason]
    assert kept == [], [f"{r.name}: {r.reason}" for r in kept]


def test_issue16_goal_at_least_1400_of_all_node_tests_pass(results: list[CaseResult]) -> None:
    count = collections.Counter(r.status for r in results)
    assert len(load_node_cases()) == 1884
    assert count["passed"] >= 1400 and count["failed"] == 0, count
