"""convert-layout (byoc/passes/convert_layout.py): the rewritten graph computes the same values,
its transposes cancel, and the options are checked."""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from support.paths import FILECHECK
from xdsl.passes import PassPipeline

import byoc
from byoc.dialects import nn
from byoc.passes import ConvertLayoutPass


def _cnn() -> str:
    text = (FILECHECK / "passes" / "convert-layout.mlir").read_text()
    return text.split("// -----")[0].replace("func.func @cnn", "func.func @main")


def _convert(module, **options):  # type: ignore[no-untyped-def]
    out = module.clone()
    PassPipeline((ConvertLayoutPass(**options),)).apply(byoc.make_context(), out)
    out.verify()
    return out


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal((1, 3, 8, 8)).astype(np.float32), rng.uniform(0.5, 1.5, 4).astype(np.float32)]


@pytest.mark.parametrize("targets", [[], ["examplejson"], ["ccompiler"], ["ccompiler", "examplejson"]])
def test_the_converted_graph_computes_the_same_values(targets: list[str]) -> None:
    module = byoc.parse_module(_cnn())
    nhwc = _convert(module, layouts=("NHWC",))
    inputs = _inputs()
    expected = byoc.run_reference(module, *inputs)
    got = byoc.build(nhwc, targets=targets).run(*inputs)
    assert_graph_outputs(module, inputs, got, expected, what=f"NHWC on {targets}")


def test_transposes_cancel_between_layers_and_back() -> None:
    module = byoc.parse_module(_cnn())
    nhwc = _convert(module, layouts=("NHWC",))
    assert sum(isinstance(op, nn.TransposeOp) for op in nhwc.walk()) == 2
    back = _convert(nhwc, targets=("ccompiler",))
    assert not any(isinstance(op, nn.TransposeOp) for op in back.walk())
    assert "data_layout" not in str(back)
    np.testing.assert_array_equal(
        byoc.run_reference(back, *_inputs())[0], byoc.run_reference(module, *_inputs())[0]
    )


def test_an_onnx_model_converts_and_runs() -> None:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(8).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=1),
        helper.make_node("Sigmoid", ["c2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (w2, "w2"), (b1, "b1"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = byoc.import_onnx(model)
    nhwc = _convert(module, layouts=("NHWC",))
    text = str(nhwc)
    assert len(re.findall(r"nn.transpose", text)) == 2, text
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    expected = byoc.run_reference(module, x)
    got = byoc.build(nhwc, targets=["examplejson"]).run(x)
    assert_graph_outputs(module, [x], got, expected, what="onnx NHWC")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({}, "either 'layouts' or 'targets'"),
        ({"layouts": ("NHWC",), "targets": ("ccompiler",)}, "either 'layouts' or 'targets'"),
        ({"layouts": ("NWHC",)}, "layout 'NWHC' is not one of NCHW, NHWC, OIHW, HWIO"),
        ({"layouts": ("HWIO",)}, "needs a data layout"),
        ({"targets": ("nosuch",)}, "unknown target 'nosuch'"),
    ],
)
def test_bad_options_are_errors(options: dict[str, tuple[str, ...]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ConvertLayoutPass(**options)
