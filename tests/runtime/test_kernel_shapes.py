"""The C kernels over a sweep of small and odd shapes, compiled with warnings as errors.

gcc 12 rejected the AVX2 max-pool of an ONNX MaxPool 2x2/2 on 1x8x2x96 (issue 14
item 9): with the shape's constants propagated into the kernel, it saw a loop whose
trip count could overflow and `-Werror=aggressive-loop-optimizations` stopped the
build, while 1x4x2x16 built. Such failures depend on the constants gcc propagates
into the kernel, which it does when a shape is alone in its library: the reproducer
and a few shapes like it are built alone here (under both dispatch levels, with each
C compiler present; `DEFAULT_FLAGS` have `-Wall -Wextra -Werror`), every shape of the
sweep alone behind `slow`, and the whole sweep of max pool, average pool and conv2d
(ccompiler and cblas) as one library an op, compared with the reference (max pooling
bit for bit, the rest within the bounds of tests/support/bounds.py).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

import byoc
from byoc.dialects import nn

COMPILERS = [cc for cc in ("gcc", "clang") if shutil.which(cc)] or ["cc"]
"""gcc and clang where installed (the system `cc` otherwise): each compiles every sweep."""

WIDTHS = (1, 2, 3, 7, 8, 9, 16, 17, 33, 96)
HEIGHTS = (1, 2, 3)

POOLS: dict[str, dict[str, Any]] = {
    "1x1_s1": {"pool_size": (1, 1)},
    "2x2_s2": {"pool_size": (2, 2), "strides": (2, 2)},
    "2x2_s1": {"pool_size": (2, 2)},
    "3x3_s2_pad1": {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)},
    "3x3_s3_ceil": {"pool_size": (3, 3), "strides": (3, 3), "ceil_mode": True},
    "1x3_s1x2_dil2": {"pool_size": (1, 3), "strides": (1, 2), "dilation": (1, 2)},
    "5x5_s1_pad2": {"pool_size": (5, 5), "padding": (2, 2, 2, 2)},  # two passes (16+ taps)
}


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh library cache: every sweep is compiled here, not found from an earlier run."""
    path = tmp_path_factory.mktemp("byoc_sweep_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def _fits(size: int, k: int, d: int, pad: int) -> bool:
    return size + pad >= (k - 1) * d + 1


def _pool_shapes(attrs: dict[str, Any]) -> list[tuple[int, ...]]:
    kh, kw = attrs["pool_size"]
    dh, dw = attrs.get("dilation", (1, 1))
    pt, pl, pb, pr = attrs.get("padding", (0, 0, 0, 0))
    return [
        (1, 3, h, w)
        for h, w in itertools.product(HEIGHTS, WIDTHS)
        if _fits(h, kh, dh, pt + pb) and _fits(w, kw, dw, pl + pr)
    ]


def _sweep_module(cases: list[tuple[list[tuple[int, ...]], dict[str, Any]]], op: type[nn.NNOp]) -> ModuleOp:
    """@main with one `op` per case (its operand shapes and attributes), all results returned."""
    block = Block(arg_types=[TensorType(f32, s) for shapes, _ in cases for s in shapes])
    args = iter(block.args)
    results = []
    for shapes, attrs in cases:
        node = op.build(*(next(args) for _ in shapes), **attrs)
        block.add_op(node)
        results.append(node.results[0])
    block.add_op(ReturnOp(*results))
    main = FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
    return ModuleOp([main])


def _inputs(module: ModuleOp, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    main = next(iter(module.ops))
    assert isinstance(main, FuncOp)
    shapes = [tuple(t.get_shape()) for t in main.function_type.inputs.data]  # type: ignore[attr-defined]
    return [rng.standard_normal(s, dtype=np.float32) for s in shapes]


SINGLE_POOLS: list[tuple[tuple[int, ...], str]] = [
    ((1, 8, 2, 96), "2x2_s2"),  # the reproducer: an ONNX MaxPool of a text-direction classifier
    ((1, 1, 2, 33), "2x2_s2"),
    ((1, 1, 1, 96), "1x1_s1"),
    ((1, 1, 2, 17), "2x2_s1"),
    ((1, 8, 3, 96), "3x3_s3_ceil"),
    ((1, 1, 1, 1), "1x1_s1"),
]
"""Shapes alone in their library, so that gcc propagates their constants into the kernel
(each of these but the last failed to build before the fix; in a library of many calls,
as in the sweeps below, gcc does not specialise and they built)."""


def _check_max_pool(cases: list[tuple[list[tuple[int, ...]], dict[str, Any]]]) -> None:
    module = _sweep_module(cases, nn.MaxPool2DOp)
    exe = byoc.build(module, targets=["ccompiler"])
    assert [p.target for p in exe.partitions] == ["ccompiler"]
    inputs = _inputs(module, len(cases))
    got = exe.run(*inputs)
    want = byoc.run_reference(module, *inputs)
    assert len(got) == len(want) == len(cases)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize(("shape", "pool"), SINGLE_POOLS, ids=[f"{p}-{'x'.join(map(str, s))}" for s, p in SINGLE_POOLS])
def test_max_pool2d_alone_builds_and_matches(
    shape: tuple[int, ...], pool: str, cc: str, dispatch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 9: gcc 12 said `iteration 0x8000000000000000 invokes undefined behavior`."""
    monkeypatch.setenv("CC", cc)
    _check_max_pool([([shape], POOLS[pool])])


@pytest.mark.slow
@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("pool", sorted(POOLS))
def test_max_pool2d_every_shape_alone(pool: str, cc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole sweep, one library per shape and channel count (about 60 builds a pool)."""
    monkeypatch.setenv("CC", cc)
    for channels in (1, 8):
        for shape in _pool_shapes(POOLS[pool]):
            _check_max_pool([([(1, channels, *shape[2:])], POOLS[pool])])


@pytest.mark.parametrize("cc", COMPILERS)
def test_max_pool2d_sweep_builds_and_matches(
    cc: str, dispatch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", cc)
    cases = [([s], attrs) for attrs in POOLS.values() for s in _pool_shapes(attrs)]
    assert ([(1, 3, 2, 96)], POOLS["2x2_s2"]) in cases  # the reproducer's shape
    _check_max_pool(cases)


@pytest.mark.parametrize("cc", COMPILERS)
def test_avg_pool2d_sweep_builds_and_matches(
    cc: str, dispatch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", cc)
    attrs = POOLS["3x3_s2_pad1"]
    module = _sweep_module([([s], attrs) for s in _pool_shapes(attrs)], nn.AvgPool2DOp)
    exe = byoc.build(module, targets=["ccompiler"])
    inputs = _inputs(module, 1)
    assert_graph_outputs(module, inputs, exe.run(*inputs), byoc.run_reference(module, *inputs))


@pytest.mark.parametrize("cc", COMPILERS)
@pytest.mark.parametrize("target", ["ccompiler", "cblas"])
def test_conv2d_sweep_builds_and_matches(
    target: str, cc: str, dispatch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3x3 stride 2 pad 1 and 1x1 stride 2 convs over the widths of the pool sweep (the
    cblas im2col copies strided rows in blocks of 8, as the max pool does)."""
    monkeypatch.setenv("CC", cc)
    attrs = {"strides": (2, 2), "padding": (1, 1, 1, 1)}
    cases = [
        ([(1, 2, h, w), (3, 2, k, k)], attrs)
        for h, w in itertools.product(HEIGHTS, WIDTHS)
        for k in (1, 3)
    ]
    module = _sweep_module(cases, nn.Conv2DOp)
    exe = byoc.build(module, targets=[target])
    assert [p.target for p in exe.partitions] == [target]
    inputs = _inputs(module, 2)
    assert_graph_outputs(module, inputs, exe.run(*inputs), byoc.run_reference(module, *inputs))


@pytest.mark.parametrize("target", ["ccompiler", "cblas"])
def test_conv2d_unpadded_sweep_reads_the_image_in_place(target: str, dispatch: str) -> None:
    """Unpadded stride-1 convs, whose tiles read the image in place (no padded copy): over
    maps whose 16-pixel tiles span several rows and end part-filled. A 3x3 conv of a 5x6
    map (12 pixels, 3 rows of 4) has a last tile whose clamped offsets span exactly 15
    elements; it must not be read as one contiguous run of the image."""
    cases = [
        ([(1, 4, h, w), (4, 4, k, k)], {})
        for h, w in itertools.product((3, 4, 5, 6, 7), (3, 4, 5, 6, 7, 9, 17))
        for k in (1, 2, 3)
        if h >= k and w >= k
    ]
    module = _sweep_module(cases, nn.Conv2DOp)
    exe = byoc.build(module, targets=[target])
    assert [p.target for p in exe.partitions] == [target]
    inputs = _inputs(module, 3)
    assert_graph_outputs(module, inputs, exe.run(*inputs), byoc.run_reference(module, *inputs))
