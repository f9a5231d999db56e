"""C kernels of byoc_kernels.h on the shapes real models give them, against the reference.

conv2d: `byoc_conv2d_f32` packs 16-pixel im2col panels per block of the reduction
index k = (c, kh, kw) and accumulates tiles of 6 output channels over them; these
cases reach what small unit shapes do not: several k blocks (a block is at most 1024
rows, fewer when a group has many output channels), pixel tiles that cross output
rows and end short, channel counts that leave a partial tile, strided 1x1 convs,
groups and depthwise convs with strides and dilation, batches.

max_pool2d: with AVX2, `byoc_max_pool2d_f32` takes 8 output columns at a time where
the window lies inside the input and one at a time at the borders; these cases are
wide enough for both, with NaNs (which must win, as numpy's maximum makes them),
strides, padding, dilation and ceil_mode.

Every case runs through `byoc.build(..., targets=["ccompiler"])`, the cases of a sweep as
one model (tests/support/merged_builds.py) at 1 and 2 threads, under both dispatch
levels (the best kernels the CPU has, and the x86-64 baseline that
`BYOC_CPU_DISPATCH=baseline` forces) and is compared with the numpy reference
(conv2d: within the f32 bound of tests/support/bounds.py, since the reference sums through
BLAS and the kernel in its own order, with FMA where the CPU has it; max_pool2d: bit
for bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs, assert_within, graph_bounds
from support.merged_builds import THREADS, sweep_runs
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

import byoc
from byoc.dialects import nn
from byoc.runtime.cpu import DISPATCH_LEVELS

Array = np.ndarray[Any, Any]

CONV_CASES: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("k_blocks_1024", (1, 160, 6, 5), (13, 160, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("k_blocks_by_channels", (1, 96, 3, 5), (2050, 96, 1, 1), {}),
    ("k_blocks_3x3_many_channels", (1, 40, 4, 4), (600, 40, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("tiles_cross_rows", (2, 7, 7, 7), (11, 7, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("strided_1x1", (1, 32, 14, 14), (20, 32, 1, 1), {"strides": (2, 2)}),
    ("stem_7x7_s2", (1, 3, 37, 41), (8, 3, 7, 7), {"strides": (2, 2), "padding": (3, 3, 3, 3)}),
    ("groups_3", (1, 24, 9, 9), (30, 8, 1, 1), {"groups": 3}),
    (
        "groups_dilated",
        (1, 8, 12, 12),
        (8, 4, 3, 3),
        {"groups": 2, "dilation": (2, 2), "padding": (2, 2, 2, 2)},
    ),
    (
        "depthwise_s2",
        (1, 12, 15, 15),
        (12, 1, 3, 3),
        {"groups": 12, "strides": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    (
        "depthwise_dilated",
        (2, 5, 11, 19),
        (5, 1, 3, 3),
        {"groups": 5, "dilation": (2, 3), "padding": (2, 3, 2, 3)},
    ),
    ("depthwise_multiplier", (1, 4, 8, 8), (8, 1, 3, 3), {"groups": 4, "padding": (1, 1, 1, 1)}),
]


def _module(op: type[nn.NNOp], shapes: list[tuple[int, ...]], attrs: dict[str, Any]) -> ModuleOp:
    """func.func @main(...) { one op } with the result type from the op's relation."""
    block = Block(arg_types=[TensorType(f32, s) for s in shapes])
    node = op.build(*block.args, **attrs)
    block.add_ops([node, ReturnOp(node.results[0])])
    main = FuncOp("main", ([a.type for a in block.args], [node.results[0].type]), Region(block))
    return ModuleOp([main])


