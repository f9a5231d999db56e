"""The thread setting (issue 15): one number for the C kernels, OpenBLAS, the host pool.

Thread counts are read from /proc/self/task in a fresh process, so nothing another
test started is counted. No test asserts on wall time.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_graph_outputs
from support.paths import ROOT

import byoc
from byoc.runtime import threads
from byoc.runtime.artifact import ArtifactError
from byoc.runtime.parallel import BranchGraph
from byoc.runtime.threads import split_budget
from byoc.utils.env import EnvError

# Two independent partitions (sibling regions of one target would be merged into one,
# so the module comes partitioned) joined on the host: a graph with two branches.
SHAPE = "64x64x32"
BRANCHY = f"""
func.func @main(%x: tensor<{SHAPE}xf32>, %y: tensor<{SHAPE}xf32>) -> tensor<{SHAPE}xf32> {{
  %a = func.call @ccompiler_main_0(%x) : (tensor<{SHAPE}xf32>) -> tensor<{SHAPE}xf32>
  %b = func.call @ccompiler_main_1(%y) : (tensor<{SHAPE}xf32>) -> tensor<{SHAPE}xf32>
  %c = nn.add %a, %b : tensor<{SHAPE}xf32>
  func.return %c : tensor<{SHAPE}xf32>
}}
func.func private @ccompiler_main_0(%x: tensor<{SHAPE}xf32>) -> tensor<{SHAPE}xf32> attributes {{byoc.compiler = "ccompiler"}} {{
  %0 = nn.sigmoid %x : tensor<{SHAPE}xf32>
  %1 = nn.multiply %0, %x : tensor<{SHAPE}xf32>
  func.return %1 : tensor<{SHAPE}xf32>
}}
func.func private @ccompiler_main_1(%y: tensor<{SHAPE}xf32>) -> tensor<{SHAPE}xf32> attributes {{byoc.compiler = "ccompiler"}} {{
  %0 = nn.tanh %y : tensor<{SHAPE}xf32>
  %1 = nn.relu %0 : tensor<{SHAPE}xf32>
  func.return %1 : tensor<{SHAPE}xf32>
}}
"""

# One partition whose fused loop is large enough to be split (work above PARALLEL_MIN_WORK).
ELEMENTWISE = f"""
func.func @main(%x: tensor<{SHAPE}xf32>, %y: tensor<{SHAPE}xf32>) -> tensor<{SHAPE}xf32> {{
  %0 = nn.add %x, %y : tensor<{SHAPE}xf32>
  %1 = nn.sigmoid %0 : tensor<{SHAPE}xf32>
  %2 = nn.multiply %1, %y : tensor<{SHAPE}xf32>
  func.return %2 : tensor<{SHAPE}xf32>
}}
"""


def _inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in SHAPE.split("x"))
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]


# ---- the setting ---------------------------------------------------------------------


def test_default_is_the_cores_the_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(threads.ENV, raising=False)
    assert threads.default_num_threads() == threads.available_cores()
    assert 1 <= threads.available_cores() <= len(os.sched_getaffinity(0))
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.default_num_threads() == 3
    monkeypatch.setenv(threads.ENV, "many")
    with pytest.raises(ValueError, match="BYOC_NUM_THREADS='many'"):
        threads.default_num_threads()
    monkeypatch.setenv(threads.ENV, "0")
    with pytest.raises(ValueError, match="BYOC_NUM_THREADS='0': expected an integer from 1 to 1024"):
        threads.default_num_threads()


def test_physical_cores_count_smt_siblings_once(tmp_path: Path) -> None:
    for cpu, core in ((0, 0), (1, 1), (2, 0), (3, 1)):  # two cores, two threads each
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text("0\n")
        (topo / "core_id").write_text(f"{core}\n")
    assert threads.physical_cores({0, 1, 2, 3}, tmp_path) == 2
    assert threads.physical_cores({0, 2}, tmp_path) == 1
    assert threads.physical_cores({0, 9}, tmp_path) == 2  # unreadable topology: CPUs


def test_cgroup_quota(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) is None
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) == 2.0
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert threads.cgroup_cpu_limit(tmp_path) is None


def test_split_budget() -> None:
    assert split_budget(2, 1) == [2]
    assert split_budget(2, 2) == [1, 1]
    assert split_budget(5, 2) == [3, 2]
    assert split_budget(2, 3) == [1, 1, 1]  # every task gets at least one


@pytest.mark.parametrize("bad", [0, -1, threads.MAX_THREADS + 1])
def test_bad_settings_are_clear_errors(bad: int) -> None:
    module = byoc.parse_module(ELEMENTWISE)
    with pytest.raises(ValueError, match="num_threads must be between 1"):
        byoc.build(module, targets=["ccompiler"], num_threads=bad)
    exe = byoc.build(module, targets=["ccompiler"], num_threads=1)
    with pytest.raises(ValueError, match="num_threads must be between 1"):
        exe.set_num_threads(bad)
    with pytest.raises(TypeError, match="must be an int"):
        exe.set_num_threads(2.0)  # type: ignore[arg-type]
    assert exe.num_threads == 1


def test_the_setting_reaches_every_component(monkeypatch: pytest.MonkeyPatch) -> None:
    module = byoc.parse_module(ELEMENTWISE)
    exe = byoc.build(module, targets=["ccompiler"], num_threads=3)
    lib = exe.components["ccompiler"]
    assert exe.num_threads == 3 and lib.get_num_threads() == 3
    exe.set_num_threads(1)
    assert lib.get_num_threads() == 1
    monkeypatch.setenv(threads.ENV, "2")
    exe2 = byoc.build(module, targets=["ccompiler"])
    assert exe2.num_threads == 2 and exe2.components["ccompiler"].get_num_threads() == 2
    # two models in one process keep their own settings (each loads its own library)
    assert lib.get_num_threads() == 1


def test_loaded_artifact_takes_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=1)
    path = tmp_path / "m.byoc"
    exe.export_library(str(path))
    monkeypatch.setenv(threads.ENV, "2")
    loaded = byoc.load_module(str(path))
    assert loaded.num_threads == 2 and loaded.components["ccompiler"].get_num_threads() == 2
    monkeypatch.setenv(threads.ENV, "lots")  # the environment's fault, not the artifact's
    with pytest.raises(ValueError, match="BYOC_NUM_THREADS='lots'") as info:
        byoc.load_module(str(path))
    assert isinstance(info.value, EnvError) and not isinstance(info.value, ArtifactError)


# ---- results -------------------------------------------------------------------------


def test_split_elementwise_loops_are_bit_identical() -> None:
    module = byoc.parse_module(ELEMENTWISE)
    exe = byoc.build(module, targets=["ccompiler"], num_threads=1)
    assert "BYOC_PARALLEL_FOR" in exe.components["ccompiler"].source
    xs = _inputs()
    (one,) = exe.run(*xs)
    for n in (2, 3, 4):
        exe.set_num_threads(n)
        (many,) = exe.run(*xs)
        np.testing.assert_array_equal(many, one)


CONV = """
func.func @main(%x: tensor<1x{c}x{h}x{h}xf32>, %w: tensor<{o}x{c}x{k}x{k}xf32>) -> tensor<1x{o}x{h}x{h}xf32> {{
  %0 = nn.conv2d %x, %w {{padding = array<i64: {p}, {p}, {p}, {p}>}} : (tensor<1x{c}x{h}x{h}xf32>, tensor<{o}x{c}x{k}x{k}xf32>) -> tensor<1x{o}x{h}x{h}xf32>
  %1 = nn.relu %0 : tensor<1x{o}x{h}x{h}xf32>
  func.return %1 : tensor<1x{o}x{h}x{h}xf32>
}}
"""
DENSE = """
func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = nn.dense %x, %w : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>
  func.return %0 : tensor<{m}x{n}xf32>
}}
"""


@pytest.mark.parametrize(
    "text",
    [
        CONV.format(c=32, o=32, h=32, k=3, p=1),  # im2col
        CONV.format(c=64, o=64, h=32, k=3, p=1),  # taps (constant weights, C >= 48)
        CONV.format(c=3, o=64, h=224, k=3, p=1),  # im2col, 19 row blocks, the last shorter
        CONV.format(c=64, o=32, h=120, k=3, p=1),  # taps, 8 row blocks, the last shorter
        CONV.format(c=64, o=96, h=28, k=1, p=0),  # direct 1x1
        DENSE.format(m=1, k=2048, n=2048),  # sgemv, rows split
        DENSE.format(m=96, k=512, n=256),  # sgemm, columns split
    ],
    ids=["im2col", "taps", "im2col-blocks", "taps-blocks", "1x1", "gemv", "gemm"],
)
def test_cblas_gemms_split_across_threads_agree(text: str) -> None:
    """The cblas kernels split their GEMMs across the team (OpenBLAS on one thread a
    block): 1 and 2 threads both within the f32 bound of the reference, and 2-thread runs
    agree with each other (threads ahead on the next row block once overwrote the scratch
    a slower one still read, in the last, shorter block)."""
    pytest.importorskip("scipy_openblas32")
    rng = np.random.default_rng(1)
    module = byoc.parse_module(text)
    x, w = (rng.standard_normal(s.shape).astype(np.float32) for s in byoc.build(module, num_threads=1).plan.input_specs)
    exe = byoc.build(module, params={"w": w}, targets=["cblas"], num_threads=1)
    assert exe.partitions and exe.partitions[0].target == "cblas"
    (one,) = exe.run(x)
    exe.set_num_threads(2)
    (two,) = exe.run(x)
    for _ in range(3):
        np.testing.assert_array_equal(exe.run(x)[0], two)
    want = byoc.run_reference(module, x, w)
    assert_graph_outputs(module, [x, w], [one], want)
    assert_graph_outputs(module, [x, w], [two], want)


def test_branches_run_at_once_and_agree() -> None:
    module = byoc.parse_module(BRANCHY)
    exe = byoc.build(module, num_threads=1)
    assert exe._graph.parallel
    xs = _inputs()
    (one,) = exe.run(*xs)
    exe.set_num_threads(2)
    seen: set[str] = set()
    lib = exe.components["ccompiler"]
    real = lib.set_call_threads

    def spy(n: int) -> None:
        seen.add(f"{threading.current_thread().name}:{n}")
        real(n)

    lib.set_call_threads = spy  # type: ignore[method-assign]
    exe._setters = [spy if s is not None else None for s in exe._setters]
    (two,) = exe.run(*xs)
    np.testing.assert_array_equal(two, one)
    # both partitions ran on the pool, each with half the budget
    assert {s.split(":")[1] for s in seen} <= {"1", "0"}
    assert any(name.startswith("byoc-host") for name in (s.split(":")[0] for s in seen))
    assert_graph_outputs(module, xs, [two], byoc.run_reference(module, *xs))


def test_a_chain_is_not_branchy() -> None:
    module = byoc.parse_module(ELEMENTWISE)
    exe = byoc.build(module, targets=["ccompiler"], num_threads=2)
    assert not exe._graph.parallel
    exe.run(*_inputs())
    assert exe._pool is None  # no pool without branches


def test_branch_graph_of_a_plan() -> None:
    exe = byoc.build(byoc.parse_module(BRANCHY), num_threads=1)
    graph = BranchGraph.of(exe.plan)
    assert graph.sources == (0, 1)
    assert graph.preds[2] == (0, 1)


def test_a_failing_branch_raises_and_the_pool_survives() -> None:
    exe = byoc.build(byoc.parse_module(BRANCHY), num_threads=2)
    xs = _inputs()
    (want,) = exe.run(*xs)
    runners = exe._bound.runners
    good = runners[1]

    def boom(slots: list[Any]) -> None:
        raise RuntimeError("branch failed")

    runners[1] = boom
    with pytest.raises(RuntimeError, match="branch failed"):
        exe.run(*xs)
    runners[1] = good
    (again,) = exe.run(*xs)
    np.testing.assert_array_equal(again, want)


@pytest.mark.parametrize("model", ["branchy", "elementwise"])
def test_concurrent_runs_with_threads_inside(model: str) -> None:
    text = BRANCHY if model == "branchy" else ELEMENTWISE
    module = byoc.parse_module(text)
    targets = None if model == "branchy" else ["ccompiler"]
    exe = byoc.build(module, targets=targets, num_threads=1)
    inputs = [_inputs(seed) for seed in range(4)]
    want = [exe.run(*xs)[0] for xs in inputs]
    exe.set_num_threads(2)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: exe.run(*inputs[k % 4])[0], range(24)))
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, want[k % 4])


def test_changing_the_setting_while_runs_are_in_flight() -> None:
    exe = byoc.build(byoc.parse_module(BRANCHY), num_threads=2)
    xs = _inputs()
    (want,) = exe.run(*xs)
    stop = threading.Event()
    errors: list[BaseException] = []

    def runner() -> None:
        try:
            while not stop.is_set():
                np.testing.assert_array_equal(exe.run(*xs)[0], want)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    workers = [threading.Thread(target=runner) for _ in range(2)]
    for w in workers:
        w.start()
    for n in (1, 3, 2, 1, 2) * 3:
        exe.set_num_threads(n)
    stop.set()
    for w in workers:
        w.join()
    assert not errors
    exe.close()
    gc.collect()


# ---- thread counts, in a fresh process -----------------------------------------------

_COUNT_SCRIPT = textwrap.dedent(
    """
    import gc, json, os, sys, time
    import numpy as np
    import byoc
    sys.path.insert(0, {tests!r})
    from test_threads import BRANCHY, ELEMENTWISE, _inputs

    def count():
        return len(os.listdir("/proc/self/task"))

    def settle(target, timeout=10.0):
        end = time.time() + timeout
        while count() > target and time.time() < end:
            time.sleep(0.01)
        return count()

    out = {{}}
    xs = _inputs()
    base = out["base"] = count()
    models = [byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=1),
              byoc.build(byoc.parse_module(BRANCHY), num_threads=1)]
    if {cblas}:
        rng = np.random.default_rng(0)
        conv = '''
        func.func @main(%x: tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32> {{
          %w = nn.constant dense<0.01> : tensor<32x32x3x3xf32>
          %0 = nn.conv2d %x, %w {{padding = array<i64: 1, 1, 1, 1>}} : (tensor<1x32x32x32xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x32x32xf32>
          func.return %0 : tensor<1x32x32x32xf32>
        }}'''
        models.append(byoc.build(byoc.parse_module(conv), targets=["cblas"], num_threads=1))
    def run_all():
        for exe in models:
            ins = [rng.standard_normal((1, 32, 32, 32)).astype(np.float32)] if exe.plan.input_specs[0].shape[0] == 1 else xs
            for _ in range(5):
                exe.run(*ins)
    rng = np.random.default_rng(0)
    run_all()
    out["one"] = count()
    for exe in models:
        exe.set_num_threads(2)
    run_all()
    out["two"] = count()
    out["libraries"] = sum(hasattr(c, "team_counters") for m in models for c in m.components.values())
    del models, exe
    gc.collect()
    out["freed"] = settle(base)
    print(json.dumps(out))
    """
)


def _count_threads(env_extra: dict[str, str], cblas: bool) -> dict[str, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    script = _COUNT_SCRIPT.format(tests=str(Path(__file__).resolve().parent.parent), cblas=cblas)
    script = script.replace("from test_threads", "from runtime.test_threads")
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _has_cblas() -> bool:
    try:
        import scipy_openblas32  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("env", [{}, {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}])
def test_no_pool_behind_the_settings_back(env: dict[str, str]) -> None:
    """At 1 thread nothing starts a thread; at 2, at most one team worker per C library
    (byoc_runtime.h's own OpenMP team) and the two host workers of the branchy model, no
    OpenBLAS pool; freeing the models stops and joins every one of them."""
    counts = _count_threads(env, _has_cblas())
    base = counts["base"]
    assert counts["one"] == base, counts
    assert base + 1 <= counts["two"] <= base + 2 + counts["libraries"], counts
    assert counts["freed"] == base, counts


def test_freeing_a_model_while_its_pool_is_alive_does_not_crash() -> None:
    script = textwrap.dedent(
        f"""
        import gc, sys
        from concurrent.futures import ThreadPoolExecutor
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        import byoc
        from test_threads import BRANCHY, ELEMENTWISE, _inputs
        xs = _inputs()
        pool = ThreadPoolExecutor(2)
        for text, targets in ((BRANCHY, None), (ELEMENTWISE, ["ccompiler"])) * 3:
            exe = byoc.build(byoc.parse_module(text), targets=targets, num_threads=2)
            pool.submit(exe.run, *xs).result()
            exe.run(*xs)
            del exe
            gc.collect()
        pool.shutdown()
        print("ok")
        """
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(Path(__file__).resolve().parent.parent), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (done.returncode, done.stderr[-3000:])


# ---- byoc-run --threads ---------------------------------------------------------------


def test_byoc_run_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from support.paths import EXAMPLES

    from byoc.tools import byoc_run

    model = str(EXAMPLES / "small_cnn.mlir")
    out_path = tmp_path / "cnn.byoc"
    assert byoc_run.main([model, "--targets", "ccompiler", "--repeat", "2", "--threads", "1", "--export", str(out_path)]) == 0
    out = capsys.readouterr().out
    assert "threads: 1" in out and "outputs match the reference" in out
    assert byoc_run.main([str(out_path), "--repeat", "2", "--threads", "2"]) == 0
    assert "threads: 2" in capsys.readouterr().out
    assert byoc_run.main([model, "--targets", "ccompiler", "--threads", "0"]) == 1
    captured = capsys.readouterr()
    assert "--threads must be between 1" in captured.err and "Traceback" not in captured.err


def test_a_compiler_without_openmp_builds_serial_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cc -fopenmp` failing (clang without libomp): the library is built without it."""
    from byoc.runtime import toolchain

    fake = tmp_path / "cc"
    fake.write_text(
        '#!/bin/sh\nfor a in "$@"; do [ "$a" = -fopenmp ] && '
        "echo \"fatal error: 'omp.h' file not found\" >&2 && exit 1; done\nexec cc \"$@\"\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("BYOC_CACHE_DIR", str(tmp_path / "cache"))
    try:
        exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=2)
        assert str(fake) in toolchain.NO_OPENMP
        xs = _inputs()
        (got,) = exe.run(*xs)
        exe.set_num_threads(1)
        np.testing.assert_array_equal(exe.run(*xs)[0], got)
    finally:
        toolchain.NO_OPENMP.discard(str(fake))
