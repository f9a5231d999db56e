"""The README's worked example: a new target in one module (examples/myaccel.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import byoc
from byoc.targets import UnknownTargetError, get_target, register_target

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

MODEL = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = nn.constant dense<2.0> : tensor<4x8xf32>
  %t = nn.constant dense<0.5> : tensor<4x8xf32>
  %0 = nn.multiply %x, %s : tensor<4x8xf32>
  %1 = nn.add %0, %t : tensor<4x8xf32>
  %2 = nn.tanh %1 : tensor<4x8xf32>
  %3 = nn.add %2, %y : tensor<4x8xf32>
  %4 = nn.relu %3 : tensor<4x8xf32>
  func.return %4 : tensor<4x8xf32>
}
"""


@pytest.fixture(scope="module")
def myaccel():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(EXAMPLES))
    try:
        import myaccel

        try:
            get_target("myaccel")
        except UnknownTargetError:
            register_target("myaccel", myaccel)
        yield myaccel
    finally:
        sys.path.remove(str(EXAMPLES))


def test_worked_example_target_builds_and_runs(myaccel) -> None:  # type: ignore[no-untyped-def]
    module = byoc.parse_module(MODEL)
    exe = byoc.build(module, targets=["myaccel"])
    parts = exe.partitions()
    assert [p.target for p in parts] == ["myaccel", "myaccel"]
    assert parts[0].ops == ("myaccel.scale_shift",)
    assert parts[1].ops == ("nn.add", "nn.relu")
    assert [s.name for s in exe.plan.steps if s.kind == "kernel"] == ["nn.tanh"]
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(exe(x, y)[0], byoc.run_reference(module, [x, y])[0], rtol=1e-6)


def test_registering_a_known_name_is_an_error(myaccel) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="already registered"):
        register_target("ccompiler", myaccel)
