"""How the partitioning pipeline scales: `byoc{targets=test ...}` on block graphs of N ops.

Each block is `conv2d -> add(bias) -> relu -> tanh -> add(tanh, relu)`, five ops;
the graph is built in Python (no parsing). The pipeline merges conv2d+add+relu
into a composite (the test target's `conv2d_add_relu` pattern), offloads the
composites and the closing `add`, and leaves `tanh` on the host, so every
block makes a partition boundary: a 20k-op graph becomes 4k partitions.

    python benchmarks/partition_scaling.py                 # 1k, 5k, 20k, 100k ops
    python benchmarks/partition_scaling.py --sizes 1000,2000 --repeat 3
    python benchmarks/partition_scaling.py --shared-weights   # one weight for every conv

Prints, per size: pass seconds (best of --repeat), ops/s, and
time(N)/time(N/2) when the size before it is half as large (the sizes double
internally: 1k, 2k, 5k, 10k, 20k, 40k, 100k when --ratios is on), and the time of
each pass. If `tvm` is importable, TVM Relax's FuseOpsByPattern +
MergeCompositeFunctions runs on the same graph and the ratio is printed.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from byoc.context import make_context
from byoc.dialects import nn
from byoc.passes.annotate_target import AnnotateTargetPass
from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
from byoc.passes.merge_composite import MergeCompositePass
from byoc.passes.partition import PartitionPass

OPS_PER_BLOCK = 5
CHANNELS = 4
SPATIAL = 8


def build_graph(n_ops: int, shared_weights: bool = False, seed: int = 0) -> ModuleOp:
    """A module whose @main chains n_ops // 5 blocks (plus their weight constants)."""
    rng = np.random.default_rng(seed)
    ty = nn.tensor((1, CHANNELS, SPATIAL, SPATIAL))
    block = Block(arg_types=[ty])
    x = block.args[0]

    def weights() -> tuple[nn.ConstantOp, nn.ConstantOp]:
        w = nn.ConstantOp.from_array(rng.standard_normal((CHANNELS, CHANNELS, 3, 3)).astype(np.float32) * 0.1)
        b = nn.ConstantOp.from_array(rng.standard_normal((1, CHANNELS, 1, 1)).astype(np.float32) * 0.1)
        block.add_ops([w, b])
        return w, b

    shared = weights() if shared_weights else None
    for _ in range(max(1, n_ops // OPS_PER_BLOCK)):
        w, b = shared if shared is not None else weights()
        conv = nn.Conv2DOp.build(x, w, padding=(1, 1, 1, 1))
        biased = nn.AddOp.build(conv, b)
        relu = nn.ReluOp.build(biased)
        tanh = nn.TanhOp.build(relu)
        out = nn.AddOp.build(tanh, relu)
        block.add_ops([conv, biased, relu, tanh, out])
        x = out.results[0]
    block.add_op(ReturnOp(x))
    func = FuncOp("main", ([ty], [ty]), Region(block))
    return ModuleOp([func])


PIPELINE = (
    MergeCompositePass(targets=("test",), patterns=("conv2d_add_relu",)),
    AnnotateTargetPass(targets=("test",), ops=("add",)),
    MergeCompilerRegionsPass(),
    PartitionPass(),
)


def time_pipeline(n_ops: int, repeat: int, shared_weights: bool) -> tuple[float, dict[str, float], int]:
    """Best total pass time over `repeat` fresh graphs, per-pass times of that run, partitions."""
    ctx = make_context()
    best: tuple[float, dict[str, float], int] | None = None
    for _ in range(repeat):
        module = build_graph(n_ops, shared_weights)
        gc.collect()
        gc.disable()
        try:
            per_pass: dict[str, float] = {}
            start = time.perf_counter()
            for p in PIPELINE:
                t0 = time.perf_counter()
                p.apply(ctx, module)
                per_pass[p.name] = time.perf_counter() - t0
            total = time.perf_counter() - start
        finally:
            gc.enable()
        partitions = sum(1 for op in module.ops if isinstance(op, FuncOp)) - 1
        if best is None or total < best[0]:
            best = (total, per_pass, partitions)
    assert best is not None
    return best


def time_tvm(n_ops: int) -> float | None:
    """TVM Relax FuseOpsByPattern + MergeCompositeFunctions on the same graph, if tvm is installed."""
    try:
        import tvm  # type: ignore[import-not-found]
        from tvm import relax  # type: ignore[import-not-found]
        from tvm.relax.dpl import is_op, wildcard  # type: ignore[import-not-found]
    except ImportError:
        return None
    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((1, CHANNELS, SPATIAL, SPATIAL), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            v: Any = x
            for _ in range(max(1, n_ops // OPS_PER_BLOCK)):
                w = relax.const(rng.standard_normal((CHANNELS, CHANNELS, 3, 3)).astype("float32"))
                b = relax.const(rng.standard_normal((1, CHANNELS, 1, 1)).astype("float32"))
                conv = bb.emit(relax.op.nn.conv2d(v, w, padding=(1, 1)))
                biased = bb.emit(relax.op.add(conv, b))
                relu = bb.emit(relax.op.nn.relu(biased))
                tanh = bb.emit(relax.op.tanh(relu))
                v = bb.emit(relax.op.add(tanh, relu))
            out = bb.emit_output(v)
        bb.emit_func_output(out)
    mod = bb.get()
    pattern = is_op("relax.nn.relu")(is_op("relax.add")(is_op("relax.nn.conv2d")(wildcard(), wildcard()), wildcard()))
    add_pattern = is_op("relax.add")(wildcard(), wildcard())
    seq = tvm.transform.Sequential(
        [
            relax.transform.FuseOpsByPattern(
                [("test.conv2d_add_relu", pattern), ("test.add", add_pattern)]
            ),
            relax.transform.MergeCompositeFunctions(),
        ]
    )
    start = time.perf_counter()
    seq(mod)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,20000,100000", help="comma-separated op counts")
    parser.add_argument("--repeat", type=int, default=2, help="runs per size; the best is reported")
    parser.add_argument("--shared-weights", action="store_true", help="one weight/bias pair for all convs")
    parser.add_argument("--no-ratios", action="store_true", help="do not time N/2 for time(N)/time(N/2)")
    parser.add_argument("--tvm", action="store_true", help="also time TVM Relax when tvm is importable")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"byoc{{targets=test patterns=conv2d_add_relu ops=add}}, best of {args.repeat}, "
          f"{'shared' if args.shared_weights else 'per-block'} weights")
    header = f"{'ops':>8} {'seconds':>9} {'ops/s':>10} {'t(N)/t(N/2)':>12} {'partitions':>10}  per pass"
    print(header)
    for n in sizes:
        seconds, per_pass, partitions = time_pipeline(n, args.repeat, args.shared_weights)
        ratio = ""
        if not args.no_ratios:
            half, _, _ = time_pipeline(n // 2, args.repeat, args.shared_weights)
            ratio = f"{seconds / half:.2f}"
        passes = "  ".join(f"{k} {v:.3f}" for k, v in per_pass.items())
        print(f"{n:>8} {seconds:>9.3f} {n / seconds:>10.0f} {ratio:>12} {partitions:>10}  {passes}")
        if args.tvm:
            tvm_seconds = time_tvm(n)
            if tvm_seconds is None:
                print("         tvm is not importable; skipping the TVM comparison")
            else:
                print(f"         TVM Relax {tvm_seconds:.3f} s ({tvm_seconds / seconds:.1f}x byoc)")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
