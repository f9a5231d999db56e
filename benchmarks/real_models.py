"""byoc against onnxruntime on the real-model corpus (benchmarks/corpus.py).

    python benchmarks/real_models.py                       # every model, 1 and 2 threads
    python benchmarks/real_models.py --quick               # fewer rounds, shorter timing
    python benchmarks/real_models.py --models ocr_cls,magika --threads 1 --targets dnnl,ccompiler
    python benchmarks/real_models.py --specialise          # also the per-shape specialisation figures
    python benchmarks/real_models.py --holdout             # the hold-out set (corpus.py --unpack first)

Each engine runs in a process of its own, one process per engine per round, the engines
alternating (byoc, onnxruntime, then onnxruntime, byoc, ...), so neither inherits the
other's warm caches or thread pools. A process imports and builds (byoc: `import_onnx`
with the corpus's static input shapes, `byoc.build(targets=...)`; onnxruntime: an
InferenceSession with `intra_op_num_threads` = N, `inter_op_num_threads` = 1, sequential
execution), then times the model at each thread count: warm-up calls, then calls until
a time budget is spent; the figure of a round is the median call, the figure of the
model the median over its rounds. The compiled-library cache is a fresh directory, so
the first byoc round compiles for real (its build time is reported), later rounds load.

Per model: the medians, their ratio byoc / onnxruntime, the partitions, the host (numpy)
kernel steps of the plan with the reason each op is not offloaded (the ccompiler
predicate's `unsupported_reason`), the largest difference from onnxruntime's outputs and
whether every output is within the normwise bound of the whole graph (the bound the corpus
tests assert, tests/frontend/test_onnx_corpus.py).
Per thread count: the geometric mean of the ratios and the worst model. The figures are
kept in benchmarks/results/real_models.json and .md (the hold-out set: real_models_holdout.json
and .md) with the command, the machine and the date.
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
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

RESULTS = HERE / "results" / "real_models.json"
HOLDOUT_RESULTS = HERE / "results" / "real_models_holdout.json"
ENGINES = ("byoc", "onnxruntime")

# ---- the worker: one engine, one model, one round --------------------------------------


def _time_calls(call: Any, budget: float, min_calls: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        call()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_calls or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
        if len(times) >= 10_000:
            break
    return times


def host_steps(exe: Any, reasons: dict[str, Counter[str]]) -> list[dict[str, Any]]:
    """The plan's host kernel steps, counted by op name, with why each op stays on the host."""
    counts = Counter(step.name for step in exe.plan.steps if step.kind == "kernel")
    return [
        {"op": op, "count": n, "why": "; ".join(sorted(reasons.get(op, Counter({"made by the build": 1}))))}
        for op, n in counts.most_common()
    ]


def unsupported_reasons(module: Any) -> dict[str, Counter[str]]:
    """For each op name of the imported module: why the C codegen cannot lower it (or that
    it can, when the op stays on the host for another reason)."""
    from byoc.targets.ccompiler import unsupported_reason

    reasons: dict[str, Counter[str]] = {}
    for op in module.walk():
        if not op.name.startswith("nn."):
            continue
        why = unsupported_reason(op) or "ccompiler supports it, not partitioned"
        reasons.setdefault(op.name, Counter())[why] += 1
    return reasons


def run_byoc(name: str, threads: list[int], targets: list[str], args: argparse.Namespace) -> dict[str, Any]:
    import byoc

    path, feeds = corpus.load(name, unpacked=args.unpacked)
    t0 = time.perf_counter()
    module = byoc.import_onnx(str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name))
    t_import = time.perf_counter() - t0
    reasons = unsupported_reasons(module) if args.describe else {}
    t0 = time.perf_counter()
    exe = byoc.build(module, targets=targets, num_threads=threads[0])
    t_build = time.perf_counter() - t0
    result: dict[str, Any] = {"import_s": t_import, "build_s": t_build, "times": {}}
    for n in threads:
        exe.set_num_threads(n)
        result["times"][str(n)] = _time_calls(lambda: exe.run(**feeds), args.budget, args.min_calls, args.warmup)
    if args.describe:
        result["partitions"] = len(exe.partitions)
        result["host_steps"] = host_steps(exe, reasons)
        result["steps"] = len(exe.plan.steps)
    if args.save:
        np.savez(args.save, *exe.run(**feeds))
    return result


