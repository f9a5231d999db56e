"""`byoc.build(..., fallback=True)`: a listed target that cannot run here is left out, its ops
re-placed on the remaining targets, with a warning naming it and the cause; and the
placement report (`Executable.placement()`, `Executable.fallbacks`) that says so."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from support.paths import EXAMPLES
from support.scratch_targets import (
    MISSING_HEADER,
    broken_c_target,
    raising_codegen_target,
    registered,
    unavailable_target,
)

import byoc
from byoc.driver import TargetFallbackWarning
from byoc.runtime.executable import PartitionInfo, Placement, TargetFallback
from byoc.runtime.toolchain import CompileError
from byoc.specialize import SpecializingExecutable
from byoc.targets import UnknownTargetError
from byoc.targets.base import Target

MODEL = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = nn.add %x, %y : tensor<4x8xf32>
  %1 = nn.relu %0 : tensor<4x8xf32>
  %2 = nn.tanh %1 : tensor<4x8xf32>
  %3 = nn.multiply %2, %x : tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}
"""

DYNAMIC = MODEL.replace("4x8", "?x8")

RNG = np.random.default_rng(0)


def _inputs(rows: int = 4) -> list[np.ndarray[Any, Any]]:
    return [RNG.standard_normal((rows, 8)).astype(np.float32) for _ in range(2)]


