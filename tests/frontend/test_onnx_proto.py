"""The importer's protobuf layer (byoc/frontend/onnx/proto.py) against the `onnx` package it
stands in for: tensors, attributes and schema versions read the same, and importing a model
file in a fresh process does not import `onnx`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import AttributeProto, TensorProto, defs, helper, numpy_helper  # noqa: E402

from byoc.frontend.onnx import proto  # noqa: E402

NATIVE = [
    TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16,
    TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL,
    TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.UINT32, TensorProto.UINT64,
    TensorProto.COMPLEX64, TensorProto.COMPLEX128,
]  # fmt: skip


def _values(code: int) -> np.ndarray[Any, Any]:
    dtype = helper.tensor_dtype_to_np_dtype(code)
    raw = np.array([[0, 1, 2], [3, 250, 7]], dtype=np.float64)
    if dtype == np.bool_:
        return raw.astype(np.int64) % 2 == 1
    if np.dtype(dtype).kind == "c":
        return (raw + 1j * raw[::-1]).astype(dtype)
    if np.dtype(dtype).kind == "i":
        raw = raw - 100
    return raw.astype(dtype)


@pytest.mark.parametrize("code", NATIVE, ids=lambda c: TensorProto.DataType.Name(c))
@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed_field"])
def test_to_array_matches_numpy_helper(code: int, raw: bool) -> None:
    values = _values(code)
    tensor = helper.make_tensor("t", code, values.shape, values.reshape(-1).tolist(), raw=False)
    if raw:
        tensor = numpy_helper.from_array(values, "t")
    got, want = proto.to_array(tensor), numpy_helper.to_array(tensor)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, values)


def test_to_array_of_a_type_numpy_lacks_goes_through_onnx() -> None:
    tensor = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"bc"])
    np.testing.assert_array_equal(proto.to_array(tensor), numpy_helper.to_array(tensor))


def test_to_array_of_data_that_does_not_fill_its_dims_is_a_value_error() -> None:
    tensor = numpy_helper.from_array(np.zeros(6, np.float32), "t")
    tensor.dims[:] = [7]
    with pytest.raises(ValueError):
        proto.to_array(tensor)


ATTRIBUTES = [
    helper.make_attribute("f", 1.5),
    helper.make_attribute("i", 3),
    helper.make_attribute("s", "text"),
    helper.make_attribute("t", numpy_helper.from_array(np.ones(2, np.float32))),
    helper.make_attribute("fs", [1.0, 2.0]),
    helper.make_attribute("is", [1, 2, 3]),
    helper.make_attribute("ss", ["a", "b"]),
    helper.make_attribute("g", helper.make_graph([], "body", [], [])),
    helper.make_attribute("empty_ints", [], attr_type=AttributeProto.INTS),
]


@pytest.mark.parametrize("attr", ATTRIBUTES, ids=lambda a: a.name)
def test_attribute_value_matches_helper(attr: Any) -> None:
    assert proto.attribute_value(attr) == helper.get_attribute_value(attr)


def test_schema_versions_match_onnx_defs() -> None:
    """Every default-domain op at every opset the table knows; a newer onnx adds opsets and
    ops, and then this test names what the table lacks (regenerate it from onnx.defs)."""
    assert proto.SINCE_VERSIONS_OPSET <= defs.onnx_opset_version()
    names = {s.name for s in defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")}
    wrong = []
    for name in sorted(names | set(proto.SINCE_VERSIONS)):
        for opset in range(1, proto.SINCE_VERSIONS_OPSET + 1):
            try:
                want = defs.get_schema(name, opset, "").since_version
            except Exception:
                want = 0
            if proto.schema_version(name, opset) != want:
                wrong.append((name, opset, want))
    assert not wrong, wrong[:10]


def test_a_model_file_imports_without_importing_onnx(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    path = tmp_path / "m.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    script = (
        "import sys\n"
        "from byoc.frontend.onnx import import_model\n"
        f"m = import_model({str(path)!r})\n"
        "assert 'onnx' not in sys.modules, 'onnx was imported'\n"
        "print(m)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "nn.add" in done.stdout and "nn.relu" in done.stdout


def test_external_data_in_a_plain_file_beside_the_model_is_read_without_onnx(tmp_path: Path) -> None:
    """Tensors in a plain file of the model's folder are read directly; paths, links and bad
    ranges go through `onnx.load` (tests/frontend/test_onnx_external_data.py)."""
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    path = tmp_path / "m.onnx"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save_model(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    script = (
        "import sys\n"
        "import numpy as np\n"
        "import byoc\n"
        f"exe = byoc.build(byoc.import_onnx({str(path)!r}), targets=[])\n"
        "assert 'onnx' not in sys.modules, 'onnx was imported'\n"
        "(y,) = exe.run(x=np.ones((2, 3), np.float32))\n"
        "print(np.asarray(y).tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"
