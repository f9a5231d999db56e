"""Per-kernel profile of a model at 1 and 2 threads: what does not scale.

    python benchmarks/kernel_profile.py densenet121 [--threads 1,2] [--rounds 5] [--runs 10] [--top 25]

Builds the model (an ONNX light model with seeded random weights, as benchmarks/threads.py
does) with `targets=["ccompiler"]` once per thread count, with the kernel profiling hook
(`byoc.runtime.kernel_profile`: every kernel call of the generated partitions is timed).
The thread counts take turns, round by round; each round runs the model `--runs` times per
count. The figure per kernel is its fastest call (`--stat best`, the default: on a shared
machine the least disturbed call, so what the decomposition itself costs) or the median
over rounds of its mean time per inference (`--stat median`: with wake-ups and waits
for a core included).

Prints, per kernel (call site; ops, output shape, the kernel function and its sizes), the
time at each count, the speedup from the first to the second count and the time lost
against a perfect speedup (t2 - t1 * n1 / n2), sorted by time lost; then the totals: the
inference (wall time of `Executable.run`), the partitions' C time, the kernels' sum, and
the time spent outside C kernels (host steps, Python, argument passing). Load averages
are printed with the figures: on a shared machine the ratios are what to read.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import byoc  # noqa: E402
from byoc.runtime import kernel_profile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the ONNX test harness


def load_model(name: str) -> Any:
    import onnx
    from support.onnx_harness import light_models, randomize_weights

    return byoc.import_onnx(randomize_weights(onnx.load(light_models()[name]), seed=0))


def profile(
    module: Any, x: np.ndarray, counts: list[int], rounds: int, runs: int, stat: str
) -> dict[int, dict[str, Any]]:
    """Per count: {"sites": {site: (what, ms per inference)}, "run": ms, "partition": ms,
    "kernels": ms}. `stat` "best": each kernel's fastest call (times its calls per
    inference) and the fastest inference; "median": the median over rounds of the means."""
    kernel_profile.enable()
    exes = {n: byoc.build(module, targets=["ccompiler"], num_threads=n) for n in counts}
    for exe in exes.values():  # warm: workspaces, pages, the OpenMP team
        for _ in range(3):
            exe.run(x)
    mean: dict[int, dict[str, list[float]]] = {n: {} for n in counts}
    best: dict[int, dict[str, float]] = {n: {} for n in counts}
    what: dict[str, str] = {}
    run_ms: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(rounds):
        for n in counts:
            kernel_profile.reset()
            for _ in range(runs):
                t0 = time.perf_counter()
                exes[n].run(x)
                run_ms[n].append((time.perf_counter() - t0) * 1e3)
            for row in kernel_profile.rows():
                if row.calls:
                    what[row.site] = row.what
                    mean[n].setdefault(row.site, []).append(row.seconds * 1e3 / runs)
                    per_run = row.calls / runs
                    b = row.best * 1e3 * per_run
                    best[n][row.site] = min(best[n].get(row.site, b), b)
    out: dict[int, dict[str, Any]] = {}
    for n in counts:
        if stat == "best":
            sites = {s: (what[s], v) for s, v in best[n].items()}
            run = min(run_ms[n])
        else:
            sites = {s: (what[s], statistics.median(v)) for s, v in mean[n].items()}
            run = statistics.median(run_ms[n])
        out[n] = {
            "sites": sites,
            "run": run,
            "partition": sum(ms for w, ms in sites.values() if w.startswith("partition ")),
            "kernels": sum(ms for w, ms in sites.values() if not w.startswith("partition ")),
        }
    for exe in exes.values():
        exe.close()
    return out


def report(name: str, prof: dict[int, dict[str, Any]], counts: list[int], top: int, stat: str) -> None:
    n1, n2 = counts[0], counts[-1]
    a, b = prof[n1], prof[n2]
    ideal = n1 / n2
    rows = []
    for site, (what, t1) in a["sites"].items():
        if what.startswith("partition "):
            continue
        t2 = b["sites"].get(site, (what, float("nan")))[1]
        rows.append((t2 - t1 * ideal, site, what, t1, t2))
    rows.sort(reverse=True)
    print(
        f"\n{name}: per kernel, {n1} -> {n2} threads ({stat}; ms per inference; lost = t{n2} - t{n1} * {n1}/{n2}), "
        f"load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'t' + str(n1):>8} {'t' + str(n2):>8} {'speedup':>8} {'lost':>7} {'share':>6}  kernel")
    lost_total = sum(r[0] for r in rows)
    for lost, site, what, t1, t2 in rows[:top]:
        k = site.rsplit("_", 1)[-1]
        share = lost / lost_total if lost_total > 0 else 0.0
        print(f"{t1:8.3f} {t2:8.3f} {t1 / t2 if t2 else 0:7.2f}x {lost:7.3f} {share:6.1%}  #{k} {what}")
    if len(rows) > top:
        rest = rows[top:]
        print(
            f"{sum(r[3] for r in rest):8.3f} {sum(r[4] for r in rest):8.3f} {'':8} "
            f"{sum(r[0] for r in rest):7.3f}         ({len(rest)} more kernels)"
        )
    print(f"totals ({n1} -> {n2} threads):")
    for label, key in (("inference (Executable.run)", "run"), ("partitions (C)", "partition"), ("kernels (sum)", "kernels")):
        t1, t2 = a[key], b[key]
        print(f"  {label:28} {t1:8.3f} -> {t2:8.3f} ms  {t1 / t2 if t2 else 0:5.2f}x  lost {t2 - t1 * ideal:7.3f}")
    o1, o2 = a["run"] - a["kernels"], b["run"] - b["kernels"]
    print(f"  {'outside C kernels':28} {o1:8.3f} -> {o2:8.3f} ms  (inference - kernels)")
    print(f"  kernels' time lost: {lost_total:.3f} ms")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "models", help="comma-separated light model names (tests/support/onnx_harness.py)"
    )
    p.add_argument("--threads", default="1,2", help="two thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=10, help="inferences per round and count")
    p.add_argument("--top", type=int, default=25, help="kernels to print (by time lost)")
    p.add_argument(
        "--stat", choices=("best", "median"), default="best",
        help="best: each kernel's fastest call (robust on a shared machine); median: of the rounds' means",
    )
    args = p.parse_args(argv)
    counts = [int(c) for c in args.threads.split(",")]
    if len(counts) != 2:
        p.error("--threads: two counts, e.g. 1,2")
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    for name in args.models.split(","):
        print(f"{name}: load before {os.getloadavg()}")
        prof = profile(load_model(name), x, counts, args.rounds, args.runs, args.stat)
        report(name, prof, counts, args.top, args.stat)
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
