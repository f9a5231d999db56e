"""build -> run end to end: partitions on ccompiler and examplejson, the rest on the host."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.bounds import assert_graph_outputs
from support.dag_strategies import build_module, dags, random_inputs
from support.paths import EXAMPLES
from xdsl.context import Context
from xdsl.dialects.builtin import StringAttr
from xdsl.passes import PassPipeline

import byoc
from byoc.dialects import nn
from byoc.dialects.byoc import TARGET_ATTR
from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
from byoc.passes.partition import PartitionPass
from byoc.tools import byoc_run


def _example(name: str) -> Any:
    return byoc.parse_module((EXAMPLES / name).read_text())


def _inputs_for(exe: Any, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s.shape).astype(s.dtype) for s in exe.plan.input_specs]


@pytest.mark.parametrize("example", ["seed_subgraph.mlir", "small_cnn.mlir"])
@pytest.mark.parametrize(
    "targets", [["ccompiler"], ["examplejson"], ["ccompiler", "examplejson"], ["examplejson", "ccompiler"]]
)
def test_examples_equal_reference(example: str, targets: list[str]) -> None:
    module = _example(example)
    exe = byoc.build(module, targets=targets)
    assert exe.partitions, "every op of the examples is supported: expected a partition"
    assert {p.target for p in exe.partitions} == {targets[0]}
    xs = _inputs_for(exe)
    assert_graph_outputs(module, xs, exe(*xs), byoc.run_reference(module, *xs))


MIXED = """
func.func @main(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = nn.add %x, %y {byoc.target = "ccompiler"} : tensor<2x8xf32>
  %1 = nn.relu %0 {byoc.target = "ccompiler"} : tensor<2x8xf32>
  %2 = nn.tanh %1 : tensor<2x8xf32>
  %3 = nn.multiply %2, %x {byoc.target = "examplejson"} : tensor<2x8xf32>
  %4 = nn.subtract %3, %y {byoc.target = "examplejson"} : tensor<2x8xf32>
  %5 = nn.exp %4 : tensor<2x8xf32>
  %6 = nn.sigmoid %5 {byoc.target = "ccompiler"} : tensor<2x8xf32>
  func.return %6, %4 : tensor<2x8xf32>, tensor<2x8xf32>
}
"""


def _partition_tagged(module: Any) -> None:
    """Group and outline the ops already tagged with byoc.target (no re-annotation)."""
    PassPipeline((MergeCompilerRegionsPass(), PartitionPass())).apply(Context(), module)


def test_mixed_ccompiler_examplejson_and_host() -> None:
    module = byoc.parse_module(MIXED)
    reference_module = module.clone()
    _partition_tagged(module)
    exe = byoc.build(module)
    by_target = sorted((p.target, p.ops) for p in exe.partitions)
    assert by_target == [
        ("ccompiler", ("nn.add", "nn.relu")),
        ("ccompiler", ("nn.sigmoid",)),
        ("examplejson", ("nn.multiply", "nn.subtract")),
    ]
    host_ops = [s.name for s in exe.plan.steps if s.kind == "kernel"]
    assert host_ops == ["nn.tanh", "nn.exp"]
    xs = _inputs_for(exe, seed=4)
    want = byoc.run_reference(reference_module, *xs)
    assert_graph_outputs(reference_module, xs, exe(*xs), want)


_TAGS = st.sampled_from(["ccompiler", "examplejson", None])


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=dags(min_ops=5, max_ops=40), data=st.data())
def test_random_partitioned_dags_equal_reference(spec: Any, data: st.DataObject) -> None:
    module = build_module(spec)
    reference_module = module.clone()
    func = next(iter(module.ops))
    for op in func.body.block.ops:
        if isinstance(op, nn.NNOp) and not isinstance(op, nn.ConstantOp):
            tag = data.draw(_TAGS)
            if tag is not None:
                op.attributes[TARGET_ATTR] = StringAttr(tag)
    _partition_tagged(module)
    exe = byoc.build(module)
    xs = random_inputs(spec, seed=1)
    want = byoc.run_reference(reference_module, *xs)
    assert_graph_outputs(reference_module, xs, exe(*xs), want)


def test_partitioned_threads_equal_serial() -> None:
    module = byoc.parse_module(MIXED)
    _partition_tagged(module)
    exe = byoc.build(module)
    inputs = [_inputs_for(exe, seed=s) for s in range(8)]
    expected = [exe(*x) for x in inputs]
    failures: list[str] = []

    def worker(k: int) -> None:
        for i in range(1000):
            j = (k * 7 + i) % len(inputs)
            got = exe(*inputs[j])
            if not all(np.array_equal(g, e) for g, e in zip(got, expected[j], strict=True)):
                failures.append(f"thread {k} call {i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_partitioned_artifact_loads_in_a_fresh_process(tmp_path: Path) -> None:
    module = byoc.parse_module(MIXED)
    _partition_tagged(module)
    exe = byoc.build(module)
    path = tmp_path / "mixed.byoc"
    exe.export_library(str(path))
    xs = _inputs_for(exe, seed=5)
    np.savez(tmp_path / "in.npz", *xs)
    np.savez(tmp_path / "want.npz", *exe(*xs))
    code = f"""
