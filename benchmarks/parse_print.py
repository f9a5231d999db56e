"""Parse and print throughput of the nn dialect's custom format, against xDSL's
own `arith.addf` on tensors of the same count, in the same run.

    python benchmarks/parse_print.py            # 1k, 10k, 50k ops
    python benchmarks/parse_print.py 1000 5000  # other sizes
    python benchmarks/parse_print.py --pipeline-only 10000

Each file is one `func.func` holding a chain of N ops over tensor<8x8xf32>:
- `nn.add`: `%k = nn.add %i, %j : tensor<8x8xf32>` (the short form), the exact
  counterpart of `%k = arith.addf %i, %j : tensor<8x8xf32>`;
- `nn mix`: nn.add, nn.relu, nn.multiply, nn.clip with attributes and a
  broadcasting nn.add in the functional form, in turn (what a real model
  looks like more than a pure add chain).

Parsing includes building the ops (and their verification-free creation);
printing is xDSL's Printer into a StringIO. The figure is the best of
`--repeat` rounds (half as many at 50k ops), as ops per second; within a
round the three formats take turns, so load from other processes on a shared
machine hits them alike.

The second table times whole byoc-opt runs, in this process, on the `nn mix`
file: `byoc-opt FILE -o OUT` (parse, verify, print), the same with
`--verify-full` (xDSL's `verify()` of every op rather than one per `nn` op
signature) and `byoc-opt FILE -p 'byoc{targets=ccompiler}' -o OUT` (plus the
partitioning pipeline and the verification after it), taking turns, best of
`--repeat` rounds (at least 3); `ratio` is pipeline over plain, `vs full`
pipeline over plain --verify-full. The last columns split the pipeline run's
best round by phase (`--timing`'s table).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from io import StringIO
from pathlib import Path

from xdsl.parser import Parser
from xdsl.printer import Printer

from byoc.context import make_context
from byoc.tools.byoc_opt import ByocOptMain

TYPE = "tensor<8x8xf32>"


def addf_chain(n: int) -> str:
    lines = [f"func.func @main(%a: {TYPE}, %b: {TYPE}) -> {TYPE} {{"]
    prev, other = "%a", "%b"
    for i in range(n):
        lines.append(f"  %{i} = arith.addf {prev}, {other} : {TYPE}")
        prev, other = f"%{i}", prev
    lines.append(f"  func.return {prev} : {TYPE}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def nn_add_chain(n: int) -> str:
    return addf_chain(n).replace("arith.addf", "nn.add")


def nn_mix_chain(n: int) -> str:
    lines = [f"func.func @main(%a: {TYPE}, %b: {TYPE}, %row: tensor<8xf32>) -> {TYPE} {{"]
    prev, other = "%a", "%b"
    for i in range(n):
        kind = i % 5
        if kind == 0:
            line = f"%{i} = nn.add {prev}, {other} : {TYPE}"
        elif kind == 1:
            line = f"%{i} = nn.relu {prev} : {TYPE}"
        elif kind == 2:
            line = f"%{i} = nn.multiply {prev}, {other} : {TYPE}"
        elif kind == 3:
            line = f"%{i} = nn.clip {prev} {{a_min = 0.000000e+00 : f64, a_max = 6.000000e+00 : f64}} : {TYPE}"
        else:
            line = f"%{i} = nn.add {prev}, %row : ({TYPE}, tensor<8xf32>) -> {TYPE}"
        lines.append("  " + line)
        prev, other = f"%{i}", prev
    lines.append(f"  func.return {prev} : {TYPE}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def measure(texts: dict[str, str], repeat: int) -> dict[str, tuple[float, float]]:
    """label -> (parse seconds, print seconds), best of `repeat` rounds.

    The formats take turns within each round, so a load spike on a shared
    machine hits them alike rather than one format's whole measurement.
    """
    ctx = make_context()
    modules = {}
    for label, text in texts.items():
        modules[label] = Parser(ctx, text, "bench").parse_module()  # also loads the dialects
        modules[label].verify()
    best = {label: [float("inf"), float("inf")] for label in texts}
    for _ in range(repeat):
        for label, text in texts.items():
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                Parser(ctx, text, "bench").parse_module()
                parsed = time.perf_counter() - start
                out = StringIO()
                start = time.perf_counter()
                Printer(stream=out).print_op(modules[label])
                printed = time.perf_counter() - start
            finally:
                gc.enable()
            best[label][0] = min(best[label][0], parsed)
            best[label][1] = min(best[label][1], printed)
    return {label: (p, q) for label, (p, q) in best.items()}


PIPELINE = "byoc{targets=ccompiler}"


def time_opt(args: list[str]) -> tuple[float, dict[str, float]]:
    """Wall seconds of one in-process byoc-opt run (driver set-up included), and its phases."""
    gc.collect()
    start = time.perf_counter()
    tool = ByocOptMain(args=args)
    status = tool.run()
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"byoc-opt {' '.join(args)} failed with status {status}")
    return elapsed, dict(tool.timing.phases)


def measure_pipeline(n: int, repeat: int) -> tuple[float, float, float, dict[str, float]]:
    """(plain seconds, plain --verify-full seconds, pipeline seconds, the best pipeline
    run's phases) on the nn mix file."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "mix.mlir"
        source.write_text(nn_mix_chain(n))
        out = str(Path(tmp) / "out.mlir")
        plain_args = [str(source), "-o", out]
        full_args = [str(source), "--verify-full", "-o", out]
        pipeline_args = [str(source), "-p", PIPELINE, "-o", out]
        time_opt(pipeline_args)  # imports the passes and the target before timing
        plain, full, pipeline, phases = float("inf"), float("inf"), float("inf"), {}
        for _ in range(repeat):
            plain = min(plain, time_opt(plain_args)[0])
            full = min(full, time_opt(full_args)[0])
            seconds, run_phases = time_opt(pipeline_args)
            if seconds < pipeline:
                pipeline, phases = seconds, run_phases
    return plain, full, pipeline, phases


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 50000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--pipeline-only", action="store_true", help=f"only the byoc-opt -p '{PIPELINE}' table"
    )
    args = ap.parse_args()

    if not args.pipeline_only:
        parse_print_table(args.sizes, args.repeat)
    pipeline_table(args.sizes, max(3, args.repeat if args.pipeline_only else 3))


