"""Quantized models with their int8 blocks on oneDNN (the dnnl target) against onnxruntime's int8 run.

    OPENBLAS_NUM_THREADS=1 python benchmarks/dnnl_int8.py [--models cnn,squeezenet,resnet50] [--rounds 7]

The models of benchmarks/quantized.py (a small CNN, the light squeezenet and resnet50 with
seeded random weights), quantized by onnxruntime's `quantize_static` (QDQ, u8 activations,
s8 per-channel weights). Five contenders, one thread each, interleaved, best of rounds:

- byoc int8 dnnl: the QDQ model built for `dnnl,ccompiler` (conv/dense/matmul blocks on
  oneDNN's int8 primitives where they are exact, docs/dnnl.md#int8; the rest on ccompiler);
- onnxruntime int8: the QDQ model (onnxruntime fuses it to QLinearConv & co.);
- byoc int8 ccompiler: the QDQ model built for `ccompiler` (byoc_qkernels.h);
- byoc f32 dnnl: the float model built for `dnnl,ccompiler`;
- onnxruntime f32: the float model.

Figures are the calling thread's CPU time (wall time in parentheses); with one thread
oneDNN's OpenMP region runs on the calling thread. Also printed: how many int8 blocks dnnl
took, and whether the int8 outputs equal byoc's ccompiler build (bit for bit) and
onnxruntime's. The goal: byoc int8 no slower than onnxruntime int8; the last line says whether the geometric mean over the models meets it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import byoc  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cblas import best_of, fmt2, session  # noqa: E402
from quantized import cnn, data_input, light, quantize  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402


def measure(name: str, rounds: int) -> float:
    model = cnn() if name == "cnn" else light(name)
    with tempfile.TemporaryDirectory() as tmp:
        q = quantize(model, Path(tmp))
    vi = data_input(model)
    x = np.random.default_rng(1).standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    module = import_model(q)
    byoc.partition_for(module, targets=["dnnl", "ccompiler"])
    blocks = [op.composite.data for op in module.walk() if op.name == "byoc.composite"]
    gemms = [b for b in blocks if b.split(".")[1] in ("qconv2d", "qdense", "qmatmul")]
    on_dnnl, total = sum(b.startswith("dnnl.") for b in gemms), len(gemms)
    int8_dnnl = byoc.build(import_model(q), targets=["dnnl", "ccompiler"], num_threads=1)
    int8_c = byoc.build(import_model(q), targets=["ccompiler"], num_threads=1)
    f32_dnnl = byoc.build(import_model(model), targets=["dnnl", "ccompiler"], num_threads=1)
    ort_q, ort_f = session(q), session(model)
    feed = {vi.name: x}
    got = int8_dnnl.run(x)
    same_c = all(np.array_equal(a, b) for a, b in zip(got, int8_c.run(x), strict=True))
    same_ort = all(np.array_equal(a, b) for a, b in zip(got, ort_q.run(None, feed), strict=True))
    t = best_of(
        {
            "int8_dnnl": lambda: int8_dnnl.run(x),
            "ort_int8": lambda: ort_q.run(None, feed),
            "int8_c": lambda: int8_c.run(x),
            "f32_dnnl": lambda: f32_dnnl.run(x),
            "ort_f32": lambda: ort_f.run(None, feed),
        },
        min_time=1.0,
        rounds=rounds,
    )
    ratio = t["int8_dnnl"][1] / t["ort_int8"][1]
    print(
        f"{name} | {fmt2(t['int8_dnnl'])} | {fmt2(t['ort_int8'])} | {fmt2(t['int8_c'])} | "
        f"{fmt2(t['f32_dnnl'])} | {fmt2(t['ort_f32'])} | {ratio:.2f}x | "
        f"{t['f32_dnnl'][1] / t['int8_dnnl'][1]:.2f}x | {on_dnnl}/{total} | {same_c} | {same_ort} | "
        f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}",
        flush=True,
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="cnn,squeezenet,resnet50")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from byoc.targets.dnnl.quant import int8_unavailable_reason

    reason = int8_unavailable_reason()
    if reason is not None:
        print(f"note: {reason}")
    print(
        "model | byoc int8 dnnl | onnxruntime int8 | byoc int8 ccompiler | byoc f32 dnnl | "
        "onnxruntime f32 | byoc int8 dnnl / ort int8 | byoc f32/int8 dnnl | int8 blocks on dnnl | "
        "equals ccompiler | equals ort | load average"
    )
    ratios = [measure(name, args.rounds) for name in args.models.split(",")]
    geo = float(np.exp(np.mean(np.log(ratios))))
    met = "met" if geo <= 1.0 else f"not met ({(geo - 1) * 100:.0f}% slower)"
    print(f"goal: byoc int8 / onnxruntime int8 <= 1.0x (geometric mean, 1 thread): {geo:.2f}x -- {met}")


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
