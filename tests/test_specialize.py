"""Dynamic shapes (issue 16 item 2): `?` dims in nn, ONNX inputs with -1 / ? / symbolic dims,
the host running any shape, and per-shape specialisation of the partitions (byoc/specialize.py)."""

from __future__ import annotations

import re
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_graph_outputs
from xdsl.utils.exceptions import VerifyException

import byoc
from byoc.dialects import nn
from byoc.frontend.onnx import OnnxImportError, UnsupportedOnnxError, import_model
from byoc.runtime.executable import InputError
from byoc.specialize import SpecializingExecutable, specialize, specialize_inputs

DENSE = """
func.func @main(%x: tensor<?x4xf32>, %w: tensor<3x4xf32>) -> tensor<?x3xf32> {
  %0 = nn.dense %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  %1 = nn.relu %0 : tensor<?x3xf32>
  func.return %1 : tensor<?x3xf32>
}
"""


def _conv_model(dims: list[object]) -> onnx.ModelProto:
    w = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for d, want in zip(model.graph.input[0].type.tensor_type.shape.dim, dims, strict=True):
        if want == "?":  # an unknown dim: neither a value nor a name
            d.ClearField("dim_param")
    return model


# ---- the dialect ------------------------------------------------------------------


def test_question_mark_dims_parse_verify_and_propagate() -> None:
    module = byoc.parse_module(DENSE)
    assert "tensor<?x3xf32>" in str(module)
    x = module.body.block.first_op.body.block.args[0]  # type: ignore[union-attr]
    w = nn.ConstantOp.from_array(np.zeros((5, 4), np.float32))
    op = nn.DenseOp.build(x, w)
    assert op.results[0].type == nn.tensor((nn.DYNAMIC, 5))


def test_the_verifier_checks_what_dynamic_dims_allow() -> None:
    bad = DENSE.replace("-> tensor<?x3xf32>\n  %1", "-> tensor<?x5xf32>\n  %1")
    with pytest.raises(VerifyException, match=r"tensor<\?x5xf32> is not compatible with the inferred type tensor<\?x3xf32>"):
        byoc.parse_module(bad.replace("%1 = nn.relu %0 : tensor<?x3xf32>", "%1 = nn.relu %0 : tensor<?x5xf32>").replace("func.return %1 : tensor<?x3xf32>", "func.return %1 : tensor<?x5xf32>").replace("-> tensor<?x3xf32> {", "-> tensor<?x5xf32> {"))
    # a declared static dim where the relation says ? is compatible: specialisation checks it
    byoc.parse_module(DENSE.replace("-> tensor<?x3xf32>\n", "-> tensor<7x3xf32>\n", 1).replace(
        "%1 = nn.relu %0 : tensor<?x3xf32>", "%1 = nn.relu %0 : tensor<7x3xf32>"
    ).replace("func.return %1 : tensor<?x3xf32>", "func.return %1 : tensor<7x3xf32>").replace(
        "-> tensor<?x3xf32> {", "-> tensor<7x3xf32> {"
    ))


def test_a_relation_that_needs_a_dynamic_size_names_it() -> None:
    x = byoc.parse_module(DENSE).body.block.first_op.body.block.args[0]  # type: ignore[union-attr]
    with pytest.raises(VerifyException, match=r"'nn.reshape' cannot type operands with dynamic dims \(tensor<\?x4xf32>\)"):
        nn.ReshapeOp.build(x, newshape=(2, 8))


# ---- the ONNX importer ----------------------------------------------------------------


@pytest.mark.parametrize("dims", [[-1, 3, "?", "?"], ["N", 3, "H", "W"], [-1, 3, -1, -1]])
def test_dynamic_onnx_dims_stay_dynamic(dims: list[object]) -> None:
    module = import_model(_conv_model(dims))
    assert "tensor<?x3x?x?xf32>" in str(module)
    assert "tensor<?x8x1x1xf32>" in str(module)


@pytest.mark.parametrize("dims", [[-1, 3, "?", "?"], ["N", 3, "H", "W"]])
def test_input_shapes_overrides_every_dynamic_dim(dims: list[object]) -> None:
    module = import_model(_conv_model(dims), input_shapes={"x": [1, 3, 48, 192]})
    assert "tensor<1x3x48x192xf32>" in str(module)
    with pytest.raises(OnnxImportError, match=r"gives 'x' the shape \[1, 4, 48, 192\], but the model declares \[(-1|'N'), 3, '(\?|H)', '(\?|W)'\]"):
        import_model(_conv_model(dims), input_shapes={"x": [1, 4, 48, 192]})


