"""Quantized (int8) models through byoc against the same models in f32 and against onnxruntime.

    OPENBLAS_NUM_THREADS=1 python benchmarks/quantized.py [--models cnn,squeezenet,resnet50] [--rounds 7]
    python benchmarks/quantized.py --quick          # cnn and squeezenet, 3 rounds: a few minutes

Each model (a small CNN — conv 3x3 and depthwise blocks, a residual add, pooling, a dense
layer — and the light models with seeded random weights) is quantized with onnxruntime's
`quantize_static` (QDQ, u8 activations, s8 per-channel weights, calibrated on 4 random
inputs). Four contenders, one thread each, interleaved, best of rounds:

- byoc int8: the QDQ model built for `ccompiler` (int8 kernels of byoc_qkernels.h);
- byoc f32: the float model built for `ccompiler`;
- onnxruntime int8: the QDQ model (onnxruntime fuses it to QLinearConv & co.);
- onnxruntime f32: the float model.

Figures are the calling thread's CPU time (wall time in parentheses), with the load average.
Two goals, printed as `goal:` lines at the end (judged on CPU times): the int8
model at least 1.5x faster than its f32 version on ccompiler (each model), and no slower than
onnxruntime's int8 run (each model, ratio <= 1.0). Also printed: whether byoc's int8 output
equals onnxruntime's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import byoc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from cblas import best_of, fmt2, session  # noqa: E402
from support.onnx_harness import light_models, randomize_weights  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402


def cnn(seed: int = 0) -> onnx.ModelProto:
    """A small mobile-style CNN at 1x3x64x64: conv3x3(32), [dw3x3 + conv1x1(64)] x2 with a
    residual add, global pool, dense(10)."""
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype(np.float32)

    inits = {
        "w0": w(32, 3, 3, 3), "b0": np.zeros(32, np.float32),
        "d1": w(32, 1, 3, 3), "p1": w(64, 32, 1, 1), "b1": np.zeros(64, np.float32),
        "d2": w(64, 1, 3, 3), "p2": w(64, 64, 1, 1), "b2": np.zeros(64, np.float32),
        "fc": w(10, 64), "fb": np.zeros(10, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Conv", ["r0", "d1"], ["c1"], pads=[1, 1, 1, 1], group=32),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "p1", "b1"], ["c2"]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "d2"], ["c3"], pads=[1, 1, 1, 1], group=64),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Conv", ["r3", "p2", "b2"], ["c4"]),
        helper.make_node("Relu", ["c4"], ["r4"]),
        helper.make_node("Add", ["r2", "r4"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def light(name: str) -> onnx.ModelProto:
    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    model.ir_version = 7
    return onnx.version_converter.convert_version(model, 13)


def data_input(model: onnx.ModelProto) -> onnx.ValueInfoProto:
    inits = {t.name for t in model.graph.initializer}
    (vi,) = [i for i in model.graph.input if i.name not in inits]
    return vi


def quantize(model: onnx.ModelProto, tmp: Path) -> onnx.ModelProto:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    vi = data_input(model)
    shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{vi.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self) -> dict[str, Any] | None:
            return next(self.it, None)

    onnx.save(model, tmp / "f.onnx")
    quantize_static(str(tmp / "f.onnx"), str(tmp / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return onnx.load(tmp / "q.onnx")


F32_OVER_INT8_GOAL = 1.5
ORT_GOAL = 1.0


def measure(name: str, rounds: int = 7) -> tuple[str, float, float]:
    """One row of the table, byoc f32 / int8 and byoc int8 / onnxruntime int8 (CPU times)."""
    model = cnn() if name == "cnn" else light(name)
    with tempfile.TemporaryDirectory() as tmp:
        q = quantize(model, Path(tmp))
    vi = data_input(model)
    x = np.random.default_rng(1).standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    threads = {"num_threads": 1} if _has_threads() else {}
    int8 = byoc.build(import_model(q), targets=["ccompiler"], **threads)
    f32 = byoc.build(import_model(model), targets=["ccompiler"], **threads)
    ort_q, ort_f = session(q), session(model)
    feed = {vi.name: x}
    equal = all(np.array_equal(a, b) for a, b in zip(int8.run(x), ort_q.run(None, feed), strict=True))
    t = best_of(
        {
            "int8": lambda: int8.run(x),
            "f32": lambda: f32.run(x),
            "ort_int8": lambda: ort_q.run(None, feed),
            "ort_f32": lambda: ort_f.run(None, feed),
        },
        min_time=2.0 if rounds > 3 else 0.5,
        rounds=rounds,
    )
    own, ort_ratio = t["f32"][1] / t["int8"][1], t["int8"][1] / t["ort_int8"][1]
    row = (
        f"{name} | {fmt2(t['int8'])} | {fmt2(t['f32'])} | {fmt2(t['ort_int8'])} | {fmt2(t['ort_f32'])} | "
        f"{own:.2f}x | {ort_ratio:.2f}x | {equal} | {os.getloadavg()[0]:.1f}"
    )
    return row, own, ort_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="cnn,squeezenet,resnet50")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timed rounds (best kept)")
    parser.add_argument("--quick", action="store_true", help="cnn and squeezenet, 3 rounds")
    args = parser.parse_args()
    if args.quick:
        args.models, args.rounds = "cnn,squeezenet", 3
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    print(
        "model | byoc int8 | byoc f32 | onnxruntime int8 | onnxruntime f32 | byoc f32/int8 | "
        "byoc int8/ort int8 | int8 output equals ort | load"
    )
    own: dict[str, float] = {}
    ort_ratios: dict[str, float] = {}
    for name in args.models.split(","):
        row, own[name], ort_ratios[name] = measure(name, args.rounds)
        print(row, flush=True)

    def line(ratios: dict[str, float], ok: Any) -> str:
        met = [n for n, r in ratios.items() if ok(r)]
        detail = ", ".join(f"{n} {r:.2f}x" for n, r in ratios.items())
        return f"{'met' if len(met) == len(ratios) else 'not met'} ({len(met)} of {len(ratios)}: {detail})"

    print(f"goal: int8 at least {F32_OVER_INT8_GOAL}x faster than byoc's own f32 on ccompiler: "
          + line(own, lambda r: r >= F32_OVER_INT8_GOAL))
    print(f"goal: byoc int8 no slower than onnxruntime int8 (ratio <= {ORT_GOAL}): "
          + line(ort_ratios, lambda r: r <= ORT_GOAL))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


def _has_threads() -> bool:
    import inspect

    return "num_threads" in inspect.signature(byoc.build).parameters


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
