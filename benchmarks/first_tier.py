"""The first tier against the compiled library, partition by partition, on the corpus.

Per corpus model (benchmarks/corpus.py): the ccompiler partitions after lower-to-c, run by
the first tier (`byoc.runtime.first_tier.FirstTierModule`) and by the compiled library
(`CModule`, the untiered build's) on the same seeded inputs, in one process, alternating,
min of 7 each: the largest difference between their outputs (0: bit for bit) and the
ratio of their run times. `--threads N` sets both modules' threads.

    python benchmarks/first_tier.py                       # every corpus model, 1 thread
    python benchmarks/first_tier.py --models ocr_det --threads 2
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402


def compare(name: str, threads: int, rng: np.random.Generator) -> list[tuple[str, float, float, float]]:
    """(partition, largest difference, first tier s, compiled s) for each partition of `name`."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    import byoc
    from byoc.context import make_context
    from byoc.dialects import c
    from byoc.dialects.byoc import partition_target
    from byoc.driver import prepare_for
    from byoc.lowering.c_build import c_library, signatures_of
    from byoc.passes import ALL_PASSES
    from byoc.passes.byoc_pipeline import partition_for
    from byoc.runtime.c_module import CModule
    from byoc.runtime.first_tier import FirstTierModule, compile_program

    path, _ = corpus.load(name)
    module = byoc.import_onnx(str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name))
    prepare_for(module, ["ccompiler"])
    partition_for(module, ["ccompiler"])
    funcs = [f for f in module.ops if isinstance(f, FuncOp) and partition_target(f) == "ccompiler"]
    unit = ModuleOp([f.clone() for f in funcs])
    ALL_PASSES["lower-to-c"]()().apply(make_context(), unit)
    cunit = next(op for op in unit.walk() if isinstance(op, c.ModuleOp))
    functions = signatures_of(unit)
    programs = {}
    for sym in functions:
        found = compile_program(cunit, sym)
        if isinstance(found, str):
            print(f"{name:<14} {sym}: waits for the compiled library ({found})")
        else:
            programs[sym] = found
    first = FirstTierModule(programs, functions)
    lib = c_library(unit)
    compiled = CModule.from_source(lib.source, lib.functions, lib.constants)
    first.set_num_threads(threads)
    compiled.set_num_threads(threads)
    rows = []
    for sym in programs:
        sig = functions[sym]
        args = [
            rng.standard_normal(s.shape).astype(s.dtype) if np.dtype(s.dtype).kind == "f"
            else rng.integers(0, 3, s.shape).astype(s.dtype)
            for s in sig.inputs
        ]  # fmt: skip
        fns = {"first": first.get_function(sym), "compiled": compiled.get_function(sym)}
        outs = {k: f(*args) for k, f in fns.items()}
        a, b = (o if isinstance(o, tuple) else (o,) for o in outs.values())
        diff = max((float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0)
                   for x, y in zip(a, b, strict=True))  # fmt: skip
        best = {k: math.inf for k in fns}
        for _ in range(7):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f(*args)
                best[k] = min(best[k], time.perf_counter() - t0)
        rows.append((sym, diff, best["first"], best["compiled"]))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(m.name for m in corpus.MODELS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'model':<14} {'partition':<20} {'diff':>8} {'first ms':>9} {'compiled':>9} {'x':>5}")
    ratios: list[float] = []
    worst = 0.0
    for name in [n for n in args.models.split(",") if n]:
        for sym, diff, t_first, t_cc in compare(name, args.threads, rng):
            ratios.append(t_first / t_cc)
            worst = max(worst, diff)
            print(f"{name:<14} {sym:<20} {diff:8.1e} {t_first * 1e3:9.2f} {t_cc * 1e3:9.2f} {t_first / t_cc:5.2f}",
                  flush=True)  # fmt: skip
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print()
        print(f"largest difference: {worst:.1e}; first tier / compiled, geometric mean: {geo:.2f}x "
              f"(from {min(ratios):.2f}x to {max(ratios):.2f}x), {args.threads} thread(s)")  # fmt: skip
        print(f"load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, lambda: main(sys.argv[1:])))
