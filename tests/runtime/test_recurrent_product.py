"""The recurrent product of byoc_kernels_recurrent.h: its AVX2 + FMA and AVX-512F forms give
the same bits for every shape, batch and split of a step's rows, within the dot product's
bound of a double-precision sum (recurrent_product_forms.c; the forms a CPU lacks are not
run there, the model-level tests cover the baseline)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_fma_and_avx512_forms_agree_bit_for_bit(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    runtime = ROOT / "byoc" / "runtime"
    exe = tmp_path / "forms"
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fopenmp", f"-I{runtime}",
                    str(ROOT / "tests" / "runtime" / "recurrent_product_forms.c"), "-o", str(exe),
                    "-lm", "-pthread"], check=True, capture_output=True)  # fmt: skip
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "ok", out.stdout + out.stderr
