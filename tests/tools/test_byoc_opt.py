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
        f"byoc-opt: error: --input-shape applies to ONNX and torch.export input (.onnx, .pt2); "
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


HUGE = {
    "splat-beyond-memory": (
        "%c = nn.constant dense<1.0> : tensor<1125899906842624xf32>",
        "2:33: error: nn.constant: tensor<1125899906842624xf32> is 4503599627370496 bytes, "
        "more than this machine's memory",
    ),
    "splat-beyond-int64": (
        "%c = nn.constant dense<1.0> : tensor<100000000000x100000000000xf32>",
        "2:33: error: tensor<100000000000x100000000000xf32> has 10000000000000000000000 "
        "elements of 4 bytes: its byte size does not fit int64",
    ),
    "dim-beyond-int64": (
        "%c = nn.constant dense<1.0> : tensor<99999999999999999999x3xf32>",
        "2:33: error: dimension 99999999999999999999 of tensor<99999999999999999999x3xf32> "
        "does not fit int64",
    ),
}


@pytest.mark.parametrize("case", sorted(HUGE))
def test_a_size_no_tensor_can_have_is_an_error_at_its_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    line, message = HUGE[case]
    src = tmp_path / "huge.mlir"
    src.write_text(
        "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
        f"  {line}\n"
        "  %0 = nn.relu %x : tensor<3xf32>\n"
        "  func.return %0 : tensor<3xf32>\n}\n"
    )
    code, _, err = _opt(capsys, str(src))
    assert code == 1 and err.startswith(f"{src}:{message}"), err


def test_a_function_type_beyond_int64_is_rejected_by_parse_and_build() -> None:
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException

    from byoc.context import make_context

    text = (
        "func.func @main(%x: tensor<99999999999999999999x3xf32>) -> tensor<99999999999999999999x3xf32> {\n"
        "  func.return %x : tensor<99999999999999999999x3xf32>\n}\n"
    )
    match = "'func.func' @main: dimension 99999999999999999999 of .* does not fit int64"
    with pytest.raises(VerifyException, match=match):
        byoc.parse_module(text)
    module = Parser(make_context(), text).parse_module()  # xDSL's parser takes any dim
    with pytest.raises(VerifyException, match=match):
        byoc.build(module)


def test_a_large_splat_is_filled_without_a_python_list() -> None:
    module = byoc.parse_module(
        "func.func @main() -> tensor<2048x2048xf32> {\n"
        "  %c = nn.constant dense<1.5> : tensor<2048x2048xf32>\n"
        "  func.return %c : tensor<2048x2048xf32>\n}\n"
    )
    (const,) = [op for op in module.walk() if isinstance(op, nn.ConstantOp)]
    array = const.ndarray()
    assert array.shape == (2048, 2048) and float(array.min()) == float(array.max()) == 1.5
