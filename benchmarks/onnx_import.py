"""Import time of a long ONNX chain: `byoc.import_onnx` against onnxruntime's session creation.

    python benchmarks/onnx_import.py                 # 5k, 20k and 100k nodes
    python benchmarks/onnx_import.py 20000 --repeat 5

Each model is one chain over a 1x8x8x8 float tensor, repeating the block

    Conv(3x3, pad 1, its own weights and bias) -> Add(bias) -> Relu -> Mul(scale)
    -> Reshape(1x8x64) -> Softmax(axis -1) -> Reshape(1x8x8x8) -> Sigmoid

until it has N nodes: every Conv has its own initializers (as in an exported
model), the Add, Mul and Reshape operands are shared initializers. The model is
written to a file once; both sides then start from that file, in this
process: `byoc.import_onnx(path)` (reading, typing, folding and building the
verified `nn` module) and `onnxruntime.InferenceSession(path)` (reading,
graph optimisation at the default level, kernel creation; CPU provider, one
intra-op thread). The two take turns, best of `--repeat` rounds; the ratio is
byoc over onnxruntime, and the per-node figures show whether the cost stays
linear in the graph's size.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

CHANNELS, SIDE = 8, 8
BLOCK = ("Conv", "Add", "Relu", "Mul", "Reshape", "Softmax", "Reshape", "Sigmoid")


def chain_model(nodes: int, seed: int = 0) -> Any:
    """A ModelProto with `nodes` nodes: the `BLOCK` repeated (the last block cut short)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    shape = [1, CHANNELS, SIDE, SIDE]
    initializers = [
        numpy_helper.from_array(
            rng.standard_normal((1, CHANNELS, 1, 1)).astype(np.float32), "bias"
        ),
        numpy_helper.from_array(np.full((1,), 0.5, np.float32), "scale"),
        numpy_helper.from_array(np.array([1, CHANNELS, SIDE * SIDE], np.int64), "flat"),
        numpy_helper.from_array(np.array(shape, np.int64), "square"),
    ]
    graph_nodes = []
    prev = "x"
    for i in range(nodes):
        kind = BLOCK[i % len(BLOCK)]
        out = f"t{i}"
        if kind == "Conv":
            w = rng.standard_normal((CHANNELS, CHANNELS, 3, 3)).astype(np.float32) * 0.1
            b = rng.standard_normal(CHANNELS).astype(np.float32)
            initializers += [
                numpy_helper.from_array(w, f"w{i}"),
                numpy_helper.from_array(b, f"b{i}"),
            ]
            node = helper.make_node(
                "Conv", [prev, f"w{i}", f"b{i}"], [out], kernel_shape=[3, 3], pads=[1, 1, 1, 1]
            )
        elif kind == "Add":
            node = helper.make_node("Add", [prev, "bias"], [out])
        elif kind == "Mul":
            node = helper.make_node("Mul", [prev, "scale"], [out])
        elif kind == "Reshape":
            target = "flat" if (i % len(BLOCK)) == 4 else "square"
            node = helper.make_node("Reshape", [prev, target], [out])
        elif kind == "Softmax":
            node = helper.make_node("Softmax", [prev], [out], axis=-1)
        else:
            node = helper.make_node(kind, [prev], [out])
        node.name = f"n{i}"
        graph_nodes.append(node)
        prev = out
    out_shape = [1, CHANNELS, SIDE * SIDE] if (nodes - 1) % len(BLOCK) in (4, 5) else shape
    graph = helper.make_graph(
        graph_nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, out_shape)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def time_into(fn: Callable[[], object], rounds: list[float]) -> None:
    """Append the seconds of one call of `fn` to `rounds` (after a full collection, so that
    garbage of the previous round is not collected during this one)."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    rounds.append(time.perf_counter() - start)
    del result


def measure(nodes: int, repeat: int) -> tuple[float, float]:
    """(byoc seconds, onnxruntime seconds), each the best of `repeat` alternating rounds."""
    import onnx
    import onnxruntime as ort

    import byoc

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / f"chain{nodes}.onnx")
        onnx.save(chain_model(nodes), path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1

        def session() -> object:
            return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

        def imported() -> object:
            return byoc.import_onnx(path)

        byoc_rounds: list[float] = []
        ort_rounds: list[float] = []
        for _ in range(repeat):
            time_into(imported, byoc_rounds)
            time_into(session, ort_rounds)
    return min(byoc_rounds), min(ort_rounds)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("sizes", nargs="*", type=int, default=[5000, 20000, 100000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import onnxruntime as ort

    # warm both sides up (imports, converter tables, onnxruntime's kernel registry)
    measure(len(BLOCK), 1)
    print(f"onnxruntime {ort.__version__}; best of {args.repeat} alternating rounds")
    print(
        f"{'nodes':>7} {'byoc s':>8} {'ort s':>8} {'byoc/ort':>9} "
        f"{'byoc us/node':>13} {'ort us/node':>12}"
    )
    for n in args.sizes:
        ours, theirs = measure(n, args.repeat)
        print(
            f"{n:>7} {ours:>8.3f} {theirs:>8.3f} {ours / theirs:>8.2f}x "
            f"{ours / n * 1e6:>13.1f} {theirs / n * 1e6:>12.1f}",
            flush=True,
        )


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
