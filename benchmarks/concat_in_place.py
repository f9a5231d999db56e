"""Concatenation in place: squeezenet f32 on ccompiler with lower-to-c's
`place_concat_inputs` (the producers write into the concatenation's slices) against the
copying lowering (each concatenation copies its inputs), both built in this process and run
interleaved, round by round.

    OPENBLAS_NUM_THREADS=1 python benchmarks/concat_in_place.py [--model squeezenet] [--rounds 7] [--threads 1,2]

Per thread count: the best inference of each build (wall time; at 1 thread also the calling
thread's CPU time), their ratio, and, from the kernel profiling hook, the sum over kernels of
each kernel's best call, the copying build's concatenations and each build's max pools (the
copying build's kernels are named apart; `VERBOSE=1` prints each pool, `REVERSE=1` runs the
in-place build first in each round). On a shared machine read the ratios."""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import byoc  # noqa: E402
from byoc.lowering.nn_to_c import emission, lower_to_c  # noqa: E402
from byoc.runtime import kernel_profile  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_profile import load_model  # noqa: E402


def build(module: Any, in_place: bool, threads: int) -> Any:
    real, real_base = emission.place_concat_inputs, lower_to_c.c_helper_base
    if not in_place:  # the copying lowering; its kernels named apart (the hook's rows are by name)
        emission.place_concat_inputs = lambda steps, storage: steps  # type: ignore[assignment]
        lower_to_c.c_helper_base = lambda sym, names: real_base(sym, names) + "_copying"  # type: ignore[assignment]
    try:
        return byoc.build(module, targets=["ccompiler"], num_threads=threads)
    finally:
        emission.place_concat_inputs, lower_to_c.c_helper_base = real, real_base  # type: ignore[assignment]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="squeezenet")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--runs", type=int, default=10, help="inferences per round and build")
    p.add_argument("--threads", default="1,2")
    args = p.parse_args()
    module = load_model(args.model)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)  # as kernel_profile.py
    print(f"{args.model}: load average at start {os.getloadavg()[0]:.2f}")
    kernel_profile.enable()
    for threads in [int(t) for t in args.threads.split(",")]:
        exes = {"copying": build(module, False, threads), "in place": build(module, True, threads)}
        if os.environ.get("REVERSE"):
            exes = dict(reversed(list(exes.items())))
        outs = {k: e.run(x) for k, e in exes.items()}
        same = all(np.array_equal(a, b) for a, b in zip(outs["copying"], outs["in place"], strict=True))
        wall: dict[str, float] = {k: 1e9 for k in exes}
        cpu: dict[str, float] = {k: 1e9 for k in exes}
        best: dict[str, dict[str, tuple[str, float]]] = {k: {} for k in exes}
        for _ in range(args.rounds):
            for name, exe in exes.items():
                kernel_profile.reset()
                for _ in range(args.runs):
                    t0, c0 = time.perf_counter(), time.thread_time()
                    exe.run(x)
                    wall[name] = min(wall[name], time.perf_counter() - t0)
                    cpu[name] = min(cpu[name], time.thread_time() - c0)
                for row in kernel_profile.rows():
                    if row.calls and not row.what.startswith("partition "):
                        ms = row.best * 1e3 * row.calls / args.runs
                        old = best[name].get(row.site, (row.what, 1e9))[1]
                        best[name][row.site] = (row.what, min(old, ms))
        for e in exes.values():
            e.close()
        concat_ms = sum(ms for w, ms in best["copying"].values() if "nn.concatenate" in w)
        pools = {k: sum(ms for w, ms in v.values() if "max_pool2d" in w) for k, v in best.items()}
        kernels = {k: sum(ms for _, ms in v.values()) for k, v in best.items()}
        print(f"\n{threads} thread(s), load {os.getloadavg()[0]:.2f}; outputs equal: {same}")
        print(f"  inference, best wall   copying {wall['copying'] * 1e3:7.3f} ms   in place {wall['in place'] * 1e3:7.3f} ms"
              f"   in place / copying {wall['in place'] / wall['copying']:.3f}")
        if threads == 1:
            print(f"  inference, best CPU    copying {cpu['copying'] * 1e3:7.3f} ms   in place {cpu['in place'] * 1e3:7.3f} ms"
                  f"   in place / copying {cpu['in place'] / cpu['copying']:.3f}")
        print(f"  kernels, sum of bests  copying {kernels['copying']:7.3f} ms   in place {kernels['in place']:7.3f} ms"
              f"   (the copying build's concatenations: {concat_ms:.3f} ms)")
        print(f"  max pools, sum of bests copying {pools['copying']:7.3f} ms   in place {pools['in place']:7.3f} ms")
        if os.environ.get("VERBOSE"):
            for k, v in best.items():
                for site, (w, ms) in sorted(v.items()):
                    if "max_pool2d" in w:
                        print(f"    {k}: {ms:.3f} ms {site} {w}")


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
