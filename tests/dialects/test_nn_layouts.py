"""data_layout / kernel_layout on conv2d, the pools and batch_norm: checked by the verifier,
computed right by every executor that takes them, rejected by every one that does not.

Before the layouts were properties, `nn.conv2d {data_layout = "NHWC"}` was a discardable
attribute every executor ignored: an NHWC tensor was computed as NCHW (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from xdsl.utils.exceptions import VerifyException

import byoc
from byoc.dialects import nn
from byoc.interpreters.kernels import KERNELS
from byoc.targets import get_target

NHWC_MODEL = """
func.func @main(%x: tensor<2x9x8x3xf32>, %w: tensor<3x3x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>) {
  %0 = nn.conv2d %x, %w {data_layout = "NHWC", kernel_layout = "HWIO", padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 1>} : (tensor<2x9x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x5x8x4xf32>
  %1 = nn.batch_norm %0, %g, %b, %b, %g {axis = 3 : i64, data_layout = "NHWC"} : (tensor<2x5x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x5x8x4xf32>
  %2 = nn.relu %1 : tensor<2x5x8x4xf32>
  %3 = nn.max_pool2d %2 {data_layout = "NHWC", pool_size = array<i64: 2, 2>, strides = array<i64: 1, 2>} : (tensor<2x5x8x4xf32>) -> tensor<2x4x4x4xf32>
  %4 = nn.avg_pool2d %3 {data_layout = "NHWC", pool_size = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %5 = nn.global_avg_pool2d %4 {data_layout = "NHWC"} : (tensor<2x4x4x4xf32>) -> tensor<2x1x1x4xf32>
  func.return %4, %5 : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
}
"""


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(16)
    return [
        rng.standard_normal((2, 9, 8, 3)).astype(np.float32),
        rng.standard_normal((3, 3, 3, 4)).astype(np.float32),
        rng.uniform(0.5, 2.0, 4).astype(np.float32),
        rng.standard_normal(4).astype(np.float32),
    ]


def _nchw_reference(x, w, g, b):  # type: ignore[no-untyped-def]
    """The same graph written in NCHW/OIHW with the NCHW kernels, transposed back."""
    c = KERNELS["nn.conv2d"](
        x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1),
        strides=(2, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1,
    )
    c = KERNELS["nn.batch_norm"](c, g, b, b, g, axis=1, epsilon=1e-5)
    c = np.maximum(c, 0)
    c = KERNELS["nn.max_pool2d"](
        c, pool_size=(2, 2), strides=(1, 2), padding=(0, 0, 0, 0), dilation=(1, 1), ceil_mode=False
    )
    a = KERNELS["nn.avg_pool2d"](
        c, pool_size=(3, 3), strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1),
        ceil_mode=False, count_include_pad=False,
    )
    gap = a.mean(axis=(2, 3), keepdims=True)
    return [a.transpose(0, 2, 3, 1), gap.transpose(0, 2, 3, 1)]


@pytest.mark.parametrize(
    "targets",
    [[], ["ccompiler"], ["examplejson"], ["cblas"], ["ccompiler", "examplejson"], ["graphref"], ["dnnl"]],
)
def test_nhwc_is_computed_as_nhwc_on_every_executor(targets: list[str]) -> None:
    module = byoc.parse_module(NHWC_MODEL)
    inputs = _inputs()
    expected = [o.astype(np.float32) for o in _nchw_reference(*inputs)]
    got = byoc.build(module, targets=targets).run(*inputs)
    assert_graph_outputs(module, inputs, got, expected, what=f"NHWC on {targets or 'host'}")


def test_targets_that_do_not_implement_a_layout_do_not_take_the_op() -> None:
    module = byoc.parse_module(NHWC_MODEL)
    exe = byoc.build(module, targets=["ccompiler"])
    in_c = {op for p in exe.partitions for op in p.ops}
    # batch_norm's layout is its axis, which the C loops implement; relu has no layout
    assert in_c <= {"nn.batch_norm", "nn.relu"}, in_c
    ej = byoc.build(module, targets=["examplejson"])
    assert "nn.conv2d" in {op for p in ej.partitions for op in p.ops}


def test_a_target_declares_the_layouts_it_implements() -> None:
    assert get_target("ccompiler").layouts == ("NCHW", "OIHW")
    assert "NHWC" in get_target("examplejson").layouts
    assert get_target("ccompiler").preferred_layouts == {"data_layout": "NCHW", "kernel_layout": "OIHW"}
    from byoc.targets import Target

    with pytest.raises(ValueError, match="preferred data_layout 'NHWC' is not in its layouts"):
        Target(name="bad", preferred_layouts={"data_layout": "NHWC"})


def test_lower_to_c_names_the_layout_it_cannot_emit() -> None:
    from byoc.targets.ccompiler import unsupported_reason

    module = byoc.parse_module(NHWC_MODEL)
    conv = next(op for op in module.walk() if isinstance(op, nn.Conv2DOp))
    assert unsupported_reason(conv) == (
        "'nn.conv2d' with data_layout NHWC is not supported by the C codegen (NCHW/OIHW only)"
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            'nn.conv2d %x, %w {data_layout = "NWHC"} : (tensor<1x4x4x3xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>',
            "data_layout 'NWHC' is not one of NCHW, NHWC",
        ),
        (
            'nn.conv2d %x, %w {kernel_layout = "OHWI"} : (tensor<1x4x4x3xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>',
            "kernel_layout 'OHWI' is not one of OIHW, HWIO",
        ),
        (
            # NHWC data computed as if NCHW would give 1x2x4x3: the verifier knows better
            'nn.conv2d %x, %w {data_layout = "NHWC"} : (tensor<1x4x4x3xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x3xf32>',
            "does not match the inferred type tensor<1x4x4x2xf32>",
        ),
        (
            'nn.max_pool2d %x {data_layout = "NHWC", pool_size = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x4x3x2xf32>',
            "does not match the inferred type tensor<1x3x3x3xf32>",
        ),
    ],
)
def test_the_verifier_checks_layouts(text: str, match: str) -> None:
    module = (
        "func.func @main(%x: tensor<1x4x4x3xf32>, %w: tensor<2x3x1x1xf32>) {\n"
        f"  %0 = {text}\n  func.return\n}}"
    )
    with pytest.raises(VerifyException, match=match):
        byoc.parse_module(module)


def test_batch_norm_nhwc_needs_the_channel_axis_last() -> None:
    x = nn.ConstantOp.from_array(np.zeros((1, 2, 2, 3), np.float32))
    g = nn.ConstantOp.from_array(np.ones(2, np.float32))
    with pytest.raises(VerifyException, match="data_layout NHWC needs 4-D data and the channel axis 3"):
        nn.BatchNormOp.build(x, g, g, g, g, axis=1, data_layout="NHWC")
    g3 = nn.ConstantOp.from_array(np.ones(3, np.float32))
    op = nn.BatchNormOp.build(x, g3, g3, g3, g3, axis=3, data_layout="NHWC")
    assert op.results[0].type == nn.tensor((1, 2, 2, 3))


def test_nhwc_host_steps_survive_export_and_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    exe = byoc.build(byoc.parse_module(NHWC_MODEL), targets=["ccompiler"])
    exe.export_library(str(tmp_path / "nhwc.byoc"))
    loaded = byoc.load_module(str(tmp_path / "nhwc.byoc"))
    inputs = _inputs()
    for a, b in zip(exe.run(*inputs), loaded.run(*inputs), strict=True):
        np.testing.assert_array_equal(a, b)


def test_nhwc_on_the_reference_and_what_the_graph_engines_take() -> None:
    # the numpy reference computes NHWC as NHWC; graphref and dnnl implement NCHW only, so
    # their predicates leave the layout-carrying ops to the host (never computed as NCHW)
    module = byoc.parse_module(NHWC_MODEL)
    inputs = _inputs()
    expected = [o.astype(np.float32) for o in _nchw_reference(*inputs)]
    assert_graph_outputs(module, inputs, byoc.run_reference(module, *inputs), expected, what="NHWC on the reference")
    for target in ("graphref", "dnnl"):
        exe = byoc.build(byoc.parse_module(NHWC_MODEL), targets=[target])
        taken = {op for p in exe.partitions for op in p.ops}
        assert taken <= {"nn.relu", "nn.batch_norm"}, (target, taken)