def test_a_converter_that_needs_a_dynamic_size_asks_for_input_shapes() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Reshape", ["x", "s"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOnnxError, match=r"dynamic shape \[\?, 4\].*input_shapes"):
        import_model(model)
    assert "tensor<2x4xf32>" in str(import_model(model, input_shapes={"x": (2, 4)}))


# ---- running --------------------------------------------------------------------------


def test_the_host_runs_any_shape_and_names_dynamic_dims_in_errors() -> None:
    exe = byoc.build(byoc.parse_module(DENSE))
    w = np.ones((3, 4), np.float32)
    for n in (1, 5):
        (y,) = exe.run(np.ones((n, 4), np.float32), w)
        assert y.shape == (n, 3)
    with pytest.raises(InputError, match=r"input 'x' has shape \(2, 5\), expected \(\?, 4\)"):
        exe.run(np.ones((2, 5), np.float32), w)


def test_build_specialises_partitions_per_input_shape() -> None:
    module = import_model(_conv_model([-1, 3, "?", "?"]))
    exe = byoc.build(module, targets=["ccompiler"])
    assert isinstance(exe, SpecializingExecutable)
    assert exe.partitions == []
    exe.set_num_threads(1)
    assert repr(exe) == (
        "<SpecializingExecutable partitions built per input shape, none yet (cache 0/8); "
        "threads: 1>"
    )
    rng = np.random.default_rng(1)
    for shape in [(1, 3, 16, 20), (2, 3, 8, 8), (1, 3, 16, 20)]:
        x = rng.standard_normal(shape).astype(np.float32)
        got = exe.run(x)
        static = specialize(module, [shape])
        assert_graph_outputs(static, [x], got, byoc.run_reference(static, x), what=str(shape))
    entries = exe.specializations()
    assert [e.shapes for e in entries] == [((2, 3, 8, 8),), ((1, 3, 16, 20),)]
    assert [e.calls for e in entries] == [1, 2]
    assert exe.misses == 2
    assert {p.target for p in exe.partitions} == {"ccompiler"}
    assert exe.partitions[0].ops == ("nn.conv2d", "nn.relu", "nn.global_avg_pool2d")
    assert repr(exe) == (
        "<SpecializingExecutable targets: ccompiler; partitions: [@ccompiler_main_0 "
        "(ccompiler, 3 ops)]; threads: 1; for input shapes 1x3x16x20 (cache 2/8)>"
    )


def test_the_specialisation_cache_is_bounded() -> None:
    module = byoc.parse_module(DENSE)
    exe = byoc.build(module, targets=["examplejson"])
    assert isinstance(exe, SpecializingExecutable)
    exe.cache_size = 2
    w = np.ones((3, 4), np.float32)
    for n in (1, 2, 3, 1):
        exe.run(np.ones((n, 4), np.float32), w)
    assert [e.shapes[0] for e in exe.specializations()] == [(3, 4), (1, 4)]
    assert exe.evictions == 2 and exe.misses == 4


def test_concurrent_first_calls_build_a_shape_once() -> None:
    exe = byoc.build(byoc.parse_module(DENSE), targets=["examplejson"])
    assert isinstance(exe, SpecializingExecutable)
    w = np.ones((3, 4), np.float32)
    outs: list[np.ndarray] = []

    def call() -> None:
        outs.append(exe.run(np.ones((6, 4), np.float32), w)[0])

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert exe.misses == 1 and len(outs) == 4
    assert all(np.array_equal(o, np.full((6, 3), 4.0, np.float32)) for o in outs)


def test_a_shape_the_model_rejects_is_an_input_error() -> None:
    text = DENSE.replace("%w: tensor<3x4xf32>", "%w: tensor<3x4xf32>, %z: tensor<?x3xf32>").replace(
        "%1 = nn.relu %0 : tensor<?x3xf32>", "%1 = nn.add %0, %z : tensor<?x3xf32>"
    )
    exe = byoc.build(byoc.parse_module(text), targets=["ccompiler"])
    with pytest.raises(InputError, match=r"'nn.add' rejects them: operand shapes 2x3, 5x3 are not broadcast-compatible"):
        exe.run(np.ones((2, 4), np.float32), np.ones((3, 4), np.float32), np.ones((5, 3), np.float32))


def test_a_dynamic_executable_is_not_exported(tmp_path) -> None:  # type: ignore[no-untyped-def]
    exe = byoc.build(byoc.parse_module(DENSE), targets=["ccompiler"])
    with pytest.raises(InputError, match=r"dynamic \(\?\) input dims cannot be exported.*input_shapes"):
        exe.export_library(str(tmp_path / "m.byoc"))


def test_a_host_only_dynamic_executable_is_not_exported(tmp_path) -> None:  # type: ignore[no-untyped-def]
    exe = byoc.build(byoc.parse_module(DENSE))
    with pytest.raises(InputError, match=r"dynamic \(\?\) dim \(x: \(\?, 4\)\) cannot be exported yet"):
        exe.export_library(str(tmp_path / "m.byoc"))


