"""Mutated ONNX models (support/fuzz/onnx_cases.py) through the importer, in the fuzz worker:
each imports to a module that prints and parses back, or raises `OnnxImportError`."""

from __future__ import annotations

from typing import Any

import pytest
from support.fuzz.fuzz_harness import assert_clean, env_count, run_campaign

PER_CASE_SECONDS = 60.0


def campaign(first_seed: int, count: int) -> Any:
    cases = [
        {"seed": s, "mode": ("small", "light")[s % 2]}
        for s in range(first_seed, first_seed + count)
    ]
    return run_campaign("onnx", cases, PER_CASE_SECONDS)


def test_mutated_onnx_models_short() -> None:
    assert_clean(campaign(first_seed=140000, count=env_count("onnx_short", 16)))


@pytest.mark.slow
def test_mutated_onnx_models_long() -> None:
    assert_clean(campaign(first_seed=0, count=env_count("onnx_long", 1000)))


def _import_error(model: Any) -> None:
    import byoc
    from byoc.frontend.onnx.errors import OnnxImportError

    with pytest.raises(OnnxImportError):
        byoc.import_onnx(model.SerializeToString())


@pytest.mark.parametrize(
    "start, limit, delta", [(0.0, 3.0, float("nan")), (0.0, 3.0, 0.0), (0.0, float("inf"), 1.0)]
)
def test_range_with_nan_or_zero_delta_is_an_import_error(
    start: float, limit: float, delta: float
) -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(np.array(v, np.float32), n)
        for n, v in zip("sld", (start, limit, delta), strict=True)
    ]
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "range", [], [y], initializer=inits)
    _import_error(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_initializer_with_short_data_is_an_import_error() -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.raw_data = w.raw_data[:5]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "short", [x], [y], initializer=[w]
    )
    _import_error(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def _model(nodes: list[Any], inits: list[Any], inputs: list[Any]) -> Any:
    from onnx import TensorProto, helper

    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "repro", inputs, [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("case", ["reshape-minus-3", "add-not-broadcastable"])
def test_folding_invalid_constants_is_an_import_error(case: str) -> None:
    import numpy as np
    from onnx import helper, numpy_helper

    c = numpy_helper.from_array(np.ones(4, np.float32), "c")
    if case == "reshape-minus-3":
        s = numpy_helper.from_array(np.array([-3, -3], np.int64), "s")
        model = _model([helper.make_node("Reshape", ["c", "s"], ["y"])], [c, s], [])
    else:
        d = numpy_helper.from_array(np.ones((2, 3), np.float32), "d")
        model = _model([helper.make_node("Add", ["c", "d"], ["y"])], [c, d], [])
    _import_error(model)


@pytest.mark.parametrize("op", ["Concat", "MaxPool"])
def test_missing_required_attribute_is_an_import_error(op: str) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    inputs = ["x", "x"] if op == "Concat" else ["x"]
    _import_error(_model([helper.make_node(op, inputs, ["y"])], [], [x]))


def test_gemm_of_a_4d_constant_is_an_import_error() -> None:
    # a Conv node turned into Gemm (light squeezenet, seed 159): its 4-D weight is transposed as 2-D
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")
    b = numpy_helper.from_array(np.ones(2, np.float32), "b")
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Gemm", ["r", "w", "b"], ["y"]),
    ]
    _import_error(_model(nodes, [w, b], [x]))
