"""The per-kernel profile (byoc.runtime.kernel_profile, benchmarks/kernel_profile.py): one
row per kernel function of each generated partition, plus one per partition body, each
called once per inference; the kernels' times are nested in their partition's. No test
asserts on how long anything takes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.runtime import toolchain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_hook_is_compiled_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(toolchain.PROFILE_ENV, raising=False)
    assert toolchain.profile_flags() == ()
    monkeypatch.setenv(toolchain.PROFILE_ENV, "0")
    assert toolchain.profile_flags() == ()
    monkeypatch.setenv(toolchain.PROFILE_ENV, "1")
    assert toolchain.profile_flags() == ("-DBYOC_PROFILE_KERNELS",)


def test_profile_has_a_row_per_kernel_nested_in_the_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from byoc.runtime import kernel_profile

    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(toolchain.PROFILE_ENV, os.environ.get(toolchain.PROFILE_ENV, ""))  # restored after
    kernel_profile.enable()
    module = byoc.parse_module((EXAMPLES / "small_cnn.mlir").read_text())
    exe = byoc.build(module, targets=["ccompiler"], num_threads=2)
    source = exe.components["ccompiler"].source
    assert "#ifdef BYOC_PROFILE_KERNELS" in source
    kernels = set(re.findall(r"^static void (byoc_p_\w+_\d+)\(", source, re.M))
    partitions = set(re.findall(r"^static void (byoc_p_\w+_)\(", source, re.M))
    assert kernels and partitions

    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8), dtype=np.float32)
    exe.run(x)
    kernel_profile.reset()
    runs = 3
    for _ in range(runs):
        exe.run(x)
    rows = {r.site: r for r in kernel_profile.rows() if r.site in kernels | partitions and r.calls}
    assert set(rows) == kernels | partitions  # one row per kernel and per partition body
    for site in kernels | partitions:
        r = rows[site]
        assert r.calls == runs, site
        assert 0.0 <= r.best <= r.seconds, site
        assert r.is_partition == (site in partitions), site
    for site in kernels:
        assert re.match(r"nn\.\w+.*: [0-9x]+ f32", rows[site].what), rows[site].what
    # the kernel calls are nested in the partition body's call: their sum is within it
    total = sum(rows[s].seconds for s in kernels)
    assert total <= sum(rows[p].seconds for p in partitions) * (1 + 1e-6) + 1e-6
    exe.close()


def test_two_models_sites_of_one_name_keep_their_own_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every model's kernels are numbered from 0 (`byoc_p_ccompiler_main_0_0`, ...): a row is
    the site's name and its description, so a second model's calls do not land on the first
    one's row under the first one's description."""
    from byoc.runtime import kernel_profile

    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(toolchain.PROFILE_ENV, os.environ.get(toolchain.PROFILE_ENV, ""))  # restored after
    kernel_profile.enable()
    relu = byoc.parse_module(
        'func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n'
        '  %y = "nn.relu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n'
        "  func.return %y : tensor<4x8xf32>\n}\n"
    )
    sig = byoc.parse_module(
        'func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {\n'
        '  %y = "nn.sigmoid"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n'
        "  func.return %y : tensor<4x8xf32>\n}\n"
    )
    x = np.ones((4, 8), np.float32)
    exes = [byoc.build(m, targets=["ccompiler"], num_threads=1) for m in (relu, sig)]
    kernel_profile.reset()
    for exe, runs in zip(exes, (2, 3), strict=True):
        for _ in range(runs):
            exe.run(x)
    calls = {r.what.split(":")[0]: r.calls for r in kernel_profile.rows() if r.calls and not r.is_partition}
    assert calls.get("nn.relu") == 2, calls
    assert calls.get("nn.sigmoid") == 3, calls
    for exe in exes:
        exe.close()
