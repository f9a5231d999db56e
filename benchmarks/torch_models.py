"""byoc against eager PyTorch, onnxruntime and torch.compile's default backend (inductor) on
the PyTorch model zoo of the tests, at 1 and 2 threads.

    python benchmarks/torch_models.py                             # the zoo and the bigger variants
    python benchmarks/torch_models.py --quick                     # 4 models, 2 alternations
    python benchmarks/torch_models.py --large --alternations 1    # the bigger variants only
    python benchmarks/torch_models.py --models resnet,gpt --runs 30 --targets dnnl,ccompiler

Engines: `byoc` (`byoc.from_torch` + `byoc.build` for `--targets`, default ccompiler),
`eager` (the module under `torch.no_grad()`), `ort` (onnxruntime on `torch.onnx.export(...,
dynamo=False)`), `inductor` (`torch.compile` with its default backend). Each engine runs in
a process of its own (their thread pools would otherwise share the two cores), the engines
taking turns, `--alternations` times; in a process every thread count is timed round by
round, so its 1- and 2-thread figures come from the same minutes (inductor, whose compiled
code is specialised to the thread count, takes one count after the other). A figure is the median
of `--runs` timed calls after warm-up (`--stat best`: the fastest); each kept figure is the
best over the processes.
Prints milliseconds, byoc's ratio to each engine (below 1: byoc is faster) and the
geometric means against the goals (byoc no slower than eager, within 1.2x of inductor);
writes the latest results with the command, the machine and the date to
`benchmarks/results/torch_models.json`, and the printed figures to
`benchmarks/results/torch_models.md` (`_results.py`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ZOO_DIR = HERE.parent / "tests" / "frontend"
RESULTS = HERE / "results" / "torch_models.json"
ENGINES = ("byoc", "eager", "ort", "inductor")
QUICK = ("resnet", "mobilenet_v3", "vit", "bert")
LARGE = ("resnet_wide", "mobilenet_v3_large_input", "vit_deep", "gpt_deep")
"""The bigger variants of the zoo (the zoo's own models are test-sized: microseconds). A
default run times both: realistic sizes are what a user sees; `--large` times these alone."""


def _zoo(large: bool = True) -> dict[str, Any]:
    """The test zoo's factories by name (with `large`, its slow variants too)."""
    sys.path.insert(0, str(ZOO_DIR))
    from torch_zoo import SLOW_ZOO, ZOO

    return {**ZOO, **SLOW_ZOO} if large else dict(ZOO)


def _prepare(engine: str, model: Any, args: tuple[Any, ...], threads: int, targets: list[str]) -> Any:
    """A zero-argument callable running the model once on `engine` at `threads` threads."""
    import torch

    if engine == "byoc":
        import byoc

        exe = byoc.build(byoc.from_torch(model, args), targets=targets, num_threads=threads)
        inputs = [a.numpy() for a in args]
        return lambda: exe.run(*inputs)
    if engine == "eager":

        def eager() -> Any:
            torch.set_num_threads(threads)
            with torch.no_grad():
                return model(*args)

        return eager
    if engine == "inductor":
        compiled = torch.compile(model)

        def induced() -> Any:
            torch.set_num_threads(threads)
            with torch.no_grad():
                return compiled(*args)

        return induced
    if engine == "ort":
        import onnxruntime as ort

        path = Path(tempfile.mkdtemp()) / "model.onnx"
        names = [f"in{i}" for i in range(len(args))]
        torch.onnx.export(model, args, str(path), input_names=names, dynamo=False)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feeds = {n: a.numpy() for n, a in zip(names, args, strict=True)}
        return lambda: session.run(None, feeds)
    raise ValueError(engine)


def child(
    engine: str, names: list[str], counts: list[int], runs: int, targets: list[str], stat: str = "median"
) -> dict[str, dict[str, float]]:
    """Time every model on one engine; `{model: {"<threads>": ms}}`, the median or the best
    of the timed calls (`stat`)."""
    import torch

    warnings.filterwarnings("ignore")
    zoo = _zoo()
    out: dict[str, dict[str, float]] = {}
    for name in names:
        model, args = zoo[name]()
        calls = {n: _prepare(engine, model, args, n, targets) for n in counts}
        times: dict[int, list[float]] = {n: [] for n in counts}
        # inductor's compiled code is specialised to the thread count: switching counts call
        # by call recompiles, so it takes one count after the other
        blocks = [[n] for n in counts] if engine == "inductor" else [counts]
        for block in blocks:
            for n in block:  # warm-up (and inductor's compilation)
                for _ in range(3):
                    calls[n]()
            for _ in range(runs):
                for n in block:  # round by round: every count meets the same load
                    t = time.perf_counter()
                    calls[n]()
                    times[n].append((time.perf_counter() - t) * 1e3)
        pick = min if stat == "best" else statistics.median
        out[name] = {str(n): pick(v) for n, v in times.items()}
        torch._dynamo.reset()
    return out


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "load_average_start": os.getloadavg()[0],
    }