def run_onnxruntime(name: str, threads: list[int], args: argparse.Namespace) -> dict[str, Any]:
    import onnxruntime as ort

    path = corpus.model_path(name, args.unpacked)
    feeds = corpus.onnxruntime_feeds(name)
    result: dict[str, Any] = {"times": {}}
    outputs: list[Any] = []
    for n in threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = n
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3  # no warnings about the models' declared output shapes
        t0 = time.perf_counter()
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        result.setdefault("build_s", time.perf_counter() - t0)
        result["times"][str(n)] = _time_calls(lambda s=session: s.run(None, feeds), args.budget, args.min_calls, args.warmup)
        outputs = session.run(None, feeds)
    if args.save:
        np.savez(args.save, *outputs)
    return result


def worker(args: argparse.Namespace) -> None:
    threads = [int(t) for t in args.threads.split(",")]
    if args.worker == "byoc":
        result = run_byoc(args.models, threads, args.targets.split(","), args)
    else:
        result = run_onnxruntime(args.models, threads, args)
    print("RESULT " + json.dumps(result), flush=True)


# ---- the driver ---------------------------------------------------------------------------


def spawn(engine: str, name: str, args: argparse.Namespace, *, describe: bool, save: str | None) -> dict[str, Any]:
    command = [
        sys.executable, str(Path(__file__).resolve()), "--worker", engine, "--models", name,
        "--threads", args.threads, "--targets", args.targets, "--budget", str(args.budget),
        "--min-calls", str(args.min_calls), "--warmup", str(args.warmup), "--unpacked", str(args.unpacked),
    ]  # fmt: skip
    if describe:
        command.append("--describe")
    if save:
        command += ["--save", save]
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy(), check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT ") :]))
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": tail}


def max_error(byoc_npz: Path, ort_npz: Path) -> tuple[float, float]:
    """(largest |byoc - onnxruntime| over the outputs, largest |onnxruntime output|)."""
    with np.load(byoc_npz) as got, np.load(ort_npz) as want:
        keys = sorted(want.files, key=lambda k: int(k.split("_")[1]))
        err = max(float(np.abs(got[k].astype(np.float64) - want[k].astype(np.float64)).max()) for k in keys)
        scale = max(float(np.abs(want[k].astype(np.float64)).max()) for k in keys)
    return err, scale


def out_of_bound(name: str, unpacked: Path, byoc_npz: Path, ort_npz: Path) -> list[str]:
    """The outputs of byoc that are not within the normwise bound of the whole graph around
    onnxruntime's (`bounds.normwise_bound` of the imported graph's reduction length), each
    with its worst element; empty when every output is within."""
    import byoc
    from byoc.conformance.bounds import compare, normwise_bound, reduction_length

    module = byoc.import_onnx(
        str(corpus.model_path(name, unpacked)), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name)
    )
    k = reduction_length(module)
    found: list[str] = []
    with np.load(byoc_npz) as got, np.load(ort_npz) as want:
        keys = sorted(want.files, key=lambda key: int(key.split("_")[1]))
        if len(got.files) != len(keys):
            return [f"{len(got.files)} outputs, onnxruntime {len(keys)}"]
        for key in keys:
            mismatch = compare(got[key], want[key], normwise_bound(k, want[key]))
            if mismatch is not None:
                found.append(f"output {key.split('_')[1]}: {mismatch.message}")
    return found


