"""Measured placement against each single target, each priority order and onnxruntime.

    python benchmarks/placement.py                                  # light models + corpus
    python benchmarks/placement.py --models squeezenet,ocr_cls --threads 1 --rounds 2
    python benchmarks/placement.py --light-only --targets dnnl,ccompiler

Per model (the ONNX light models, with seeded random weights, and the real-model corpus of
benchmarks/corpus.py) and per thread count:

- search: `place(..., placement="measure")` in a process of its own with an empty
  measurement cache and an empty library cache (`BYOC_CACHE_DIR`; the kernel library,
  compiled once per machine, is read from the usual cache through `BYOC_KERNEL_CACHE_DIR`):
  cold, every region timed and every measurement module compiled. Then again in another
  process with that measurement cache (cached). The figure is `Placement.search_seconds`
  (the choice, measurements and the end-to-end check included; compiling the chosen
  partitions is not in it), with the number of timing jobs each ran.
- latency: the engines `measured` (the placement found above, read from the cache), each
  target alone, each priority order of the targets, and onnxruntime (CPU provider,
  intra_op_num_threads = N, sequential). Each engine runs in a process of its own, one per
  engine per round, the order alternating from round to round; a process builds, then
  times calls until a budget is spent; the figure of a round is its median call and the
  engine's the median over the rounds.

Printed per model: each engine's median and its ratio to `measured` (above 1: slower than
measured placement), the cold search's own end-to-end check (one process, interleaved; the
ratios to the configuration it applied), measured / best simple configuration (goal <= 1.03),
applied / best simple configuration (when the placement applied a simple configuration, the
figure of that configuration's own engine: the same program, timed in other processes; else
the measured engine's), measured / onnxruntime; per thread count, the geometric mean of `dnnl,ccompiler` / measured over the
corpus (goal >= 1.10). Figures land in benchmarks/results/placement.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

MEASURED = "measured"
ORT = "onnxruntime"


# ---- the worker: one engine, one model, one thread count -------------------------------


def load_module(name: str) -> tuple[Any, dict[str, Any], Path]:
    """The byoc module, its named inputs, and the .onnx file (for onnxruntime)."""
    import numpy as np

    import byoc

    if name.startswith("light_"):
        import onnx
        from support.onnx_harness import light_models, randomize_weights

        model = randomize_weights(onnx.load(light_models()[name[len("light_") :]]), seed=0)
        path = Path(tempfile.gettempdir()) / f"byoc-placement-{name}.onnx"
        if not path.exists():
            onnx.save(model, str(path))
        module = byoc.import_onnx(str(path))
        rng = np.random.default_rng(1)
        feeds = {
            i.name: rng.standard_normal(
                [d.dim_value for d in i.type.tensor_type.shape.dim]
            ).astype(np.float32)
            for i in model.graph.input
            if i.name not in {t.name for t in model.graph.initializer}
        }
        return module, feeds, path
    import corpus

    path, feeds = corpus.load(name)
    module = byoc.import_onnx(
        str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name)
    )
    return module, feeds, path


def time_calls(call: Any, budget: float, min_calls: int = 5) -> float:
    call()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_calls or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(args: argparse.Namespace) -> dict[str, Any]:
    threads = int(args.threads)
    targets = args.targets.split(",")
    name, engine = args.models, args.worker
    if engine == ORT:
        import corpus
        import onnxruntime as ort

        _, feeds, path = load_module(name) if name.startswith("light_") else (None, None, None)
        if not name.startswith("light_"):
            path, feeds = corpus.model_path(name), corpus.onnxruntime_feeds(name)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return {"seconds": time_calls(lambda: session.run(None, feeds), args.budget)}
    import byoc
    from byoc.driver import prepare_for
    from byoc.placement import place

    module, feeds, _ = load_module(name)
    if engine == "search":
        prepare_for(module, targets)
        chosen = place(module, targets, cache=args.cache, num_threads=threads)
        return {
            "search_s": chosen.search_seconds,
            "measurements": chosen.measurements,
            "configuration": chosen.configuration,
            "end_to_end": chosen.end_to_end,
            "units": len(chosen.units),
        }
    if engine == MEASURED:
        exe = byoc.build(
            module, targets=targets, placement="measure", placement_cache=args.cache,
            num_threads=threads,
        )  # fmt: skip
    else:
        exe = byoc.build(module, targets=engine.split(","), num_threads=threads)
    return {"seconds": time_calls(lambda: exe.run(**feeds), args.budget)}


# ---- the driver ---------------------------------------------------------------------------


def spawn(
    engine: str, name: str, threads: int, args: argparse.Namespace, cache: str,
    library_cache: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    command = [
        sys.executable, str(Path(__file__).resolve()), "--worker", engine, "--models", name,
        "--threads", str(threads), "--targets", args.targets, "--budget", str(args.budget),
        "--cache", cache,
    ]  # fmt: skip
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": str(threads)}
    if library_cache is not None:
        from byoc.runtime.toolchain import KERNEL_CACHE_ENV, cache_dir, kernel_cache_dir

        env[KERNEL_CACHE_ENV] = str(kernel_cache_dir(cache_dir()))
        env["BYOC_CACHE_DIR"] = library_cache
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT ") :]))
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": tail}


def simple_configurations(targets: list[str]) -> list[str]:
    singles = list(targets)
    orders = [",".join(p) for p in itertools.permutations(targets)] if len(targets) > 1 else []
    return singles + orders


def measure(name: str, threads: int, args: argparse.Namespace, cache: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as library_cache:
        cold = spawn("search", name, threads, args, cache, library_cache)
    if "error" in cold:
        return {"error": f"search: {cold['error']}"}
    cached = spawn("search", name, threads, args, cache)
    engines = [MEASURED, *simple_configurations(args.targets.split(",")), ORT]
    rounds: dict[str, list[float]] = {e: [] for e in engines}
    for r in range(args.rounds):
        for engine in engines if r % 2 == 0 else engines[::-1]:
            res = spawn(engine, name, threads, args, cache)
            if "error" in res:
                if engine == ORT:
                    continue
                return {"error": f"{engine}: {res['error']}"}
            rounds[engine].append(res["seconds"])
    return {
        "search_cold_s": cold["search_s"],
        "search_cached_s": cached.get("search_s"),
        "cold_measurements": cold.get("measurements"),
        "cached_measurements": cached.get("measurements"),
        "units": cold["units"],
        "configuration": cold["configuration"],
        "check": cold.get("end_to_end", {}),
        "seconds": {e: statistics.median(v) for e, v in rounds.items() if v},
    }


def report(name: str, threads: int, entry: dict[str, Any], targets: list[str]) -> float | None:
    """Print one model's line; return dnnl,ccompiler / measured (None when not run)."""
    if "error" in entry:
        print(f"{name:<22} {threads}  error: {entry['error']}")
        return None
    secs = entry["seconds"]
    m = secs[MEASURED]
    simple = [secs[c] for c in simple_configurations(targets) if c in secs]
    best = min(simple) if simple else float("nan")
    cells = "  ".join(f"{e}={secs[e] * 1e3:.2f}ms ({secs[e] / m:.2f})" for e in secs if e != MEASURED)
    ort = f"{m / secs[ORT]:.2f}" if ORT in secs else "-"
    # the configuration the placement applied: a simple one is the same program as that
    # engine's, whose processes time it too (the two figures differ by process noise only)
    applied = secs.get(entry["configuration"], m)
    print(
        f"{name:<22} {threads}  units {entry['units']:>4}  measured={m * 1e3:.2f}ms "
        f"[{entry['configuration']}]  measured/best-simple {m / best:.3f}  "
        f"applied/best-simple {applied / best:.3f}  measured/ort {ort}  "
        f"search cold {entry['search_cold_s']:.1f}s ({entry['cold_measurements']} timing jobs) "
        f"cached {entry['search_cached_s']:.2f}s ({entry['cached_measurements']} timing jobs)"
    )
    print(f"{'':<25}{cells}")
    check = entry.get("check") or {}
    if check:  # the search's own end-to-end check: one process, interleaved
        chosen = check.get(entry["configuration"]) or min(check.values())
        cells = "  ".join(f"{e}={t * 1e3:.2f}ms ({t / chosen:.2f})" for e, t in check.items())
        print(f"{'':<25}check: {cells}")
    key = ",".join(targets)
    return secs[key] / m if key in secs else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="", help="comma-separated names (light_<name> or corpus names)")
    p.add_argument("--light-only", action="store_true", help="only the ONNX light models")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--targets", default="dnnl,ccompiler")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timed calls per process")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(worker(args)), flush=True)
        return 0
    if args.models:
        names = args.models.split(",")
    else:
        from support.onnx_harness import light_models

        names = [f"light_{n}" for n in light_models()]
        if not args.light_only:
            import corpus

            names += list(corpus.CORPUS)
    targets = args.targets.split(",")
    print(f"targets {args.targets}; rounds {args.rounds}; budget {args.budget}s per process")
    ratios: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            for threads in (int(t) for t in args.threads.split(",")):
                cache = str(Path(scratch) / f"{name}-{threads}.json")
                entry = measure(name, threads, args, cache)
                r = report(name, threads, entry, targets)
                if r is not None and not name.startswith("light_"):
                    ratios.setdefault(threads, []).append(r)
                sys.stdout.flush()
    for threads, rs in sorted(ratios.items()):
        gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"corpus, {threads} thread(s): geometric mean {args.targets} / measured = {gm:.3f} over {len(rs)} models")
    return 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        raise SystemExit(main())
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
