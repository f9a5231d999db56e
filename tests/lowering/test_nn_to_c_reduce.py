"""The f32 reductions of the C target (sum, mean, max) against the numpy reference, within
the f32 bounds of tests/support/bounds.py, at both CPU dispatch levels, and bit for bit
equal at 1 and 2 threads: the layouts of byoc_reduce_f32_fast_ (the reduced elements one
contiguous run, long or short; the kept innermost dim contiguous, runs of outputs longer and
shorter than one vector pass) and the strided walk the others take, with NaN and infinite
values in a max. Each sweep is built as one model per dispatch level
(tests/support/merged_builds.py), every case checked on its own share of the run. No test
asserts on wall time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.merged_builds import check_in_sweep

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def reduce_text(op: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> str:
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    x_t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    y_t = f"tensor<{'x'.join(map(str, out))}xf32>" if out else "tensor<f32>"
    axes_attr = ", ".join(map(str, axes))
    return f"""func.func @main(%x: {x_t}) -> {y_t} {{
  %0 = nn.{op} %x {{axes = array<i64: {axes_attr}>}} : ({x_t}) -> {y_t}
  func.return %0 : {y_t}
}}"""


# (input shape, reduced axes): last-axis runs (a layer norm, a global max pool), outer axes
# with a contiguous kept dim (shorter and longer than a 256-output pass, a kept dim split by
# the threads mid-run), two reduced dims on each side, everything, and a strided walk
SHAPES = [
    ((512, 508), (1,)),
    ((3, 7, 9), (2,)),
    ((1, 2048, 64), (1,)),
    ((5, 37, 300), (1,)),
    ((2, 3, 5, 70), (0, 2)),
    ((6, 4, 33), (1, 2)),
    ((257,), (0,)),
    ((9, 13, 11), (0, 2)),
    ((64, 3), (0,)),
    ((128, 196, 3), (2,)),
    ((5, 7), (1,)),
]


OPS = ["reduce_sum", "reduce_mean", "reduce_max"]
REDUCE = [(op, shape, axes) for op in OPS for shape, axes in SHAPES]


def reduce_case(op: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[str, list[Array]]:
    rng = np.random.default_rng(sum(shape) + len(op))
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    return reduce_text(op, shape, axes), [x]


@pytest.mark.parametrize("dispatch", ["auto", "baseline"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("shape", "axes"), SHAPES)
def test_reduce(cache: Path, dispatch: str, op: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
    check_in_sweep(reduce_case, REDUCE, (op, shape, axes), dispatch)


NAN_SHAPES = [((40, 50), (1,)), ((50, 40), (0,))]


def reduce_max_nan_case(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[str, list[Array]]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    x[3, 5] = np.nan
    x[7, 0] = np.inf
    x[9, 11] = -np.inf
    x[20, :] = -np.inf
    x[:, 30] = np.nan if axes == (0,) else x[:, 30]
    return reduce_text("reduce_max", shape, axes), [x]


@pytest.mark.parametrize("dispatch", ["auto", "baseline"])
@pytest.mark.parametrize(("shape", "axes"), NAN_SHAPES)
def test_reduce_max_nan_and_inf(cache: Path, dispatch: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
    """A NaN anywhere in an output's terms makes it NaN (numpy's max); infinities are values."""
    check_in_sweep(reduce_max_nan_case, NAN_SHAPES, (shape, axes), dispatch)
