"""Threads: each light model and the small CNN at 1 and 2 threads, byoc against onnxruntime.

    python benchmarks/threads.py [--models squeezenet,resnet50] [--rounds 7] [--threads 1,2]
    python benchmarks/threads.py --quick          # five light models, ccompiler only, 9 rounds: a few minutes
    python benchmarks/threads.py --no-cblas --isolated   # byoc and onnxruntime in processes of their own
    python benchmarks/threads.py --no-cblas --compare-team --models shufflenet   # own team vs libgomp's

In one process, for each model (ONNX light models with seeded random weights,
`randomize_weights`; the small CNN of examples/small_cnn.mlir, exported to ONNX
here for onnxruntime), and for each thread count n:

- byoc `ccompiler` and `cblas+ccompiler`, built with `num_threads=n` (one
  Executable per count: the settings are independent, so their runs interleave);
- onnxruntime, CPU provider, `intra_op_num_threads=n`, `inter_op_num_threads=1`
  (sequential execution: byoc's host splits branches within the same budget).

Every contender runs once and is checked against onnxruntime's 1-thread answer;
then all contenders take turns, round by round (load on a shared machine slows
them alike), and the median of the rounds is printed (then the best round):
latency per thread count,
the speedup from 1 to 2 threads of each, and byoc / onnxruntime at each count,
with geometric means over the light models. The goals: 2 threads
>= 1.7x byoc's 1 thread on conv-heavy models, scaling at least onnxruntime's, and
ccompiler within 1.5x of onnxruntime at both counts; the last lines of the output say
for each goal whether it is met ("goal A/B/C ... met" or "NOT met", with the figures),
from the medians of the rounds.

The environment's OMP_NUM_THREADS / OPENBLAS_NUM_THREADS do not change byoc's
setting (docs/threads.md); this script sets both to 1 so that numpy's own OpenBLAS
(the host's numpy kernels) starts no pool of its own.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import byoc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the ONNX test harness
from support.onnx_harness import light_models, randomize_weights  # noqa: E402

SPEEDUP_GOAL = 1.7
RATIO_GOAL = 1.5
CONV_HEAVY = ("resnet50", "vgg19", "squeezenet", "inception_v1", "inception_v2", "densenet121")
"""Models whose time is mostly conv2d (`benchmarks/models.py --profile`)."""


def ort_session(model: onnx.ModelProto, n: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = n
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def small_cnn() -> tuple[Any, onnx.ModelProto]:
    """examples/small_cnn.mlir and the same network as an ONNX model (its constants)."""
    from onnx import TensorProto, helper, numpy_helper
    from xdsl.dialects.func import FuncOp

    from byoc.dialects import nn

    module = byoc.parse_module((ROOT / "examples/small_cnn.mlir").read_text())
    main = next(op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data == "main")
    consts = {
        op.result.name_hint: op.ndarray() for op in main.body.walk() if isinstance(op, nn.ConstantOp)
    }
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return module, model


COMPARE_TEAM = False
"""`--compare-team`: byoc only; each ccompiler build above 1 thread also with its regions run by
libgomp's team (`set_team_mode("libgomp")`), interleaved in
this process with the 1-thread build: ratios that load on a shared machine hits alike."""

ONLY: str | None = None
"""`--contender byoc|ort` (the children of `--isolated`): time only that side in this process."""


def measure(name: str, counts: list[int], rounds: int, with_cblas: bool) -> dict[str, float]:
    if name == "small_cnn":
        module, model = small_cnn()
    else:
        model = randomize_weights(onnx.load(light_models()[name]), seed=0)
        module = byoc.import_onnx(model)
    shape = (1, 3, 8, 8) if name == "small_cnn" else (1, 3, 224, 224)
    x = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    contenders: dict[str, Callable[[], Any]] = {}
    keep: list[Any] = []
    expected = None
    for n in counts:
        # byoc alone: the expected answer from a 1-thread session (no onnxruntime pool)
        session = ort_session(model, 1 if ONLY == "byoc" else n)
        feed = {session.get_inputs()[0].name: x}
        if expected is None:
            expected = session.run(None, feed)[0]
        keep.append(session)
        if ONLY != "ort":
            exe = byoc.build(module, targets=["ccompiler"], num_threads=n)
            contenders[f"ccompiler@{n}"] = lambda exe=exe: exe.run(x)
            if COMPARE_TEAM and n > 1:  # the same build, its regions run by libgomp's team
                gomp = byoc.build(module, targets=["ccompiler"], num_threads=n)
                for component in gomp.components.values():
                    if hasattr(component, "set_team_mode"):
                        component.set_team_mode("libgomp")
                contenders[f"libgomp@{n}"] = lambda gomp=gomp: gomp.run(x)
            if with_cblas:
                blas = byoc.build(module, targets=["cblas", "ccompiler"], num_threads=n)
                contenders[f"cblas@{n}"] = lambda blas=blas: blas.run(x)
        if ONLY != "byoc":
            contenders[f"ort@{n}"] = lambda s=session, f=feed: s.run(None, f)
    for label, fn in contenders.items():
        np.testing.assert_allclose(fn()[0], expected, rtol=1e-3, atol=1e-4, err_msg=f"{name} {label}")
    samples: dict[str, list[float]] = {k: [] for k in contenders}
    if name == "small_cnn":  # microseconds a call: more rounds for a stable median
        rounds *= 50
    for _ in range(rounds):
        for label, fn in contenders.items():
            start = time.perf_counter()
            fn()
            samples[label].append(time.perf_counter() - start)
    return {
        **{k: statistics.median(v) for k, v in samples.items()},
        **{f"best {k}": min(v) for k, v in samples.items()},
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}" if seconds >= 0.01 else f"{seconds * 1e3:.3f}"


def geo(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def report(results: dict[str, dict[str, float]], counts: list[int], with_cblas: bool) -> None:
    print("medians of the rounds:\n")
    _table(results, counts, with_cblas)
    print("\nbest round (what each contender does when the shared machine lets it run):\n")
    _table(
        {name: {k[len("best ") :]: v for k, v in r.items() if k.startswith("best ")} for name, r in results.items()},
        counts,
        with_cblas,
    )


def _table(results: dict[str, dict[str, float]], counts: list[int], with_cblas: bool) -> None:
    systems = ["ccompiler"] + (["cblas"] if with_cblas else []) + ["ort"]
    lo, hi = counts[0], counts[-1]
    head = "| model | " + " | ".join(f"{s} {n}t ms" for s in systems for n in counts)
    head += " | " + " | ".join(f"{s} {lo}t/{hi}t" for s in systems)
    head += " | " + " | ".join(f"{s}/ort {n}t" for s in systems[:-1] for n in counts) + " |"
    print(head)
    print("|---|" + "---:|" * (len(systems) * len(counts) + len(systems) + (len(systems) - 1) * len(counts)))
    for name, r in results.items():
        cells = [_ms(r[f"{s}@{n}"]) for s in systems for n in counts]
        cells += [f"{r[f'{s}@{lo}'] / r[f'{s}@{hi}']:.2f}x" for s in systems]
        cells += [f"{r[f'{s}@{n}'] / r[f'ort@{n}']:.2f}x" for s in systems[:-1] for n in counts]
        print(f"| {name} | " + " | ".join(cells) + " |")
    light = {k: v for k, v in results.items() if k != "small_cnn"}
    if not light:
        return
    print()
    for s in systems:
        speedups = {k: r[f"{s}@{lo}"] / r[f"{s}@{hi}"] for k, r in light.items()}
        line = f"{s}: {lo}->{hi} threads speedup geometric mean {geo(list(speedups.values())):.2f}x"
        heavy = [v for k, v in speedups.items() if k in CONV_HEAVY]
        if heavy and s != "ort":
            met = sum(v >= SPEEDUP_GOAL for v in heavy)
            line += f"; conv-heavy >= {SPEEDUP_GOAL}x: {met} of {len(heavy)}"
        if s != "ort":
            ort = {k: r[f"ort@{lo}"] / r[f"ort@{hi}"] for k, r in light.items()}
            line += f"; scales at least as well as onnxruntime on {sum(speedups[k] >= ort[k] for k in light)} of {len(light)}"
            for n in counts:
                line += f"; /ort at {n}t: {geo([r[f'{s}@{n}'] / r[f'ort@{n}'] for r in light.values()]):.2f}x"
        print(line)


def team_report(results: dict[str, dict[str, float]], counts: list[int]) -> None:
    """byoc's own team against libgomp's, same builds, interleaved rounds (medians)."""
    lo = counts[0]
    print("\nccompiler, its own team vs libgomp's (same process, interleaved; medians):\n")
    print("| model | threads | own ms | libgomp ms | own / libgomp | own speedup | libgomp speedup |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        for n in counts:
            if f"libgomp@{n}" not in r:
                continue
            own, gomp, one = r[f"ccompiler@{n}"], r[f"libgomp@{n}"], r[f"ccompiler@{lo}"]
            print(f"| {name} | {n} | {_ms(own)} | {_ms(gomp)} | {own / gomp:.2f}x | {one / own:.2f}x | {one / gomp:.2f}x |")


def goals(results: dict[str, dict[str, float]], counts: list[int], system: str = "ccompiler") -> list[str]:
    """The three goal lines for `system`, from the medians of the rounds."""
    light = {k: v for k, v in results.items() if k != "small_cnn"}
    lo, hi = counts[0], counts[-1]
    if not light or lo == hi:
        return [f"goals: need light models and two thread counts (have {sorted(results)}, {counts})"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    lines = []
    speed = {k: r[f"{system}@{lo}"] / r[f"{system}@{hi}"] for k, r in light.items()}
    heavy = {k: v for k, v in speed.items() if k in CONV_HEAVY}
    if heavy:
        short = {k: v for k, v in heavy.items() if v < SPEEDUP_GOAL}
        lines.append(
            f"goal A ({hi} threads >= {SPEEDUP_GOAL}x {system}'s {lo} thread on conv-heavy models): "
            f"{verdict(not short)}: {len(heavy) - len(short)} of {len(heavy)} "
            f"(" + ", ".join(f"{k} {v:.2f}x" for k, v in heavy.items()) + ")"
        )
    else:
        lines.append(f"goal A: no conv-heavy model among {sorted(light)} ({', '.join(CONV_HEAVY)})")
    ort = {k: r[f"ort@{lo}"] / r[f"ort@{hi}"] for k, r in light.items()}
    worse = [k for k in light if speed[k] < ort[k]]
    lines.append(
        f"goal B ({system} scales from {lo} to {hi} threads at least as well as onnxruntime, each model): "
        f"{verdict(not worse)}: {len(light) - len(worse)} of {len(light)} ("
        + ", ".join(f"{k} {speed[k]:.2f}x vs {ort[k]:.2f}x" for k in light)
        + ")"
    )
    ratios = {n: geo([r[f"{system}@{n}"] / r[f"ort@{n}"] for r in light.values()]) for n in counts}
    lines.append(
        f"goal C ({system} within {RATIO_GOAL}x of onnxruntime, geometric mean over {len(light)} light models): "
        f"{verdict(all(v <= RATIO_GOAL for v in ratios.values()))}: "
        + ", ".join(f"{v:.2f}x at {n} thread{'s' if n > 1 else ''}" for n, v in ratios.items())
    )
    return lines


QUICK = ["squeezenet", "shufflenet", "inception_v2", "resnet50", "densenet121"]
"""`--quick`: the models where ccompiler was furthest from onnxruntime, three of them conv-heavy."""


def isolated(argv: list[str], counts: list[int], alternations: int = 2) -> dict[str, dict[str, float]]:
    """Each side in a process of its own (byoc, then onnxruntime, `alternations` times),
    keeping each figure's best over the processes: onnxruntime's spinning intra-op threads
    and byoc's OpenMP team in one process measure how two pools share the cores, not each
    runtime (docs/threads.md). Each process times every thread count, interleaved round by
    round, so a side's 1- and 2-thread figures come from the same minutes: on a machine whose
    second core comes and goes, separate processes per count measured the machine's moods."""
    import json
    import subprocess
    import tempfile

    merged: dict[str, dict[str, float]] = {}
    skip = {"--isolated", "--threads", "--alternations"}
    rest, drop = [], False
    for a in argv:
        if drop:
            drop = False
            continue
        if a.split("=")[0] in skip:
            drop = "=" not in a and a != "--isolated"
            continue
        rest.append(a)
    threads = ",".join(str(n) for n in counts)
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(alternations):
            for who in ("byoc", "ort"):
                out = Path(tmp) / f"{who}-{k}.json"
                cmd = [sys.executable, __file__, *rest, "--threads", threads, "--contender", who,
                       "--result", str(out)]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                for name, row in json.loads(out.read_text()).items():
                    into = merged.setdefault(name, {})
                    for key, value in row.items():
                        into[key] = min(value, into.get(key, value))
    return merged


