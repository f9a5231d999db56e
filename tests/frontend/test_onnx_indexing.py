"""The ONNX converters of coverage part B (byoc/frontend/onnx/converters/indexing.py):
their node tests on the numpy reference, and hand-built models through `byoc.build`
against onnxruntime (Resize modes nn.resize2d does not take, If inlining, the
normalisations, DepthToSpace, scatters) and the errors of values needed at import."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_within, reduction_bound, ulp_bound
from support.onnx_harness import (
    BuildExecute,
    load_node_cases,
    onnxruntime_execute,
    op_types,
    run_cases,
    select_cases,
)

import byoc
from byoc.frontend.onnx import StaticValueRequired, import_model

PART_B = """
LayerNormalization InstanceNormalization GroupNormalization MeanVarianceNormalization
LpNormalization RMSNormalization DepthToSpace SpaceToDepth GatherElements GatherND
ScatterElements ScatterND Scatter Trilu OneHot NonZero Compress ReverseSequence If LogSoftmax
Hardmax Resize Upsample Unique EyeLike CenterCropPad Attention NegativeLogLikelihoodLoss
SoftmaxCrossEntropyLoss GridSample Col2Im AffineGrid LpPool MaxUnpool
""".split()

ALLOWED_SKIPS = (
    "element type",  # bf16, float8, int4...: no nn element type; or an op's DTYPES
    "is not supported",  # training modes
    "unsupported ONNX op type",  # inside an If branch (sequences, optionals)
    "must be known at import time",  # a shape computed at run time (AffineGrid expanded: Expand)
)


@pytest.fixture(scope="module")
def part_b_results() -> list[Any]:
    cases = [c for c in select_cases(load_node_cases()) if set(op_types(c)) & set(PART_B)]
    return run_cases(cases)


def test_part_b_node_tests_pass_on_the_reference(part_b_results: list[Any]) -> None:
    failed = [f"{r.name}: {r.reason}" for r in part_b_results if r.status == "failed"]
    assert not failed, "\n".join(failed)
    for r in part_b_results:
        if r.status == "skipped":
            assert any(s in r.reason for s in ALLOWED_SKIPS), f"{r.name}: {r.reason}"
    passed = {op for r in part_b_results if r.status == "passed" for op in r.op_types}
    missing = [op for op in PART_B if op not in passed]
    assert not missing, f"no node test passes for {missing}"
    assert sum(r.status == "passed" for r in part_b_results) >= 375  # 380 at the last count


# ---- hand-built models through byoc.build, against onnxruntime ------------------------


def one_node_model(
    op: str,
    inputs: list[tuple[str, np.ndarray[Any, Any] | None, bool]],
    outputs: int = 1,
    opset: int = 21,
    out_types: tuple[int, ...] = (TensorProto.FLOAT,) * 3,
    **attrs: Any,
) -> Any:
    """A model of one node; inputs are (name, value, is_initializer); name '' skips an input."""
    node = helper.make_node(op, [n for n, _, _ in inputs], [f"y{i}" for i in range(outputs)], **attrs)
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for n, v, init in inputs
        if n and v is not None and not init
    ]
    inits = [numpy_helper.from_array(v, n) for n, v, init in inputs if n and v is not None and init]
    graph = helper.make_graph(
        [node],
        "g",
        graph_inputs,
        [helper.make_tensor_value_info(f"y{i}", out_types[i], None) for i in range(outputs)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def run_both(model: Any, feeds: list[np.ndarray[Any, Any]]) -> tuple[list[Any], list[Any], Any]:
    execute = BuildExecute()
    ours = execute(import_model(model), feeds)
    return list(ours), onnxruntime_execute(model, feeds), execute.last


X = np.random.default_rng(0).standard_normal((1, 3, 6, 8)).astype(np.float32)


@pytest.mark.parametrize(
    ("scales", "sizes", "attrs"),
    [
        ([1, 1, 0.5, 1.75], None, {"mode": "cubic"}),
        (None, [1, 3, 9, 5], {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}),
        ([1, 1, 0.5, 0.5], None, {"mode": "linear", "antialias": 1}),
        ([1, 1, 2.0, 2.0], None, {"mode": "nearest", "coordinate_transformation_mode": "half_pixel"}),
        ([1, 2, 1, 1], None, {"mode": "nearest"}),  # resizes channels: not resize2d
    ],
)
def test_resize_modes_match_onnxruntime(scales: Any, sizes: Any, attrs: dict[str, Any]) -> None:
    s = None if scales is None else np.array(scales, np.float32)
    z = None if sizes is None else np.array(sizes, np.int64)
    model = one_node_model(
        "Resize",
        [("x", X, False), ("", None, True), ("s" if s is not None else "", s, True), ("z" if z is not None else "", z, True)],
        **attrs,
    )
    (ours,), (want,), exe = run_both(model, [X])
    assert_within(ours, want, reduction_bound(16, 16 * 1.5 * np.abs(X).max()))
    if attrs["mode"] == "cubic" or attrs.get("antialias") or scales == [1, 2, 1, 1]:
        assert any("nn.resize" == op for p in exe.partitions for op in p.ops) or any(
            s.name == "nn.resize" for s in exe.plan.steps
        )


def test_resize_of_a_rank_3_tensor_matches_onnxruntime() -> None:
    x = X[0]
    model = one_node_model(
        "Resize", [("x", x, False), ("", None, True), ("s", np.array([1, 1.5, 0.5], np.float32), True)], mode="linear"
    )
    (ours,), (want,), _ = run_both(model, [x])
    assert_within(ours, want, reduction_bound(4, 4 * np.abs(x).max()))


def test_layer_normalization_with_its_statistics_matches_onnxruntime() -> None:
    w = np.linspace(0.5, 1.5, 8, dtype=np.float32)
    model = one_node_model(
        "LayerNormalization", [("x", X, False), ("w", w, True)], outputs=3, axis=-1, epsilon=1e-3
    )
    ours, want, _ = run_both(model, [X])
    for a, e in zip(ours, want, strict=True):
        assert_within(a, e, reduction_bound(8, 8 * np.abs(X).max() + 8) + ulp_bound(e, 64))


@pytest.mark.parametrize("opset", [18, 21])
def test_group_normalization_matches_onnxruntime(opset: int) -> None:
    x = np.random.default_rng(1).standard_normal((2, 6, 3, 2)).astype(np.float32)
    n = 3 if opset == 18 else 6  # opset 18: one scale per group; 21: per channel
    scale = np.linspace(0.5, 2, n, dtype=np.float32)
    bias = np.linspace(-1, 1, n, dtype=np.float32)
    model = one_node_model(
        "GroupNormalization", [("x", x, False), ("s", scale, True), ("b", bias, True)], opset=opset, num_groups=3
    )
    if opset == 18:  # onnxruntime has no GroupNormalization-18 kernel: compare with 21's semantics
        want = onnxruntime_execute(
            one_node_model(
                "GroupNormalization",
                [("x", x, False), ("s", np.repeat(scale, 2), True), ("b", np.repeat(bias, 2), True)],
                num_groups=3,
            ),
            [x],
        )[0]
        ours = BuildExecute()(import_model(model), [x])[0]
    else:
        (ours,), (want,), _ = run_both(model, [x])
    assert_within(ours, want, reduction_bound(12, 12 * np.abs(x).max() * 4) + ulp_bound(want, 64))


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back_match_onnxruntime(mode: str) -> None:
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float32).reshape(2, 8, 2, 3)
    model = one_node_model("DepthToSpace", [("x", x, False)], blocksize=2, mode=mode)
    (ours,), (want,), _ = run_both(model, [x])
    np.testing.assert_array_equal(ours, want)
    if mode == "DCR":  # onnxruntime's SpaceToDepth knows DCR only
        back = one_node_model("SpaceToDepth", [("x", want, False)], blocksize=2)
        (ours,), (want,), _ = run_both(back, [want])
        np.testing.assert_array_equal(ours, x)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_reductions_match_onnxruntime(reduction: str) -> None:
    data = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    idx = np.array([[0, 3], [2, -1], [1, 1]], np.int64) if reduction != "none" else np.array([[0, 3], [2, -2], [1, 0]])
    upd = np.random.default_rng(3).standard_normal((3, 2)).astype(np.float32)
    model = one_node_model(
        "ScatterElements", [("d", data, False), ("i", idx, False), ("u", upd, False)], axis=1, reduction=reduction
    )
    (ours,), (want,), _ = run_both(model, [data, idx, upd])
    assert_within(ours, want, ulp_bound(want))


def test_gather_nd_and_one_hot_match_onnxruntime() -> None:
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[[0, -1]], [[2, 1]]], np.int64)
    model = one_node_model("GatherND", [("d", data, False), ("i", idx, False)], batch_dims=1)
    (ours,), (want,), _ = run_both(model, [data, idx])
    np.testing.assert_array_equal(ours, want)
    ind = np.array([[0, 3, -1], [5, 2, 1]], np.int64)
    hot = one_node_model(
        "OneHot",
        [("i", ind, False), ("d", np.array(4, np.int64), True), ("v", np.array([0, 7], np.float32), True)],
        axis=1,
    )
    (ours,), (want,), _ = run_both(hot, [ind])
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize(
    ("shape", "idx"),
    [
        ((2, 3, 4), np.array([[[0, -1]], [[1, 2]], [[1, 0]]], np.int64)),  # k 2 of rank 3: rows of 4
        ((5, 3), np.array([[4, 2], [-5, -1], [0, 0]], np.int64)),  # k = rank: single elements
        ((1, 8), np.stack(np.meshgrid([0], np.arange(8), indexing="ij"), -1).astype(np.int64)),  # a BERT mask's
    ],
)
def test_gather_nd_with_constant_indices_is_a_take_in_c(shape: tuple[int, ...], idx: np.ndarray[Any, Any]) -> None:
    """Indices known at import and all in range: GatherND is an nn.take of rows of the data
    (reshaped to (prod(shape[:k]), *shape[k:])), which the C codegen holds, so no host step."""
    data = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    model = one_node_model("GatherND", [("d", data, False), ("i", idx, True)])
    module = import_model(model)
    assert "nn.gather_nd" not in {op.name for op in module.walk()}
    (ours,), (want,), exe = run_both(model, [data])
    np.testing.assert_array_equal(ours, want)
    assert exe.partitions and not [s.name for s in exe.plan.steps if s.kind == "kernel"]


def test_gather_nd_with_an_index_out_of_range_stays_gather_nd() -> None:
    """A constant index outside the data is not rewritten (nn.take would clamp it): it stays
    nn.gather_nd, whose reference rejects it at run time."""
    data = np.zeros((2, 3), np.float32)
    model = one_node_model("GatherND", [("d", data, False), ("i", np.array([[0, 3]], np.int64), True)])
    module = import_model(model)
    assert "nn.gather_nd" in {op.name for op in module.walk()}
    with pytest.raises(Exception, match="out of"):
        byoc.build(module, targets=["ccompiler"]).run(data)


def _if_model(cond: np.ndarray[Any, Any] | None) -> Any:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    then_graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)]
    )
    else_graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e0"]), helper.make_node("Transpose", ["e0"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)],
    )
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)
    inputs = [x] if cond is not None else [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
    inits = [numpy_helper.from_array(cond, "c")] if cond is not None else []
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_a_known_condition_inlines_its_branch(cond: bool) -> None:
    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    model = _if_model(np.array(cond))
    module = import_model(model)
    assert "If" not in str(module)
    (ours,), (want,), _ = run_both(model, [x])
    np.testing.assert_array_equal(ours, want)
    assert ours.shape == ((2, 3) if cond else (3, 2))


def test_run_time_values_needed_at_import_name_the_input() -> None:
    with pytest.raises(StaticValueRequired, match="condition") as e:
        import_model(_if_model(None))
    assert e.value.input_name == "c"
    cond = np.array([True, False, True])
    for op, inputs in (
        ("NonZero", [("x", X, False)]),
        ("Compress", [("x", X, True), ("c", cond, False)]),
        ("Unique", [("x", X, False)]),
    ):
        with pytest.raises(StaticValueRequired, match="depend"):
            import_model(one_node_model(op, inputs))


def test_compress_and_unique_fold_when_known() -> None:
    cond = np.array([True, False, True])
    model = one_node_model("Compress", [("x", X, False), ("c", cond, True)], axis=1)
    (ours,), (want,), _ = run_both(model, [X])
    np.testing.assert_array_equal(ours, want)
    u = np.array([[2, 1], [2, 1], [0, 3]], np.int64)
    types = (TensorProto.INT64,) * 4
    module = import_model(one_node_model("Unique", [("x", u, True)], outputs=4, out_types=types, sorted=0, axis=0))
    got = byoc.run_reference(module)
    want = onnxruntime_execute(
        one_node_model("Unique", [("x", u, False)], outputs=4, out_types=types, sorted=0, axis=0), [u]
    )
    for a, e in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("three_d", [False, True])
def test_attention_with_a_cache_matches_onnxruntime(three_d: bool) -> None:
    rng = np.random.default_rng(8)
    if three_d:
        q = rng.standard_normal((2, 3, 16)).astype(np.float32)  # 4 heads of 4
        k, v = (rng.standard_normal((2, 3, 8)).astype(np.float32) for _ in range(2))  # 2 heads of 4
        attrs: dict[str, Any] = {"q_num_heads": 4, "kv_num_heads": 2}
        pk = rng.standard_normal((2, 2, 2, 4)).astype(np.float32)
    else:
        q = rng.standard_normal((2, 4, 3, 4)).astype(np.float32)
        k, v = (rng.standard_normal((2, 2, 3, 4)).astype(np.float32) for _ in range(2))
        attrs = {}
        pk = rng.standard_normal((2, 2, 2, 4)).astype(np.float32)
    pv = rng.standard_normal(pk.shape).astype(np.float32)
    model = one_node_model(
        "Attention",
        [("q", q, False), ("k", k, False), ("v", v, False), ("", None, True), ("pk", pk, False), ("pv", pv, False)],
        outputs=3,
        opset=23,
        is_causal=1,
        **attrs,
    )
    ours, want, _ = run_both(model, [q, k, v, pk, pv])
    for a, e in zip(ours, want, strict=True):
        # two contractions of at most 5 terms around a softmax (exp: ULPS)
        assert_within(a, e, reduction_bound(10, 10 * np.abs(v).max() * np.abs(q).max() * 4) + ulp_bound(e, 64))


def test_softmax_cross_entropy_with_ignored_targets_matches_onnxruntime() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 5, 2)).astype(np.float32)
    t = np.array([[0, 4], [-1, 2], [3, -1]], np.int64)
    w = rng.random(5).astype(np.float32)
    model = one_node_model(
        "SoftmaxCrossEntropyLoss",
        [("x", x, False), ("t", t, False), ("w", w, True)],
        outputs=2,
        opset=13,
        ignore_index=-1,
    )
    ours, want, _ = run_both(model, [x, t])
    for a, e in zip(ours, want, strict=True):
        assert_within(a, e, reduction_bound(10, 10 * (np.abs(x).max() + 5)) + ulp_bound(e, 64))


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_then_grid_sample_matches_onnxruntime(align_corners: int) -> None:
    """A spatial transformer: AffineGrid's grid (a matmul with a constant base grid) feeds GridSample."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    theta = (np.eye(2, 3) + 0.2 * rng.standard_normal((2, 2, 3))).astype(np.float32)
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners),
        helper.make_node("GridSample", ["x", "grid"], ["y"], align_corners=align_corners, padding_mode="border"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("theta", TensorProto.FLOAT, theta.shape),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array([2, 3, 4, 7], np.int64), "size")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    (ours,), (want,), _ = run_both(model, [x, theta])
    assert ours.shape == (2, 3, 4, 7)
    # a 3-term contraction for the grid (its error moves the taps), then 4 taps in [0, 1]
    assert_within(ours, want, reduction_bound(16, 16 * np.abs(x).max()))