def test_specialize_inputs_by_name() -> None:
    static = specialize_inputs(byoc.parse_module(DENSE), {"x": (7, 4)})
    assert "tensor<7x3xf32>" in str(static)
    with pytest.raises(InputError, match="unknown input"):
        specialize_inputs(byoc.parse_module(DENSE), {"nope": (7, 4)})


def test_byoc_run_reports_the_specialisations(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from byoc.tools.byoc_run import main

    path = tmp_path / "dyn.onnx"
    onnx.save(_conv_model([-1, 3, "?", "?"]), str(path))
    assert main([str(path), "--targets", "ccompiler", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "dynamic input dims: partitions built per input shape (cache 1/8, 0 evicted)" in out
    # one profiled run, one timed run (--repeat 1) and the warm-up of the timing loop
    assert "1x3x1x1: built in" in out and re.search(r"1 partition\(s\), [23] call\(s\)", out)
    assert "9223372036854775808" not in out


@pytest.mark.parametrize("targets", [["ccompiler"], ["examplejson"], ["ccompiler", "examplejson"]])
def test_a_dynamic_dense_module_builds_and_runs(targets: list[str]) -> None:
    # issue 16: `tensor<?x4xf32>` built, then failed at run with "expected (-9223372036854775808, 4)"
    exe = byoc.build(byoc.parse_module(DENSE), targets=targets)
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    for n in (1, 6, 2):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        (y,) = exe.run(x, w)
        static = specialize(byoc.parse_module(DENSE), [(n, 4), (3, 4)])
        assert_graph_outputs(static, [x, w], [y], byoc.run_reference(static, x, w), what=f"n={n}")
    assert {p.target for p in exe.partitions} <= set(targets)


def test_no_message_shows_int64_min() -> None:
    # every way of calling a dynamic module wrongly, on the host and through specialised
    # partitions: the dim is named `?`, never as INT64_MIN
    w = np.ones((3, 4), np.float32)
    messages = []
    for targets in ([], ["ccompiler"], ["examplejson"]):
        exe = byoc.build(byoc.parse_module(DENSE), targets=targets)
        for bad in (np.ones((2, 5), np.float32), np.ones((4,), np.float32), np.ones((2, 4, 1), np.float32)):
            with pytest.raises(InputError) as e:
                exe.run(bad, w)
            messages.append(str(e.value))
    bad_module = DENSE.replace("%w: tensor<3x4xf32>", "%w: tensor<3x5xf32>").replace(
        "(tensor<?x4xf32>, tensor<3x4xf32>)", "(tensor<?x4xf32>, tensor<3x5xf32>)"
    )
    for targets in (["ccompiler"], ["examplejson"]):  # a relation the static dims break shows once shapes are known
        exe = byoc.build(byoc.parse_module(bad_module), targets=targets)
        with pytest.raises(InputError) as e:
            exe.run(np.ones((2, 4), np.float32), np.ones((3, 5), np.float32))
        messages.append(str(e.value))
    assert messages and all("9223372036854775808" not in m for m in messages), messages
    assert any("(?, 4)" in m for m in messages)


def test_a_host_only_build_names_the_step_a_shape_breaks() -> None:
    # a module whose `?` dim meets a static one that disagrees (4 against the weight's 5)
    # verifies; built for the host alone, the inputs are checked per distinct shape
    text = """
func.func @main(%x: tensor<?x4xf32>, %w: tensor<3x5xf32>) -> tensor<?x3xf32> {
  %0 = nn.dense %x, %w : (tensor<?x4xf32>, tensor<3x5xf32>) -> tensor<?x3xf32>
  func.return %0 : tensor<?x3xf32>
}
"""
    exe = byoc.build(byoc.parse_module(text))
    for _ in range(2):  # a rejected shape is not remembered: it is rejected again
        with pytest.raises(InputError, match=r"inputs of shapes \(2, 4\), \(3, 5\): 'nn.dense' rejects them: contraction sizes differ"):
            exe.run(np.ones((2, 4), np.float32), np.ones((3, 5), np.float32))


def test_a_host_only_build_runs_every_shape_that_fits() -> None:
    exe = byoc.build(byoc.parse_module(DENSE))
    w = np.ones((3, 4), np.float32)
    for n in (1, 2, 7, 2):
        (y,) = exe.run(np.ones((n, 4), np.float32), w)
        assert y.shape == (n, 3)
    assert exe._shapes_ok == {((1, 4), (3, 4)), ((2, 4), (3, 4)), ((7, 4), (3, 4))}  # noqa: SLF001
