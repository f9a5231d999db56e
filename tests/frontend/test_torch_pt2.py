"""`.pt2` files (`torch.export.save`) on the command line: byoc-opt and byoc-run read them like
`.onnx` models; `--input-shape` fixes dynamic dims; a program with unconverted ops gives one
diagnostic per node, at its Python line, and exit code 1."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch (extra byoc[torch])")

from torch import nn  # noqa: E402
from torch.export import Dim  # noqa: E402

from byoc.frontend import ALL_FRONTENDS  # noqa: E402
from byoc.tools import byoc_opt, byoc_run  # noqa: E402


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: Any) -> Any:
        y = torch.relu(self.conv(x)).mean((2, 3))
        return self.fc(y).softmax(-1)


class Unconverted(nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.sort(x).values + torch.special.erfinv(x.clamp(-0.5, 0.5))  # two ops


def _save(tmp_path: Path, name: str, model: nn.Module, args: tuple[Any, ...], **kwargs: Any) -> Path:
    torch.manual_seed(0)
    path = tmp_path / name
    torch.export.save(torch.export.export(model.eval(), args, **kwargs), str(path))
    return path


def test_pt2_is_a_registered_frontend() -> None:
    assert ALL_FRONTENDS["pt2"]().name == "pt2"


def test_byoc_opt_reads_pt2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(tmp_path, "small.pt2", Small(), (torch.randn(1, 3, 6, 6),))
    assert byoc_opt.main([str(path), "-p", "byoc{targets=ccompiler}"]) == 0
    out = capsys.readouterr().out
    assert "func.func @main(%x: tensor<1x3x6x6xf32>) -> tensor<1x2xf32>" in out
    assert "func.call @ccompiler_main_0" in out


def test_byoc_run_pt2_with_dynamic_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(
        tmp_path, "dyn.pt2", Small(), (torch.randn(2, 3, 6, 6),),
        dynamic_shapes={"x": {0: Dim("batch", max=8)}},
    )  # fmt: skip
    assert byoc_run.main([str(path), "--targets", "ccompiler", "--repeat", "1"]) == 0
    assert "outputs match the reference" in capsys.readouterr().out
    assert byoc_run.main([str(path), "--targets", "ccompiler", "--repeat", "1", "--input-shape", "x=3x3x6x6"]) == 0
    assert "outputs match the reference" in capsys.readouterr().out


def test_byoc_opt_input_shape_fixes_a_pt2_dynamic_dim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(
        tmp_path, "dyn.pt2", Small(), (torch.randn(2, 3, 6, 6),),
        dynamic_shapes={"x": {0: Dim("batch", max=8)}},
    )  # fmt: skip
    assert byoc_opt.main([str(path), "--input-shape", "x=3x3x6x6", "-p", "byoc{targets=ccompiler}"]) == 0
    assert "func.func @main(%x: tensor<3x3x6x6xf32>) -> tensor<3x2xf32>" in capsys.readouterr().out
    assert byoc_opt.main([str(path), "--input-shape", "nope=3x3x6x6"]) == 1
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err


def test_unconverted_ops_are_diagnostics_at_their_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(tmp_path, "bad.pt2", Unconverted(), (torch.randn(3, 4),))
    source, start = inspect.getsourcelines(Unconverted)
    line = start + next(i for i, t in enumerate(source) if "# two ops" in t)
    for main in (byoc_run.main, byoc_opt.main):
        assert main([str(path)]) == 1
        err = capsys.readouterr().err
        assert f"{__file__}:{line}:" in err
        assert "aten.sort.default" in err and "aten.erfinv.default" in err
        assert "2 nodes of the exported program failed to convert" in err
        assert "Traceback" not in err


def test_not_a_pt2_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "junk.pt2"
    path.write_bytes(b"not a zip archive")
    assert byoc_run.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "cannot load the exported program" in err and "Traceback" not in err


def test_errors_about_ops_point_at_the_python_line(tmp_path: Path) -> None:
    """What byoc-opt and byoc-run print for a pass or verifier error about an op of a .pt2
    program: the Python line the op came from, with its text."""
    from byoc.frontend.torch.pt2 import load_pt2

    path = _save(tmp_path, "small.pt2", Small(), (torch.randn(1, 3, 6, 6),))
    parsed = load_pt2(path, str(path))
    conv = next(op for op in parsed.module.walk() if op.name == "nn.conv2d")
    source, start = inspect.getsourcelines(Small.forward)
    line = start + next(i for i, t in enumerate(source) if "self.conv(x)" in t)
    text = parsed.diagnostic(conv, "partition: something about this conv").render()
    assert text.startswith(f"{__file__}:{line}:9: error: partition: something about this conv")
    assert "torch.relu(self.conv(x))" in text