def main(argv: list[str] | None = None) -> int:
    global ONLY, COMPARE_TEAM
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="", help="comma-separated (default: small_cnn and every light model)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    parser.add_argument("--no-cblas", action="store_true")
    parser.add_argument(
        "--quick", action="store_true",
        help=f"--models {','.join(QUICK)} --rounds 9 --no-cblas (unless given)",
    )
    parser.add_argument("--isolated", action="store_true",
                        help="byoc and onnxruntime each in processes of their own, alternating")
    parser.add_argument("--alternations", type=int, default=2,
                        help="--isolated: processes per side (default 2), each figure the best of them")
    parser.add_argument("--compare-team", action="store_true",
                        help="ccompiler only: its own team against libgomp's, in this process, interleaved")
    parser.add_argument("--contender", choices=("byoc", "ort"), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    ONLY = args.contender
    COMPARE_TEAM = args.compare_team and not args.isolated
    if COMPARE_TEAM:  # byoc alone: onnxruntime's pool would share the cores with both teams
        ONLY = "byoc"
    if args.quick:
        args.models = args.models or ",".join(QUICK)
        args.rounds = args.rounds if args.rounds != parser.get_default("rounds") else 9
        args.no_cblas = True
    counts = sorted({int(t) for t in args.threads.split(",") if t})
    names = [m for m in args.models.split(",") if m] or ["small_cnn", *light_models()]
    with_cblas = not args.no_cblas
    results: dict[str, dict[str, float]] = {}
    print(f"load average at the start: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()})")
    if args.isolated:
        results = isolated(argv if argv is not None else sys.argv[1:], counts, args.alternations)
        print(f"(--isolated: each side in its own process, {args.alternations} alternations, every "
              "thread count interleaved in each; each figure the best of its processes)")
        names = []
    for name in names:
        t0 = time.perf_counter()
        results[name] = measure(name, counts, args.rounds, with_cblas)
        print(
            f"# {name}: {time.perf_counter() - t0:.0f} s, load average {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )
    if args.result:  # a child of --isolated
        import json

        Path(args.result).write_text(json.dumps(results))
        return 0
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()})")
    if COMPARE_TEAM:
        team_report(results, counts)
        return 0
    report(results, counts, with_cblas)
    print()
    for line in goals(results, counts):
        print(line)
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
