"""The C codegen against numpy, a hand-written C loop and onnxruntime, one thread.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/c_codegen.py [--quick]

1. The seed subgraph ((a + b) - c) * d of four f32 arrays at 10x10, 1000x1000
   and 4096x4096: per-op mode (lower-to-c{fuse=false}), fused mode (the
   default), numpy (the expression as written, and its best case: three ufuncs
   writing into preallocated arrays) and a hand-written fused C loop compiled
   with the same flags, called
   through cffi with pointers cast once (a "bare" cffi call). Prints the
   median time (contenders interleaved round by round), the speed-up over numpy and the fraction of the hand-written
   loop's speed. The per-call overhead at 10x10 is the generated partition's
   time minus the bare call's (both compute the same 100 elements).
2. dense 1x1024 . (1024x1024)^T + bias, relu, and a 3x3 conv2d (padding 1)
   of 1x64x56x56 by 64x64x3x3, against numpy (byoc.interpreters.kernels, the reference)
   and onnxruntime with intra_op_num_threads=1.

Targets: fused >= 2x numpy at both large sizes and >= 90 % of the
hand-written loop; overhead < 2 us above the bare cffi call.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BYOC_NUM_THREADS"):  # 1-thread figures
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import cffi  # noqa: E402
import numpy as np  # noqa: E402

from byoc.context import make_context, parse_module  # noqa: E402
from byoc.interpreters.kernels import KERNELS  # noqa: E402
from byoc.lowering.c_build import build_c_module  # noqa: E402
from byoc.lowering.nn_to_c import LowerToCPass  # noqa: E402
from byoc.runtime.c_module import CModule  # noqa: E402
from byoc.runtime.toolchain import DEFAULT_FLAGS, compile_source  # noqa: E402

SEED = """
func.func private @ccompiler_seed(%a: tensor<{s}xf32>, %b: tensor<{s}xf32>, %c: tensor<{s}xf32>, %d: tensor<{s}xf32>) -> tensor<{s}xf32> attributes {{byoc.compiler = "ccompiler"}} {{
  %0 = nn.add %a, %b : tensor<{s}xf32>
  %1 = nn.subtract %0, %c : tensor<{s}xf32>
  %2 = nn.multiply %1, %d : tensor<{s}xf32>
  func.return %2 : tensor<{s}xf32>
}}
"""

HAND_WRITTEN = """
#include <stdint.h>
/* The loop one would write by hand for this size (a constant trip count, as the
   generated code has: gcc -O2 vectorizes only loops it needs no epilogue for). */
