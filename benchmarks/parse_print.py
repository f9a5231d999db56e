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
`--repeat` runs (the machine may be shared), as ops per second.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
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


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best


def measure(text: str, repeat: int) -> tuple[float, float]:
    """(parse seconds, print seconds) of one text, best of `repeat`."""
    ctx = make_context()
    module = Parser(ctx, text, "bench").parse_module()  # also loads the dialects
    module.verify()

    def parse() -> object:
        return Parser(ctx, text, "bench").parse_module()

    def print_() -> object:
        out = StringIO()
        Printer(stream=out).print_op(module)
        return out

    return best_of(repeat, parse), best_of(repeat, print_)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sizes", nargs="*", type=int, default=[1000, 10000, 50000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    print(f"{'ops':>7} {'format':<11} {'parse ops/s':>12} {'print ops/s':>12} {'parse vs addf':>14} {'print vs addf':>14}")
    for n in args.sizes:
        repeat = max(1, args.repeat if n <= 10000 else args.repeat // 2)
        base_parse, base_print = measure(addf_chain(n), repeat)
        rows = [("arith.addf", base_parse, base_print)]
        for label, make in (("nn.add", nn_add_chain), ("nn mix", nn_mix_chain)):
            p, q = measure(make(n), repeat)
            rows.append((label, p, q))
        for label, p, q in rows:
            print(
                f"{n:>7} {label:<11} {n / p:>12,.0f} {n / q:>12,.0f} "
                f"{base_parse / p:>13.2f}x {base_print / q:>13.2f}x"
            )


if __name__ == "__main__":
    main()
