"""Parse and print throughput of the nn dialect's custom format, against xDSL's
own `arith.addf` on tensors of the same count, in the same run.

    python benchmarks/parse_print.py            # 1k, 10k, 50k ops
    python benchmarks/parse_print.py 1000 5000  # other sizes

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
"""

from __future__ import annotations

import argparse
import gc
import time
from io import StringIO

from xdsl.parser import Parser
from xdsl.printer import Printer

from byoc.context import make_context

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


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 50000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    print(
        f"{'ops':>7} {'format':<11} {'parse ops/s':>12} {'print ops/s':>12} {'parse vs addf':>14} {'print vs addf':>14}"
    )
    for n in args.sizes:
        repeat = max(1, args.repeat if n <= 10000 else (args.repeat + 1) // 2)
        texts = {"arith.addf": addf_chain(n), "nn.add": nn_add_chain(n), "nn mix": nn_mix_chain(n)}
        results = measure(texts, repeat)
        base_parse, base_print = results["arith.addf"]
        for label, (p, q) in results.items():
            print(
                f"{n:>7} {label:<11} {n / p:>12,.0f} {n / q:>12,.0f} "
                f"{base_parse / p:>13.2f}x {base_print / q:>13.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
