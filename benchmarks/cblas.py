"""The cblas target against numpy and onnxruntime, one thread each, in one run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/cblas.py [--quick] [--models squeezenet,resnet50]

1. Ops, each as a one-node ONNX model (+ bias + relu) that onnxruntime runs and
   byoc imports and builds for `cblas`:
   dense 1x1024 . 1024x1024, conv2d 1x64x56x56 -> 64 with a 3x3 kernel (padding 1)
   and with a 1x1 kernel. byoc is timed as the partition's C function writing
   into a preallocated output (what a call costs inside a model) and through
   `Executable.run`; numpy computes the same with BLAS (numpy's own OpenBLAS).
2. The light resnet50 and squeezenet (random weights, seeded) end to end:
   onnxruntime, byoc with `cblas,ccompiler`, and byoc with `ccompiler` alone;
   plus where the byoc time goes (cblas partitions, ccompiler partitions, host).

Every contender of a row runs in the same process, interleaved, best of rounds.
Each figure is the calling thread's CPU time, with the wall time in parentheses:
every contender runs on the calling thread, and on a shared machine CPU time
leaves out the time spent waiting for a core. Goals: each op within 1.2x of
onnxruntime, each model within 1.5x.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("BYOC_CBLAS_THREADS", "1")
os.environ.setdefault("BYOC_NUM_THREADS", "1")  # 1-thread figures (byoc defaults to every core)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the ONNX test harness
from support.onnx_harness import light_models, randomize_weights  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402

Array = np.ndarray[Any, Any]


def best_of(
    fns: dict[str, Callable[[], Any]], min_time: float = 1.0, rounds: int = 7
) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds per call of each function: interleaved rounds, the best round kept.

    CPU is the calling thread's CPU time: every contender runs on the calling thread (one
    OpenBLAS thread, onnxruntime with intra_op_num_threads=1), and on a loaded machine it
    leaves out the time the thread waited for a core."""
    numbers: dict[str, int] = {}
    for name, fn in fns.items():
        fn()
        n = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            if time.perf_counter() - t0 > min_time / rounds / max(1, len(fns)):
                break
            n *= 2
        numbers[name] = n
    best = {name: (float("inf"), float("inf")) for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            n = numbers[name]
            w0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(n):
                fn()
            c1, w1 = time.thread_time(), time.perf_counter()
            wall, cpu = best[name]
            best[name] = (min(wall, (w1 - w0) / n), min(cpu, (c1 - c0) / n))
    return best


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def fmt2(times: tuple[float, float]) -> str:
    """CPU time (wall time)."""
    return f"{fmt(times[1])} ({fmt(times[0])})"


def ratio(a: tuple[float, float], b: tuple[float, float]) -> str:
    return f"{a[1] / b[1]:.2f}x ({a[0] / b[0]:.2f}x)"


# --------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------


def op_model(
    kind: str, rng: np.random.Generator
) -> tuple[onnx.ModelProto, Array, Callable[[Array, Array], Any]]:
    """The ONNX model of one op + bias + relu, its input, and the numpy version (x, out)."""
    if kind == "dense":
        w = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
        b = rng.standard_normal(1024).astype(np.float32)
        x = rng.standard_normal((1, 1024)).astype(np.float32)
        nodes = [
            helper.make_node("Gemm", ["x", "w", "b"], ["y0"], transB=1),
            helper.make_node("Relu", ["y0"], ["y"]),
        ]
        out_shape: tuple[int, ...] = (1, 1024)
        wt = np.ascontiguousarray(w.T)

        def numpy_fn(x: Array, out: Array) -> Any:
            np.matmul(x, wt, out=out)
            np.add(out, b, out=out)
            return np.maximum(out, 0, out=out)

    else:
        k = 3 if kind == "conv3x3" else 1
        pad = k // 2
        w = (rng.standard_normal((64, 64, k, k)) / (8 * k)).astype(np.float32)
        b = rng.standard_normal(64).astype(np.float32)
        x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
        nodes = [
            helper.make_node("Conv", ["x", "w", "b"], ["y0"], pads=[pad] * 4),
            helper.make_node("Relu", ["y0"], ["y"]),
        ]
        out_shape = (1, 64, 56, 56)
        w2 = w.reshape(64, -1)

        def numpy_fn(x: Array, out: Array) -> Any:
            # im2col with a strided view, then one BLAS matmul: numpy's best form of a conv
            xp = np.pad(x[0], ((0, 0), (pad, pad), (pad, pad))) if pad else x[0]
            cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))  # C,H,W,k,k
            cols = cols.transpose(0, 3, 4, 1, 2).reshape(64 * k * k, 56 * 56)
            y = out.reshape(64, 56 * 56)
            np.matmul(w2, cols, out=y)
            y += b[:, None]
            return np.maximum(out, 0, out=out)

    graph = helper.make_graph(
        nodes,
        kind,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), x, numpy_fn


