"""Placement by measurement end to end: outputs, reasons, the cache, the cost model, executors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import byoc
from byoc.interpreters.reference import run_reference
from byoc.placement import MeasurementCache, PlacementError, place
from byoc.placement.measure import ModelJob, run_job
from byoc.placement.place import NOISE_MARGIN, choose

TARGETS = ["ccompiler", "examplejson"]

MODEL = """
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = nn.dense %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = nn.relu %0 : tensor<8x16xf32>
  %2 = nn.add %1, %x : tensor<8x16xf32>
  %3 = nn.tanh %2 : tensor<8x16xf32>
  %4 = nn.multiply %3, %1 : tensor<8x16xf32>
  %5 = nn.sigmoid %4 : tensor<8x16xf32>
  func.return %5 : tensor<8x16xf32>
}
"""


class CountingExecutor(ThreadPoolExecutor):
    """A thread pool that counts the jobs submitted to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def inputs() -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(3)
    return [
        rng.standard_normal((8, 16)).astype(np.float32),
        rng.standard_normal((16, 16)).astype(np.float32),
    ]


def layout(exe: Any) -> list[tuple[str, tuple[str, ...]]]:
    return [(p.target, p.ops) for p in exe.partitions]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "placement.json"


def test_measured_build_matches_the_reference_and_says_why(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    with CountingExecutor() as pool:
        exe = byoc.build(
            module, targets=TARGETS, placement="measure", placement_cache=cache,
            measure_executor=pool, num_threads=1,
        )
        assert pool.submitted > 0
    (got,) = exe.run(*inputs())
    (want,) = run_reference(module, *inputs())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert exe.partitions
    for p in exe.partitions:
        assert p.reason == "measured"
        assert p.target in dict(p.measured)
        seconds = [s for _, s in p.measured]
        assert seconds == sorted(seconds) and all(s >= 0 for s in seconds)


def test_second_build_measures_nothing_and_places_the_same(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    with CountingExecutor() as pool:
        first = byoc.build(
            module, targets=TARGETS, placement="measure", placement_cache=cache,
            measure_executor=pool, num_threads=1,
        )
        before = pool.submitted
        second = byoc.build(
            module, targets=TARGETS, placement="measure", placement_cache=cache,
            measure_executor=pool, num_threads=1,
        )
        assert before > 0 and pool.submitted == before
    assert layout(second) == layout(first)
    assert [p.measured for p in second.partitions] == [p.measured for p in first.partitions]


def test_place_reports_its_measurements(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    with ThreadPoolExecutor(1) as pool:
        chosen = place(module.clone(), TARGETS, cache=cache, executor=pool, num_threads=1)
        again = place(module.clone(), TARGETS, cache=cache, executor=pool, num_threads=1)
    assert chosen.measurements > 0 and again.measurements == 0
    assert again.targets == chosen.targets and again.configuration == chosen.configuration
    assert set(chosen.end_to_end) == {
        "measured", "ccompiler", "examplejson", "ccompiler,examplejson", "examplejson,ccompiler"
    }
    assert chosen.configuration == choose(chosen.end_to_end, TARGETS)
    fastest = min(chosen.end_to_end.values())
    assert chosen.end_to_end[chosen.configuration] <= fastest * (1 + NOISE_MARGIN)
    assert len(chosen.targets) == len(chosen.units) == 6


@pytest.mark.parametrize("change", ["machine", "version", "threads"])
def test_cache_key_changes_with_machine_version_and_threads(tmp_path: Path, change: str) -> None:
    path = tmp_path / "c.json"
    base = MeasurementCache(path, machine="cpu A | avx2", version="1.0")
    key = base.key("digest", "ccompiler", threads=1)
    base.put(key, 1.5, target="ccompiler")
    base.save()
    same = MeasurementCache(path, machine="cpu A | avx2", version="1.0")
    assert same.get(same.key("digest", "ccompiler", threads=1)) == 1.5
    other = MeasurementCache(
        path,
        machine="cpu B | avx512f" if change == "machine" else "cpu A | avx2",
        version="1.1" if change == "version" else "1.0",
    )
    threads = 2 if change == "threads" else 1
    assert other.get(other.key("digest", "ccompiler", threads=threads)) is None
    assert same.key("digest", "dnnl", threads=1) != key
    assert same.key("other digest", "ccompiler", threads=1) != key


def test_cache_miss_on_another_machine_measures_again(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    with ThreadPoolExecutor(1) as pool:
        place(module.clone(), TARGETS, cache=cache, executor=pool, num_threads=1,
              check_end_to_end=False)
        moved = MeasurementCache(cache, machine="another CPU")
        again = place(module.clone(), TARGETS, cache=moved, executor=pool, num_threads=1,
                      check_end_to_end=False)
    assert again.measurements > 0


def test_concurrent_writers_keep_each_others_entries(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    caches = [MeasurementCache(path) for _ in range(8)]
    for n, c in enumerate(caches):
        c.put(c.key(f"region {n}", "ccompiler", 1), float(n))
    threads = [threading.Thread(target=c.save) for c in caches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data = json.loads(path.read_text())
    assert data["format"] == 1
    final = MeasurementCache(path)
    for n in range(8):
        assert final.get(final.key(f"region {n}", "ccompiler", 1)) == float(n)


def test_cost_model_times_nothing_and_uses_cached_figures(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    with ThreadPoolExecutor(1) as pool:
        byoc.build(module, targets=TARGETS, placement="measure", placement_cache=cache,
                   measure_executor=pool, num_threads=1)
    with CountingExecutor() as pool:
        exe = byoc.build(module, targets=TARGETS, placement="cost-model",
                         placement_cache=cache, measure_executor=pool, num_threads=1)
        assert pool.submitted == 0
    assert all(p.reason == "cost-model" and p.measured for p in exe.partitions)
    (got,) = exe.run(*inputs())
    (want,) = run_reference(module, *inputs())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_cost_model_follows_the_cached_figures(cache: Path) -> None:
    """Figures making ccompiler cheap for every kind: the whole model is one ccompiler
    partition, and each op's modelled time per target is reported."""
    store = MeasurementCache(cache)
    fingerprint = store.fingerprint(1)
    kinds = ["nn.dense", "nn.relu", "nn.add", "nn.tanh", "nn.multiply", "nn.sigmoid"]
    for target, seconds in (("ccompiler", 1e-6), ("examplejson", 1e-3), ("host", 2e-3)):
        for kind in kinds:
            for size in (1, 2, 4):
                store.put(
                    store.key(f"{kind}-{size}", target, 1), seconds * size, target=target,
                    kind=kind, flops=128.0 * size, bytes=1024 * size, fingerprint=fingerprint,
                )  # fmt: skip
        store.put(store.key("probe", target, 1), 1e-7, target=target, kind="call",
                  fingerprint=fingerprint)
    store.save()
    module = byoc.parse_module(MODEL)
    exe = byoc.build(module, targets=TARGETS, placement="cost-model", placement_cache=cache,
                     num_threads=1)
    assert [(p.target, p.num_ops, p.reason) for p in exe.partitions] == [
        ("ccompiler", 6, "cost-model")
    ]
    (p,) = exe.partitions
    assert [t for t, _ in p.measured] == ["ccompiler", "examplejson", "host"]


def test_cost_model_without_figures_falls_back_to_priority_and_says_so(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    with pytest.warns(UserWarning, match="placed by priority"):
        exe = byoc.build(module, targets=TARGETS, placement="cost-model",
                         placement_cache=cache, num_threads=1)
    assert layout(exe) == layout(byoc.build(module, targets=TARGETS))
    assert all(p.reason == "priority" for p in exe.partitions)


def test_priority_placement_is_unchanged() -> None:
    module = byoc.parse_module(MODEL)
    default = byoc.build(module, targets=TARGETS)
    explicit = byoc.build(module, targets=TARGETS, placement="priority")
    assert layout(explicit) == layout(default)
    assert all(p.reason == "priority" and p.measured == () for p in explicit.partitions)


def test_unknown_placement_is_an_error() -> None:
    module = byoc.parse_module(MODEL)
    with pytest.raises(PlacementError, match="choose one of: priority, measure, cost-model"):
        byoc.build(module, targets=TARGETS, placement="fastest")


def test_sample_inputs_by_name_feed_the_measurements(cache: Path) -> None:
    module = byoc.parse_module(MODEL)
    x, w = inputs()
    with ThreadPoolExecutor(1) as pool:
        exe = byoc.build(module, targets=TARGETS, placement="measure", placement_cache=cache,
                         measure_executor=pool, sample_inputs={"x": x, "w": w}, num_threads=1)
    (got,) = exe.run(x, w)
    (want,) = run_reference(module, x, w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dask_local_cluster_runs_the_measurements(cache: Path) -> None:
    distributed = pytest.importorskip("distributed")
    module = byoc.parse_module(MODEL)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        exe = byoc.build(module, targets=TARGETS, placement="measure", placement_cache=cache,
                         measure_executor=client.get_executor(), num_threads=1)
    (got,) = exe.run(*inputs())
    (want,) = run_reference(module, *inputs())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert all(p.reason == "measured" for p in exe.partitions)


@pytest.mark.slow
def test_default_pool_does_not_rerun_an_unguarded_script(tmp_path: Path) -> None:
    """A script that builds at top level (no `if __name__ == "__main__":`) runs once: the
    spawned measuring workers do not import it."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import byoc\n"
        f"module = byoc.parse_module('''{MODEL}''')\n"
        "print('top level', flush=True)\n"
        f"exe = byoc.build(module, targets={TARGETS!r}, placement='measure',\n"
        f"                 placement_cache={str(tmp_path / 'c.json')!r}, num_threads=1)\n"
        "print('reasons', sorted({p.reason for p in exe.partitions}), flush=True)\n"
    )
    root = Path(byoc.__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(root)}, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("top level") == 1
    assert "reasons ['measured']" in done.stdout


def test_a_model_without_ops_builds_on_the_host(cache: Path) -> None:
    module = byoc.parse_module(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x : tensor<4xf32>\n}"
    )
    with ThreadPoolExecutor(1) as pool:
        exe = byoc.build(module, targets=TARGETS, placement="measure", placement_cache=cache,
                         measure_executor=pool, num_threads=1)
    x = np.arange(4, dtype=np.float32)
    (got,) = exe.run(x)
    np.testing.assert_array_equal(got, x)
    assert exe.partitions == []


def test_a_target_that_cannot_run_here_is_left_out_before_measuring(cache: Path) -> None:
    """Fallback and measured placement together: the unavailable target is never measured
    (it would raise if built), the others are placed by measurement."""
    import warnings

    from support.scratch_targets import registered, unavailable_target

    from byoc.driver import TargetFallbackWarning

    module = byoc.parse_module(MODEL)
    absent = unavailable_target("scratch_absent", ["nn.relu", "nn.tanh"], "no such device")
    with registered(absent), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe = byoc.build(
            module, targets=["scratch_absent", *TARGETS], placement="measure",
            placement_cache=cache, measure_executor=ThreadPoolExecutor(1), num_threads=1,
        )
    messages = [str(w.message) for w in caught if w.category is TargetFallbackWarning]
    assert len(messages) == 1 and "scratch_absent" in messages[0] and "no such device" in messages[0]
    assert [f.target for f in exe.fallbacks] == ["scratch_absent"]
    assert exe.partitions
    for p in exe.partitions:  # ops the absent target would have run say so; all were timed
        assert p.reason in ("measured", "fallback") and p.target in dict(p.measured)
        assert (p.reason == "fallback") == (p.fallback is not None)
    assert {p.target for p in exe.partitions} <= set(TARGETS)
    (got,) = exe.run(*inputs())
    (want,) = run_reference(module, *inputs())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("times", "want"),
    [
        # a clear winner wins, whatever its kind
        ({"measured": 1.0, "a": 2.0, "b": 2.0, "a,b": 2.0, "b,a": 2.0}, "measured"),
        ({"measured": 2.0, "a": 2.0, "b": 1.0, "a,b": 2.0, "b,a": 2.0}, "b"),
        ({"measured": 2.0, "a": 2.0, "b": 2.0, "a,b": 2.0, "b,a": 1.0}, "b,a"),
        # within the margin: a single target before a priority order before the search's
        ({"measured": 1.0, "a": 1.015, "b": 2.0, "a,b": 1.01, "b,a": 2.0}, "a"),
        ({"measured": 1.0, "a": 1.5, "b": 2.0, "a,b": 2.0, "b,a": 1.01}, "b,a"),
        ({"measured": 1.0, "a": 1.5, "b": 1.5, "a,b": 1.01, "b,a": 1.01}, "a,b"),
        # just outside it, the faster one stands
        ({"measured": 1.0, "a": 1.03, "b": 2.0, "a,b": 2.0, "b,a": 2.0}, "measured"),
        # a configuration that did not build is not there to choose
        ({"measured": 1.0, "b": 1.01}, "b"),
    ],
)
def test_choose_takes_the_simplest_configuration_within_the_noise(
    times: dict[str, float], want: str
) -> None:
    assert choose(times, ["a", "b"]) == want


class _Clock:
    """A stand-in for `time` in byoc.placement.measure: runs advance it, nothing else does."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class _TimedExecutable:
    """A built configuration whose run takes a fixed time on the clock."""

    def __init__(self, clock: _Clock, seconds: float, calls: list[str], name: str) -> None:
        self.clock, self.seconds, self.calls, self.name = clock, seconds, calls, name

    def run(self, *inputs: Any) -> None:
        self.calls.append(self.name)
        self.clock.now += self.seconds


def test_end_to_end_job_interleaves_the_configurations_and_prunes_the_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from byoc.placement import measure

    clock = _Clock()
    monkeypatch.setattr(measure, "time", clock)
    calls: list[str] = []
    seconds = {"fast": 0.001, "close": 0.0011, "slow": 0.004}

    def build(module: Any, targets: list[str] | None = None, num_threads: int = 1) -> Any:
        (name,) = targets or ["?"]
        return _TimedExecutable(clock, seconds[name], calls, name)

    empty = "func.func @main(%x: tensor<1xf32>) -> tensor<1xf32> {\n  func.return %x : tensor<1xf32>\n}"
    job = ModelJob(
        tuple((name, empty, (name,)) for name in seconds), 1, (np.zeros(1, np.float32),),
        repeats=2, rounds=6, build=build, turn_seconds=0.005, prune_after=2, prune_ratio=1.5,
    )  # fmt: skip
    result = run_job(job)
    assert set(result) == set(seconds)
    assert result == pytest.approx(seconds)
    # the warm-up run of each at build, then rounds 1 and 2 in turns, the order reversed
    # (runs of one name in a row are merged here: round 1 ends and round 2 starts with slow)
    order = [name for k, name in enumerate(calls) if k == 0 or calls[k - 1] != name]
    assert order[:8] == ["fast", "close", "slow", "fast", "close", "slow", "close", "fast"]
    # a turn: one untimed run, then runs until `repeats` (2) and `turn_seconds` are done;
    # "slow" is 4x the fastest after two rounds (warm-up + 2 turns of 3 runs): pruned
    assert calls.count("slow") == 1 + 2 * 3
    assert calls.count("fast") == 1 + 6 * (1 + 5) and calls.count("close") == 1 + 6 * (1 + 5)
