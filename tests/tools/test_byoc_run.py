"""byoc-run: its table, what it reports for each kind of model, and its error lines."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from paths import EXAMPLES

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


# ---- --input-shape (the parser byoc-opt uses) -------------------------------------------


def test_input_shape_makes_a_symbolic_batch_static(
    batch_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, str(batch_model), "--targets", "ccompiler", "--repeat", "1")
    assert code == 1 and "the ? dims are known only at run time" in err
    assert "--input-shape NAME=DxDx..." in err
    code, out, err = run(
        capsys, str(batch_model), "--targets", "ccompiler", "--input-shape", "x=4x3", "--repeat", "1"
    )
    assert code == 0, err
    assert "ccompiler_main_0" in out and "outputs match the reference" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--input-shape", "foo=1x3"], "--input-shape: model has no input 'foo'; inputs: x"),
        (["--input-shape", "x=1xN"], "--input-shape 'x=1xN': expected NAME=DxDx..., e.g. x=1x3x224x224"),
        (["--input-shape", "x=1x3", "--input-shape", "x=2x3"], "--input-shape: input 'x' is given two shapes"),
    ],
)
def test_a_bad_input_shape_is_an_error(
    batch_model: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    code, out, err = run(capsys, str(batch_model), *flags)
    assert (code, out) == (1, "")
    assert err == f"{batch_model}: error: {message}\n"


def test_input_shape_on_an_mlir_model_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    model = str(EXAMPLES / "seed_subgraph.mlir")
    code, out, err = run(capsys, model, "--input-shape", "a=10x10")
    assert (code, out) == (1, "")
    assert err == f"{model}: error: --input-shape applies to .onnx models\n"
