"""The ONNX light models: import, partition and build times, and latency against onnxruntime.

    OPENBLAS_NUM_THREADS=1 python benchmarks/models.py [--models squeezenet,resnet50] [--rounds 5]
    OPENBLAS_NUM_THREADS=1 python benchmarks/models.py --profile resnet50

For each `onnx/backend/test/data/light/light_*.onnx` model, with seeded random
weights (`randomize_weights`; the shipped ones are all 0.02), in one process:

- import: `import_model` of the ModelProto;
- partition: the `byoc{targets=ccompiler}` pipeline on a copy of the module;
- build cold: `byoc.build(module, targets=["ccompiler"])` with an empty library
  cache (a fresh `$BYOC_CACHE_DIR`): partitioning, lower-to-c, the C compiler,
  loading; build cached: the same build again, the library found in the cache;
- latency of one inference: the host-only executor (`byoc.build(module)`, every
  op a numpy kernel), the partitioned executable (ccompiler), the same with
  the `cblas` target first (`targets=["cblas", "ccompiler"]`: conv2d/dense
  composites on OpenBLAS, one thread) and onnxruntime (CPU provider,
  intra_op_num_threads=1, inter_op_num_threads=1). The contenders take turns
  round by round (load on the shared machine slows them alike); the median of
  the rounds is printed, with the ratio to onnxruntime.

`--profile NAME` builds NAME with every ccompiler op in a partition of its own
(annotate-target and partition, no region merging) and prints where the time
goes by op kind and by the heaviest conv2d shapes (`Executable.run_profiled`).
The goal for the partitioned executable is <= 1.5x onnxruntime.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BYOC_NUM_THREADS"):  # 1-thread figures
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

import byoc  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the ONNX test harness
from support.onnx_harness import light_models, randomize_weights  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402
from byoc.passes.byoc_pipeline import partition_for  # noqa: E402

GOAL = 1.5
"""The goal: the partitioned executable within 1.5x onnxruntime's latency."""


