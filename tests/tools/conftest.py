"""Models the command-line tests run the tools on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def batch_model(tmp_path: Path) -> Path:
    """An ONNX model with a symbolic batch dim that only a static shape imports:
    x: [N, 3] -> reshape(relu(x), [shape(x)[0], -1]), whose Shape node needs N's size."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Shape", ["r"], ["s"], end=1),
        helper.make_node("Concat", ["s", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["r", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(np.array([-1], np.int64), "minus1")],
    )
    path = tmp_path / "batch.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path
