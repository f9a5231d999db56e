"""An int8 model's C kernels on ccompiler, one thread, grouped by kernel function.

    OPENBLAS_NUM_THREADS=1 python benchmarks/quantized_kernels.py [--model squeezenet] [--rounds 5]

The model of `benchmarks/quantized.py` (onnxruntime's `quantize_static`, QDQ), built as one
partition with the kernel profiling hook (`byoc.runtime.kernel_profile`); per kernel call site
the best call over `--rounds` rounds of 10 inferences, summed per C kernel function (all
`byoc_qconv2d_u8_u8` calls together, ...), then the best whole inference. Unlike
`quantized_profile.py` (one partition per block) the blocks run inside the merged model, with
its workspace, as `quantized.py` times them."""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_profile as kp  # noqa: E402
from quantized import cnn, data_input, light, quantize  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="squeezenet")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    model = cnn() if args.model == "cnn" else light(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        q = quantize(model, Path(tmp))
    vi = data_input(model)
    x = np.random.default_rng(1).standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    print(f"{args.model} int8: load average at start {os.getloadavg()[0]:.2f}")
    prof = kp.profile(import_model(q), x, [1], rounds=args.rounds, runs=10, stat="best")[1]
    per: dict[str, float] = defaultdict(float)
    for what, ms in prof["sites"].values():
        if not what.startswith("partition "):
            per[what.split("|")[-1].strip().split("(")[0]] += ms
    for name, ms in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{ms * 1e3:9.1f} µs  {name}")
    print(f"kernels {prof['kernels']:.3f} ms, best inference {prof['run']:.3f} ms, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