def report(results: dict[str, dict[str, dict[str, float]]], names: list[str], counts: list[int], engines: list[str]) -> list[str]:
    lines = []
    head = f"{'model':<14} {'thr':>3} " + " ".join(f"{e + ' ms':>12}" for e in engines)
    others = [e for e in engines if e != "byoc"]
    if "byoc" in engines:
        head += " " + " ".join(f"{'byoc/' + e:>14}" for e in others)
    lines += [head, "-" * len(head)]
    for name in names:
        for n in counts:
            row = {e: results.get(e, {}).get(name, {}).get(str(n)) for e in engines}
            text = f"{name:<14} {n:>3} " + " ".join(f"{v:>12.3f}" if v is not None else f"{'-':>12}" for v in row.values())
            if "byoc" in engines and row["byoc"] is not None:
                text += " " + " ".join(
                    f"{row['byoc'] / row[e]:>13.2f}x" if row[e] else f"{'-':>14}" for e in others
                )
            lines.append(text)
    if "byoc" in engines:
        lines += ["", *summary(results, names, counts, others)]
    return lines


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


GOALS = {"eager": 1.0, "inductor": 1.2}
"""The ratio byoc / engine to stay at or below (geometric mean over the models)."""


def summary(
    results: dict[str, dict[str, dict[str, float]]], names: list[str], counts: list[int], others: list[str]
) -> list[str]:
    """Geometric mean of byoc's ratio to each engine per thread count, with the goal lines."""
    lines = []
    for e in others:
        for n in counts:
            ratios = [
                results["byoc"][m][str(n)] / results[e][m][str(n)]
                for m in names
                if results.get("byoc", {}).get(m, {}).get(str(n)) and results.get(e, {}).get(m, {}).get(str(n))
            ]
            if not ratios:
                continue
            text = f"geometric mean byoc/{e} at {n} thread{'s' if n > 1 else ''}: {geomean(ratios):.2f}x over {len(ratios)} models"
            if e in GOALS:
                met = "met" if geomean(ratios) <= GOALS[e] else "not met"
                text += f" (goal <= {GOALS[e]:.1f}x: {met})"
            lines.append(text)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="", help="comma-separated zoo names (default: the zoo and LARGE)")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--alternations", type=int, default=2)
    parser.add_argument("--targets", default="ccompiler", help="byoc's targets (default ccompiler)")
    parser.add_argument(
        "--stat", choices=("median", "best"), default="median",
        help="the figure of a process: the median of its timed calls, or the fastest (on a loaded machine the least disturbed)",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help=f"--models {','.join(QUICK)} --runs 15")
    parser.add_argument("--large", action="store_true", help=f"--models {','.join(LARGE)}")
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.large:
        args.models = args.models or ",".join(LARGE)
    if args.quick:
        args.models = args.models or ",".join(QUICK)
        args.runs = 15 if args.runs == parser.get_default("runs") else args.runs
    counts = sorted({int(t) for t in args.threads.split(",") if t})
    targets = [t for t in args.targets.split(",") if t]
    names = [m for m in args.models.split(",") if m] or [*sorted(_zoo(large=False)), *LARGE]
    if args.engine:  # a child: one engine, every model
        Path(args.result).write_text(json.dumps(child(args.engine, names, counts, args.runs, targets, args.stat)))
        return 0

    engines = [e for e in args.engines.split(",") if e]
    info = machine()
    print(f"{info['cpu']}, {info['cores']} cores, load average {info['load_average_start']:.1f}")
    merged: dict[str, dict[str, dict[str, float]]] = {}
    env = dict(os.environ, OMP_NUM_THREADS=str(max(counts)), OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.alternations):
            for engine in engines:
                out = Path(tmp) / f"{engine}-{k}.json"
                cmd = [sys.executable, __file__, "--engine", engine, "--result", str(out),
                       "--models", ",".join(names), "--threads", args.threads,
                       "--runs", str(args.runs), "--targets", args.targets, "--stat", args.stat]  # fmt: skip
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
                print(f"# {engine} (round {k + 1}): {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
                for name, row in json.loads(out.read_text()).items():
                    into = merged.setdefault(engine, {}).setdefault(name, {})
                    for key, value in row.items():
                        into[key] = min(value, into.get(key, value))
    lines = report(merged, names, counts, engines)
    print("\n".join(lines))
    info["load_average_end"] = os.getloadavg()[0]
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "command": " ".join(["python", "benchmarks/torch_models.py", *(argv if argv is not None else sys.argv[1:])]),
                "machine": info,
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "targets": targets,
                "runs": args.runs,
                "stat": args.stat,
                "alternations": args.alternations,
                "milliseconds": merged,
                "table": lines,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"results: {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, lambda: main(sys.argv[1:])))
