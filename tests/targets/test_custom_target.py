"""Targets as objects: the worked example (examples/myaccel.py), registration, the checks."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from support.paths import EXAMPLES

import byoc
import byoc.targets.patterns as byoc_patterns
from byoc.driver import BuildError
from byoc.runtime.component import RuntimeComponent
from byoc.targets import Target, UnknownTargetError, get_target, register_target
from byoc.targets.predicates import always

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
            byoc.register_target(myaccel.MYACCEL)
        yield myaccel
    finally:
        sys.path.remove(str(EXAMPLES))


def test_worked_example_target_builds_and_runs(myaccel) -> None:  # type: ignore[no-untyped-def]
    module = byoc.parse_module(MODEL)
    exe = byoc.build(module, targets=["myaccel"])
    parts = exe.partitions
    assert [p.target for p in parts] == ["myaccel", "myaccel"]
    assert parts[0].ops == ("myaccel.scale_shift",)
    assert parts[1].ops == ("nn.add", "nn.relu")
    assert [s.name for s in exe.plan.steps if s.kind == "kernel"] == ["nn.tanh"]
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(exe(x, y)[0], byoc.run_reference(module, x, y)[0], rtol=1e-6)


def test_registering_a_known_name_is_an_error(myaccel) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="already registered"):
        register_target(Target(name="ccompiler"))
    with pytest.raises(ValueError, match="already registered"):
        register_target(Target(name="test_mine"))  # a name of the test family
    with pytest.raises(TypeError, match="takes a byoc.targets.Target"):
        register_target(myaccel)  # type: ignore[arg-type]


def test_the_target_registers_its_support(myaccel) -> None:  # type: ignore[no-untyped-def]
    assert get_target("myaccel") is myaccel.MYACCEL
    assert byoc.get_op_attr("nn.add", "target.myaccel") is myaccel.MYACCEL.support["nn.add"]
    assert byoc.get_op_attr("nn.tanh", "target.myaccel") is None


def test_names_a_target_uses_are_checked() -> None:
    with pytest.raises(BuildError, match="lowering 'lower-to-cc', which is not a registered pass"):
        byoc.register_target(Target(name="typo1", lowering="lower-to-cc", component="c"))
    with pytest.raises(BuildError, match="component kind 'so'"):
        byoc.register_target(Target(name="typo2", lowering="lower-to-c", component="so"))
    with pytest.raises(BuildError, match="composite lowering 'gemm'"):
        byoc.register_target(
            Target(name="typo3", lowering="lower-to-c", component="c", composite_lowering="gemm")
        )
    with pytest.raises(UnknownTargetError):
        get_target("typo1")  # nothing was registered
    with pytest.raises(ValueError, match="pattern table of 'bad': name 'a.b'"):
        Target(name="bad", patterns=[("a.b", byoc_patterns.wildcard())])


def test_a_target_without_lowering_partitions_but_does_not_build() -> None:
    try:
        get_target("tagonly")
    except UnknownTargetError:
        byoc.register_target(Target(name="tagonly", support={"nn.relu": always()}))
    module = byoc.parse_module(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = nn.relu %x : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    with pytest.raises(BuildError, match="'tagonly' has neither a lowering nor a codegen"):
        byoc.build(module, targets=["tagonly"])


def test_a_target_with_its_own_codegen() -> None:
    """`codegen` builds the component directly (a vendor SDK); here numpy stands in for it."""

    class Component(RuntimeComponent):
        kind = "numpy-sdk"

        def __init__(self, symbols: list[str]) -> None:
            self.symbols = symbols

        def get_function(self, symbol: str):  # type: ignore[no-untyped-def]
            assert symbol in self.symbols

            def relu(x, out):  # type: ignore[no-untyped-def]
                np.maximum(np.asarray(x), 0, out=np.asarray(out))

            return relu

        def export(self) -> dict[str, bytes]:
            return {"symbols": ",".join(self.symbols).encode()}

    try:
        get_target("sdk")
    except UnknownTargetError:
        byoc.register_target(
            Target(
                name="sdk",
                support={"nn.relu": always()},
                codegen=lambda module, funcs: Component([f.sym_name.data for f in funcs]),
            )
        )
    module = byoc.parse_module(
        """
        func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
          %0 = nn.relu %x : tensor<4xf32>
          func.return %0 : tensor<4xf32>
        }
        """
    )
    exe = byoc.build(module, targets=["sdk"])
    assert [p.target for p in exe.partitions] == ["sdk"]
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    np.testing.assert_array_equal(exe(x)[0], np.maximum(x, 0))


def test_a_family_serves_every_name_of_its_form() -> None:
    from byoc.targets import TargetFamily, known_targets_text

    try:
        register_target(TargetFamily("myfam", lambda name: Target(name=name)))
    except ValueError:
        pass  # registered by an earlier run in this process
    member = get_target("myfam_a")
    assert member.name == "myfam_a" and get_target("myfam-b").name == "myfam-b"
    assert "myfam_<suffix>" in known_targets_text()
    with pytest.raises(UnknownTargetError, match="known targets: .*myfam_<suffix>"):
        get_target("myfam.a")
    with pytest.raises(ValueError, match="target family 'myfam' is already registered"):
        register_target(TargetFamily("myfam", lambda name: Target(name=name)))
