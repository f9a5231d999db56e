"""The f32 reductions of the C target (sum, mean, max) against the numpy reference, within
the f32 bounds of tests/support/bounds.py, at both CPU dispatch levels, and bit for bit
equal at 1 and 2 threads: the layouts of byoc_reduce_f32_fast_ (the reduced elements one
contiguous run, long or short; the kept innermost dim contiguous, runs of outputs longer and
shorter than one vector pass) and the strided walk the others take, with NaN and infinite
values in a max. No test asserts on wall time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs

import byoc
from byoc.interpreters import run_reference

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def check(text: str, inputs: list[Array], dispatch: str) -> None:
    """Build `text` at 1 and 2 threads under `dispatch`; both within the bounds of the
    reference and equal to each other."""
    module = byoc.parse_module(text)
    expected = list(run_reference(module, *inputs))
    results = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CPU_DISPATCH", dispatch)
        for threads in (1, 2):
            exe = byoc.build(byoc.parse_module(text), targets=["ccompiler"], num_threads=threads)
            out = exe.run(*inputs)
            actual = list(out) if isinstance(out, list | tuple) else [out]
            assert_graph_outputs(module, inputs, actual, expected, what=f"{threads} thread(s)")
            results.append(actual)
    for one, two in zip(*results, strict=True):
        assert np.array_equal(one, two, equal_nan=True), "2 threads differ from 1"


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


@pytest.mark.parametrize("dispatch", ["auto", "baseline"])
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max"])
@pytest.mark.parametrize(("shape", "axes"), SHAPES)
def test_reduce(cache: Path, dispatch: str, op: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
    rng = np.random.default_rng(sum(shape) + len(op))
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    check(reduce_text(op, shape, axes), [x], dispatch)


@pytest.mark.parametrize("dispatch", ["auto", "baseline"])
@pytest.mark.parametrize(("shape", "axes"), [((40, 50), (1,)), ((50, 40), (0,))])
def test_reduce_max_nan_and_inf(cache: Path, dispatch: str, shape: tuple[int, ...], axes: tuple[int, ...]) -> None:
    """A NaN anywhere in an output's terms makes it NaN (numpy's max); infinities are values."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    x[3, 5] = np.nan
    x[7, 0] = np.inf
    x[9, 11] = -np.inf
    x[20, :] = -np.inf
    x[:, 30] = np.nan if axes == (0,) else x[:, 30]
    check(reduce_text("reduce_max", shape, axes), [x], dispatch)
    short = x[:, :3].copy()  # rows of 3: the short-row layout
    check(reduce_text("reduce_max", (shape[0], 3), (1,)), [short], dispatch)
