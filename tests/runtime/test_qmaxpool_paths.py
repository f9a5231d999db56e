"""The int8 max pooling (`byoc_qmaxpool_<x>`, byoc_qkernels.h) on each of its paths gives the
max over each window's bytes: the AVX-512 VBMI path (rows of at most 128 bytes, one permute a
window column), the AVX2 and SSE2 row and column maxima (wider rows, and CPUs without VBMI)
and the baseline build (`BYOC_CPU_DISPATCH=baseline`, `-DBYOC_BASELINE_ONLY`).

`qmaxpool_fuzz.c` draws thousands of shapes (odd widths 1 to 330, kernels, strides, dilations,
padding on each side, ceil mode, u8 and i8) and compares every output byte with a plain loop,
at 1 and 2 threads; the model cases below compare whole QDQ blocks with byoc's reference
and onnxruntime (tests/lowering/test_nn_to_c_qfused.py's `check`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import helper

import byoc.runtime

sys.path.insert(0, str(Path(__file__).parents[1] / "frontend"))
sys.path.insert(0, str(Path(__file__).parents[1] / "lowering"))
from test_nn_to_c_qfused import check, qdq_model  # noqa: E402

RUNTIME = Path(byoc.runtime.__file__).parent
FUZZ = Path(__file__).parent / "qmaxpool_fuzz.c"


@pytest.mark.parametrize("baseline", [False, True], ids=["auto", "baseline"])
def test_qmaxpool_fuzz_against_a_plain_loop(tmp_path: Path, baseline: bool) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "fuzz"
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fopenmp", f"-I{RUNTIME}"]
    if baseline:
        flags.append("-DBYOC_BASELINE_ONLY")
    subprocess.run([cc, *flags, str(FUZZ), "-o", str(exe), "-lm"], check=True, capture_output=True)
    for threads in ("1", "2"):
        out = subprocess.run([str(exe), "3000", threads], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        cases = int(out.stdout.split()[1])
        assert cases > 2000 and out.stdout.strip().endswith("bad 0"), out.stdout


@pytest.mark.parametrize("shape,attrs,dtype", [
    ([1, 4, 111, 111], dict(kernel_shape=[3, 3], strides=[2, 2]), np.uint8),  # squeezenet's first pool
    ([1, 3, 20, 130], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1), np.int8),
    pytest.param([1, 2, 15, 61], dict(kernel_shape=[2, 3], strides=[1, 2], pads=[1, 1, 0, 1]), np.uint8,
                 marks=pytest.mark.slow),
])
def test_qmaxpool_wide_and_odd_rows(shape: list[int], attrs: dict[str, Any], dtype: type, dispatch: str) -> None:
    """Rows of two 64-byte vectors (111: the VBMI path), wider than 128 (130: the AVX2 path with
    an overlapping tail), odd widths with padding and ceil mode: the reference's and
    onnxruntime's bytes at 1 and 2 threads."""
    node = helper.make_node("MaxPool", ["x_d"], ["f"], **attrs)
    y = (dtype, 0.05, 3)  # the input's parameters: no table after the pool
    model = qdq_model([node], {"x": (dtype, 0.05, 3)}, y, shape)
    check(model, "qmaxpool", shape)
