"""The graph dialect: construction, verification and round trips (byoc/dialects/graph.py),
and what the serialised format reads from it (byoc/runtime/graph_format.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

import byoc
from byoc.dialects import graph as gd
from byoc.dialects.nn import tensor
from byoc.runtime import graph_format as gf


def _t(*shape: int):  # noqa: ANN202
    from xdsl.dialects.builtin import f32

    return tensor(shape, f32)


def build_module() -> gd.GraphModuleOp:
    w = gd.ConstantOp.from_array("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    x = gd.InputOp("x", _t(1, 3))
    c = gd.ConstRefOp("w", _t(2, 3))
    dense = gd.NodeOp("nn.dense", [x.result, c.result], [_t(1, 2)])
    block = Block(arg_types=[_t(1, 2)])
    relu = gd.NodeOp("nn.relu", [block.args[0]], [_t(1, 2)])
    clip = gd.NodeOp(
        "nn.clip", [relu.outputs[0]], [_t(1, 2)], {"a_min": byoc_float(0.0), "a_max": byoc_float(6.0)}
    )
    block.add_ops([relu, clip, gd.YieldOp([clip.outputs[0]])])
    comp = gd.CompositeOp("t.relu6", [dense.outputs[0]], [_t(1, 2)], Region(block))
    graph = gd.GraphOp("g", [x, c, dense, comp, gd.OutputOp([comp.outputs[0]])])
    return gd.GraphModuleOp([w, graph])


def byoc_float(v: float):  # noqa: ANN201
    from xdsl.dialects.builtin import FloatAttr, f64

    return FloatAttr(v, f64)


def test_built_ops_verify_and_round_trip() -> None:
    container = build_module()
    module = ModuleOp([container])
    module.verify()
    text = str(module)
    again = byoc.parse_module(text)
    again.verify()
    assert str(again) == text
    assert [g.sym_name.data for g in container.graphs] == ["g"]
    assert container.constant("w") is not None and container.constant("v") is None


def test_describe_numbers_inputs_first_then_program_order() -> None:
    gs = gf.describe(build_module())
    (g,) = gs.graphs
    kinds = [gf.ENTRY_KINDS[e.kind] for e in g.entries]
    assert kinds == ["input", "const", "node", "node", "inner"]
    assert g.inputs == [0] and g.outputs == [3]
    dense, comp = g.nodes
    assert (dense.op, dense.inputs, dense.outputs) == ("nn.dense", [0, 1], [2])
    assert (comp.op, comp.inputs, comp.outputs) == ("t.relu6", [2], [3])
    relu, clip = comp.body
    assert relu.inputs == [2] and relu.outputs == [4]
    assert clip.inputs == [4] and clip.outputs == [3]
    assert dict((k, v) for k, _, v in clip.attrs) == {"a_min": 0.0, "a_max": 6.0}
    blob = gf.encode(gs)
    gf.check_header(blob)
    assert gf.encode(gf.describe(build_module())) == blob  # deterministic


def test_a_constant_whose_data_does_not_fit_its_type_fails_to_verify() -> None:
    const = gd.ConstantOp("w", DenseIntOrFPElementsAttr(_t(3), BytesAttr(b"\0" * 8)))
    with pytest.raises(VerifyException, match="data holds 8 bytes, tensor<3xf32> needs 12"):
        const.verify_()


def test_node_attribute_kinds() -> None:
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64

    gd.check_attr_value("n", IntegerAttr(3, i64))
    gd.check_attr_value("s", StringAttr("NCHW"))
    with pytest.raises(VerifyException, match="attribute 'd' is"):
        gd.check_attr_value("d", DictionaryAttr({}))


def test_dynamic_and_too_high_ranks_are_rejected() -> None:
    from xdsl.dialects.builtin import DYNAMIC_INDEX, f32

    with pytest.raises(VerifyException, match=r"shape \?x3 must be static"):
        gd.check_tensor_type(tensor((DYNAMIC_INDEX, 3), f32), "x")
    with pytest.raises(VerifyException, match="rank 9 is above the runtime's 8"):
        gd.check_tensor_type(tensor((1,) * 9, f32), "x")
