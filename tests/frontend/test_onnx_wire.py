"""Cutting tensor payloads out of a serialized model before protobuf parses it
(`byoc/frontend/onnx/wire.py`): the same arrays and the same module as a whole parse, and
anything unexpected parsed whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_onnx import make_model, tensor_in

import byoc.frontend.onnx.proto as proto
from byoc.frontend.onnx import OnnxImportError, import_model, wire


@pytest.fixture(autouse=True)
def cut_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut every payload, however small, so that small models take the path."""
    monkeypatch.setattr(wire, "MIN_CUT_BYTES", 1)
    monkeypatch.setattr(wire, "MIN_WALK_BYTES", 0)


def model_with_payloads() -> onnx.ModelProto:
    """Initializers and Constant nodes with raw data, between nodes without any."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    b = np.arange(3, dtype=np.int64)
    c = rng.standard_normal((1, 3)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["a"]),
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c)),
        helper.make_node("Add", ["a", "c"], ["d"]),
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["d", "bf"], ["y"]),
    ]
    return make_model(nodes, [tensor_in("x", [2, 3])], [tensor_in("y", [2, 3])], [w, b], ["w", "b"])


def printed(module: object) -> str:
    return str(module)


def test_cut_payloads_give_the_arrays_of_a_whole_parse() -> None:
    model = model_with_payloads()
    data = model.SerializeToString()
    split = wire.split_payloads(data)
    assert split is not None
    skeleton, payloads = split
    assert len(payloads) == 3 and len(skeleton) < len(data)
    parsed = proto.pb2().ModelProto()
    parsed.ParseFromString(skeleton)
    table = wire.mark_cut_tensors(parsed, payloads, "t")
    reset = proto.CUT_PAYLOADS.set(table)
    try:
        got = [proto.to_array(t) for t in parsed.graph.initializer]
        got.append(proto.to_array(parsed.graph.node[1].attribute[0].t))
    finally:
        proto.CUT_PAYLOADS.reset(reset)
    want = [numpy_helper.to_array(t) for t in model.graph.initializer]
    want.append(numpy_helper.to_array(model.graph.node[1].attribute[0].t))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()


def test_a_cut_tensor_read_without_its_payloads_fails() -> None:
    """A marked tensor names a location no file has: read without the table, it is an
    error, never an empty or zero array."""
    split = wire.split_payloads(model_with_payloads().SerializeToString())
    assert split is not None
    parsed = proto.pb2().ModelProto()
    parsed.ParseFromString(split[0])
    wire.mark_cut_tensors(parsed, split[1], "t")
    with pytest.raises(Exception, match="byoc-payload"):
        proto.to_array(parsed.graph.initializer[0])


def test_a_model_file_imports_as_its_proto_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_with_payloads()
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    cuts: list[int] = []
    mark = wire.mark_cut_tensors

    def counted(*args: object) -> dict[str, bytes]:
        table = mark(*args)  # type: ignore[arg-type]
        cuts.append(len(table))
        return table

    monkeypatch.setattr(wire, "mark_cut_tensors", counted)
    assert printed(import_model(str(path))) == printed(import_model(model))
    assert cuts == [3]


def test_a_cut_initializer_that_does_not_fill_its_dims_is_named(tmp_path: Path) -> None:
    model = model_with_payloads()
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-4]
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxImportError, match="initializer 'w' is malformed"):
        import_model(str(path))


def _field(number: int, payload: bytes) -> bytes:
    return wire._encode_varint(number << 3 | 2) + wire._encode_varint(len(payload)) + payload


def test_unexpected_layouts_are_parsed_whole() -> None:
    model = model_with_payloads()
    data = model.SerializeToString()
    assert wire.split_payloads(data[:-3]) is None  # a length past the end
    external = model_with_payloads()
    external.graph.initializer[0].data_location = TensorProto.EXTERNAL
    assert wire.split_payloads(external.SerializeToString()) is None
    tensor = numpy_helper.from_array(np.ones(2, np.float32), "t").SerializeToString()
    twice = tensor + _field(9, b"\0" * 8)  # raw_data given twice: protobuf keeps the last
    graph = _field(5, twice)
    assert wire.split_payloads(_field(7, graph)) is None
    assert wire.split_payloads(_field(7, graph) + _field(7, graph)) is None  # graph twice


def test_small_payloads_are_left_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MIN_WALK_BYTES", 1 << 20)
    assert wire.split_payloads(model_with_payloads().SerializeToString()) is None
