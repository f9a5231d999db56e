"""What the ONNX importer still rejects where it takes what it builds as checked.

The importer builds its constants' values without xDSL's verification (`array_dense`),
names its constants and emitted ops `inferred` to the final verification (one full
verification per signature), and computes a type relation once per class, operand types
and attribute values (`Importer._infer_types`). Each case here is bad input that one of
those shortcuts would meet, and it still gives an error naming the tensor or the node,
never a traceback or a module.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_onnx import make_model, tensor_in

from byoc.frontend.onnx import OnnxImportError, UnsupportedOnnxError, import_model


def test_an_initializer_whose_data_does_not_fill_its_dims_is_named() -> None:
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    w.raw_data = w.raw_data[:-4]  # 5 floats for a 2x3 tensor
    model = make_model([helper.make_node("Add", ["x", "w"], ["y"])], [tensor_in("x", [2, 3])], [tensor_in("y", [2, 3])])
    model.graph.initializer.append(w)
    with pytest.raises(OnnxImportError, match="initializer 'w' is malformed"):
        import_model(model)


def test_a_constant_node_whose_data_does_not_fill_its_dims_is_located() -> None:
    bad = numpy_helper.from_array(np.ones((2, 3), np.float32), "c")
    bad.raw_data = bad.raw_data[:-4]  # 5 floats for a 2x3 tensor
    model = make_model(
        [
            helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c0", TensorProto.FLOAT, [2, 3], [1.0] * 6)),
            helper.make_node("Constant", [], ["d"], value=bad, name="short"),
            helper.make_node("Add", ["c", "d"], ["s"]),
            helper.make_node("Add", ["x", "s"], ["y"]),
        ],
        [tensor_in("x", [2, 3])],
        [tensor_in("y", [2, 3])],
    )
    with pytest.raises(OnnxImportError, match=r"node 'short' \(Constant-\d+\)"):
        import_model(model)


def test_a_constant_of_an_element_type_nn_lacks_is_rejected() -> None:
    model = make_model(
        [
            helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.asarray([1 + 2j, 3 + 4j], np.complex64))),
            helper.make_node("Identity", ["c"], ["y"]),
        ],
        [],
        [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [2])],
    )
    with pytest.raises(UnsupportedOnnxError, match="complex64"):
        import_model(model)


def test_a_relation_that_held_for_one_node_is_checked_again_for_other_types() -> None:
    """Two Adds of one class and attributes: the first types, the second (other operand
    types) fails and is named; the relation is looked up only for the very same types."""
    model = make_model(
        [
            helper.make_node("Add", ["x", "x"], ["a"], name="good_add"),
            helper.make_node("Add", ["a", "z"], ["y"], name="bad_add"),
        ],
        [tensor_in("x", [2, 3]), tensor_in("z", [4])],
        [tensor_in("y", [2, 3])],
    )
    with pytest.raises(OnnxImportError, match=r"node 'bad_add' \(Add-\d+\): operand shapes 2x3, 4 are not"):
        import_model(model)


def test_repeated_blocks_type_as_each_node_alone() -> None:
    """Convs of the same types and attributes share one relation; convs of other
    attributes do not: each result type is the one the node's own relation gives."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["a", "w"], ["b"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["b", "w"], ["c"]),
        helper.make_node("Conv", ["c", "w"], ["y"], strides=[2, 2]),
    ]
    model = make_model(nodes, [tensor_in("x", [1, 4, 9, 9])], [tensor_in("y", [1, 4, 3, 3])], [w], ["w"])
    module = import_model(model)
    shapes = [tuple(op.results[0].type.get_shape()) for op in module.walk() if op.name == "nn.conv2d"]
    assert shapes == [(1, 4, 9, 9), (1, 4, 9, 9), (1, 4, 7, 7), (1, 4, 3, 3)]