#define N {n}
__attribute__((visibility("default")))
void seed_fused(const float* restrict a, const float* restrict b, const float* restrict c,
                const float* restrict d, float* restrict out) {{
  for (int64_t i = 0; i < N; ++i) out[i] = ((a[i] + b[i]) - c[i]) * d[i];
}}
"""

DENSE = """
func.func private @ccompiler_dense(%x: tensor<1x1024xf32>) -> tensor<1x1024xf32> attributes {byoc.compiler = "ccompiler"} {
  %w = nn.constant dense<"0x@W@"> : tensor<1024x1024xf32>
  %b = nn.constant dense<"0x@B@"> : tensor<1024xf32>
  %0 = nn.dense %x, %w : (tensor<1x1024xf32>, tensor<1024x1024xf32>) -> tensor<1x1024xf32>
  %1 = nn.bias_add %0, %b {axis = -1 : i64} : (tensor<1x1024xf32>, tensor<1024xf32>) -> tensor<1x1024xf32>
  %2 = nn.relu %1 : tensor<1x1024xf32>
  func.return %2 : tensor<1x1024xf32>
}
"""

CONV = """
func.func private @ccompiler_conv(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32> attributes {byoc.compiler = "ccompiler"} {
  %w = nn.constant dense<"0x@W@"> : tensor<64x64x3x3xf32>
  %0 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32>
  func.return %0 : tensor<1x64x56x56xf32>
}
"""


def compare(contenders: dict[str, Callable[[], Any]], min_time: float = 1.5, min_rounds: int = 15) -> dict[str, float]:
    """Seconds per call of each contender: the median over rounds in which every
    contender runs one batch in turn (so a busy machine slows them all alike).
    A batch lasts about 2 ms; tiny calls are repeated within it."""
    batch: dict[str, int] = {}
    for name, fn in contenders.items():
        fn()
        start = time.perf_counter()
        fn()
        one = max(time.perf_counter() - start, 1e-7)
        batch[name] = max(1, int(2e-3 / one))
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    deadline = time.perf_counter() + min_time
    rounds = 0
    while rounds < min_rounds or (time.perf_counter() < deadline and rounds < 500):
        for name, fn in contenders.items():
            n = batch[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
        rounds += 1
    return {name: statistics.median(values) for name, values in samples.items()}


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} us"
    return f"{seconds * 1e3:8.2f} ms"


def lowered(text: str, fuse: bool) -> CModule:
    module = parse_module(text)
    LowerToCPass(fuse=fuse).apply(make_context(), module)
    return build_c_module(module)


def seed_row(n: int) -> dict[str, float]:
    """Times of the five implementations on n x n arrays."""
    ffi = cffi.FFI()
    ffi.cdef("void seed_fused(const float*, const float*, const float*, const float*, float*);")
    hand = ffi.dlopen(str(compile_source(HAND_WRITTEN.format(n=n * n), DEFAULT_FLAGS).library_path))
    shape = f"{n}x{n}"
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(4))
    out = np.empty_like(a)
    tmp = np.empty_like(a)
    per_op = lowered(SEED.format(s=shape), fuse=False).get_function("ccompiler_seed")
    fused = lowered(SEED.format(s=shape), fuse=True).get_function("ccompiler_seed")
    ptrs = [ffi.cast("float*", x.ctypes.data) for x in (a, b, c, d, out)]
    seed_fused = hand.seed_fused

    def numpy_expr() -> None:
        ((a + b) - c) * d

    def numpy_out() -> None:
        np.add(a, b, out=tmp)
        np.subtract(tmp, c, out=tmp)
        np.multiply(tmp, d, out=out)

    times = compare(
        {
            "numpy": numpy_expr,
            "numpy_out": numpy_out,
            "per-op": lambda: per_op(a, b, c, d, out),
            "fused": lambda: fused(a, b, c, d, out),
            "hand": lambda: seed_fused(*ptrs),
        }
    )
    np.testing.assert_allclose(out, ((a + b) - c) * d, rtol=1e-6)
    return times


def seed_benchmark(sizes: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    print("Seed subgraph ((a + b) - c) * d, f32, 1 thread (median per call)")
    print(
        f"{'size':>9} {'numpy':>11} {'numpy out=':>11} {'per-op':>11} {'fused':>11} {'hand C':>11}"
        "   fused/numpy  fused/numpy-out  fused/hand"
    )
    for n in sizes:
        t = seed_row(n)
        results[f"{n}x{n}"] = t
        print(
            f"{n}x{n:<5} {fmt(t['numpy'])} {fmt(t['numpy_out'])} {fmt(t['per-op'])} {fmt(t['fused'])} "
            f"{fmt(t['hand'])}   {t['numpy'] / t['fused']:10.2f}x {t['numpy_out'] / t['fused']:15.2f}x "
            f"{t['hand'] / t['fused']:10.0%}"
        )
        if n == 10:
            results["overhead"] = t["fused"] - t["hand"]
    print(
        f"per-call overhead at 10x10 above a bare cffi call of the hand-written loop: "
        f"{results['overhead'] * 1e6:.2f} us"
    )
    return results


def ort_session(model: Any) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def dense_conv_benchmark() -> dict[str, Any]:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    results: dict[str, Any] = {}
    print()
    print(f"{'model':>34} {'numpy':>11} {'byoc C':>11} {'ort':>11}  C/numpy  C/ort")

    # dense + bias + relu
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    w = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    lib = lowered(DENSE.replace("@W@", w.tobytes().hex().upper()).replace("@B@", bias.tobytes().hex().upper()), True)
    f = lib.get_function("ccompiler_dense")
    out = np.empty((1, 1024), np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["y0"], transB=1),
            helper.make_node("Relu", ["y0"], ["y"]),
        ],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1024])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")],
    )
    sess = ort_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))

    def numpy_dense() -> None:
        np.maximum(np.matmul(x, w.T) + bias, 0, out=out)

    t = compare({"numpy": numpy_dense, "c": lambda: f(x, out), "ort": lambda: sess.run(None, {"x": x})})
    np.testing.assert_allclose(f(x), np.maximum(x @ w.T + bias, 0), rtol=1e-4, atol=1e-4)
    results["dense"] = t
    print(
        f"{'dense 1x1024 . 1024x1024 +bias relu':>34} {fmt(t['numpy'])} {fmt(t['c'])} {fmt(t['ort'])}"
        f"  {t['numpy'] / t['c']:6.2f}x {t['ort'] / t['c']:6.2f}x"
    )

    # conv 3x3
    xc = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    wc = (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32)
    lib = lowered(CONV.replace("@W@", wc.tobytes().hex().upper()), True)
    g = lib.get_function("ccompiler_conv")
    outc = np.empty((1, 64, 56, 56), np.float32)
    attrs = {"strides": (1, 1), "padding": (1, 1, 1, 1), "dilation": (1, 1), "groups": 1}
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 56, 56])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 56, 56])],
        [numpy_helper.from_array(wc, "w")],
    )
    sess = ort_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    t = compare(
        {
            "numpy": lambda: KERNELS["nn.conv2d"](xc, wc, **attrs),
            "c": lambda: g(xc, outc),
            "ort": lambda: sess.run(None, {"x": xc}),
        },
        min_time=4.0,
    )
    np.testing.assert_allclose(g(xc), KERNELS["nn.conv2d"](xc, wc, **attrs), rtol=1e-3, atol=1e-3)
    results["conv"] = t
    print(
        f"{'conv2d 3x3 1x64x56x56 -> 64':>34} {fmt(t['numpy'])} {fmt(t['c'])} {fmt(t['ort'])}"
        f"  {t['numpy'] / t['c']:6.2f}x {t['ort'] / t['c']:6.2f}x"
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip 4096x4096")
    args = parser.parse_args(argv)
    sizes = [10, 1000] if args.quick else [10, 1000, 4096]
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, flags: {' '.join(DEFAULT_FLAGS)}")
    seed_benchmark(sizes)
    dense_conv_benchmark()
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
