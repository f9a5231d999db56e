"""The dnnl target against onnxruntime: single ops and the ONNX light models, 1 and 2 threads.

    python benchmarks/dnnl.py                        # every op and light model, 1 and 2 threads
    python benchmarks/dnnl.py --models resnet50 --ops '' --threads 1 --rounds 9
    python benchmarks/dnnl.py --quick                # the goal's figures only: light models, 3 rounds
    python benchmarks/dnnl.py --quick --omp-wait-policy passive   # OpenMP threads sleep at once
    python benchmarks/dnnl.py --quick --isolated     # each contender in its own process, alternating

Per op (conv 3x3 64->64 at 56x56, conv 1x1 256->64 at 56x56, depthwise 3x3 at 112x112,
dense 1x1024 * 1024x1024, each followed by bias and ReLU) and per light model (seeded random
weights, `randomize_weights`), in one process:

- build cold: `byoc.build(module, targets=["dnnl", "ccompiler"])` with an empty library
  cache (partitioning, lower-to-graph, compiling the graph runtime with the oneDNN engine,
  loading it and building the engine's plan);
- latency of one inference of `byoc{targets=dnnl,ccompiler}` and of onnxruntime (CPU
  provider, intra_op_num_threads = the thread count, inter_op_num_threads=1), taking turns
  round by round (load on a shared machine slows both alike); the minimum of the rounds
  (and, in brackets, the median); the ratio byoc / onnxruntime of the minima and its
  geometric mean over the light models.

The dnnl engine's threads are set through the component (`set_num_threads`, OpenMP);
every answer is checked against onnxruntime's before timing. The goal: geometric mean
<= 1.0x at 1 and at 2 threads; the last line says whether it is met ("goal: ... -> met /
NOT met"), with the load average.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import statistics  # noqa: E402

from models import fresh_cache, timed  # noqa: E402
from support.onnx_harness import light_models, randomize_weights  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402

GOAL = 1.0
TARGETS = ["dnnl", "ccompiler"]

Array = np.ndarray[Any, Any]


def _conv_model(c: int, o: int, hw: int, k: int, groups: int = 1) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((o, c // groups, k, k)) / math.sqrt(c // groups * k * k)).astype(
        np.float32
    )
    b = (rng.standard_normal(o) * 0.1).astype(np.float32)
    p = k // 2
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[p, p, p, p], group=groups),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes,
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, o, hw, hw])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _dense_model(n: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((n, n)) / math.sqrt(n)).astype(np.float32)
    b = (rng.standard_normal(n) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes,
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


OPS: dict[str, Callable[[], onnx.ModelProto]] = {
    "conv3x3_64_56": lambda: _conv_model(64, 64, 56, 3),
    "conv1x1_256_64_56": lambda: _conv_model(256, 64, 56, 1),
    "depthwise3x3_64_112": lambda: _conv_model(64, 64, 112, 3, groups=64),
    "dense_1024": lambda: _dense_model(1024),
}


def latencies(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float]]:
    """(minimum, median) seconds per call: two warm-up calls each, then `rounds` rounds taking
    turns, each turn an untimed call then a timed one (onnxruntime's intra-op threads spin
    after a call, and OpenMP's do too: the untimed call keeps one contender's spinning out
    of the other's timing). On a shared, loaded machine a call is often descheduled for a
    time slice (4 ms and more), so the minimum is the estimate of what the code costs; the
    median shows the load."""
    for fn in contenders.values():
        fn()
        fn()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            fn()  # untimed: lets the other contender's spinning worker threads go idle
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: (min(s), statistics.median(s)) for name, s in samples.items()}


ORT_SPINNING = True
"""onnxruntime's intra-op threads spin between calls (its default); `--ort-no-spin` turns
that off, so that two spinning pools do not share two cores during the 2-thread runs."""


def session_for(model: onnx.ModelProto, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not ORT_SPINNING:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def set_threads(exe: Any, threads: int) -> None:
    """The thread count of every component of the Executable."""
    exe.set_num_threads(threads)


CONTENDERS = ("byoc", "onnxruntime")
"""Who runs in this process: both (taking turns), or one (`--contender`, for `--isolated`)."""


def measure(name: str, model: onnx.ModelProto, threads: list[int], rounds: int) -> dict[str, Any]:
    if CONTENDERS == ("onnxruntime",):
        return measure_ort_alone(model, threads, rounds)
    module = import_model(model)
    with fresh_cache():
        exe, t_cold = timed(lambda: byoc.build(module.clone(), targets=TARGETS))
    parts = exe.partitions
    session = session_for(model, 1)
    inp = session.get_inputs()[0]
    x = np.random.default_rng(1).standard_normal(inp.shape).astype(np.float32)
    feed = {inp.name: x}
    want = session.run(None, feed)[0]
    got = exe.run(x)[0]
    scale = float(np.abs(want).max()) or 1.0
    error = float(np.abs(got - want).max()) / scale
    row: dict[str, Any] = {
        "build cold": t_cold,
        "partitions": ", ".join(f"{p.target}:{p.num_ops}" for p in parts),
        "error": error,
    }
    for n in threads:
        set_threads(exe, n)
        contenders: dict[str, Callable[[], Any]] = {"byoc": lambda: exe.run(x)}
        if "onnxruntime" in CONTENDERS:
            sess = session_for(model, n)
            contenders["onnxruntime"] = lambda s=sess: s.run(None, feed)
        times = latencies(contenders, rounds)
        row[f"byoc {n}"], row[f"byoc {n} median"] = times["byoc"]
        if "onnxruntime" in times:
            row[f"ort {n}"], row[f"ort {n} median"] = times["onnxruntime"]
    return row


def measure_ort_alone(model: onnx.ModelProto, threads: list[int], rounds: int) -> dict[str, Any]:
    """onnxruntime in a process of its own (`--isolated`): no byoc build, no OpenMP team."""
    row: dict[str, Any] = {}
    for n in threads:
        sess = session_for(model, n)
        inp = sess.get_inputs()[0]
        x = np.random.default_rng(1).standard_normal(inp.shape).astype(np.float32)
        times = latencies({"onnxruntime": lambda s=sess, f={inp.name: x}: s.run(None, f)}, rounds)
        row[f"ort {n}"], row[f"ort {n} median"] = times["onnxruntime"]
    return row


def isolated(argv: list[str], threads: list[int], models: list[str], alternations: int = 2) -> int:
    """Each contender in a process of its own, byoc and onnxruntime alternating
    (`alternations` times per thread count), the best of each kept: two thread pools
    in one process measure how they share the cores, not each runtime (docs/dnnl.md)."""
    import json
    import subprocess
    import tempfile

    rows: dict[str, dict[str, Any]] = {}
    rest = [a for a in argv if a != "--isolated"]
    with tempfile.TemporaryDirectory() as tmp:
        for n in threads:
            for k in range(alternations):
                for who in CONTENDERS:
                    result = Path(tmp) / f"{who}-{n}-{k}.json"
                    cmd = [sys.executable, __file__, *rest, "--threads", str(n), "--contender", who,
                           "--ops", "", "--result", str(result)]
                    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                    for name, row in json.loads(result.read_text())["rows"].items():
                        into = rows.setdefault(name, {})
                        for key, value in row.items():
                            if isinstance(value, float) and key in into and "median" not in key and key.split()[0] in ("byoc", "ort"):
                                into[key] = min(into[key], value)
                            else:
                                into.setdefault(key, value)
    print("\n(--isolated: each contender in its own process, alternating; best of "
          f"{alternations} processes x the rounds of each)")
    geomeans = report("light models end to end, each contender in its own process", rows, threads)
    print("\n" + goal_line(geomeans, models))
    return 0


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 0.1 else f"{seconds * 1e3:.1f} ms"


def report(title: str, rows: dict[str, dict[str, Any]], threads: list[int]) -> dict[int, float]:
    print(f"\n### {title}\n")
    head = "| case | build cold | " + " | ".join(
        f"dnnl,ccompiler {n}t | onnxruntime {n}t | ratio {n}t | (medians {n}t)" for n in threads
    )
    print(head + " | partitions | max rel. error |")
    print("|" + "---|" * (2 + 4 * len(threads) + 2))
    for name, r in rows.items():
        cells = [f"{name}", f"{r['build cold']:.2f} s"]
        for n in threads:
            cells += [
                ms(r[f"byoc {n}"]),
                ms(r[f"ort {n}"]),
                f"{r[f'byoc {n}'] / r[f'ort {n}']:.2f}x",
                f"{ms(r[f'byoc {n} median'])} / {ms(r[f'ort {n} median'])}",
            ]
        cells += [r["partitions"], f"{r['error']:.1e}"]
        print("| " + " | ".join(cells) + " |")
    geomeans: dict[int, float] = {}
    if len(rows) > 1:
        means = []
        for n in threads:
            logs = [math.log(r[f"byoc {n}"] / r[f"ort {n}"]) for r in rows.values()]
            geomeans[n] = math.exp(sum(logs) / len(logs))
            means.append(f"{n} thread{'s' if n > 1 else ''}: {geomeans[n]:.2f}x")
        print(f"\ngeometric mean of the ratios (goal <= {GOAL:.1f}x): " + ", ".join(means))
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"load average after the table: {load}")
    return geomeans


def goal_line(geomeans: dict[int, float], models: list[str]) -> str:
    """The goal line: the geometric mean over the light models at each
    thread count against onnxruntime, and whether every one is <= GOAL."""
    everything = sorted(light_models()) == sorted(models)
    cells = ", ".join(f"{n} thread{'s' if n > 1 else ''} {g:.2f}x" for n, g in sorted(geomeans.items()))
    met = geomeans and all(g <= GOAL for g in geomeans.values())
    scope = "all light models" if everything else f"{len(models)} of the light models (not the goal's set)"
    return (f"goal: byoc{{targets=dnnl,ccompiler}} / onnxruntime, geometric mean over "
            f"{scope}, <= {GOAL:.1f}x at 1 and 2 threads: {cells} -> "
            f"{'met' if met else 'NOT met'} (load average {', '.join(f'{v:.1f}' for v in os.getloadavg())})")


def main(argv: list[str] | None = None) -> int:
    global CONTENDERS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", default=",".join(OPS), help="single-op cases ('' for none)")
    parser.add_argument("--models", default=",".join(light_models()), help="light models ('' for none)")
    parser.add_argument("--threads", default="1,2", help="thread counts")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--ort-no-spin", action="store_true", help="onnxruntime threads do not spin")
    parser.add_argument("--quick", action="store_true",
                        help="the goal's figures only, in a few minutes: no single ops, 3 rounds")
    parser.add_argument("--omp-wait-policy", choices=("passive", "active"),
                        help="OMP_WAIT_POLICY for the measuring processes (libgomp reads it once, "
                        "at load; default: libgomp's spin-then-sleep)")
    parser.add_argument("--isolated", action="store_true",
                        help="each contender in a process of its own, alternating (no two thread "
                        "pools in one process)")
    parser.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)  # --isolated's children
    parser.add_argument("--result", help=argparse.SUPPRESS)  # the child's geometric means (json)
    args = parser.parse_args(argv)
    if args.quick:
        args.ops, args.rounds = "", min(args.rounds, 3)
    global ORT_SPINNING
    ORT_SPINNING = not args.ort_no_spin
    threads = [int(t) for t in args.threads.split(",") if t]
    if args.contender:
        CONTENDERS = (args.contender,)
    if args.isolated:
        return isolated(argv if argv is not None else sys.argv[1:], threads,
                        [m for m in args.models.split(",") if m])
    if args.omp_wait_policy and os.environ.get("OMP_WAIT_POLICY") != args.omp_wait_policy:
        # libgomp reads it when it is loaded: run the measurement in a process that has it
        import subprocess

        env = dict(os.environ, OMP_WAIT_POLICY=args.omp_wait_policy)
        rest = argv if argv is not None else sys.argv[1:]
        return subprocess.run([sys.executable, __file__, *rest], env=env, check=False).returncode
    if len(threads) > 1:
        # one process per thread count: OpenMP's worker threads from a 2-thread run would
        # otherwise stay around (spinning, then asleep) during the 1-thread one
        import json
        import subprocess
        import tempfile

        geomeans: dict[int, float] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for n in threads:
                rest = [a for a in (argv if argv is not None else sys.argv[1:])]
                result = Path(tmp) / f"{n}.json"
                cmd = [sys.executable, __file__, *rest, "--threads", str(n), "--result", str(result)]
                subprocess.run(cmd, check=True)
                if result.is_file():
                    geomeans.update({int(k): v for k, v in json.loads(result.read_text()).items()})
        models = [m for m in args.models.split(",") if m]
        if len(models) > 1:
            print("\n" + goal_line(geomeans, models))
        return 0
    os.environ["BYOC_NUM_THREADS"] = str(threads[0])  # the engine's threads from the start
    import platform

    print(f"# dnnl vs onnxruntime ({platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}"
          f"{', onnxruntime not spinning' if args.ort_no_spin else ''}"
          f"{', OMP_WAIT_POLICY=' + os.environ['OMP_WAIT_POLICY'] if os.environ.get('OMP_WAIT_POLICY') else ''}"
          f", load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())})")
    ops = [o for o in args.ops.split(",") if o]
    if ops:
        rows = {}
        for name in ops:
            rows[name] = measure(name, OPS[name](), threads, args.rounds)
            print(f"  {name} done", file=sys.stderr, flush=True)
        report("single ops (+ bias + relu)", rows, threads)
    models = [m for m in args.models.split(",") if m]
    if models:
        rows = {}
        paths = light_models()
        for name in models:
            model = randomize_weights(onnx.load(paths[name]), seed=0)
            rows[f"light_{name}"] = measure(name, model, threads, args.rounds)
            print(f"  light_{name} done", file=sys.stderr, flush=True)
        if args.contender:  # one contender of --isolated: its figures go to the parent
            import json

            Path(args.result).write_text(json.dumps({"rows": rows}))
            return 0
        geomeans = report("light models end to end (random weights, seeded)", rows, threads)
        if args.result:
            import json

            Path(args.result).write_text(json.dumps(geomeans))
        elif len(models) > 1:
            print("\n" + goal_line(geomeans, models))
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
