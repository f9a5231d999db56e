"""The GEMM-shaped kernels of the C target against the numpy reference, within the f32
bounds of tests/support/bounds.py, at both CPU dispatch levels, and bit for bit equal at 1
and 2 threads: dense and matmul through their register tile (row and column edges, depths
past one packed panel, a broadcast batch), dense with a few rows through its dot products
(on AVX-512F CPUs), and conv2d's 1-D paths (short output rows with channels in the lanes,
on AVX-512F CPUs 32 of them over tiles across the batch; a contiguous axis as a GEMM over
the image, on AVX-512F CPUs; a handful of output pixels as dot products), with and without
padding. Each sweep is built as one model per dispatch level (tests/support/merged_builds.py),
every case checked on its own share of the run. No test asserts on wall time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.merged_builds import check_in_sweep

from byoc.runtime.cpu import distinct_levels

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def rand(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape).astype(np.float32)


# the last four are above the GEMM grain at 2 threads: column groups only (192, 6625 columns),
# groups cut by row blocks (40 and 17 columns: fewer than two groups a thread)
DENSE = [
    (1, 5, 7), (2, 33, 40), (3, 16, 16), (5, 33, 600), (13, 45, 1030), (20, 31, 9), (64, 130, 192),
    (6, 16, 1), (7, 50, 3), (64, 192, 768), (40, 6625, 120), (301, 40, 97), (97, 17, 700),
]


def dense_case(m: int, n: int, k: int) -> tuple[str, list[Array]]:
    text = f"""func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = nn.dense %x, %w : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>
  func.return %0 : tensor<{m}x{n}xf32>
}}"""
    rng = np.random.default_rng(m * 1000 + n)
    return text, [rand(rng, m, k), rand(rng, n, k)]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize(("m", "n", "k"), DENSE)
def test_dense(cache: Path, dispatch: str, m: int, n: int, k: int) -> None:
    check_in_sweep(dense_case, DENSE, (m, n, k), dispatch)


# 3 to 31 rows with at least 64 terms: the dot products of byoc_dense_dots_avx512_ on AVX-512F
# CPUs (the tile elsewhere); row blocks of 1 to 6, a last weight quad of 1 to 3 rows, depths
# with and without a partial block of 16, enough work for 2 threads to split the columns
DENSE_DOTS = [(3, 5, 64), (7, 33, 1030), (20, 131, 100), (31, 9, 65), (13, 70, 81), (25, 258, 256)]


def dense_bias_relu_case(m: int, n: int, k: int) -> tuple[str, list[Array]]:
    x_t, w_t, y_t = f"tensor<{m}x{k}xf32>", f"tensor<{n}x{k}xf32>", f"tensor<{m}x{n}xf32>"
    text = f"""func.func @main(%x: {x_t}, %w: {w_t}, %b: tensor<{n}xf32>) -> {y_t} {{
  %0 = nn.dense %x, %w : ({x_t}, {w_t}) -> {y_t}
  %1 = nn.bias_add %0, %b {{axis = 1 : i64}} : ({y_t}, tensor<{n}xf32>) -> {y_t}
  %2 = nn.relu %1 : {y_t}
  func.return %2 : {y_t}
}}"""
    rng = np.random.default_rng(m * 1000 + n)
    return text, [rand(rng, m, k), rand(rng, n, k), rand(rng, n)]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize(("m", "n", "k"), DENSE_DOTS)
def test_dense_few_rows_bias_relu(cache: Path, dispatch: str, m: int, n: int, k: int) -> None:
    check_in_sweep(dense_bias_relu_case, DENSE_DOTS, (m, n, k), dispatch)


MATMUL = [(1, 1, 5, 7, 0), (3, 2, 17, 33, 3), (8, 32, 16, 32, 8), (2, 64, 64, 32, 0), (4, 5, 35, 600, 1), (6, 13, 20, 3, 6), (1, 40, 96, 64, 0)]


def matmul_case(batch: int, m: int, n: int, k: int, b_batch: int) -> tuple[str, list[Array]]:
    b_shape = f"{b_batch}x{k}x{n}" if b_batch else f"{k}x{n}"
    a_t, b_t, y_t = f"tensor<{batch}x{m}x{k}xf32>", f"tensor<{b_shape}xf32>", f"tensor<{batch}x{m}x{n}xf32>"
    text = f"""func.func @main(%a: {a_t}, %b: {b_t}) -> {y_t} {{
  %0 = nn.matmul %a, %b : ({a_t}, {b_t}) -> {y_t}
  func.return %0 : {y_t}
}}"""
    rng = np.random.default_rng(batch * 100 + m)
    b = rand(rng, b_batch, k, n) if b_batch else rand(rng, k, n)
    return text, [rand(rng, batch, m, k), b]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize(("batch", "m", "n", "k", "b_batch"), MATMUL)
def test_matmul(cache: Path, dispatch: str, batch: int, m: int, n: int, k: int, b_batch: int) -> None:
    check_in_sweep(matmul_case, MATMUL, (batch, m, n, k, b_batch), dispatch)


# (N, C, H, W, O, KH, KW, SH, SW, DH, DW, pad along W): short 1-D rows (channels in the lanes),
# contiguous 1-D axes (the GEMM over the image on AVX-512F), and shapes near the choice
CONV1D = [
    (64, 32, 1, 21, 40, 1, 5, 1, 1, 1, 1, 0),
    (3, 7, 1, 13, 17, 1, 3, 1, 2, 1, 1, 0),
    (4, 6, 11, 1, 33, 3, 1, 1, 1, 1, 1, 0),
    (1, 64, 200, 1, 70, 5, 1, 1, 1, 1, 1, 0),
    (2, 9, 70, 1, 13, 3, 1, 1, 1, 2, 1, 0),
    (1, 7, 1, 100, 20, 1, 3, 1, 1, 1, 1, 0),
    (3, 5, 1, 47, 11, 1, 2, 1, 1, 1, 3, 0),
    (1, 48, 1, 128, 50, 1, 9, 1, 1, 1, 2, 8),
    (2, 5, 1, 40, 13, 1, 3, 1, 1, 1, 1, 1),
    (16, 6, 1, 21, 20, 1, 5, 1, 1, 1, 1, 2),
    # the AVX-512 channel lanes: tiles across images, partial panels of 32, strides
    (5, 12, 1, 30, 37, 1, 4, 1, 2, 1, 1, 0),
    (7, 3, 9, 1, 50, 4, 1, 1, 1, 1, 1, 0),
    (1, 8, 1, 64, 16, 1, 3, 1, 2, 1, 1, 0),
    (3, 16, 1, 12, 15, 1, 3, 1, 1, 1, 1, 0),
    (9, 33, 1, 11, 70, 1, 1, 1, 1, 1, 1, 0),
    # a handful of output pixels in all: dot products with gathered columns (an STFT as a conv
    # over 3 frames, a short conv after it, pixels in groups of 4 and a remainder, a 2-D 2x2,
    # windows over the padding)
    (1, 1, 1, 576, 258, 1, 256, 1, 128, 1, 1, 0),
    (1, 129, 1, 3, 128, 1, 3, 1, 1, 1, 1, 0),
    (2, 5, 1, 9, 7, 1, 3, 1, 3, 1, 2, 0),
    (3, 4, 1, 10, 9, 1, 4, 1, 4, 1, 1, 0),
    (1, 3, 4, 4, 6, 3, 3, 1, 1, 1, 1, 0),
    (1, 129, 1, 3, 128, 1, 3, 1, 1, 1, 1, 1),
    (1, 64, 1, 1, 128, 1, 3, 1, 1, 1, 1, 1),
    (2, 6, 1, 4, 5, 1, 3, 1, 2, 1, 1, 1),
    (1, 5, 3, 2, 4, 3, 3, 1, 1, 1, 1, 2),
]


def conv1d_case(*shape: int) -> tuple[str, list[Array]]:
    n, c, h, w, o, kh, kw, sh, sw, dh, dw, pw = shape
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (w + 2 * pw - (kw - 1) * dw - 1) // sw + 1
    x_t, w_t, y_t = f"tensor<{n}x{c}x{h}x{w}xf32>", f"tensor<{o}x{c}x{kh}x{kw}xf32>", f"tensor<{n}x{o}x{oh}x{ow}xf32>"
    attrs = (
        f"strides = array<i64: {sh}, {sw}>, padding = array<i64: 0, {pw}, 0, {pw}>, "
        f"dilation = array<i64: {dh}, {dw}>, groups = 1 : i64"
    )
    text = f"""func.func @main(%x: {x_t}, %w: {w_t}, %b: tensor<{o}xf32>) -> {y_t} {{
  %0 = nn.conv2d %x, %w {{{attrs}}} : ({x_t}, {w_t}) -> {y_t}
  %1 = nn.bias_add %0, %b {{axis = 1 : i64}} : ({y_t}, tensor<{o}xf32>) -> {y_t}
  %2 = nn.relu %1 : {y_t}
  func.return %2 : {y_t}
}}"""
    rng = np.random.default_rng(sum(shape))
    return text, [rand(rng, n, c, h, w), rand(rng, o, c, kh, kw), rand(rng, o)]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize("shape", CONV1D)
def test_conv1d_bias_relu(cache: Path, dispatch: str, shape: tuple[int, ...]) -> None:
    out = check_in_sweep(conv1d_case, CONV1D, shape, dispatch)
    if dispatch == "auto" and shape[-1] == 0:
        # without AVX-512 (the AVX2 channel lanes, not 32 lanes across the batch): the same
        # chain of fused multiply-adds per output, so the same bits
        no512 = check_in_sweep(conv1d_case, CONV1D, shape, dispatch, "-DBYOC_NO_AVX512")
        for a, b in zip(out, no512, strict=True):
            assert np.array_equal(a, b, equal_nan=True), "AVX-512 differs from AVX2"
