"""The C libraries' own OpenMP team (byoc_runtime.h, docs/threads.md "The team").

Regions of a gcc-built library run on a team the library owns: workers claim shares, the
calling thread takes back the shares no worker has started, a run holds the team awake and
it sleeps between runs. Results must be bit-identical to libgomp's team and to one thread.
No test asserts on time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from runtime.test_threads import CONV, ELEMENTWISE, _inputs
from support.paths import ROOT

import byoc
from byoc.runtime.c_module import CModule


def _ccompiler(exe: byoc.Executable) -> CModule:
    component = exe.components["ccompiler"]
    assert isinstance(component, CModule)
    return component


def test_the_team_agrees_bit_for_bit_with_libgomp_and_one_thread() -> None:
    rng = np.random.default_rng(3)
    conv = byoc.parse_module(CONV.format(c=32, o=48, h=40, k=3, p=1))
    cases = [
        (byoc.parse_module(ELEMENTWISE), _inputs()),
        (conv, [rng.standard_normal((1, 32, 40, 40)).astype(np.float32),
                rng.standard_normal((48, 32, 3, 3)).astype(np.float32)]),
    ]
    for module, xs in cases:
        exe = byoc.build(module, targets=["ccompiler"], num_threads=1)
        (one,) = exe.run(*xs)
        exe.set_num_threads(2)
        team = _ccompiler(exe)
        if not team.team_counters():
            pytest.skip("this compiler builds without byoc's team (not gcc with OpenMP)")
        for _ in range(3):
            (own,) = exe.run(*xs)
            np.testing.assert_array_equal(own, one)
        counters = team.team_counters()
        assert counters["regions"] > 0, counters
        # every share beyond the caller's was run by a worker or taken back, never both
        assert counters["worker_shares"] + counters["taken_back"] >= counters["regions"], counters
        team.set_team_mode("libgomp")
        try:
            (gomp,) = exe.run(*xs)
        finally:
            team.set_team_mode("own")
        np.testing.assert_array_equal(gomp, one)
        with pytest.raises(ValueError, match="team mode"):
            team.set_team_mode("mine")


def test_the_team_sleeps_after_a_run() -> None:
    exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=2)
    team = _ccompiler(exe)
    if not team.team_counters():
        pytest.skip("this compiler builds without byoc's team (not gcc with OpenMP)")
    xs = _inputs()
    for _ in range(3):
        exe.run(*xs)
    before = team.team_counters()
    assert before["regions"] > 0, before
    # not held any more: the worker (one, at 2 threads) spins about 0.2 ms, then sleeps
    deadline = time.monotonic() + 10
    while team.team_counters()["asleep"] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    after = team.team_counters()
    assert after["asleep"] == 1 and after["sleeps"] >= 1, after
    (again,) = exe.run(*xs)  # a sleeping worker is woken (or its share taken back)
    exe.set_num_threads(1)
    (one,) = exe.run(*xs)
    np.testing.assert_array_equal(again, one)


def test_a_hold_wakes_a_sleeping_worker_before_any_region() -> None:
    """h15d: a run's hold (`hold_threads(True)`) wakes the workers asleep since the last run,
    so they spin by the run's first region; released, they fall asleep again."""
    exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=2)
    team = _ccompiler(exe)
    if not team.team_counters():
        pytest.skip("this compiler builds without byoc's team (not gcc with OpenMP)")
    xs = _inputs()
    exe.run(*xs)  # starts the worker

    def wait_until(asleep: int) -> dict[str, int]:
        deadline = time.monotonic() + 10
        while team.team_counters()["asleep"] != asleep and time.monotonic() < deadline:
            time.sleep(0.01)
        return team.team_counters()

    asleep = wait_until(1)
    assert asleep["asleep"] == 1, asleep
    regions = asleep["regions"]
    team.hold_threads(True)
    try:
        awake = wait_until(0)
        assert awake["asleep"] == 0 and awake["regions"] == regions, awake
    finally:
        team.hold_threads(False)
    again = wait_until(1)  # released: spins about 0.2 ms, then sleeps
    assert again["asleep"] == 1 and again["sleeps"] > asleep["sleeps"], again


def test_concurrent_callers_share_one_team() -> None:
    """The team serves one caller at a time; the others' regions run on their own thread."""
    exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=2)
    team = _ccompiler(exe)
    if not team.team_counters():
        pytest.skip("this compiler builds without byoc's team (not gcc with OpenMP)")
    xs = _inputs()
    exe.set_num_threads(1)
    (expected,) = exe.run(*xs)
    exe.set_num_threads(2)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(20):
                (out,) = exe.run(*xs)
                np.testing.assert_array_equal(out, expected)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    counters = team.team_counters()
    assert counters["regions"] + counters["alone"] >= 80, counters


def test_generated_libraries_bind_the_openmp_entry_points_themselves() -> None:
    """A region of a gcc build calls the library's own GOMP_parallel: the library imports
    none of libgomp's team functions (it still links libgomp, for other code)."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm on this machine")
    exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=2)
    team = _ccompiler(exe)
    if not team.team_counters():
        pytest.skip("this compiler builds without byoc's team (not gcc with OpenMP)")
    out = subprocess.run([nm, "-D", "--undefined-only", str(team.library_path)], capture_output=True,
                         text=True, check=True).stdout
    imported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert not imported & {"GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads", "omp_in_parallel"}


def test_a_forked_child_runs_without_the_parents_workers() -> None:
    """A child forked after the team started has no workers: its regions' shares are all
    taken back by the calling thread, and unloading the library joins nothing."""
    script = textwrap.dedent(
        """
        import gc, os, sys
        import numpy as np
        import byoc
        sys.path.insert(0, {tests!r})
        from runtime.test_threads import ELEMENTWISE, _inputs
        exe = byoc.build(byoc.parse_module(ELEMENTWISE), targets=["ccompiler"], num_threads=2)
        xs = _inputs()
        (a,) = exe.run(*xs)
        pid = os.fork()
        if pid == 0:
            (b,) = exe.run(*xs)
            ok = np.array_equal(a, b)
            del exe
            gc.collect()
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", status)
        """
    ).format(tests=str(ROOT / "tests"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "child 0", done.stdout


def test_idle_threads_steal_from_the_back_of_fixed_shares(tmp_path) -> None:
    """BYOC_STEAL_ (conv2d, depthwise, dense, pools): every item computed once for any
    thread count, size, claim size and alignment, and a worker that stops in its first
    claim (a preempted one) holds up that claim only: the calling thread takes the rest
    of its share (steal_shares.c)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    runtime = ROOT / "byoc" / "runtime"
    exe = tmp_path / "steal"
    subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fopenmp", f"-I{runtime}",
                    str(ROOT / "tests" / "runtime" / "steal_shares.c"), "-o", str(exe), "-lm", "-pthread"],
                   check=True, capture_output=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr
