"""`graph_format.decode` and `graph_check`: a graph blob means what a verified module lowers
to, or loading it is an error naming the node (checked before any engine sees it)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

import byoc
from byoc.runtime.graph_check import GraphCheckError, check_blob
from byoc.runtime.graph_format import ATTR_FLOAT, ATTR_INTS, GraphSet, decode, encode

MODEL = """
func.func @main(%x: tensor<2x16xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = nn.constant dense<0.125> : tensor<8x16xf32>
  %b = nn.constant dense<-0.5> : tensor<8xf32>
  %0 = nn.dense %x, %w : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %1 = nn.bias_add %0, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = nn.relu %1 : tensor<2x8xf32>
  %3 = nn.add %2, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %3 : tensor<2x8xf32>
}
"""


@pytest.fixture(scope="module")
def blob() -> bytes:
    exe = byoc.build(byoc.parse_module(MODEL), targets=["graphref"])
    return exe.components["graphref"].export()["graph"]


def edited(blob: bytes, edit: Callable[[GraphSet], Any]) -> bytes:
    graphs = copy.deepcopy(decode(blob))
    edit(graphs)
    return encode(graphs)


def inner(graphs: GraphSet, op: str) -> Any:
    return next(n for node in graphs.graphs[0].nodes for n in (node, *node.body) if n.op == op)


def test_decode_is_the_inverse_of_encode(blob: bytes) -> None:
    graphs = decode(blob)
    assert encode(graphs) == blob
    assert [n.op for n in graphs.graphs[0].nodes] == ["graphref.dense_bias_relu", "nn.add"]
    check_blob(blob)


@pytest.mark.parametrize("cut", [30, 100, -1])
def test_a_truncated_blob_is_a_check_error(blob: bytes, cut: int) -> None:
    data = bytearray(blob[:cut])
    data[16:24] = len(data).to_bytes(8, "little")  # the header's size agrees
    with pytest.raises(GraphCheckError, match="truncated|larger than the blob"):
        check_blob(bytes(data))


def _set_attr(name: str, kind: int, value: Any) -> Callable[[GraphSet], None]:
    def edit(graphs: GraphSet) -> None:
        node = inner(graphs, "nn.bias_add")
        node.attrs = [(k, kind, value) if k == name else (k, kd, v) for k, kd, v in node.attrs]

    return edit


CASES: list[tuple[str, Callable[[GraphSet], None], str]] = [
    (
        "inputs swapped",
        lambda g: inner(g, "nn.bias_add").inputs.reverse(),
        r"node 0 \('graphref.dense_bias_relu'\), inner node 1 \('nn.bias_add'\)",
    ),
    (
        "too few operands",
        lambda g: setattr(inner(g, "nn.relu"), "op", "nn.batch_norm"),
        r"inner node 2 \('nn.batch_norm'\) has 1 operands; 'nn.batch_norm' takes 5",
    ),
    (
        "an operand dropped",
        lambda g: inner(g, "nn.add").inputs.pop(),
        r"node 1 \('nn.add'\) has 1 operands; 'nn.add' takes 2",
    ),
    ("unknown op", lambda g: setattr(inner(g, "nn.add"), "op", "nn.nope"), "no nn op of that name"),
    ("axis out of range", _set_attr("axis", 0, 2**31), r"'nn.bias_add'\).*axis"),
    ("axis of another kind", _set_attr("axis", ATTR_FLOAT, 1.0), "property 'axis' must be like"),
    ("axis as an array", _set_attr("axis", ATTR_INTS, [1]), "property 'axis'"),
    (
        "a result shape edited",
        lambda g: setattr(g.graphs[0].entries[inner(g, "nn.add").outputs[0]], "shape", (0, 0)),
        r"node 1 \('nn.add'\) records results tensor<0x0xf32>",
    ),
    (
        "an unknown property",
        lambda g: inner(g, "nn.add").attrs.append(("axis", 0, 1)),
        "'nn.add' has no property 'axis'",
    ),
    (
        "a composite with attributes",
        lambda g: g.graphs[0].nodes[0].attrs.append(("axis", 0, 1)),
        "a composite carries no attributes",
    ),
]


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_edited_node_is_an_error_naming_it(
    blob: bytes, edit: Callable[[GraphSet], None], message: str
) -> None:
    with pytest.raises(GraphCheckError, match=message):
        check_blob(edited(blob, edit))


def test_the_graph_module_checks_before_the_engine(blob: bytes) -> None:
    from byoc.runtime.graph_module import REFERENCE_ENGINE, GraphModule

    bad = edited(blob, lambda g: inner(g, "nn.bias_add").inputs.reverse())
    with pytest.raises(GraphCheckError, match="nn.bias_add"):
        GraphModule.build(bad, REFERENCE_ENGINE)
