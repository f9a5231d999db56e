"""byoc-run: its table, what it reports for each kind of model, and its error lines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from byoc.tools import byoc_run


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = byoc_run.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_onnx_model_without_the_onnx_package_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now fails as if not installed
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07")
    code, out, err = run(capsys, str(model))
    assert (code, out) == (1, "")
    assert err == (
        f"{model}: error: reading ONNX models needs the 'onnx' package "
        "(pip install 'byoc[onnx]')\n"
    )