@contextmanager
def fresh_cache() -> Iterator[str]:
    """An empty library cache for the duration (the previous `$BYOC_CACHE_DIR` restored)."""
    before = os.environ.get("BYOC_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="byoc-cache-") as path:
        os.environ["BYOC_CACHE_DIR"] = path
        try:
            yield path
        finally:
            if before is None:
                del os.environ["BYOC_CACHE_DIR"]
            else:
                os.environ["BYOC_CACHE_DIR"] = before


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def onnxruntime_session(model: onnx.ModelProto) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def median_latency(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Seconds per call: one warm-up call each, then `rounds` rounds taking turns; medians."""
    for fn in contenders.values():
        fn()
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in samples.items()}


def cblas_available() -> bool:
    try:
        from byoc.targets import get_target

        get_target("cblas")
        return True
    except Exception:  # noqa: BLE001 - the optional OpenBLAS wheel is missing
        return False


def measure(name: str, rounds: int, with_cblas: bool) -> dict[str, float]:
    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    module, t_import = timed(lambda: import_model(model))
    copy = module.clone()
    _, t_partition = timed(lambda: partition_for(copy, ["ccompiler"]))
    with fresh_cache():
        exe, t_cold = timed(lambda: byoc.build(module, targets=["ccompiler"]))
        _, t_cached = timed(lambda: byoc.build(module, targets=["ccompiler"]))
    host = byoc.build(module)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    session = onnxruntime_session(model)
    feed = {session.get_inputs()[0].name: x}
    contenders: dict[str, Callable[[], Any]] = {
        "host": lambda: host.run(x),
        "ccompiler": lambda: exe.run(x),
    }
    if with_cblas:
        blas = byoc.build(module, targets=["cblas", "ccompiler"])
        contenders["cblas+ccompiler"] = lambda: blas.run(x)
    contenders["onnxruntime"] = lambda: session.run(None, feed)
    # the same answer from everyone before timing anyone
    expected = session.run(None, feed)[0]
    for label, fn in contenders.items():
        if label != "onnxruntime":
            np.testing.assert_allclose(fn()[0], expected, rtol=1e-3, atol=1e-4, err_msg=label)
    latency = median_latency(contenders, rounds)
    return {
        "nodes": len(model.graph.node),
        "import": t_import,
        "partition": t_partition,
        "build cold": t_cold,
        "build cached": t_cached,
        **{f"run {k}": v for k, v in latency.items()},
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def report(results: dict[str, dict[str, float]], with_cblas: bool) -> None:
    cols = ["host", "ccompiler"] + (["cblas+ccompiler"] if with_cblas else [])
    head = (
        "| model | import s | partition s | build cold s | build cached s | "
        + " | ".join(f"{c} ms" for c in cols)
        + " | onnxruntime ms | "
        + " | ".join(f"{c} / ort" for c in cols)
        + " |"
    )
    print(head)
    print("|---|" + "---:|" * (4 + 2 * len(cols) + 1))
    for name, r in results.items():
        ort = r["run onnxruntime"]
        print(
            f"| {name} | {r['import']:.2f} | {r['partition']:.2f} | {r['build cold']:.2f} | "
            f"{r['build cached']:.2f} | "
            + " | ".join(ms(r[f"run {c}"]) for c in cols)
            + f" | {ms(ort)} | "
            + " | ".join(f"{r[f'run {c}'] / ort:.2f}x" for c in cols)
            + " |"
        )
    ratios = [r["run ccompiler"] / r["run onnxruntime"] for r in results.values()]
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        met = sum(q <= GOAL for q in ratios)
        print(
            f"\nccompiler / onnxruntime: geometric mean {geo:.2f}x, range "
            f"{min(ratios):.2f}x-{max(ratios):.2f}x; goal <= {GOAL}x met by {met} of {len(ratios)}"
        )
    if with_cblas:
        ratios = [r["run cblas+ccompiler"] / r["run onnxruntime"] for r in results.values()]
        if ratios:
            geo = float(np.exp(np.mean(np.log(ratios))))
            met = sum(q <= GOAL for q in ratios)
            print(
                f"cblas+ccompiler / onnxruntime: geometric mean {geo:.2f}x, range "
                f"{min(ratios):.2f}x-{max(ratios):.2f}x; <= {GOAL}x for {met} of {len(ratios)}"
            )


def profile(name: str, rounds: int) -> None:
    """Time per op kind and per conv2d shape, every ccompiler op in its own partition."""
    from byoc.context import make_context
    from byoc.dialects.byoc import partition_target
    from byoc.passes.annotate_target import AnnotateTargetPass
    from byoc.passes.partition import PartitionPass

    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    module = import_model(model)
    AnnotateTargetPass(targets=("ccompiler",)).apply(make_context(), module)
    PartitionPass().apply(make_context(), module)
    label: dict[str, tuple[str, str]] = {}
    for func in module.ops:
        if partition_target(func) is None:  # type: ignore[arg-type]
            continue
        body = [op for op in func.body.block.ops if op.name not in ("nn.constant", "func.return")]  # type: ignore[attr-defined]
        op = body[0]
        shapes = " ".join(
            "x".join(str(d) for d in v.type.get_shape()) for v in [*op.operands, *op.results]
        )
        attrs = op.attr_values() if hasattr(op, "attr_values") else {}
        extra = ", ".join(f"{k}={v}" for k, v in attrs.items() if k in ("strides", "groups"))
        label[func.sym_name.data] = (op.name, f"{shapes} {extra}".strip())  # type: ignore[attr-defined]
    exe = byoc.build(module)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    exe.run(x)
    totals: collections.Counter[str] = collections.Counter()
    for _ in range(rounds):
        _, table = exe.run_profiled(x)
        for key, seconds in table.items():
            totals[key] += seconds / rounds
    by_kind: collections.Counter[str] = collections.Counter()
    by_shape: collections.Counter[str] = collections.Counter()
    for key, seconds in totals.items():
        kind, shape = label.get(key, (key, ""))
        by_kind[kind] += seconds
        if kind == "nn.conv2d":
            by_shape[shape] += seconds
    total = sum(totals.values())
    print(f"{name}: {total * 1e3:.1f} ms with one partition per op ({rounds} runs)")
    print("| op | ms | share |\n|---|---:|---:|")
    for kind, seconds in by_kind.most_common():
        print(f"| {kind} | {ms(seconds)} | {seconds / total:.0%} |")
    print("\n| conv2d (input, weight, output) | ms | share |\n|---|---:|---:|")
    for shape, seconds in by_shape.most_common(12):
        print(f"| {shape} | {ms(seconds)} | {seconds / total:.0%} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="", help="comma-separated light model names (all)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per contender")
    parser.add_argument("--no-cblas", action="store_true", help="leave out cblas+ccompiler")
    parser.add_argument("--profile", metavar="NAME", help="per-op profile of one model instead")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile, args.rounds)
        return 0
    names = [m for m in args.models.split(",") if m] or sorted(light_models())
    with_cblas = not args.no_cblas and cblas_available()
    results: dict[str, dict[str, float]] = {}
    for name in names:
        results[name] = measure(name, args.rounds, with_cblas)
        r = results[name]
        print(
            f"{name}: import {r['import']:.2f} s, partition {r['partition']:.2f} s, build "
            f"{r['build cold']:.2f} s cold / {r['build cached']:.2f} s cached; "
            + ", ".join(f"{k[4:]} {ms(v)} ms" for k, v in r.items() if k.startswith("run ")),
            flush=True,
        )
    print()
    report(results, with_cblas)
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