@pytest.mark.parametrize(("p", "attrs"), [(2, {"pads": [1, 0, 1, 2]}), (3, {"strides": [2, 1], "dilations": [1, 2]})])
def test_lp_pool_matches_onnxruntime(p: int, attrs: dict[str, Any]) -> None:
    x = np.random.default_rng(12).standard_normal((1, 2, 6, 7)).astype(np.float32)
    model = one_node_model("LpPool", [("x", x, False)], opset=18, kernel_shape=[2, 3], p=p, **attrs)
    (ours,), (want,), _ = run_both(model, [x])
    # a sum of 6 powers, then a root (pow: ULPS)
    assert_within(ours, want, reduction_bound(6, 6 * np.abs(want).max()) + ulp_bound(want, 64))


def test_max_unpool_of_max_pool_indices_matches_onnxruntime() -> None:
    x = np.random.default_rng(13).standard_normal((1, 2, 4, 6)).astype(np.float32)
    pool = one_node_model(
        "MaxPool", [("x", x, False)], outputs=2, out_types=(TensorProto.FLOAT, TensorProto.INT64), opset=12,
        kernel_shape=[2, 2], strides=[2, 2],
    )
    pooled, indices = onnxruntime_execute(pool, [x])
    model = one_node_model(
        "MaxUnpool", [("p", pooled, False), ("i", indices, False)], opset=11, kernel_shape=[2, 2], strides=[2, 2]
    )
    (ours,), (want,), _ = run_both(model, [pooled, indices])
    np.testing.assert_array_equal(ours, want)
    # with a larger output_shape, onnx's reference (the node tests' semantics) places the
    # unpooled tensor at the start of each dim; onnxruntime reads the indices differently
    shaped = one_node_model(
        "MaxUnpool",
        [("p", pooled, False), ("i", indices, False), ("s", np.array([1, 2, 5, 7], np.int64), True)],
        opset=11,
        kernel_shape=[2, 2],
        strides=[2, 2],
    )
    (ours,) = BuildExecute()(import_model(shaped), [pooled, indices])
    np.testing.assert_array_equal(ours, np.pad(want, ((0, 0), (0, 0), (0, 1), (0, 1))))
