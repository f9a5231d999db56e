"""Shares that idle threads steal from (BYOC_STEAL_) against fixed shares, in one process.

    python benchmarks/steal.py squeezenet,inception_v2 [--runs 20] [--noise BUSY_MS,IDLE_MS[,CPU]]

Builds each model (an ONNX light model with seeded random weights, as benchmarks/threads.py
does) with `targets=["ccompiler"]` twice: as shipped (the kernels' shares with stealing) and
with `BYOC_CFLAGS=-DBYOC_STEAL=0` (fixed shares, nothing stolen), each at 1 and
2 threads. Checks that the four give the same bits, then runs them in turn, run by run,
`--runs` times, so every build sees the same moments of a shared machine. Prints, per build,
the best and median time at each count and the speedups from 1 to 2 threads: of the best
runs, of the medians, and the median of the run-by-run ratios.

`--noise 2,8,1` starts a process that spins 2 ms and sleeps 8 ms, pinned to CPU 1 (no CPU:
not pinned), for the timed runs: another job taking part of one core now and then, as on a
shared machine. Without it, the difference is what stealing costs when nothing disturbs.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import byoc  # noqa: E402
from byoc.runtime import toolchain  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the ONNX test harness

BUILDS = (("steal", ""), ("fixed", "-DBYOC_STEAL=0"))


def load_model(name: str) -> Any:
    import onnx
    from onnx_harness import light_models, randomize_weights

    return byoc.import_onnx(randomize_weights(onnx.load(light_models()[name]), seed=0))


def spin(busy_ms: float, idle_ms: float, cpu: int | None) -> None:
    """The noise: spin `busy_ms`, sleep `idle_ms`, forever (pinned to `cpu` if given)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    while True:
        end = time.perf_counter() + busy_ms / 1e3
        while time.perf_counter() < end:
            pass
        time.sleep(idle_ms / 1e3)


def measure(name: str, runs: int, noise: tuple[float, float, int | None] | None) -> None:
    module = load_model(name)
    exes = {}
    saved = os.environ.get(toolchain.CFLAGS_ENV)
    try:
        for label, flags in BUILDS:
            os.environ[toolchain.CFLAGS_ENV] = flags
            for n in (1, 2):
                exes[(label, n)] = byoc.build(module, targets=["ccompiler"], num_threads=n)
    finally:
        if saved is None:
            os.environ.pop(toolchain.CFLAGS_ENV, None)
        else:
            os.environ[toolchain.CFLAGS_ENV] = saved
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    want = [np.asarray(o) for o in exes[("fixed", 1)].run(x)]
    for key, exe in exes.items():
        got = [np.asarray(o) for o in exe.run(x)]
        if not all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)):
            raise SystemExit(f"{name}: {key} differs from the fixed 1-thread build")
        exe.run(x)
    proc = None
    if noise is not None:
        proc = multiprocessing.Process(target=spin, args=noise, daemon=True)
        proc.start()
        time.sleep(0.2)
    times: dict[tuple[str, int], list[float]] = {k: [] for k in exes}
    try:
        for _ in range(runs):
            for key, exe in exes.items():
                t0 = time.perf_counter()
                exe.run(x)
                times[key].append((time.perf_counter() - t0) * 1e3)
    finally:
        if proc is not None:
            proc.terminate()
            proc.join()
    for exe in exes.values():
        exe.close()
    what = f"{name}, noise {noise[0]:g}/{noise[1]:g} ms" if noise else name
    print(f"{what} (load {os.getloadavg()[0]:.1f}):")
    for label, _ in BUILDS:
        one, two = times[(label, 1)], times[(label, 2)]
        pairs = statistics.median(a / b for a, b in zip(one, two, strict=True))
        print(
            f"  {label:5}  1t best {min(one):7.2f} med {statistics.median(one):7.2f} ms"
            f"  2t best {min(two):7.2f} med {statistics.median(two):7.2f} ms"
            f"  speedup best {min(one) / min(two):.2f}x med {statistics.median(one) / statistics.median(two):.2f}x"
            f" run-by-run {pairs:.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", help="comma-separated light-model names")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--noise", default=None, help="BUSY_MS,IDLE_MS[,CPU]: a spinning process during the runs")
    args = ap.parse_args()
    noise = None
    if args.noise:
        parts = args.noise.split(",")
        noise = (float(parts[0]), float(parts[1]), int(parts[2]) if len(parts) > 2 else None)
    for name in args.models.split(","):
        measure(name, args.runs, noise)


if __name__ == "__main__":
    main()