TITLES = {
    "dense": "dense 1x1024 . 1024x1024",
    "conv3x3": "conv2d 1x64x56x56, 64x64x3x3, pad 1",
    "conv1x1": "conv2d 1x64x56x56, 64x64x1x1",
}


def bench_op(kind: str, rng: np.random.Generator) -> str:
    model, x, numpy_fn = op_model(kind, rng)
    sess = session(model)
    exe = byoc.build(import_model(model), targets=["cblas"])
    (part,) = exe.partitions
    fn = exe.components["cblas"].get_function(part.symbol)
    want = sess.run(None, {"x": x})[0]
    out = np.empty_like(want)
    out_np = np.empty_like(want)
    fn(x, out)
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(numpy_fn(x, out_np), want, rtol=1e-3, atol=1e-4)
    t = best_of(
        {
            "numpy": lambda: numpy_fn(x, out_np),
            "ort": lambda: sess.run(None, {"x": x}),
            "cblas": lambda: fn(x, out),
            "run": lambda: exe.run(x),
        }
    )
    return (
        f"| {TITLES[kind]} | {fmt2(t['numpy'])} | {fmt2(t['ort'])} | {fmt2(t['cblas'])} | "
        f"{fmt2(t['run'])} | {ratio(t['cblas'], t['ort'])} |"
    )


def bench_ops(kinds: list[str]) -> None:
    rng = np.random.default_rng(0)
    print("## Ops (+ bias + relu), one thread: CPU time (wall time)\n")
    print(
        "| op | numpy | onnxruntime | byoc cblas (C function) | byoc cblas (Executable.run) "
        "| cblas / onnxruntime |"
    )
    print("|---|---|---|---|---|---|")
    for kind in kinds:
        print(bench_op(kind, rng), flush=True)


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def bench_model(name: str, x: Array) -> str:
    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    sess = session(model)
    iname = sess.get_inputs()[0].name
    module = import_model(model)
    both = byoc.build(module, targets=["cblas", "ccompiler"])
    cc = byoc.build(module, targets=["ccompiler"])
    want = sess.run(None, {iname: x})[0]
    np.testing.assert_allclose(both.run(x)[0], want, rtol=1e-3, atol=1e-4)
    t = best_of(
        {
            "ort": lambda: sess.run(None, {iname: x}),
            "both": lambda: both.run(x),
            "cc": lambda: cc.run(x),
        },
        min_time=3.0,
        rounds=5,
    )
    best: dict[str, float] = {}
    for _ in range(5):
        _, prof = both.run_profiled(x)
        for key, value in prof.items():
            best[key] = min(best.get(key, float("inf")), value)
    split = {"cblas": 0.0, "ccompiler": 0.0, "host": best.get("host", 0.0)}
    for p in both.partitions:
        split[p.target] += best[p.symbol]
    return (
        f"| {name} | {fmt2(t['ort'])} | {fmt2(t['both'])} | {fmt2(t['cc'])} | "
        f"{ratio(t['both'], t['ort'])} | {fmt(split['cblas'])} / {fmt(split['ccompiler'])} / "
        f"{fmt(split['host'])} |"
    )


def bench_models(names: list[str]) -> None:
    print("\n## Light models end to end (random weights), one thread: CPU time (wall time)\n")
    print(
        "| model | onnxruntime | byoc cblas,ccompiler | byoc ccompiler | cblas,ccompiler / onnxruntime "
        "| byoc's time in cblas / ccompiler partitions / host (wall, best profiled run) |"
    )
    print("|---|---|---|---|---|---|")
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    for name in names:
        print(bench_model(name, x), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="ops only")
    p.add_argument("--ops", default="dense,conv3x3,conv1x1")
    p.add_argument("--models", default="resnet50,squeezenet")
    args = p.parse_args()
    print(
        f"onnxruntime {ort.__version__}, numpy {np.__version__}, byoc cblas on OpenBLAS (scipy-openblas32)\n"
    )
    bench_ops([k for k in args.ops.split(",") if k])
    if not args.quick:
        bench_models([m for m in args.models.split(",") if m])


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