def measure(name: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """Alternate the two engines' processes for `args.rounds` rounds; collect the figures."""
    rounds: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    saves = {e: scratch / f"{name}.{e}.npz" for e in ENGINES}
    for r in range(args.rounds):
        order = ENGINES if r % 2 == 0 else ENGINES[::-1]
        for engine in order:
            first = r == 0
            res = spawn(engine, name, args, describe=first and engine == "byoc", save=str(saves[engine]) if first else None)
            if "error" in res:
                return {"error": f"{engine}: {res['error']}"}
            rounds[engine].append(res)
    first_byoc = rounds["byoc"][0]
    entry: dict[str, Any] = {
        "family": corpus.ALL[name].family,
        "package": corpus.ALL[name].package,
        "import_s": first_byoc["import_s"],
        "build_s": first_byoc["build_s"],
        "partitions": first_byoc["partitions"],
        "steps": first_byoc["steps"],
        "host_steps": first_byoc["host_steps"],
        "threads": {},
    }
    entry["max_error"], entry["output_scale"] = max_error(saves["byoc"], saves["onnxruntime"])
    entry["out_of_bound"] = out_of_bound(name, args.unpacked, saves["byoc"], saves["onnxruntime"])
    for n in args.threads.split(","):
        medians = {e: statistics.median(statistics.median(res["times"][n]) for res in rounds[e]) for e in ENGINES}
        entry["threads"][n] = {
            "byoc_ms": medians["byoc"] * 1e3,
            "onnxruntime_ms": medians["onnxruntime"] * 1e3,
            "ratio": medians["byoc"] / medians["onnxruntime"],
            "calls": sum(len(res["times"][n]) for e in ENGINES for res in rounds[e]),
        }
    return entry


def summarise(models: dict[str, dict[str, Any]], threads: list[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    measured = {k: v for k, v in models.items() if "error" not in v}
    for n in threads:
        ratios = {k: v["threads"][n]["ratio"] for k, v in measured.items()}
        if not ratios:
            continue
        worst = max(ratios, key=lambda k: ratios[k])
        summary[n] = {
            "geomean_ratio": math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios)),
            "worst_model": worst,
            "worst_ratio": ratios[worst],
            "above_1_5x": sorted(k for k, r in ratios.items() if r > 1.5),
        }
    summary["models_with_host_steps"] = sorted(k for k, v in measured.items() if v["host_steps"])
    summary["out_of_bound"] = sorted(k for k, v in measured.items() if v.get("out_of_bound"))
    summary["failed"] = sorted(k for k, v in models.items() if "error" in v)
    return summary


def print_model(name: str, entry: dict[str, Any], threads: list[str]) -> None:
    if "error" in entry:
        print(f"{name:17s} FAILED: {entry['error']}", flush=True)
        return
    cells = "  ".join(
        f"{t['byoc_ms']:8.2f} {t['onnxruntime_ms']:8.2f} {t['ratio']:5.2f}x"
        for t in (entry["threads"][n] for n in threads)
    )
    host = sum(h["count"] for h in entry["host_steps"])
    within = "OUT OF BOUND" if entry["out_of_bound"] else "within bound"
    print(
        f"{name:17s} {cells}  {entry['partitions']:4d} {host:4d}  {entry['max_error']:.1e} "
        f"(of {entry['output_scale']:.3g}, {within})  build {entry['build_s']:.1f} s",
        flush=True,
    )
    for line in entry["out_of_bound"]:
        print(f"{'':17s} {line}", flush=True)


def print_host_steps(models: dict[str, dict[str, Any]]) -> None:
    print("\nhost steps (op x count: why it is not offloaded to ccompiler)")
    for name, entry in models.items():
        if "error" in entry or not entry["host_steps"]:
            continue
        print(f"  {name}:")
        for h in entry["host_steps"]:
            print(f"    {h['op']} x{h['count']}: {h['why']}")


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import onnxruntime

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "load_average": os.getloadavg(),
    }


