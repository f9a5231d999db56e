"""The dnnl target on a busy machine: 1 and 2 threads, with and without spinning processes.

    python benchmarks/dnnl_load.py                          # the corpus models below, load 0 and 5
    python benchmarks/dnnl_load.py --models ocr_cls,khmer_seg --load 0,6 --rounds 3
    python benchmarks/dnnl_load.py --baseline /path/to/other/checkout    # its byoc alongside

Per model (benchmarks/corpus.py names, or light_<name>), engine (`dnnl,ccompiler`,
`ccompiler`, ... as target lists, and `onnxruntime`), thread count and load: the median
call of a process of its own that builds once and times calls for `--budget` seconds
(benchmarks/placement.py's worker, which sets OMP_NUM_THREADS to the thread count and
OPENBLAS_NUM_THREADS=1). The load is `N` processes spinning (`while True: pass`) started
before the timed processes and killed after them; each round runs every configuration once,
in an order that alternates from round to round, and a figure is the median over the rounds.
`--baseline PATH` also runs each engine that uses dnnl with the byoc of the checkout at
PATH (`before`), so the two are timed in the same minutes.

Printed per model and engine: the time at each thread count and load, the 2-thread time
over the 1-thread time at each load, and with a baseline this checkout's time over the
baseline's. The load average of the machine (other users included) is printed per load.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
ORT = "onnxruntime"
DEFAULT_MODELS = "silero_vad,g2p_decoder,attacut,ocr_cls,khmer_seg"


def spinners(n: int) -> list[subprocess.Popen[bytes]]:
    """`n` processes that spin until killed: the load."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def spawn(engine: str, name: str, threads: int, budget: float, tree: str | None) -> dict[str, Any]:
    """One timed process (benchmarks/placement.py's worker); `tree`: the checkout whose byoc
    it imports (None: this one)."""
    import placement

    args = argparse.Namespace(targets=engine if engine != ORT else "ccompiler", budget=budget)
    saved = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = tree
    try:
        with tempfile.TemporaryDirectory() as scratch:
            return placement.spawn(engine, name, threads, args, str(Path(scratch) / "p.json"))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=DEFAULT_MODELS)
    p.add_argument("--engines", default=f"dnnl,ccompiler;ccompiler;{ORT}", help="';'-separated")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--load", default="0,5", help="spinning processes, per load level")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per process")
    p.add_argument("--baseline", default=None, help="another checkout whose byoc runs alongside")
    args = p.parse_args(argv)
    models = args.models.split(",")
    engines = args.engines.split(";")
    threads = [int(t) for t in args.threads.split(",")]
    trees: list[tuple[str, str | None]] = [("this", None)]
    if args.baseline:
        trees.append(("before", str(Path(args.baseline).resolve())))
    configs = [
        (m, e, t, label, tree)
        for m, e, t, (label, tree) in itertools.product(models, engines, threads, trees)
        if tree is None or "dnnl" in e.split(",")
    ]
    times: dict[tuple[str, str, int, str, int], list[float]] = {}
    for load in (int(n) for n in args.load.split(",")):
        procs = spinners(load)
        try:
            for r in range(args.rounds):
                for m, e, t, label, tree in configs if r % 2 == 0 else configs[::-1]:
                    res = spawn(e, m, t, args.budget, tree)
                    if "error" in res:
                        print(f"{m} {e} {t} {label} load {load}: {res['error']}", flush=True)
                        continue
                    times.setdefault((m, e, t, label, load), []).append(res["seconds"])
            avg = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        finally:
            stop(procs)
        print(f"load {load} spinning processes: load average {avg}", flush=True)
    loads = [int(n) for n in args.load.split(",")]
    print(f"rounds {args.rounds}, budget {args.budget}s a process; median call, ms")
    for m in models:
        for e, (label, _) in itertools.product(engines, trees):
            if label != "this" and "dnnl" not in e.split(","):
                continue
            cells, key = [], (m, e, label)

            def med(t: int, load: int, key: tuple[str, str, str] = key) -> float | None:
                v = times.get((key[0], key[1], t, key[2], load))
                return statistics.median(v) if v else None

            for load in loads:
                for t in threads:
                    v = med(t, load)
                    cells.append(f"{t}t/L{load} {v * 1e3:8.2f}" if v else f"{t}t/L{load}     -   ")
                one, two = med(1, load), med(2, load)
                if one and two and 1 in threads and 2 in threads:
                    cells.append(f"(2t/1t {two / one:5.2f})")
            if label == "this" and args.baseline and "dnnl" in e.split(","):
                for load in loads:
                    for t in threads:
                        now = med(t, load)
                        v = times.get((m, e, t, "before", load))
                        if now and v:
                            cells.append(
                                f"{t}t/L{load} this/before {now / statistics.median(v):.3g}"
                            )
            print(f"{m:<12} {e:<16} {label:<6} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
