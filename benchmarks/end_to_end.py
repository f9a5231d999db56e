"""End to end: host-only (numpy) vs partitioned executables, and per-call overhead.

    OPENBLAS_NUM_THREADS=1 python benchmarks/end_to_end.py [--models squeezenet,resnet50]

1. For each example (and ONNX light models, random weights): the time of one
   call of `byoc.build(module)` (every op on the numpy host executor) and of
   `byoc.build(module, targets=...)` for ccompiler and examplejson; the ratio
   host / partitioned.
2. Per-call overhead with tiny tensors: the seed subgraph at 10x10 called
   through `Executable.run` (input checks, host plan, output allocation,
   partition call), through the partition's `CFunction` directly, and as a
   bare cffi call of a hand-written C loop with pointers cast once. Printed:
   each time and the differences.

All contenders of one row run in the same process, interleaved, best of rounds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("BYOC_NUM_THREADS", "1")  # 1-thread figures (byoc defaults to every core)

import numpy as np  # noqa: E402

import byoc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def best_of(fns: dict[str, Callable[[], Any]], min_time: float = 1.0, rounds: int = 7) -> dict[str, float]:
    """Seconds per call of each function: interleaved rounds, best round kept."""
    numbers: dict[str, int] = {}
    for name, fn in fns.items():
        fn()
        n, t = 1, 0.0
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            t = time.perf_counter() - t0
            if t > min_time / rounds / max(1, len(fns)):
                break
            n *= 2
        numbers[name] = n
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            n = numbers[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / n)
    return best


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.3f} ms"


def inputs_for(exe: Any, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s.shape).astype(s.dtype) for s in exe.plan.input_specs]


def model_rows(name: str, module: Any) -> None:
    host = byoc.build(module)
    xs = inputs_for(host)
    contenders = {"host (numpy)": lambda: host(*xs)}
    for targets in (["ccompiler"], ["examplejson"]):
        exe = byoc.build(module, targets=targets)
        contenders[",".join(targets)] = lambda exe=exe: exe(*xs)
    times = best_of(contenders)
    base = times["host (numpy)"]
    for label, t in times.items():
        print(f"  {name:<22} {label:<14} {fmt(t)}   host/this = {base / t:6.2f}x")


def light_model(name: str) -> Any | None:
    """An ONNX light model with seeded random weights (the shipped ones are all 0.02)."""
    try:
        import onnx
    except ImportError:
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from support.onnx_harness import randomize_weights

    path = Path(onnx.__file__).parent / "backend/test/data/light" / f"light_{name}.onnx"
    if not path.exists():
        return None
    return byoc.import_onnx(randomize_weights(onnx.load(str(path)), seed=0))


BARE_C = r"""
#include <stddef.h>
void seed_loop(const float* a, const float* b, const float* c, const float* d, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = (a[i] + b[i] - c[i]) * d[i];
}
"""


def overhead_rows() -> None:
    from cffi import FFI

    module = byoc.parse_module((ROOT / "examples/seed_subgraph.mlir").read_text())
    exe = byoc.build(module, targets=["ccompiler"])
    fn = exe.components["ccompiler"].get_function(exe.partitions[0].symbol)
    xs = inputs_for(exe)
    out = np.empty((10, 10), np.float32)

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "bare.c"
        lib = Path(tmp) / "bare.so"
        src.write_text(BARE_C)
        subprocess.run(["cc", "-O2", "-fPIC", "-shared", str(src), "-o", str(lib)], check=True)
        ffi = FFI()
        ffi.cdef("void seed_loop(const float*, const float*, const float*, const float*, float*, size_t);")
        bare = ffi.dlopen(str(lib))
        ptrs = [ffi.cast("float*", ffi.from_buffer(a)) for a in [*xs, out]]
        loop = bare.seed_loop

        times = best_of(
            {
                "bare cffi call": lambda: loop(*ptrs, 100),
                "CFunction(*in, *out)": lambda: fn(*xs, out),
                "Executable.run": lambda: exe(*xs),
            }
        )
    bare_t = times["bare cffi call"]
    for label, t in times.items():
        print(f"  {label:<22} {fmt(t)}   above bare: {fmt(t - bare_t)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="squeezenet,resnet50", help="light ONNX models ('' for none)")
    args = parser.parse_args(argv)
    print("host-only vs partitioned, one call (best of interleaved rounds):")
    for example in ("seed_subgraph.mlir", "small_cnn.mlir"):
        model_rows(example, byoc.parse_module((ROOT / "examples" / example).read_text()))
    for name in [m for m in args.models.split(",") if m]:
        module = light_model(name)
        if module is None:
            print(f"  light_{name}: not available (onnx not installed or model missing)")
            continue
        model_rows(f"light_{name}", module)
    print("per-call overhead, seed subgraph at 10x10:")
    overhead_rows()
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
