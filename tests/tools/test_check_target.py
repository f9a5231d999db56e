"""The conformance kit (`byoc.check_target`, `byoc-check-target`) on every built-in target, and
on a target that computes a wrong answer.

A built-in target's cells that fail because of a known defect of that target are listed in
KNOWN_DEFECTS and checked by a strict xfail each: the rest of the target's table must pass,
and fixing a defect turns its xfail into a failure that asks for the entry to go."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import EXAMPLES, ROOT

from byoc.conformance import ConformanceReport, check_target
from byoc.targets import known_target_names

KNOWN_DEFECTS: dict[tuple[str, str, str], str] = {}
"""(target, op or composite, element type) -> the defect that makes that cell fail."""

SLOW = {"cblas", "dnnl", "examplejson"}
"""Targets whose kit run takes more than about 30 s on a loaded two-core machine."""

TARGETS = [t for t in known_target_names() if t != "test" and not t.endswith("_<suffix>")]
"""Every built-in target but the `test` family, whose support is chosen per run (it has no
support table to derive cases from)."""


@functools.cache
def report(target: str) -> ConformanceReport:
    return check_target(target)


@pytest.mark.parametrize(
    "target", [pytest.param(t, marks=[pytest.mark.slow] if t in SLOW else []) for t in TARGETS]
)
def test_builtin_target_passes_the_kit(target: str) -> None:
    r = report(target)
    assert r.cells, r.table()
    unexpected = [c for c in r.failed() if (target, c.name, c.dtype) not in KNOWN_DEFECTS]
    assert not unexpected, r.table()


@pytest.mark.parametrize(
    ("target", "name", "dtype"),
    [
        pytest.param(
            *key,
            marks=[
                pytest.mark.xfail(strict=True, reason=reason),
                *([pytest.mark.slow] if key[0] in SLOW else []),
            ],
        )
        for key, reason in KNOWN_DEFECTS.items()
    ],
)
def test_known_defect(target: str, name: str, dtype: str) -> None:
    cell = report(target).cell(name, dtype)
    assert cell is not None, f"no cell {name} x {dtype}"
    assert cell.status == "pass", report(target).table()


def test_graphref_table_covers_its_support_and_patterns() -> None:
    r = report("graphref")
    assert r.ok
    names = {c.name for c in r.cells}
    assert names >= {"nn.add", "nn.relu", "nn.dense", "graphref.dense_bias", "graphref.dense_bias_relu"}
    assert all(c.dtype == "f32" for c in r.cells)  # graphref takes f32 only
    assert "all pass" in r.table()


def kit(*args: str, path: Path | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *([str(path)] if path else [])])}
    return subprocess.run(
        [sys.executable, "-m", "byoc.tools.byoc_check_target", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=600,
    )  # fmt: skip


def test_cli_passes_and_prints_the_table() -> None:
    done = kit("graphref", "--only", "nn.relu,graphref.dense_bias", "--dtypes", "f32,i32")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "target graphref: built in (byoc 0.1.0)"
    assert any(line.startswith("nn.relu ") and "pass (6)" in line for line in lines)
    assert any(line.startswith("graphref.dense_bias ") for line in lines)


WRONG_RELU = """
from pathlib import Path
from xdsl.dialects.builtin import f32
from byoc.target_api import GraphEngine, Target, dtypes

# the example vendor engine with relu computing the identity; its relu helper is then unused,
# a warning the -Werror build fails on unless the engine relaxes it
ENGINE = GraphEngine("vendor", (Path(__file__).parent / "wrong_engine.c",), cflags=("-Wno-unused-function",))
byoc_targets = Target(
    name="wrongrelu", support={"nn.relu": dtypes(f32), "nn.add": dtypes(f32)},
    lowering="lower-to-graph", component="graph", graph_engine=ENGINE,
)
"""


def test_cli_fails_on_a_wrong_target_and_prints_the_case(tmp_path: Path) -> None:
    engine = (EXAMPLES / "vendor_plugin" / "src" / "vendor_accel" / "vendor_engine.c").read_text()
    broken = engine.replace("case V_RELU: y[j] = v_relu_(a[j]); break;", "case V_RELU: y[j] = a[j]; break;")
    assert broken != engine
    (tmp_path / "wrong_engine.c").write_text(broken)
    (tmp_path / "wrongrelu.py").write_text(WRONG_RELU)
    done = kit("wrongrelu", "--load-plugin", str(tmp_path / "wrongrelu.py"), "--dtypes", "f32", "--only", "nn.relu")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert any(line.startswith("nn.relu ") and "FAIL" in line for line in out.splitlines()), out
    assert "nn.relu on f32: threads=1:" in out
    assert "nn.relu %0 : tensor<" in out  # the first failing case, as MLIR to reproduce


def test_cli_errors_are_one_line() -> None:
    done = kit("nosuchtarget")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("byoc-check-target: error: unknown target 'nosuchtarget'")
    done = kit("graphref", "--dtypes", "f33")
    assert done.returncode == 1 and "unknown element type 'f33'" in done.stderr
    done = kit("graphref", "--only", "nn.conv2d")
    assert done.returncode == 1
    assert "target 'graphref' has no op or composite 'nn.conv2d' (it has: " in done.stderr


def test_the_bound_is_the_suites() -> None:
    import support.bounds as bounds

    import byoc.conformance.bounds as kit_bounds

    assert bounds.graph_bounds is kit_bounds.graph_bounds
    assert bounds.ulp_bound is kit_bounds.ulp_bound