def write_results(record: dict[str, Any], path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")


def specialise() -> list[str]:
    """First call vs later calls of a SpecializingExecutable, per input shape."""
    from onnx import TensorProto, helper, numpy_helper

    import byoc

    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    exe = byoc.build(byoc.import_onnx(model), targets=["ccompiler"])
    lines = []
    for shape in [(1, 3, 32, 32), (4, 3, 64, 48), (1, 3, 32, 32)]:
        x = rng.standard_normal(shape).astype(np.float32)
        t0 = time.perf_counter()
        exe.run(x)
        first = time.perf_counter() - t0
        later = []
        for _ in range(5):
            t0 = time.perf_counter()
            exe.run(x)
            later.append(time.perf_counter() - t0)
        lines.append(
            f"specialise {'x'.join(map(str, shape))}: first call {first * 1e3:.1f} ms, "
            f"later calls {min(later) * 1e3:.2f} ms (best of 5)"
        )
    lines.append(f"  cache: {len(exe.specializations())} entries, {exe.misses} builds")  # type: ignore[attr-defined]
    return lines


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=None, help="comma-separated corpus or hold-out names (default: the corpus)")
    p.add_argument("--holdout", action="store_true", help="the hold-out set (benchmarks/corpus.py HOLDOUT)")
    p.add_argument("--unpacked", type=Path, default=corpus.UNPACKED, help="folder of `corpus.py --unpack`")
    p.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    p.add_argument("--targets", default="ccompiler", help="byoc targets, e.g. dnnl,ccompiler")
    p.add_argument("--quick", action="store_true", help="2 rounds, 0.3 s of calls per thread count")
    p.add_argument("--rounds", type=int, default=None, help="processes per engine (default 4, --quick 2)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timed calls per thread count")
    p.add_argument("--min-calls", type=int, default=None, help="timed calls at least")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--specialise", action="store_true", help="also time per-shape specialisation")
    p.add_argument("--output", type=Path, default=None, help="results file")
    p.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    p.add_argument("--describe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--save", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 4)
    args.budget = args.budget if args.budget is not None else (0.3 if args.quick else 1.5)
    args.min_calls = args.min_calls or (3 if args.quick else 10)
    args.models = args.models or ",".join(corpus.HELD_OUT if args.holdout else corpus.CORPUS)
    args.output = args.output or (HOLDOUT_RESULTS if args.holdout else RESULTS)
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    names = args.models.split(",")
    unknown = [n for n in names if n not in corpus.ALL]
    if unknown:
        raise SystemExit(
            f"unknown models {unknown}; the corpus: {', '.join(corpus.CORPUS)}; the hold-out set: {', '.join(corpus.HELD_OUT)}"
        )
    threads = args.threads.split(",")
    print(f"byoc targets {args.targets} vs onnxruntime; {args.rounds} rounds; load {os.getloadavg()[0]:.1f}")
    head = "  ".join(f"{f'byoc@{n}':>8s} {f'ort@{n}':>8s} {'ratio':>6s}" for n in threads)
    print(f"{'model':17s} {head}  {'part':>4s} {'host':>4s}  max error (ms per call)", flush=True)
    models: dict[str, dict[str, Any]] = {}
    started = time.time()
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["BYOC_CACHE_DIR"] = str(Path(scratch) / "cache")  # compile for real in round 0
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        for name in names:
            try:
                corpus.model_path(name, args.unpacked)
            except corpus.NotInstalledError as e:
                models[name] = {"error": str(e)}
            else:
                models[name] = measure(name, args, Path(scratch))
            print_model(name, models[name], threads)
    summary = summarise(models, threads)
    print()
    for n in threads:
        if n in summary:
            s = summary[n]
            print(
                f"{n} thread(s): geometric mean byoc/onnxruntime {s['geomean_ratio']:.2f}x, "
                f"worst {s['worst_model']} {s['worst_ratio']:.2f}x, above 1.5x: {', '.join(s['above_1_5x']) or 'none'}"
            )
    print_host_steps(models)
    goals = {
        "geomean <= 1.0x at every thread count": all(summary[n]["geomean_ratio"] <= 1.0 for n in threads if n in summary),
        "no model above 1.5x": all(not summary[n]["above_1_5x"] for n in threads if n in summary),
        "0 host steps (every corpus model has static shapes)": not summary["models_with_host_steps"],
        "every model imports, builds and runs": not summary["failed"],
        "every output within the bound of its graph": not summary["out_of_bound"],
    }
    print()
    for goal, met in goals.items():
        print(f"goal: {goal}: {'met' if met else 'not met'}")
    lines = specialise() if args.specialise else []
    for line in lines:
        print(line)
    write_results(
        {
            "command": "python benchmarks/real_models.py " + " ".join(argv),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine(),
            "seconds": round(time.time() - started, 1),
            "targets": args.targets,
            "rounds": args.rounds,
            "models": models,
            "summary": summary,
            "goals": goals,
            "specialise": lines,
        },
        args.output,
    )
    print(f"results: {args.output}")


if __name__ == "__main__":
    from _results import run_recorded

    recorded_as = "real_models_holdout" if "--holdout" in sys.argv[1:] else None
    raise SystemExit(run_recorded(__file__, lambda: main(sys.argv[1:]), recorded_as))