def _assert_matches_reference(exe: Any, module: Any, rows: int = 4) -> None:
    inputs = _inputs(rows)
    (got,) = exe.run(*inputs)
    (want,) = byoc.run_reference(module, *inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _build(module: Any, targets: list[str], **kwargs: Any) -> tuple[Any, list[str]]:
    """The executable and the messages of the TargetFallbackWarnings its build gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe = byoc.build(module, targets=targets, **kwargs)
    return exe, [str(w.message) for w in caught if w.category is TargetFallbackWarning]


# ---- a target that is not available here ------------------------------------------------


def test_an_unavailable_target_is_left_out_before_partitioning() -> None:
    module = byoc.parse_module(MODEL)
    reason = "the fb_absent SDK is not installed"
    with registered(unavailable_target("fb_absent", ["nn.tanh"], reason)):
        exe, messages = _build(module, ["fb_absent", "ccompiler"])
    assert len(messages) == 1
    assert "target 'fb_absent' cannot run here" in messages[0] and reason in messages[0]
    assert exe.fallbacks == (TargetFallback("fb_absent", f"not available: {reason}"),)
    (part,) = exe.partitions  # the tanh it would have taken joins ccompiler's region
    assert part.target == "ccompiler" and "nn.tanh" in part.ops
    assert part.reason == "fallback" and part.fallback == f"fb_absent: not available: {reason}"
    _assert_matches_reference(exe, module)


def test_a_partition_holding_none_of_the_left_out_ops_keeps_its_priority_reason() -> None:
    # fb_absent would take multiply only; the ccompiler region of add/relu/tanh would not change
    module = byoc.parse_module(MODEL)
    with registered(unavailable_target("fb_absent", ["nn.multiply"], "no SDK")):
        exe, _ = _build(module, ["ccompiler", "fb_absent"])
    (part,) = exe.partitions
    assert part.reason == "priority" and part.fallback is None
    assert exe.fallbacks == (TargetFallback("fb_absent", "not available: no SDK"),)
    assert [s.name for s in exe.plan.steps if s.kind == "kernel"] == []  # ccompiler took it all
    _assert_matches_reference(exe, module)


def test_an_availability_check_that_raises_is_the_cause() -> None:
    def check() -> str | None:
        raise OSError("cannot read /proc/cpuinfo")

    target = Target(name="fb_flaky", support=unavailable_target("x", ["nn.add"], "").support,
                    lowering="lower-to-c", component="c", availability=check)
    assert target.unavailable_reason() == (
        "its availability check raised OSError: cannot read /proc/cpuinfo"
    )
    assert not target.available()
    assert Target(name="fb_fine").available()
    module = byoc.parse_module(MODEL)
    with registered(target):
        exe, messages = _build(module, ["fb_flaky", "ccompiler"])
    assert "fb_flaky" in messages[0] and "OSError: cannot read /proc/cpuinfo" in messages[0]
    _assert_matches_reference(exe, module)


def test_when_a_left_out_targets_predicates_raise_the_report_says_it_cannot_tell() -> None:
    def needs_the_sdk(op: Any) -> bool:
        raise ImportError("No module named 'fb_sdk'")

    target = Target(
        name="fb_nosdk",
        support={"nn.tanh": needs_the_sdk},
        codegen=unavailable_target("x", [], "").codegen,
        availability=lambda: "the fb SDK is not installed",
    )
    module = byoc.parse_module(MODEL)
    with registered(target):
        exe, messages = _build(module, ["fb_nosdk", "ccompiler"])
    assert len(messages) == 2 and "target 'fb_nosdk' cannot run here" in messages[0]
    assert messages[1].startswith(
        "cannot tell which partitions took over the ops of the left-out target(s) fb_nosdk: "
    )
    assert "fb_sdk" in messages[1]
    assert [f.target for f in exe.fallbacks] == ["fb_nosdk"]
    assert [p.reason for p in exe.partitions] == ["priority"]
    _assert_matches_reference(exe, module)


def test_dnnl_without_its_wheels_falls_back_and_without_fallback_raises_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from byoc.targets.dnnl import onednn

    def absent() -> onednn.OneDNN:
        raise onednn.OneDnnMissing(
            f"the dnnl target needs the '{onednn.DEVEL_DIST}' wheel ({onednn.INSTALL_HINT})"
        )

    monkeypatch.setattr(onednn, "find", absent)
    module = byoc.parse_module((EXAMPLES / "small_cnn.mlir").read_text())
    exe, messages = _build(module, ["dnnl", "ccompiler"])
    assert len(messages) == 1 and "target 'dnnl'" in messages[0]
    assert f"needs the '{onednn.DEVEL_DIST}' wheel" in messages[0]
    assert {p.target for p in exe.partitions} == {"ccompiler"}
    assert all(p.reason == "fallback" for p in exe.partitions)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(exe(x)[0], byoc.run_reference(module, x)[0], rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TargetFallbackWarning)
        with pytest.raises(onednn.OneDnnMissing, match=onednn.DEVEL_DIST):
            byoc.build(module, targets=["dnnl", "ccompiler"], fallback=False)


def test_a_target_whose_plugin_failed_to_load_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from byoc.targets import known_target_names, plugins

    known_target_names()  # discovery has run: the failure below is what it recorded
    origin = plugins.Origin("entry-point", "fb_vendor", "1.0", "entry point fb_vendor = fbv:T")
    failure = plugins.PluginFailure(
        "fb_vendor", origin, "cannot import it: No module named 'fb_vendor_sdk'"
    )
    monkeypatch.setitem(plugins.failures(), "fb_vendor", failure)
    module = byoc.parse_module(MODEL)
    exe, messages = _build(module, ["fb_vendor", "ccompiler"])
    assert "target 'fb_vendor'" in messages[0] and "No module named 'fb_vendor_sdk'" in messages[0]
    assert {p.target for p in exe.partitions} == {"ccompiler"}
    with pytest.raises(plugins.PluginError, match="fb_vendor_sdk"):
        byoc.build(module, targets=["fb_vendor", "ccompiler"], fallback=False)


def test_an_unknown_target_stays_an_error() -> None:
    with pytest.raises(UnknownTargetError, match="unknown target 'ccompilr'"):
        byoc.build(byoc.parse_module(MODEL), targets=["ccompilr", "ccompiler"])


# ---- a target whose component does not build ---------------------------------------------


def test_a_target_whose_library_does_not_compile_is_re_placed() -> None:
    module = byoc.parse_module(MODEL)
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.relu"])):
        exe, messages = _build(module, ["fb_broken", "ccompiler"])
    (message,) = messages
    assert "target 'fb_broken' cannot run here" in message
    assert "its build failed: CompileError: C compilation failed" in message
    assert MISSING_HEADER in message  # the compiler's own line says what is missing
    (left,) = exe.fallbacks
    assert left.target == "fb_broken" and MISSING_HEADER in left.cause
    assert {p.target for p in exe.partitions} == {"ccompiler"}
    assert [p.reason for p in exe.partitions] == ["fallback"]
    assert exe.partitions[0].fallback == str(left)
    _assert_matches_reference(exe, module)


def test_without_fallback_the_compile_error_is_raised_and_nothing_warns() -> None:
    module = byoc.parse_module(MODEL)
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.relu"])):
        with warnings.catch_warnings():
            warnings.simplefilter("error", TargetFallbackWarning)
            with pytest.raises(CompileError, match=MISSING_HEADER):
                byoc.build(module, targets=["fb_broken", "ccompiler"], fallback=False)


def test_a_codegen_that_raises_falls_back_to_the_next_target_then_the_host() -> None:
    module = byoc.parse_module(MODEL)
    targets = (
        raising_codegen_target("fb_crash", ["nn.add", "nn.relu", "nn.tanh"], "vendor compiler crashed"),
        broken_c_target("fb_broken", ["nn.add", "nn.relu"]),
    )
    with registered(*targets):
        exe, messages = _build(module, ["fb_crash", "fb_broken"])
    assert [m.split("'")[1] for m in messages] == ["fb_crash", "fb_broken"]
    assert "RuntimeError: vendor compiler crashed" in messages[0]
    assert [f.target for f in exe.fallbacks] == ["fb_crash", "fb_broken"]
    assert exe.partitions == []  # only the host is left: it runs every op
    assert [s.name for s in exe.plan.steps] == ["nn.add", "nn.relu", "nn.tanh", "nn.multiply"]
    assert str(exe.placement()).startswith("no partitions: every op runs on the host")
    _assert_matches_reference(exe, module)


def test_a_target_that_can_build_nowhere_is_an_error_not_a_fallback() -> None:
    from byoc.driver import BuildError

    module = byoc.parse_module(MODEL)
    tag_only = Target(name="fb_tagonly", support=unavailable_target("x", ["nn.relu"], "").support)
    with registered(tag_only), pytest.raises(BuildError, match="neither a lowering nor a codegen"):
        byoc.build(module, targets=["fb_tagonly", "ccompiler"])


def test_a_partitioned_module_runs_a_failed_targets_partitions_on_the_host() -> None:
    module = byoc.parse_module(MODEL)
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.relu"])):
        byoc.partition_for(module, ["fb_broken"])
        exe, messages = _build(module, [])
    assert "target 'fb_broken'" in messages[0]
    assert exe.partitions == [] and len(exe.fallbacks) == 1
    assert [s.name for s in exe.plan.steps] == ["nn.add", "nn.relu", "nn.tanh", "nn.multiply"]
    reference = byoc.parse_module(MODEL)
    _assert_matches_reference(exe, reference)


def test_a_dynamic_shape_model_falls_back_in_each_specialisation() -> None:
    module = byoc.parse_module(DYNAMIC)
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.relu"])):
        exe, messages = _build(module, ["fb_broken", "ccompiler"])
        assert isinstance(exe, SpecializingExecutable) and messages == []
        assert exe.placement() == Placement(())  # nothing built before the first run
        with pytest.warns(TargetFallbackWarning, match="target 'fb_broken' cannot run here"):
            _assert_matches_reference(exe, module, rows=3)
        with pytest.warns(TargetFallbackWarning, match="fb_broken"):
            _assert_matches_reference(exe, module, rows=5)
    placement = exe.placement()
    assert [shapes for shapes, _ in placement.specializations] == [((3, 8), (3, 8)), ((5, 8), (5, 8))]
    for _, built in placement.specializations:
        assert [p.target for p in built] == ["ccompiler"]
        assert [p.reason for p in built] == ["fallback"]
        assert [f.target for f in built.fallbacks] == ["fb_broken"]
    assert placement.partitions == placement.specializations[-1][1].partitions
    assert exe.fallbacks == placement.fallbacks
    text = str(placement)
    assert "input shapes 3x8 3x8:" in text and "input shapes 5x8 5x8:" in text


def test_without_fallback_a_dynamic_shape_model_raises_at_its_first_run() -> None:
    module = byoc.parse_module(DYNAMIC)
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.relu"])):
        exe = byoc.build(module, targets=["fb_broken", "ccompiler"], fallback=False)
        with pytest.raises(CompileError, match=MISSING_HEADER):
            exe.run(*_inputs(3))


# ---- the placement report -----------------------------------------------------------------


def test_a_build_without_fallback_reports_priority() -> None:
    module = byoc.parse_module(MODEL)
    exe, messages = _build(module, ["ccompiler"])
    assert messages == [] and exe.fallbacks == ()
    placement = exe.placement()
    assert list(placement) == exe.partitions and len(placement) == 1
    (part,) = placement
    assert (part.reason, part.measured, part.fallback) == ("priority", (), None)
    lines = str(placement).splitlines()
    assert lines[0].split() == ["partition", "target", "ops", "reason", "measured", "(ms)", "fallback"]
    assert lines[1].split() == [f"@{part.symbol}", "ccompiler", "4", "priority", "-", "-"]
    assert len(lines) == 2


def test_the_table_shows_measured_times_fastest_first_and_the_left_out_targets() -> None:
    placement = Placement(
        (
            PartitionInfo("dnnl_main_0", "dnnl", ("nn.conv2d", "nn.relu"), "measured",
                          (("dnnl", 0.00125), ("ccompiler", 0.0031))),
            PartitionInfo("ccompiler_main_0", "ccompiler", ("nn.softmax",), "fallback", (),
                          "acme: its build failed: RuntimeError: boom"),
        ),
        (TargetFallback("acme", "its build failed: RuntimeError: boom"),),
    )
    lines = str(placement).splitlines()
    assert lines[1].split() == [
        "@dnnl_main_0", "dnnl", "2", "measured", "dnnl", "1.250,", "ccompiler", "3.100", "-",
    ]
    assert lines[2].split()[:5] == ["@ccompiler_main_0", "ccompiler", "1", "fallback", "-"]
    assert lines[2].endswith("acme: its build failed: RuntimeError: boom")
    assert lines[3] == "left out: acme: its build failed: RuntimeError: boom"


def test_the_placement_survives_export_and_load(tmp_path: Any) -> None:
    from byoc.runtime.executable import load_executable

    module = byoc.parse_module(MODEL)
    with registered(broken_c_target("fb_broken", ["nn.add", "nn.relu"])):
        exe, _ = _build(module, ["fb_broken", "ccompiler"])
    path = tmp_path / "fallback.byoc"
    exe.export_library(str(path))
    loaded = load_executable(path)
    assert loaded.placement() == exe.placement()
    assert loaded.fallbacks == exe.fallbacks and loaded.fallbacks[0].target == "fb_broken"
    _assert_matches_reference(loaded, module)
