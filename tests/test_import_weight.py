"""What importing byoc and reaching its entry points loads, in a fresh interpreter.

`import byoc`, `byoc.import_onnx`, `byoc.build` and `byoc.load_module` are a user's first
contact with a model: they must not load what a build does not use. xDSL's interpreters
package loads every xDSL interpreter (riscv, snitch, linalg, ...) when any of its modules is
imported; the ONNX and torch packages are only needed to read those model files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.paths import ROOT

NEVER_ON_IMPORT = ("xdsl.interpreters", "onnx", "torch", "onnxruntime", "scipy")


def loaded_after(code: str) -> set[str]:
    """The module names `sys.modules` holds after running `code` in a fresh interpreter."""
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(
        m for m in modules if any(m == p or m.startswith(p + ".") for p in NEVER_ON_IMPORT)
    )


def test_import_byoc_loads_no_xdsl_and_no_numpy() -> None:
    modules = loaded_after("import byoc")
    assert heavy(modules) == []
    assert not any(m == "numpy" or m.startswith("xdsl") for m in modules)


@pytest.mark.parametrize("entry", ["import_onnx", "build", "load_module", "run_reference"])
def test_entry_points_load_no_interpreters_nor_frontends(entry: str) -> None:
    modules = loaded_after(f"import byoc\nbyoc.{entry}")
    assert "byoc.driver" in modules or entry != "build"
    assert heavy(modules) == []


def test_reference_interpreter_runs_without_xdsl_interpreters() -> None:
    code = (
        "import numpy as np\nimport byoc\n"
        "m = byoc.parse_module('func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\\n"
        '  %y = "nn.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>\\n'
        "  func.return %y : tensor<2xf32>\\n}')\n"
        "out = byoc.run_reference(m, np.array([-1.0, 2.0], np.float32))\n"
        "assert out[0].tolist() == [0.0, 2.0], out"
    )
    assert heavy(loaded_after(code)) == []