def conv_case(name: str, x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, Any]) -> tuple[str, list[Array]]:
    rng = np.random.default_rng(len(name))
    xs = [rng.standard_normal(x, dtype=np.float32), rng.standard_normal(w, dtype=np.float32)]
    return str(_module(nn.Conv2DOp, [x, w], attrs)), xs


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv2d_kernel_matches_reference(case: tuple[Any, ...], dispatch: str) -> None:
    runs, offloaded = sweep_runs(conv_case, CONV_CASES, case, dispatch)
    assert set(offloaded) == {"nn.conv2d"}  # every case's conv runs in C
    text, xs = conv_case(*case)
    module = byoc.parse_module(text)
    want = byoc.run_reference(module, *xs)
    for threads, got in zip(THREADS, runs, strict=True):
        assert_graph_outputs(module, xs, got, want, what=f"{case[0]} ({dispatch}, {threads} thread(s))")


WIDE_CASES: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("yolo_3x3_s1", (1, 24, 26, 26), (40, 24, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("yolo_3x3_s2_width_of_8s", (1, 12, 32, 48), (16, 12, 3, 3), {"strides": (2, 2), "padding": (1, 1, 1, 1)}),
    ("yolo_1x1_in_place", (2, 20, 13, 13), (12, 20, 1, 1), {}),
    ("odd_map_odd_channels", (1, 7, 11, 9), (13, 7, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("asym_pad_stride_3x2", (1, 5, 17, 14), (9, 5, 3, 2), {"strides": (3, 2), "padding": (0, 1, 2, 0)}),
    ("grouped_12_a_group", (1, 48, 20, 20), (24, 24, 3, 3), {"groups": 2, "padding": (1, 1, 1, 1)}),
    ("dilated_5x5", (1, 6, 21, 23), (10, 6, 5, 5), {"dilation": (2, 2), "padding": (4, 4, 4, 4)}),
    ("stem_3_channels_s2", (1, 3, 64, 64), (16, 3, 3, 3), {"strides": (2, 2), "padding": (1, 1, 1, 1)}),
    ("many_k_weights_by_block", (1, 256, 6, 6), (520, 256, 3, 3), {"padding": (1, 1, 1, 1)}),
]
"""Shapes of the AVX-512 conv path (byoc_kernels_conv_wide.h): phase planes for strides,
rows of q crossing output rows, a last partial run of q, partial blocks of 8 channels."""


@pytest.mark.parametrize(("name", "x", "w", "attrs"), WIDE_CASES, ids=[c[0] for c in WIDE_CASES])
def test_conv2d_avx512_path_equals_the_avx2_tile(
    name: str, x: tuple[int, ...], w: tuple[int, ...], attrs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The AVX-512 path computes each output as the AVX2 tile's chain of fused multiply-adds:
    the same bits as a library built without it (-DBYOC_NO_AVX512), at 1 and 2 threads, and
    within the f32 bound of the reference. (On a CPU without AVX-512 both are the AVX2 tile.)"""
    module = _module(nn.Conv2DOp, [x, w], attrs)
    rng = np.random.default_rng(len(name))
    xs = [rng.standard_normal(x, dtype=np.float32), rng.standard_normal(w, dtype=np.float32)]
    got: dict[tuple[str, int], Any] = {}
    for flags in ("", "-DBYOC_NO_AVX512"):
        monkeypatch.setenv("BYOC_CFLAGS", flags)
        exe = byoc.build(module, targets=["ccompiler"], num_threads=1)
        for threads in (1, 2):
            exe.set_num_threads(threads)
            (got[flags, threads],) = exe.run(*xs)
    want = byoc.run_reference(module, *xs)
    assert_graph_outputs(module, xs, [got["", 1]], want, what=name)
    for key, value in got.items():
        np.testing.assert_array_equal(value, got["", 1], err_msg=f"{name} {key}")


def test_dispatch_levels_agree_within_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three levels compile to different libraries and give results within the f32
    bound of each other (the FMA tile rounds once per step fewer)."""
    _, x, w, attrs = CONV_CASES[0]
    module = _module(nn.Conv2DOp, [x, w], attrs)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(x, dtype=np.float32), rng.standard_normal(w, dtype=np.float32)]
    got: dict[str, Any] = {}
    libraries = set()
    for level in DISPATCH_LEVELS:
        monkeypatch.setenv("BYOC_CPU_DISPATCH", level)
        exe = byoc.build(module, targets=["ccompiler"])
        libraries |= {str(c.library_path) for c in exe.components.values()}
        (got[level],) = exe.run(*xs)
    assert len(libraries) == len(DISPATCH_LEVELS)
    (bound,) = graph_bounds(module, xs, [got["auto"]])
    for level in DISPATCH_LEVELS[1:]:
        assert_within(got[level], got["auto"], bound, f"{level} vs auto")


def test_unknown_dispatch_level_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BYOC_CPU_DISPATCH", "avx9")
    module = _module(nn.ReluOp, [(2, 3)], {})
    with pytest.raises(ValueError, match="BYOC_CPU_DISPATCH='avx9': expected 'auto', 'avx2' or 'baseline'"):
        byoc.build(module, targets=["ccompiler"])


POOL_CASES: list[tuple[str, tuple[int, ...], dict[str, Any]]] = [
    (
        "squeezenet_s2_ceil",
        (1, 16, 55, 55),
        {"pool_size": (3, 3), "strides": (2, 2), "ceil_mode": True},
    ),
    (
        "resnet_s2_pad1",
        (1, 8, 112, 112),
        {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)},
    ),
    ("stride1_pad_asym", (2, 3, 20, 37), {"pool_size": (3, 3), "padding": (1, 2, 1, 0)}),
    (
        "dilated_s3",
        (1, 2, 30, 61),
        {"pool_size": (2, 3), "strides": (3, 3), "dilation": (2, 2), "ceil_mode": True},
    ),
    (
        "window_wider_than_pad",
        (1, 1, 9, 40),
        {"pool_size": (5, 5), "strides": (1, 2), "padding": (2, 2, 2, 2)},
    ),
    ("narrow", (1, 4, 6, 7), {"pool_size": (2, 2), "strides": (1, 1)}),
    # two passes (rows, then columns) for windows of 16 taps and more: a YOLO SPP block's
    # 5x5, 9x9 and 13x13 stride-1 pools, and strided, dilated, asymmetric and ceil_mode ones
    ("spp_13x13", (1, 5, 13, 13), {"pool_size": (13, 13), "padding": (6, 6, 6, 6)}),
    ("spp_9x9", (1, 3, 13, 21), {"pool_size": (9, 9), "padding": (4, 4, 4, 4)}),
    ("spp_5x5", (2, 4, 20, 19), {"pool_size": (5, 5), "padding": (2, 2, 2, 2)}),
    (
        "sep_s2_asym_ceil",
        (1, 3, 17, 23),
        {"pool_size": (4, 5), "strides": (2, 2), "padding": (1, 2, 0, 1), "ceil_mode": True},
    ),
    ("sep_s3_dilated", (1, 2, 25, 40), {"pool_size": (4, 4), "strides": (3, 3), "dilation": (2, 3)}),
    ("sep_too_big_for_the_stack", (1, 2, 150, 130), {"pool_size": (5, 5), "padding": (2, 2, 2, 2)}),
]


def pool_case(name: str, x: tuple[int, ...], attrs: dict[str, Any]) -> tuple[str, list[Array]]:
    rng = np.random.default_rng(len(name))
    data = rng.standard_normal(x, dtype=np.float32)
    data.reshape(-1)[:: max(2, data.size // 50)] = -np.inf
    data.reshape(-1)[rng.choice(data.size, size=max(1, data.size // 97), replace=False)] = np.nan
    return str(_module(nn.MaxPool2DOp, [x], attrs)), [data]


@pytest.mark.parametrize("case", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_max_pool2d_kernel_matches_reference(case: tuple[Any, ...], dispatch: str) -> None:
    runs, offloaded = sweep_runs(pool_case, POOL_CASES, case, dispatch)
    assert set(offloaded) == {"nn.max_pool2d"}  # every case's pool runs in C
    text, (data,) = pool_case(*case)
    (want,) = byoc.run_reference(byoc.parse_module(text), data)
    for (got,) in runs:
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)  # NaNs in the same places, the rest exact
        assert np.isnan(got).any()