import numpy as np, byoc, sys
exe = byoc.load_module(r'{path}')
xs = list(np.load(r'{tmp_path / "in.npz"}').values())
want = list(np.load(r'{tmp_path / "want.npz"}').values())
got = exe(*xs)
assert sorted(p.target for p in exe.partitions) == ['ccompiler', 'ccompiler', 'examplejson']
sys.exit(0 if all(np.array_equal(g, w) for g, w in zip(got, want)) else 3)
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_artifact_constants_bound_into_partitions_are_stored_once(tmp_path: Path) -> None:
    w = np.linspace(-1, 1, 64 * 64, dtype=np.float32)
    text = """
    func.func @main(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
      %0 = nn.add %x, %w : tensor<64x64xf32>
      %1 = nn.tanh %w : tensor<64x64xf32>
      func.return %0, %1 : tensor<64x64xf32>, tensor<64x64xf32>
    }"""
    exe = byoc.build(byoc.parse_module(text), params={"w": w.reshape(64, 64)}, targets=["ccompiler"])
    path = tmp_path / "w.byoc"
    exe.export_library(str(path))
    data = path.read_bytes()
    assert data.count(w.tobytes()) == 1


# ---- byoc-run ------------------------------------------------------------------------


def test_byoc_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = byoc_run.main(
        [str(EXAMPLES / "small_cnn.mlir"), "--targets", "ccompiler,examplejson", "--repeat", "2"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "ccompiler_main_0" in out and "ccompiler" in out
    assert "host" in out and "total" in out
    assert "max abs error" in out and "outputs match the reference" in out


def test_byoc_run_inputs_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    arrays = {k: rng.standard_normal((10, 10)).astype(np.float32) for k in "abcd"}
    np.savez(tmp_path / "x.npz", **arrays)
    out_path = tmp_path / "seed.byoc"
    code = byoc_run.main(
        [
            str(EXAMPLES / "seed_subgraph.mlir"),
            "--targets",
            "examplejson",
            "--inputs",
            str(tmp_path / "x.npz"),
            "--export",
            str(out_path),
        ]
    )
    assert code == 0 and out_path.exists()
    capsys.readouterr()
    assert byoc_run.main([str(out_path), "--inputs", str(tmp_path / "x.npz")]) == 0
    assert "examplejson_main_0" in capsys.readouterr().out


def test_byoc_run_mismatch_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = byoc.run_reference

    def off_by_one(module: Any, *inputs: Any) -> list[np.ndarray]:
        return [r + 1 for r in real(module, *inputs)]

    monkeypatch.setattr(byoc, "run_reference", off_by_one)
    code = byoc_run.main([str(EXAMPLES / "seed_subgraph.mlir"), "--targets", "ccompiler"])
    captured = capsys.readouterr()
    assert code == 1
    assert "differ from the reference" in captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.mlir"], "no such file"),
        ([str(EXAMPLES / "seed_subgraph.mlir"), "--targets", "nope"], "unknown target 'nope'"),
        ([str(EXAMPLES / "seed_subgraph.mlir"), "--inputs", "absent.npz"], "error:"),
    ],
)
def test_byoc_run_errors_exit_1(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert byoc_run.main(args) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_byoc_run_parse_error_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = nn.relu %x : tensor<3xf32>\n  func.return %0 : tensor<2xf32>\n}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "byoc.tools.byoc_run", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert f"{bad}:2:" in proc.stderr and "error:" in proc.stderr
    assert "Traceback" not in proc.stderr
