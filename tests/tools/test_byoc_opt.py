"""byoc-opt's pieces as xDSL objects: the `-t` outputs are `Target`s, the inputs
`Frontend`s, and display options travel with the printer, not in a global."""

from __future__ import annotations

from io import BytesIO, StringIO

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
from byoc.lowering.emit import ALL_EMITTERS
from byoc.lowering.emit.mlir import MLIREmitter
from byoc.printer import ByocPrinter


def test_every_output_is_an_xdsl_target_under_its_name() -> None:
    assert set(ALL_EMITTERS) == {"mlir", "c", "examplejson", "dot", "graph"}
    for name, factory in ALL_EMITTERS.items():
        cls = factory()
        assert issubclass(cls, Target) and cls.name == name


def test_every_input_is_an_xdsl_frontend_under_its_extension() -> None:
    assert set(ALL_FRONTENDS) == {"mlir", "onnx", "examplejson"}
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
