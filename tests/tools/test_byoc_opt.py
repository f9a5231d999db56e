"""byoc-opt's pieces as xDSL objects: the `-t` outputs are `Target`s, the inputs
`Frontend`s, and display options travel with the printer, not in a global; and its
`--input-shape` flag."""

from __future__ import annotations

from io import BytesIO, StringIO
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend
from xdsl.utils.target import Target

import byoc
from byoc.diagnostics import SourceError
from byoc.dialects import nn
from byoc.frontend import ALL_FRONTENDS
from byoc.frontend.mlir import MLIRFrontend
from byoc.frontend.onnx_frontend import parse_input_shapes
from byoc.lowering.emit import ALL_EMITTERS
from byoc.lowering.emit.mlir import MLIREmitter
from byoc.printer import ByocPrinter
from byoc.tools.byoc_opt import ByocOptMain


def test_every_output_is_an_xdsl_target_under_its_name() -> None:
    assert set(ALL_EMITTERS) == {"mlir", "c", "examplejson", "dot", "graph"}
    for name, factory in ALL_EMITTERS.items():
        cls = factory()
        assert issubclass(cls, Target) and cls.name == name


def test_every_input_is_an_xdsl_frontend_under_its_extension() -> None:
    assert set(ALL_FRONTENDS) == {"mlir", "onnx", "examplejson", "pt2"}
    for name, factory in ALL_FRONTENDS.items():
        cls = factory()
        assert issubclass(cls, Frontend) and cls.name == name


def test_elision_is_an_option_of_the_printer_not_a_global() -> None:
    module = ModuleOp([nn.ConstantOp.from_array(np.arange(8, dtype=np.float32))])
    short, full = StringIO(), StringIO()
    ByocPrinter(short, elide_constants_larger_than=4).print_op(module)
    ByocPrinter(full).print_op(module)
    assert "dense_resource<__elided__> : tensor<8xf32>" in short.getvalue()
    assert "__elided__" not in full.getvalue() and "__elided__" not in str(module)
    out = StringIO()
    MLIREmitter(elide_constants=4).emit(byoc.make_context(), module, out)
    assert "dense_resource<__elided__>" in out.getvalue()


def test_mlir_frontend_locates_errors_in_its_chunk() -> None:
    ctx = byoc.make_context()
    frontend = MLIRFrontend()
    module = frontend.parse(
        ctx, BytesIO(b"%0 = nn.constant dense<1.0> : tensor<2xf32>\n"), "a.mlir"
    )
    assert isinstance(module.ops.first, nn.ConstantOp)
    with pytest.raises(SourceError) as info:
        frontend.parse_source(ctx, b"\n%0 = nn.nope\n", "a.mlir", line_offset=10)
    (error,) = info.value.diagnostics
    assert (error.file, error.line, error.col) == ("a.mlir", 12, 6)


# ---- --input-shape --------------------------------------------------------------------


def _opt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = ByocOptMain(args=list(args)).run()
    out, err = capsys.readouterr()
    return code, out, err


def test_input_shape_makes_a_symbolic_batch_static(
    batch_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(batch_model)
    code, out, err = _opt(capsys, model, "-p", "byoc{targets=ccompiler}")
    assert (code, out) == (1, "")
    assert "the ? dims are known only at run time" in err
    assert "--input-shape NAME=DxDx..." in err
    code, out, err = _opt(
        capsys, model, "--input-shape", "x=2x3", "-p", "byoc{targets=ccompiler}"
    )
    assert (code, err) == (0, "")
    assert "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32>" in out
    assert "func.call @ccompiler_main_0" in out
    code, out, err = _opt(capsys, model, "--input-shape", "x=2x3", "-t", "dot")
    assert code == 0 and out.startswith('digraph "main"')


def test_input_shape_applies_to_onnx_on_stdin(
    batch_model: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = batch_model.read_bytes()

    class Stdin:
        buffer = BytesIO(data)

    monkeypatch.setattr("sys.stdin", Stdin())
    code, out, err = _opt(capsys, "-f", "onnx", "--input-shape", "x=5x3")
    assert (code, err) == (0, "")
    assert "tensor<5x3xf32>" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--input-shape", "foo=1x3"],
            "{model}: error: --input-shape: model has no input 'foo'; inputs: x\n",
        ),
        (
            ["--input-shape", "x=1x3", "--input-shape", "a=1", "--input-shape", "b=2"],
            "{model}: error: --input-shape: model has no inputs 'a', 'b'; inputs: x\n",
        ),
        (
            ["--input-shape", "x=1xN"],
            "byoc-opt: error: --input-shape 'x=1xN': expected NAME=DxDx..., e.g. x=1x3x224x224\n",
        ),
        (
            ["--input-shape", "1x3"],
            "byoc-opt: error: --input-shape '1x3': expected NAME=DxDx..., e.g. x=1x3x224x224\n",
        ),
        (
            ["--input-shape", "x=1x3", "--input-shape", "x=2x3"],
            "byoc-opt: error: --input-shape: input 'x' is given two shapes\n",
        ),
    ],
)
def test_a_bad_input_shape_is_an_error(
    batch_model: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    model = str(batch_model)
    code, out, err = _opt(capsys, model, *flags)
    assert (code, out) == (1, "")
    assert err == message.format(model=model)


def test_input_shape_on_mlir_input_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.mlir"
    path.write_text("")
    code, out, err = _opt(capsys, str(path), "--input-shape", "x=1")
    assert (code, out) == (1, "")
    assert err == (
        f"byoc-opt: error: --input-shape applies to ONNX input (.onnx, or -f onnx); "
        f"'{path}' is read as mlir\n"
    )


def test_parse_input_shapes() -> None:
    assert parse_input_shapes(["x=1x3x224x224", "a.b=7", "c=d=2"]) == {
        "x": (1, 3, 224, 224),
        "a.b": (7,),
        "c=d": (2,),  # a name may hold '=': the dims follow the last one
    }
    assert parse_input_shapes(["x=1x3", "x=1x3"]) == {"x": (1, 3)}
    assert parse_input_shapes([]) == {}
