"""The transformer kernels of the C target against the numpy reference, within the f32
bounds of tests/support/bounds.py, at both CPU dispatch levels, and bit for bit equal at 1
and 2 threads: the contiguous softmax at every vector width (rows shorter than a vector,
rows with a tail, attention-sized rows; rows with NaN, an infinite maximum, -inf entries
and underflowing exponentials), both forms of GELU (byoc_gelu_erff, byoc_expf) over their
whole range, the tail of negative inputs and the special values included, and layer norm
at every row tail. Each sweep is built as one model per dispatch level
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

from byoc.runtime.cpu import distinct_levels

Array = np.ndarray[Any, Any]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


def unary(op: str, shape: tuple[int, ...], attrs: str) -> str:
    ty = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    return f"""func.func @main(%x: {ty}) -> {ty} {{
  %0 = {op} %x {attrs} : {ty}
  func.return %0 : {ty}
}}"""


# rows of 1-3 (scalar tails only), 7, 17 and 33 (tails after 4, 8 and 16 lanes), attention
# rows (32, 64, 65), a long row; enough rows at 256 x 64 for two threads
SOFTMAX = [(5, 1), (4, 3), (6, 7), (9, 17), (3, 33), (8, 32, 32), (1, 6, 64, 64), (2, 4, 65, 65), (3, 1000), (256, 64)]


def softmax_case(*shape: int) -> tuple[str, list[Array]]:
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    return unary("nn.softmax", shape, "{axis = -1 : i64}"), [x]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize("shape", SOFTMAX, ids=lambda s: "x".join(map(str, s)))
def test_softmax_last_axis(cache: Path, dispatch: str, shape: tuple[int, ...]) -> None:
    check_in_sweep(softmax_case, SOFTMAX, shape, dispatch)


def softmax_special_case(n: int) -> tuple[str, list[Array]]:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((8, n)).astype(np.float32)
    x[0, n // 2] = np.nan
    x[1, n - 1] = np.inf
    x[2, :] = -np.inf
    x[3, ::2] = -np.inf
    x[4, :] = np.linspace(-300, 0, n, dtype=np.float32)
    x[5, :] = np.float32(3e38)
    x[6, :] = -np.float32(3e38)
    return unary("nn.softmax", (8, n), "{axis = -1 : i64}"), [x]


SPECIAL_ROWS = [(3,), (16,), (37,)]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize("n", [n for (n,) in SPECIAL_ROWS])
def test_softmax_special_rows(cache: Path, dispatch: str, n: int) -> None:
    """A NaN anywhere in a row, +inf, a row of -inf, masked (-inf) entries beside finite
    ones, and logits far enough apart that most exponentials underflow."""
    check_in_sweep(softmax_special_case, SPECIAL_ROWS, (n,), dispatch)


def gelu_case(form: str) -> tuple[str, list[Array]]:
    grid = np.linspace(-14, 14, 1 << 17, dtype=np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3e38, -3e38, -60.0, -200.0], np.float32)
    x = np.concatenate([grid, special])
    return unary("nn.gelu", x.shape, f'{{approximate = "{form}"}}'), [x]


GELU_FORMS = [("none",), ("tanh",)]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize("form", [f for (f,) in GELU_FORMS])
def test_gelu_over_its_range(cache: Path, dispatch: str, form: str) -> None:
    """Every region of byoc_gelu_erff (erf form) and of x / (1 + byoc_expf(-2u)) (tanh
    form): around 0, the body, the negative tail down to where the result underflows, the
    clamps of byoc_expf, large magnitudes, infinities, NaN, signed zeros and subnormals;
    2^17 + 11 values (a tail after every vector width, two threads' worth)."""
    check_in_sweep(gelu_case, GELU_FORMS, (form,), dispatch)


# rows of 3 and 7 (the scalar tails only), 13 and 29 (tails after 4 and 8 lanes), a
# transformer's 192, and 512 x 96 (two threads' worth)
LAYER_NORM = [(4, 3), (5, 7), (3, 13), (6, 29), (64, 192), (512, 96)]


def layer_norm_case(rows: int, n: int) -> tuple[str, list[Array]]:
    """Rows with a large common offset too (the deviations are small against the mean)."""
    x_t, v_t = f"tensor<2x{rows}x{n}xf32>", f"tensor<{n}xf32>"
    text = f"""func.func @main(%x: {x_t}, %g: {v_t}, %b: {v_t}) -> {x_t} {{
  %0 = nn.layer_norm %x, %g, %b {{epsilon = 1.000000e-05 : f64}} : ({x_t}, {v_t}, {v_t}) -> {x_t}
  func.return %0 : {x_t}
}}"""
    rng = np.random.default_rng(rows * n)
    x = rng.standard_normal((2, rows, n)).astype(np.float32)
    x[1] += np.float32(100.0)
    return text, [x, rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)]


@pytest.mark.parametrize("dispatch", distinct_levels())
@pytest.mark.parametrize(("rows", "n"), LAYER_NORM)
def test_layer_norm_last_axis(cache: Path, dispatch: str, rows: int, n: int) -> None:
    check_in_sweep(layer_norm_case, LAYER_NORM, (rows, n), dispatch)
