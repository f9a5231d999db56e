"""byoc's int8 convolution / dense kernels against onnxruntime's, one layer at a time.

    OPENBLAS_NUM_THREADS=1 python benchmarks/qconv_layers.py [--models resnet50,squeezenet] [--rounds 5]
    python benchmarks/qconv_layers.py --quick        # squeezenet only, 3 rounds
    python benchmarks/qconv_layers.py --models cnn   # benchmarks/quantized.py's small CNN

For every distinct Conv / Gemm shape of the models (the onnx light models, as
benchmarks/quantized.py quantizes them: u8 activations, s8 per-channel weights), a one-block
QDQ model — u8 input -> DequantizeLinear -> Conv(DequantizeLinear(W s8), DequantizeLinear(B
i32)) [-> Relu] -> QuantizeLinear -> u8 output — is built for byoc `ccompiler` (one
`byoc_qconv2d_*` / `byoc_qdwconv2d_*` / `byoc_qdense_*` kernel) and for onnxruntime (which
fuses it to QLinearConv / QGemm), one thread each. Both outputs must be the same integers.
Timings: CPU time of the calling thread, interleaved rounds, best kept; both include a
`run` call's overhead (a few µs each).

Printed per shape: both times, byoc / onnxruntime, and the time lost in the model
((byoc - ort) x the number of layers of that shape), sorted by the time lost; then the
totals per model.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper, shape_inference  # noqa: E402

import byoc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from cblas import best_of, fmt, session  # noqa: E402
from quantized import cnn, light  # noqa: E402

from byoc.frontend.onnx import import_model  # noqa: E402


class Layer(NamedTuple):
    kind: str  # "conv" or "gemm"
    x: tuple[int, ...]  # input shape
    w: tuple[int, ...]  # weight shape (O, C/G, KH, KW) or (N, K)
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    groups: int
    relu: bool

    def label(self) -> str:
        if self.kind == "gemm":
            return f"dense {self.x[-1]}->{self.w[0]} (M={self.x[0]})"
        o, cg, kh, kw = self.w
        extra = f" s{self.strides[0]}" if self.strides != (1, 1) else ""
        extra += f" g{self.groups}" if self.groups > 1 else ""
        extra += f" p{self.pads[0]}" if any(self.pads) and kh == 1 else ""
        return f"{kh}x{kw} {self.x[1]}->{o}{extra} @{self.x[2]}x{self.x[3]}"


def layers(model: onnx.ModelProto) -> dict[Layer, int]:
    """The distinct Conv / Gemm layers of a float model, with their counts."""
    model = shape_inference.infer_shapes(model)
    shapes: dict[str, tuple[int, ...]] = {}
    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        dims = vi.type.tensor_type.shape.dim
        shapes[vi.name] = tuple(d.dim_value for d in dims)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    out: dict[Layer, int] = {}
    for node in model.graph.node:
        nxt = consumers.get(node.output[0], [])
        relu = len(nxt) == 1 and nxt[0].op_type == "Relu"
        a = {at.name: helper.get_attribute_value(at) for at in node.attribute}
        if node.op_type == "Conv":
            w = inits[node.input[1]].shape
            pads = tuple(a.get("pads", [0, 0, 0, 0]))
            layer = Layer("conv", shapes[node.input[0]], w, tuple(a.get("strides", [1, 1])),  # type: ignore[arg-type]
                          (pads[0], pads[1], pads[2], pads[3]), tuple(a.get("dilations", [1, 1])),  # type: ignore[arg-type]
                          int(a.get("group", 1)), relu)
        elif node.op_type == "Gemm" and node.input[1] in inits:
            w = inits[node.input[1]].shape
            if not a.get("transB", 0):
                w = w[::-1]
            layer = Layer("gemm", shapes[node.input[0]], w, (1, 1), (0, 0, 0, 0), (1, 1), 1, relu)
        else:
            continue
        out[layer] = out.get(layer, 0) + 1
    return out


def qdq_layer(layer: Layer, seed: int = 0) -> tuple[onnx.ModelProto, Any]:
    """The one-block QDQ model of a layer (u8 in, u8 out), and an input."""
    rng = np.random.default_rng(seed)
    o = layer.w[0]
    xs = np.float32(0.02)
    ws = ((rng.random(o) + 0.5) / 200).astype(np.float32)
    w = rng.integers(-127, 127, layer.w, endpoint=True).astype(np.int8)
    k = int(np.prod(layer.w[1:]))
    # output scale: about 40 steps per standard deviation of the sums (x, w spread about 73 each)
    ys = np.float32(xs * float(ws.mean()) * 73 * 73 * np.sqrt(k) / 40)
    inits = {
        "xs": np.asarray(xs), "xz": np.asarray(118, np.uint8),
        "w": w, "ws": ws, "wz": np.zeros(o, np.int8),
        "b": rng.integers(-3000, 3000, o).astype(np.int32),
        "bs": (xs * ws).astype(np.float32), "bz": np.zeros(o, np.int32),
        "ys": np.asarray(ys, np.float32), "yz": np.asarray(0 if layer.relu else 128, np.uint8),
    }
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
        helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0),
    ]
    if layer.kind == "conv":
        nodes.append(helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], group=layer.groups,
                                      strides=list(layer.strides), pads=list(layer.pads),
                                      dilations=list(layer.dilations)))
    else:
        nodes.append(helper.make_node("Gemm", ["xd", "wd", "bd"], ["c"], transB=1))
    last = "c"
    if layer.relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    nodes.append(helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["y"]))
    graph = helper.make_graph(
        nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.UINT8, list(layer.x))],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(v, key) for key, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    x = rng.integers(0, 255, layer.x, endpoint=True).astype(np.uint8)
    return model, x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="resnet50,squeezenet")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.4, help="seconds per shape, all rounds")
    parser.add_argument("--quick", action="store_true", help="squeezenet, 3 rounds")
    parser.add_argument("--only", default="", help="only the shapes whose label contains this")
    args = parser.parse_args()
    if args.quick:
        args.models, args.rounds = "squeezenet", 3
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    per_model = {name: layers(cnn() if name == "cnn" else light(name)) for name in args.models.split(",")}
    counts: dict[Layer, dict[str, int]] = {}
    for name, ls in per_model.items():
        for layer, n in ls.items():
            counts.setdefault(layer, {})[name] = n
    rows = []
    for layer, where in counts.items():
        if args.only and args.only not in layer.label():
            continue
        model, x = qdq_layer(layer)
        exe = byoc.build(import_model(model), targets=["ccompiler"], num_threads=1)
        ort = session(model)
        (got,) = exe.run(x)
        (want,) = ort.run(None, {"x": x})
        equal = bool(np.array_equal(got, want))
        t = best_of({"byoc": lambda: exe.run(x), "ort": lambda: ort.run(None, {"x": x})},  # noqa: B023
                    min_time=args.min_time, rounds=args.rounds)
        b, r = t["byoc"][1], t["ort"][1]
        n = sum(where.values())
        rows.append((layer, where, b, r, equal))
        print(f"  {layer.label():34s} x{n:<2d} byoc {fmt(b):>9s}  ort {fmt(r):>9s}  {b / r:5.2f}x"
              f"  equal={equal}  load {os.getloadavg()[0]:.1f}", flush=True)
    rows.sort(key=lambda row: -(row[2] - row[3]) * sum(row[1].values()))
    print("\nsorted by time lost (byoc - ort) x count, CPU time, 1 thread:")
    print("| layer | count | byoc | onnxruntime | byoc / ort | lost in the models | outputs equal |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for layer, where, b, r, equal in rows:
        n = sum(where.values())
        lost = (b - r) * n
        print(f"| {layer.label()} | {n} | {fmt(b)} | {fmt(r)} | {b / r:.2f}x | "
              f"{'-' if lost < 0 else ''}{fmt(abs(lost))} | {'yes' if equal else 'NO'} |")
    for name in per_model:
        tb = sum(b * w[name] for _, w, b, _, _ in rows if name in w)
        tr = sum(r * w[name] for _, w, _, r, _ in rows if name in w)
        if tr:
            print(f"{name}: conv/dense layers, sum over the model: byoc {fmt(tb)}, onnxruntime {fmt(tr)}, "
                  f"{tb / tr:.2f}x")
    print(f"all outputs equal: {all(row[4] for row in rows)}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    from _results import run_recorded

    raise SystemExit(run_recorded(__file__, main))
