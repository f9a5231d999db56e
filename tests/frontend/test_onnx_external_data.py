"""ONNX external data: read from the model's folder when the model is given as a path;
refused, naming the tensor, when it is given as bytes, a stream or a ModelProto (there is no
folder: onnx would read the process's current directory); a location outside the model's
folder is byoc's `OnnxImportError`, not onnx's `ValidationError`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402
from byoc.frontend.onnx import OnnxImportError, import_model  # noqa: E402

W = np.arange(6, dtype=np.float32).reshape(2, 3)


def _save(folder: Path, location: str = "w.bin") -> Path:
    """An Add of `x` and an initializer `w` stored in `location` beside the model."""
    w = numpy_helper.from_array(W, "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    if location != "w.bin":
        stored = onnx.load(str(path), load_external_data=False)
        for entry in stored.graph.initializer[0].external_data:
            if entry.key == "location":
                entry.value = location
        onnx.save_model(stored, str(path))
    return path


def _run(module: Any) -> np.ndarray[Any, Any]:
    x = np.ones((2, 3), np.float32)
    return byoc.build(module, targets=[])(x)[0]


def test_a_path_reads_external_data_from_the_models_folder(tmp_path: Path) -> None:
    path = _save(tmp_path / "model")
    np.testing.assert_array_equal(_run(import_model(path)), W + 1)
    # a ModelProto onnx loaded from its path holds the data already
    np.testing.assert_array_equal(_run(import_model(onnx.load(str(path)))), W + 1)


@pytest.mark.parametrize("form", ["bytes", "stream", "proto"])
def test_without_a_path_external_data_is_an_error_naming_the_tensor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    path = _save(tmp_path / "model")
    # a decoy in the current directory: onnx would have read it
    (tmp_path / "w.bin").write_bytes(np.full(6, 7, np.float32).tobytes())
    monkeypatch.chdir(tmp_path)
    data = path.read_bytes()
    model: Any = {
        "bytes": data,
        "stream": io.BytesIO(data),
        "proto": onnx.load(str(path), load_external_data=False),
    }[form]
    with pytest.raises(OnnxImportError, match=r"tensor 'w' keeps its data in an external file \('w.bin'\)"):
        import_model(model)


@pytest.mark.parametrize("location", ["../w.bin", "/etc/passwd"])
def test_a_location_outside_the_models_folder_is_an_import_error(tmp_path: Path, location: str) -> None:
    (tmp_path / "w.bin").write_bytes(W.tobytes())
    path = _save(tmp_path / "model", location)
    with pytest.raises(OnnxImportError, match="external data.*tensor name: w"):
        import_model(path)
