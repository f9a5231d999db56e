"""ONNX `Clip` with NaN bounds (issue 14, item 11): every executor gives ONNX's answer.

The spec defines Clip as `Min(max, Max(input, min))` and ONNX's reference evaluator
gives NaN everywhere when a bound is NaN; the imported model must agree on the numpy
reference, a host-only build, ccompiler, cblas (with ccompiler) and examplejson.
(onnxruntime 1.32's Clip ignores a NaN bound: docs/dialects.md.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from support.bounds import assert_within

import byoc
from byoc.frontend.onnx import import_model

Array = np.ndarray[Any, Any]
F = TensorProto.FLOAT

TARGETS: dict[str, list[str] | None] = {
    "host": None,
    "ccompiler": ["ccompiler"],
    "cblas": ["cblas", "ccompiler"],
    "examplejson": ["examplejson"],
}
EXECUTORS = ["reference", *TARGETS]
X = np.array([[-2.0, 0.5, 3.0, np.nan], [np.inf, -np.inf, 0.0, 1.0]], np.float32)


def _model(opset: int, lo: float | None, hi: float | None, dynamic: bool = False) -> onnx.ModelProto:
    """y = Clip(x, lo, hi) on a 2x4 input; bounds as initializers (or graph inputs when
    `dynamic`) from opset 11, as attributes before."""
    inputs = [helper.make_tensor_value_info("x", F, [2, 4])]
    inits = []
    if opset < 11:
        attrs = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        node = helper.make_node("Clip", ["x"], ["y"], **attrs)
    else:
        names = []
        for name, v in (("lo", lo), ("hi", hi)):
            if v is None:
                names.append("")
                continue
            names.append(name)
            if dynamic:
                inputs.append(helper.make_tensor_value_info(name, F, []))
            else:
                inits.append(numpy_helper.from_array(np.array(v, np.float32), name))
        while names and names[-1] == "":
            names.pop()
        node = helper.make_node("Clip", ["x", *names], ["y"])
    graph = helper.make_graph(
        [node], "clip", inputs, [helper.make_tensor_value_info("y", F, [2, 4])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


def _feeds(lo: float | None, hi: float | None, dynamic: bool) -> dict[str, Array]:
    feeds = {"x": X}
    if dynamic:
        feeds.update({k: np.array(v, np.float32) for k, v in (("lo", lo), ("hi", hi)) if v is not None})
    return feeds


CASES = [
    pytest.param(13, math.nan, 1.0, False, id="13-nan-1"),
    pytest.param(13, 0.0, math.nan, False, id="13-0-nan"),
    pytest.param(13, math.nan, None, False, id="13-nan-none"),
    pytest.param(13, None, math.nan, False, id="13-none-nan"),
    pytest.param(11, math.nan, math.nan, False, id="11-nan-nan"),
    pytest.param(6, math.nan, 1.0, False, id="6-attr-nan-1"),
    pytest.param(13, math.nan, 1.0, True, id="13-dynamic-nan-1"),
    pytest.param(13, 0.0, 1.0, False, id="13-0-1"),
]


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize(("opset", "lo", "hi", "dynamic"), CASES)
def test_onnx_clip_with_nan_bounds_matches_onnx(
    executor: str, opset: int, lo: float | None, hi: float | None, dynamic: bool
) -> None:
    model = _model(opset, lo, hi, dynamic)
    feeds = _feeds(lo, hi, dynamic)
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    if lo is not None and math.isnan(lo) or hi is not None and math.isnan(hi):
        assert np.isnan(expected).all()  # ONNX's own answer, which byoc follows
    module = import_model(model)
    inputs = list(feeds.values())
    if executor == "reference":
        (actual,) = byoc.run_reference(module, *inputs)
    else:
        (actual,) = byoc.build(module, targets=TARGETS[executor]).run(*inputs)
    assert_within(actual, expected, 0.0, f"{executor}: Clip opset {opset} [{lo}, {hi}]")
