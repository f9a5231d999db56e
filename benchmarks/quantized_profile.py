"""Where an int8 model's time goes on ccompiler, step by step.

    OPENBLAS_NUM_THREADS=1 python benchmarks/quantized_profile.py [--models cnn,squeezenet,resnet50] [--rounds 20]

Each model of `benchmarks/quantized.py`, quantized by onnxruntime's `quantize_static`, built for
`ccompiler` at one thread. Printed per model:

- every plan step (host kernel or partition call) with its ops and its median wall time over
  `--rounds` profiled runs (`Executable.run_profiled` times each step);
- the partitions that are not a fused int8 block: a partition whose ops include a float op
  between a lone `dequantize` and `quantize` (a float detour), and every host step;
- the fixed per-call cost: the CPU time of `run` on a model of one tiny op (a 1x1 int8 add),
  against which the small model's total can be compared;
- the whole `run` in CPU time (the figure `benchmarks/quantized.py` reports).

Caveat: with one partition per block, every block's output is a fresh array of the host's
(allocated and first touched each call), where one partition would use its arena: the cheap
streaming blocks (qlut, qadd on large maps) look several times dearer here than inside the
merged model; use the figures to find the blocks, not to add them up.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import byoc  # noqa: E402

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from quantized import cnn, data_input, light, quantize  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402

FLOAT_SIDE = {"dequantize", "quantize"}


def cpu_per_call(fn: Any, min_time: float = 0.5) -> float:
    """Median CPU time of the calling thread per call (seconds) over several batches."""
    fn()
    n, t0 = 0, time.thread_time()
    while time.thread_time() - t0 < 0.05:
        fn()
        n += 1
    per = []
    end = time.perf_counter() + min_time
    while time.perf_counter() < end or len(per) < 5:
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        per.append((time.thread_time() - t0) / n)
    return float(np.median(per))


def tiny_model() -> Any:
    """A one-op int8 model: quantize -> dequantize -> add -> quantize -> dequantize at 1x1."""
    import onnx

    s = helper.make_tensor("s", TensorProto.FLOAT, [], [0.05])
    z = helper.make_tensor("z", TensorProto.UINT8, [], [128])
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
        helper.make_node("Add", ["d", "d"], ["a"]),
        helper.make_node("QuantizeLinear", ["a", "s", "z"], ["q2"]),
        helper.make_node("DequantizeLinear", ["q2", "s", "z"], ["y"]),
    ]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], [s, z])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def split(module: Any) -> Any:
    """The `byoc` pipeline without merge-compiler-regions: one partition per op or composite,
    so that `run_profiled` times each one (a call costs about a microsecond more than inside
    one partition)."""
    from byoc.context import make_context
    from byoc.passes.annotate_target import AnnotateTargetPass
    from byoc.passes.merge_composite import MergeCompositePass
    from byoc.passes.partition import PartitionPass
    from byoc.passes.split_dequantize import SplitDequantizePass

    for p in (SplitDequantizePass(), MergeCompositePass(targets=("ccompiler",)),
              AnnotateTargetPass(targets=("ccompiler",)), PartitionPass()):
        p.apply(make_context(), module)
    return module


def classify(ops: tuple[str, ...]) -> str:
    names = [o.split(".")[-1] for o in ops]
    composite = [o for o in ops if o.startswith("ccompiler.") or o.startswith("byoc.composite")]
    floats = [n for n in names if n not in FLOAT_SIDE and not n.startswith("q")]
    if floats and any(n in FLOAT_SIDE for n in names):
        return "float detour"
    if composite or all(n.startswith("q") for n in names):
        return "int8"
    return "other"


def profile(name: str, rounds: int, show_steps: str = "") -> None:
    model = cnn() if name == "cnn" else light(name)
    with tempfile.TemporaryDirectory() as tmp:
        q = quantize(model, Path(tmp))
    vi = data_input(model)
    x = np.random.default_rng(1).standard_normal([d.dim_value for d in vi.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    exe = byoc.build(split(import_model(q)), num_threads=1)
    parts = {p.symbol: p for p in exe.partitions}
    steps = exe.plan.steps
    times: dict[int, list[float]] = defaultdict(list)
    bound = exe._bound  # noqa: SLF001 - per-step times, not per-symbol sums
    arrays = [x]
    for _ in range(rounds):
        _, ts = bound.run_profiled(arrays)
        for i, t in enumerate(ts):
            times[i].append(t)
    med = {i: float(np.median(v)) for i, v in times.items()}
    total_steps = sum(med.values())
    run_cpu = cpu_per_call(lambda: exe.run(x))
    print(f"\n## {name}: {len(steps)} steps, {len(parts)} partitions; run (CPU) {run_cpu * 1e6:.0f} us, "
          f"sum of step medians (wall) {total_steps * 1e6:.0f} us, load {os.getloadavg()[0]:.1f}")
    by_kind: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    for i, step in enumerate(steps):
        if step.kind == "call":
            ops = parts[step.name].ops if step.name in parts else ()
            kind = classify(ops)
            label = " ".join(o.removeprefix("nn.") for o in ops)
        else:
            kind, label = "host", step.name
        by_kind[kind] += med[i]
        if show_steps and show_steps in label:
            shapes = " ".join("x".join(map(str, sp.shape)) + ":" + str(sp.dtype) for sp in step.out_specs)
            print(f"  step {i:3d} {med[i] * 1e6:8.1f} us  {label}  -> {shapes}")
        key = label if len(label) < 60 else label[:57] + "..."
        by_op[f"{kind}: {key}"] += med[i]
    for key, t in sorted(by_op.items(), key=lambda kv: -kv[1]):
        print(f"  {t * 1e6:9.1f} us {100 * t / total_steps:5.1f}%  {key}")
    print("  by kind: " + ", ".join(f"{k} {v * 1e6:.0f} us ({100 * v / total_steps:.0f}%)"
                                    for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])))
    print(f"  outside the steps (per-call overhead of run): {(run_cpu - total_steps) * 1e6:.0f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="cnn,squeezenet,resnet50")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", default="", help="also print each step whose ops contain this text")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    tiny = byoc.build(import_model(tiny_model()), targets=["ccompiler"], num_threads=1)
    xt = np.ones((1, 1), np.float32)
    print(f"fixed cost: one tiny int8 op ({len(tiny.plan.steps)} steps) run in "
          f"{cpu_per_call(lambda: tiny.run(xt)) * 1e6:.1f} us CPU")
    for name in args.models.split(","):
        profile(name, args.rounds, args.steps)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
