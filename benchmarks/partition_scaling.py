"""How the partitioning pipeline scales: `byoc{targets=test ...}` on block graphs of N ops.

Each block is `conv2d -> add(bias) -> relu -> tanh -> add(tanh, relu)`, five ops;
the graph is built in Python (no parsing). The pipeline merges conv2d+add+relu
into a composite (the test target's `conv2d_add_relu` pattern), offloads the
composites and the closing `add`, and leaves `tanh` on the host, so every
block makes a partition boundary: a 20k-op graph becomes 4k partitions.

    python benchmarks/partition_scaling.py                    # 1k, 5k, 20k, 100k ops
    python benchmarks/partition_scaling.py --sizes 1000,2000 --repeat 3
    python benchmarks/partition_scaling.py --per-block-weights   # a weight pair per conv

By default every conv shares one weight and one bias constant (the setting of
the TVM comparison below); bind-constants copies them into each partition. Prints, per size N: the pass time (wall seconds, best of
--repeat, and the CPU seconds of that run), ops/s, time(N)/time(N/2) (N/2 is
timed too, in alternation with N), the number of partitions and the time of
each pass. The graph is
built, collected and frozen (`gc.freeze()`) before the clock starts: the
passes' own garbage is still collected, the graph's millions of objects are
not rescanned. If `tvm` is importable, TVM Relax's FuseOpsByPattern +
MergeCompositeFunctions runs on the same graph and the ratio is printed.
`--proposal` times the pure region proposal on random DAGs with three targets
and on its adversarial case instead.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from dataclasses import dataclass
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
from byoc.passes.region_proposal import RegionGraph, propose_regions

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
        w = nn.ConstantOp.from_array(
            rng.standard_normal((CHANNELS, CHANNELS, 3, 3)).astype(np.float32) * 0.1
        )
        b = nn.ConstantOp.from_array(
            rng.standard_normal((1, CHANNELS, 1, 1)).astype(np.float32) * 0.1
        )
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


@dataclass
class Timing:
    seconds: float
    """Wall time of the four passes."""
    cpu: float
    """CPU time of this process over the same span."""
    per_pass: dict[str, float]
    partitions: int


def time_once(n_ops: int, shared_weights: bool) -> Timing:
    """One run of the four passes on a freshly built graph."""
    ctx = make_context()
    module = build_graph(n_ops, shared_weights)
    gc.collect()
    gc.freeze()
    try:
        per_pass: dict[str, float] = {}
        start, cpu = time.perf_counter(), time.process_time()
        for p in PIPELINE:
            t0 = time.perf_counter()
            p.apply(ctx, module)
            per_pass[p.name] = time.perf_counter() - t0
        timing = Timing(time.perf_counter() - start, time.process_time() - cpu, per_pass, 0)
    finally:
        gc.unfreeze()
    timing.partitions = sum(1 for op in module.ops if isinstance(op, FuncOp)) - 1
    del module
    gc.collect()
    return timing


def time_pipeline(sizes: list[int], repeat: int, shared_weights: bool) -> dict[int, Timing]:
    """The fastest of `repeat` runs per size; the sizes take turns in each round, so a
    burst of load on the machine hits them alike and the ratios stay fair."""
    best: dict[int, Timing] = {}
    for _ in range(repeat):
        for n in sizes:
            t = time_once(n, shared_weights)
            if n not in best or t.seconds < best[n].seconds:
                best[n] = t
    return best


def time_tvm(n_ops: int, shared_weights: bool) -> float | None:
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

    def consts() -> tuple[Any, Any]:
        w = relax.const(rng.standard_normal((CHANNELS, CHANNELS, 3, 3)).astype("float32"))
        b = relax.const(rng.standard_normal((1, CHANNELS, 1, 1)).astype("float32"))
        return w, b

    shared = consts() if shared_weights else None
    with bb.function("main", [x]):
        with bb.dataflow():
            v: Any = x
            for _ in range(max(1, n_ops // OPS_PER_BLOCK)):
                w, b = shared if shared is not None else consts()
                conv = bb.emit(relax.op.nn.conv2d(v, w, padding=(1, 1)))
                biased = bb.emit(relax.op.add(conv, b))
                relu = bb.emit(relax.op.nn.relu(biased))
                tanh = bb.emit(relax.op.tanh(relu))
                v = bb.emit(relax.op.add(tanh, relu))
            out = bb.emit_output(v)
        bb.emit_func_output(out)
    mod = bb.get()
    pattern = is_op("relax.nn.relu")(
        is_op("relax.add")(is_op("relax.nn.conv2d")(wildcard(), wildcard()), wildcard())
    )
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


def random_region_graph(n: int, targets: int, seed: int = 0) -> RegionGraph:
    """A random DAG: each node has 1-2 predecessors, mostly among the 8 before it; a third
    of the nodes are host nodes, the rest split evenly among `targets` targets."""
    rng = random.Random(seed)
    names: list[str | None] = [None, *(f"t{i}" for i in range(targets))]
    tags = [rng.choice(names) for _ in range(n)]
    preds: list[list[int]] = [[]]
    for v in range(1, n):
        ps = set()
        for _ in range(rng.randint(1, 2)):
            near = rng.random() < 0.8
            ps.add(rng.randint(max(0, v - 8), v - 1) if near else rng.randint(0, v - 1))
        preds.append(sorted(ps))
    return RegionGraph(tags, preds)


def adversarial_region_graph(n: int) -> RegionGraph:
    """The worst case of `propose_regions`: half the nodes hang below one T node; then
    rounds of host -> S -> T make every new S group reach that T group again."""
    tags: list[str | None] = ["T"]
    preds: list[list[int]] = [[]]
    for _ in range(n // 2):
        tags.append(None)
        preds.append([len(tags) - 2])
    tags.append("S")
    preds.append([])
    last_s = len(tags) - 1
    while len(tags) < n:
        tags += [None, "S", "T"]
        preds += [[last_s], [len(tags) - 3], [len(tags) - 2]]
        last_s = len(tags) - 2
    return RegionGraph(tags, preds)


def proposal_scaling() -> None:
    """Time `propose_regions` alone (the pure proposal) on random and adversarial DAGs."""
    print("propose_regions, CPU seconds (best of 3)")
    print(f"{'nodes':>8} {'random, 3 targets':>18} {'groups':>7} {'adversarial':>12}")
    for n in (10_000, 20_000, 40_000, 80_000):
        g = random_region_graph(n, 3)
        best = min(_cpu(propose_regions, g) for _ in range(3))
        groups = len({x for x in propose_regions(g) if x >= 0})
        adv = adversarial_region_graph(n // 10)
        worst = min(_cpu(propose_regions, adv) for _ in range(3))
        print(f"{n:>8} {best:>18.3f} {groups:>7} {worst:>9.3f} ({n // 10} nodes)")


def _cpu(fn: Any, arg: Any) -> float:
    start = time.process_time()
    fn(arg)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="1000,5000,20000,100000", help="comma-separated op counts"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per size; the fastest is reported"
    )
    parser.add_argument(
        "--per-block-weights", action="store_true", help="a weight/bias pair per conv"
    )
    parser.add_argument(
        "--no-ratios", action="store_true", help="do not time N/2 for time(N)/time(N/2)"
    )
    parser.add_argument(
        "--proposal", action="store_true", help="time propose_regions alone instead"
    )
    args = parser.parse_args(argv)
    if args.proposal:
        proposal_scaling()
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    shared = not args.per_block_weights
    print(
        f"byoc{{targets=test patterns=conv2d_add_relu ops=add}}, best of {args.repeat}, "
        f"{'shared' if shared else 'per-block'} weights"
    )
    print(
        f"{'ops':>8} {'seconds':>8} {'cpu':>7} {'ops/s':>8} {'t(N)/t(N/2)':>11} {'partitions':>10}  per pass (s)"
    )
    tvm_missing = False
    for n in sizes:
        timed = time_pipeline([n // 2, n] if not args.no_ratios else [n], args.repeat, shared)
        t = timed[n]
        ratio = "" if args.no_ratios else f"{t.seconds / timed[n // 2].seconds:.2f}"
        passes = "  ".join(f"{k} {v:.3f}" for k, v in t.per_pass.items())
        print(
            f"{n:>8} {t.seconds:>8.3f} {t.cpu:>7.3f} {n / t.seconds:>8.0f} {ratio:>11} "
            f"{t.partitions:>10}  {passes}"
        )
        tvm_seconds = None if tvm_missing else time_tvm(n, shared)
        if tvm_seconds is None:
            tvm_missing = True
        else:
            print(f"{'':>8} TVM Relax {tvm_seconds:.3f} s ({tvm_seconds / t.seconds:.1f}x byoc)")
        sys.stdout.flush()
    if tvm_missing:
        print("tvm is not importable: no TVM comparison")
    return 0


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