def parse_print_table(sizes: list[int], repeat_arg: int) -> None:
    print(
        f"{'ops':>7} {'format':<11} {'parse ops/s':>12} {'print ops/s':>12} {'parse vs addf':>14} {'print vs addf':>14}"
    )
    for n in sizes:
        repeat = max(1, repeat_arg if n <= 10000 else (repeat_arg + 1) // 2)
        texts = {"arith.addf": addf_chain(n), "nn.add": nn_add_chain(n), "nn mix": nn_mix_chain(n)}
        results = measure(texts, repeat)
        base_parse, base_print = results["arith.addf"]
        for label, (p, q) in results.items():
            print(
                f"{n:>7} {label:<11} {n / p:>12,.0f} {n / q:>12,.0f} "
                f"{base_parse / p:>13.2f}x {base_print / q:>13.2f}x",
                flush=True,
            )


def pipeline_table(sizes: list[int], repeat: int) -> None:
    print()
    print(
        f"byoc-opt on the nn mix file: plain (parse, verify, print), plain --verify-full, -p '{PIPELINE}'"
    )
    names = ("Parser", "Verifier", "byoc", "Output")
    print(
        f"{'ops':>7} {'plain s':>8} {'full s':>7} {'pipeline s':>10} {'ratio':>6} {'vs full':>8}  "
        + " ".join(f"{name:>8}" for name in names)
    )
    for n in sizes:
        plain, full, pipeline, phases = measure_pipeline(n, repeat)
        print(
            f"{n:>7} {plain:>8.3f} {full:>7.3f} {pipeline:>10.3f} {pipeline / plain:>5.2f}x "
            f"{pipeline / full:>7.2f}x  "
            + " ".join(f"{phases.get(name, 0.0):>8.3f}" for name in names),
            flush=True,
        )


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
