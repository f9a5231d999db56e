"""The dnnl target's int8 blocks (issue 13): QDQ conv2d / dense / matmul blocks on oneDNN's
int8 primitives give exactly the reference's integers (and so onnxruntime's and the
ccompiler kernels'), including accumulators beyond 2^24 and the extreme values x = 255,
w = -128/127; where oneDNN's ISA has no VNNI (ONEDNN_MAX_CPU_ISA=AVX2, in a subprocess) the
blocks stay on ccompiler and a dnnl int8 artifact refuses to load.

On a CPU without VNNI the blocks go to ccompiler here too: the comparisons still run (the
answer must be the same), the assertions about where the blocks went follow the CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import byoc
from byoc import run_reference
from byoc.frontend.onnx import import_model
from byoc.targets.dnnl import missing_reason

sys.path.insert(0, str(Path(__file__).parents[1] / "frontend"))
sys.path.insert(0, str(Path(__file__).parents[1] / "lowering"))
from test_nn_to_c_quant import CASES, qdq_conv_model  # noqa: E402
from test_onnx_quant import ort_session, quantize_static_model, small_cnn  # noqa: E402

ort = pytest.importorskip("onnxruntime")
REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"oneDNN extra absent: {REASON}")
Array = np.ndarray[Any, Any]
TARGETS = ["dnnl", "ccompiler"]


def has_int8() -> bool:
    from byoc.targets.dnnl.quant import int8_unavailable_reason

    return int8_unavailable_reason() is None


def composites(module: Any) -> list[str]:
    return [op.composite.data for op in module.walk() if op.name == "byoc.composite"]


def where_blocks_go(model: onnx.ModelProto) -> list[str]:
    module = import_model(model)
    byoc.partition_for(module, targets=TARGETS)
    return [c for c in composites(module) if c.split(".")[1] in ("qconv2d", "qdense", "qmatmul")]


def check(model: onnx.ModelProto, inputs: dict[str, Array], threads: int = 1) -> list[Array]:
    """dnnl,ccompiler == onnxruntime == the numpy reference, integers and floats, exactly."""
    got = check_integer(model, inputs, threads)
    want = ort_session(model).run(None, inputs)
    ref = run_reference(import_model(model), *inputs.values())
    for g, w, r in zip(got, want, ref, strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(g, r)
    return got


def check_integer(
    model: onnx.ModelProto, inputs: dict[str, Array], threads: int = 1, on_dnnl: bool = True
) -> list[Array]:
    """The blocks on dnnl where oneDNN is exact here (`on_dnnl` and VNNI), else on ccompiler,
    and the answer ccompiler's int8 kernels give (exact integer arithmetic)."""
    blocks = where_blocks_go(model)
    where = "dnnl." if on_dnnl and has_int8() else "ccompiler."
    assert blocks and all(b.startswith(where) for b in blocks), blocks
    exe = byoc.build(import_model(model), targets=TARGETS, num_threads=threads)
    got = exe.run(*inputs.values())
    c_only = byoc.build(import_model(model), targets=["ccompiler"]).run(*inputs.values())
    for g, c in zip(got, c_only, strict=True):
        np.testing.assert_array_equal(g, c)
    return got


def exact_here(xt: type, xz: int, w: Array) -> bool:
    """Where oneDNN's s32 result is exact (docs/dnnl.md#int8): a u8 source with zero point 0,
    or 640 * max_c sum_k |w[c, k]| <= 2^24; w laid out (O, ...)."""
    s = int(np.abs(w.astype(np.int64)).reshape(len(w), -1).sum(axis=1).max())
    return (xt == np.uint8 and xz == 0) or s * 640 <= 2**24


def requantize(acc: Array, bias: Array, mult: Array, zp: int, dtype: type, relu: bool = False) -> Array:
    """byoc's requantization in numpy: f32(acc + bias) * mult, clamped, half to even, + zp."""
    info = np.iinfo(dtype)
    lo, hi = np.float32(info.min - zp), np.float32(info.max - zp)
    if relu:
        lo = max(lo, np.float32(0))
    v = (acc + bias).astype(np.int32).astype(np.float32) * mult
    return (np.rint(np.clip(v, lo, hi)).astype(np.int64) + zp).astype(dtype)


@pytest.mark.parametrize("case", sorted(CASES))
def test_qconv2d_on_dnnl_matches_onnxruntime(case: str) -> None:
    model = qdq_conv_model(**CASES[case])  # type: ignore[arg-type]
    c = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    x = (np.random.default_rng(1).standard_normal((2, c, 9, 10)) * 3).astype(np.float32)
    check(model, {"x": x})


def gemm_model(
    kind: str, x_shape: list[int], w: Array, b: Array | None, *, xs: float, xz: Any, ws: Array,
    ys: float, yz: Any, relu: bool = False, conv: dict[str, Any] | None = None,
) -> onnx.ModelProto:
    """Q(x) -> DQ -> Conv / Gemm(transB) / MatMul (DQ(w) [, DQ(b)]) [-> Relu] -> Q: the
    quantized output only. `ws` per tensor (shape ()) or per output channel."""
    o = w.shape[1] if kind == "matmul" else w.shape[0]
    axis = 1 if kind == "matmul" else 0
    inits: dict[str, Array] = {
        "xs": np.asarray(xs, np.float32), "xz": np.asarray(xz),
        "w": w.astype(np.int8), "ws": np.asarray(ws, np.float32), "wz": np.zeros(np.shape(ws), np.int8),
        "ys": np.asarray(ys, np.float32), "yz": np.asarray(yz),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=axis),
    ]
    ins = ["xd", "wd"]
    if b is not None:
        inits["b"] = b.astype(np.int32)
        inits["bs"] = (np.float32(xs) * np.broadcast_to(np.asarray(ws, np.float32), (o,))).astype(np.float32)
        inits["bz"] = np.zeros(o, np.int32)
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0))
        ins.append("bd")
    if kind == "conv":
        nodes.append(helper.make_node("Conv", ins, ["g"], **(conv or {})))
    elif kind == "dense":
        nodes.append(helper.make_node("Gemm", ins, ["g"], transB=1))
    else:
        nodes.append(helper.make_node("MatMul", ins[:2], ["m"]))
        if b is not None:
            nodes.append(helper.make_node("Add", ["m", "bd"], ["g"]))
        else:
            nodes[-1].output[0] = "g"
    last = "g"
    if relu:
        nodes.append(helper.make_node("Relu", ["g"], ["r"]))
        last = "r"
    nodes.append(helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["yq"]))
    y_type = TensorProto.UINT8 if inits["yz"].dtype == np.uint8 else TensorProto.INT8
    graph = helper.make_graph(
        nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("yq", y_type, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("kind", ["dense", "matmul", "matmul-batched"])
@pytest.mark.parametrize("xt", [np.uint8, np.int8])
def test_qdense_and_qmatmul_on_dnnl_match_onnxruntime(kind: str, xt: type) -> None:
    rng = np.random.default_rng(3)
    k, n = 37, 21
    shape = [2, 3, k] if kind == "matmul-batched" else [5, k]
    w = rng.integers(-128, 127, (n, k) if kind == "dense" else (k, n), endpoint=True)
    ws = ((rng.random(n) + 0.1) / 50).astype(np.float32)
    info = np.iinfo(xt)
    model = gemm_model(
        "dense" if kind == "dense" else "matmul", shape, w, rng.integers(-3000, 3000, n),
        xs=0.03, xz=np.asarray(info.min + 100, xt), ws=ws, ys=0.05, yz=np.asarray(120, np.uint8),
        relu=kind == "dense",
    )
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    check(model, {"x": x})


# ---- extreme values: accumulators beyond 2^24, every product at its largest ---------------

EXTREME = {
    # kind, x shape, weight shape, conv attributes
    "conv3x3": ("conv", [1, 65, 5, 6], (4, 65, 3, 3), {}),
    "conv-strided-padded": ("conv", [2, 65, 7, 6], (3, 65, 3, 3), {"strides": [2, 2], "pads": [1, 0, 0, 1]}),
    "depthwise": ("conv", [1, 16, 6, 6], (16, 1, 3, 3), {"group": 16}),
    "grouped": ("conv", [1, 130, 4, 4], (4, 65, 3, 3), {"group": 2}),
    "conv1x1-wide": ("conv", [1, 2049, 4, 4], (4, 2049, 1, 1), {}),
    "conv1x1-strided": ("conv", [1, 1025, 6, 6], (4, 1025, 1, 1), {"strides": [2, 2]}),
    "conv3x3-512": ("conv", [1, 512, 5, 5], (4, 512, 3, 3), {"pads": [1, 1, 1, 1]}),
    "dense": ("dense", [3, 4609], (5, 4609), None),
    "matmul": ("matmul", [3, 4609], (4609, 5), None),
}


FORMS = {
    # x type, x_q everywhere, x zero point, weight magnitude
    "u8": (np.uint8, 255, 0, 127),
    "s8": (np.int8, -128, 127, 127),
    "s8-small-weights": (np.int8, -128, 127, 25),
    "u8-zp-small-weights": (np.uint8, 0, 255, 25),
}


@pytest.mark.parametrize("case", sorted(EXTREME))
@pytest.mark.parametrize(
    "form", [f if f in ("u8", "s8") else pytest.param(f, marks=pytest.mark.slow) for f in sorted(FORMS)]
)
def test_extreme_accumulators_are_exact(case: str, form: str) -> None:
    """x - x_zp = +-255 everywhere, weights +-w per channel (w = 127 / -128 or +-25):
    |accumulator| up to 255 * 128 * K, beyond 2^24 and odd, so a single float32 rounding
    would show. The bias cancels each channel's largest accumulator to 100, and scales 1 make
    the output that number plus the zero point -100: any error in the int32 sum changes the
    integer output.

    dnnl takes the block where oneDNN's s32 result is exact (a u8 source with zero point 0,
    or 640 * max_c sum |w| <= 2^24: quant.exact_accumulator); the other forms must stay on
    ccompiler. Compared with the exact integers and ccompiler's kernels, not with
    onnxruntime or the reference: those evaluate the QDQ graph in float, whose sums round
    above 2^24 (64 off on the padded case)."""
    from byoc.interpreters import qkernels

    kind, x_shape, w_shape, conv = EXTREME[case]
    xt, xv, xz, mag = FORMS[form]
    o = w_shape[1] if kind == "matmul" else w_shape[0]
    w_vals = np.where(np.arange(o) % 2 == 0, mag, -mag - (mag == 127))
    if kind == "matmul":
        w = np.broadcast_to(w_vals, w_shape).copy()
    else:
        w = np.broadcast_to(w_vals.reshape((o,) + (1,) * (len(w_shape) - 1)), w_shape).copy()
    on_dnnl = exact_here(xt, xz, w if kind != "matmul" else w.T)
    xq = np.full(x_shape, xv, xt)
    x = xq.astype(np.float32) - xz  # x_scale 1: quantize gives back xq
    if kind == "conv":
        attrs = conv or {}
        acc = qkernels.qconv2d(
            xq, w.astype(np.int8), np.asarray(xz, xt), np.zeros((), np.int8),
            strides=attrs.get("strides", [1, 1]), padding=attrs.get("pads", [0, 0, 0, 0]),
            dilation=[1, 1], groups=attrs.get("group", 1),
        )  # ONNX pads and byoc padding are both (top, left, bottom, right)
        per_channel = acc.transpose(1, 0, 2, 3).reshape(o, -1)
        bshape: tuple[int, ...] = (1, o, 1, 1)
    else:
        acc = (xq.astype(np.int64) - xz) @ (w.T if kind == "dense" else w).astype(np.int64)
        per_channel = acc.T
        bshape = (1, o)
    assert np.abs(acc).max() > 2**24 or mag == 25 or case == "depthwise"
    bias = -per_channel.max(axis=1).astype(np.int64) + 100
    model = gemm_model(kind, x_shape, w, bias, xs=1.0, xz=np.asarray(xz, xt), ws=np.ones(o, np.float32),
                       ys=1.0, yz=np.asarray(-100, np.int8), conv=conv)
    (got,) = check_integer(model, {"x": x}, on_dnnl=on_dnnl)
    want = np.clip(acc.astype(np.int64) + bias.reshape(bshape) - 100, -128, 127)
    np.testing.assert_array_equal(got.astype(np.int64), want)
    assert (got == 0).any()  # the cancelled accumulators: exact to the unit


@pytest.mark.parametrize("xt", [np.uint8, np.int8])
def test_random_extreme_values_are_exact(xt: type) -> None:
    """x at its type's ends, weights -128/127 at random, zero points at both ends too, padded:
    the exact integers requantized (numpy), ccompiler's kernels, and dnnl agree."""
    from byoc.interpreters import qkernels

    rng = np.random.default_rng(11)
    info = np.iinfo(xt)
    xq = rng.choice([info.min, info.max], (2, 72, 7, 7)).astype(xt)
    w = rng.choice([-128, 127], (24, 72, 3, 3))
    for xz in (info.min, info.max):
        x = xq.astype(np.float32) - np.float32(xz)  # x_scale 1: quantize gives back xq
        bias = rng.integers(-(2**20), 2**20, 24)
        ws = np.full(24, 1e-4, np.float32)
        model = gemm_model("conv", list(x.shape), w, bias, xs=1.0, xz=np.asarray(xz, xt), ws=ws,
                           ys=0.37, yz=np.asarray(128, np.uint8), conv={"pads": [1, 1, 1, 1]})
        (got,) = check_integer(model, {"x": x}, on_dnnl=exact_here(xt, xz, w))
        acc = qkernels.qconv2d(xq, w.astype(np.int8), np.asarray(xz, xt), np.zeros((), np.int8),
                               strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1)
        mult = ((np.float32(1.0) * ws) / np.float32(0.37)).astype(np.float32).reshape(1, 24, 1, 1)
        want = requantize(acc, bias.reshape(1, 24, 1, 1), mult, 128, np.uint8)
        np.testing.assert_array_equal(got, want)
        assert 0 < (got == 0).mean() + (got == 255).mean() < 0.9  # not all saturated


# ---- models, threads, artifacts ----------------------------------------------------------


@pytest.mark.parametrize("activation", ["u8", "s8"])
def test_quantize_static_small_cnn_on_dnnl(tmp_path: Path, activation: str) -> None:
    """onnxruntime's quantizer on the small CNN: identical to onnxruntime, to ccompiler's
    int8 kernels and to the reference, at 1 and 2 threads."""
    q = quantize_static_model(small_cnn(), tmp_path, activation)
    blocks = where_blocks_go(q)
    if has_int8():
        assert {"dnnl.qconv2d", "dnnl.qdense"} <= set(blocks)
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = ort_session(q).run(None, {"x": x})
    c_only = byoc.build(import_model(q), targets=["ccompiler"]).run(x)
    exe = byoc.build(import_model(q), targets=TARGETS, num_threads=1)
    for threads in (1, 2):
        exe.set_num_threads(threads)
        got = exe.run(x)
        for g, w, c in zip(got, want, c_only, strict=True):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(g, c)


@pytest.mark.slow
def test_baseline_dispatch_gives_the_same_integers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BYOC_CPU_DISPATCH=baseline: the engine built without byoc's AVX2 loops (requantize,
    quantize, dequantize) gives onnxruntime's integers too (a separate library build)."""
    monkeypatch.setenv("BYOC_CPU_DISPATCH", "baseline")
    test_quantize_static_small_cnn_on_dnnl(tmp_path, "u8")


def bn_cnn(seed: int = 0) -> onnx.ModelProto:
    """conv -> BatchNormalization -> relu -> conv: onnxruntime's quantizer keeps the batch norm
    in float with dequantized (QDQ) parameters, as in the light resnet50."""
    rng = np.random.default_rng(seed)
    inits = {
        "W1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
        "g": (rng.random(8) + 0.5).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32) * 0.1,
        "m": rng.standard_normal(8).astype(np.float32) * 0.1, "v": (rng.random(8) + 0.5).astype(np.float32),
        "W2": rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * 0.3,
    }
    nodes = [
        helper.make_node("Conv", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("Conv", ["r", "W2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_batch_norm_with_dequantized_parameters_stays_on_dnnl(tmp_path: Path) -> None:
    """The batch norm and its dequantized parameters join the dnnl partition (the parameters
    dequantized once at init, the norm computed as the reference does): onnxruntime's and
    ccompiler's integers."""
    q = quantize_static_model(bn_cnn(), tmp_path, "u8")
    module = import_model(q)
    byoc.partition_for(module, targets=TARGETS)
    on_c = [op.name for f in module.ops if "ccompiler" in getattr(getattr(f, "sym_name", None), "data", "")
            for op in f.walk() if op.name.startswith("nn.")]
    if has_int8():
        assert "nn.batch_norm" not in on_c
    x = np.random.default_rng(2).standard_normal((1, 3, 12, 12)).astype(np.float32)
    got = byoc.build(import_model(q), targets=TARGETS).run(x)
    for g, w, c in zip(got, ort_session(q).run(None, {"x": x}),
                       byoc.build(import_model(q), targets=["ccompiler"]).run(x), strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(g, c)


def _light(name: str) -> onnx.ModelProto:
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from support.onnx_harness import light_models, randomize_weights

    model = randomize_weights(onnx.load(light_models()[name]), seed=0)
    model.ir_version = 7
    return onnx.version_converter.convert_version(model, 13)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_quantize_static_light_model_on_dnnl(tmp_path: Path, name: str) -> None:
    """The same integers as the model built for ccompiler alone (whose distance to
    onnxruntime, a step from its fused integer pools, tests/lowering/test_nn_to_c_quant.py
    pins), the same top-1 as onnxruntime, at 1 and 2 threads."""
    q = quantize_static_model(_light(name), tmp_path, "u8")
    if has_int8():
        assert "dnnl.qconv2d" in where_blocks_go(q)
    inits = {t.name for t in q.graph.initializer}
    (data,) = [i for i in q.graph.input if i.name not in inits]
    x = np.random.default_rng(6).standard_normal([d.dim_value for d in data.type.tensor_type.shape.dim])
    x = x.astype(np.float32)
    c_only = byoc.build(import_model(q), targets=["ccompiler"]).run(x)
    want = ort_session(q).run(None, {data.name: x})
    exe = byoc.build(import_model(q), targets=TARGETS, num_threads=1)
    for threads in (1, 2):
        exe.set_num_threads(threads)
        for g, c, w in zip(exe.run(x), c_only, want, strict=True):
            np.testing.assert_array_equal(g, c)
            assert g.reshape(g.shape[0], -1).argmax(1).tolist() == w.reshape(w.shape[0], -1).argmax(1).tolist()


_LOAD_SCRIPT = """
import json, sys
import numpy as np
import byoc
data = np.load(sys.argv[2])
try:
    got = byoc.load_module(sys.argv[1]).run(data["x"])
except Exception as e:  # the engine refuses at init (load)
    print(json.dumps({"error": str(e)}))
    sys.exit(0)
print(json.dumps({"equal": all(np.array_equal(g, w) for g, w in zip(got, [data["want"]]))}))
"""


def _int8_artifact(tmp_path: Path) -> tuple[Path, Path]:
    q = quantize_static_model(small_cnn(), tmp_path, "u8")
    x = np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)
    exe = byoc.build(import_model(q), targets=TARGETS)
    artifact = tmp_path / "model.byoc"
    exe.export_library(str(artifact))
    np.savez(tmp_path / "io.npz", x=x, want=ort_session(q).run(None, {"x": x})[0])
    (tmp_path / "load.py").write_text(_LOAD_SCRIPT)
    return artifact, tmp_path / "io.npz"


def _run_loader(tmp_path: Path, artifact: Path, io: Path, **env: str) -> dict[str, Any]:
    full = dict(os.environ, BYOC_CACHE_DIR=str(tmp_path / "fresh_cache"), CC="false", **env)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "load.py"), str(artifact), str(io)],
        capture_output=True, text=True, env=full, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_int8_artifact_reloaded_in_a_fresh_process(tmp_path: Path) -> None:
    artifact, io = _int8_artifact(tmp_path)
    assert _run_loader(tmp_path, artifact, io) == {"equal": True}


_NO_VNNI_SCRIPT = """
import json, sys
import numpy as np
sys.path[:0] = sys.argv[1:3]
from test_nn_to_c_quant import qdq_conv_model
from test_onnx_quant import ort_session
import byoc
from byoc.frontend.onnx import import_model
from byoc.targets.dnnl.quant import effective_isa, int8_unavailable_reason
m = qdq_conv_model(np.uint8, np.uint8)
mod = import_model(m)
byoc.partition_for(mod, targets=["dnnl", "ccompiler"])
comps = [op.composite.data for op in mod.walk() if op.name == "byoc.composite"]
x = np.full((2, 8, 9, 10), 1e3, np.float32)  # x_q = 255 everywhere
got = byoc.build(import_model(m), targets=["dnnl", "ccompiler"]).run(x)
want = ort_session(m).run(None, {"x": x})
print(json.dumps({"isa": effective_isa(), "reason": int8_unavailable_reason(), "composites": comps,
                  "equal": all(np.array_equal(g, w) for g, w in zip(got, want))}))
"""


def test_without_vnni_the_blocks_stay_on_ccompiler_and_artifacts_refuse(tmp_path: Path) -> None:
    """ONEDNN_MAX_CPU_ISA=AVX2 (read by oneDNN at its first use, so in a subprocess): the
    predicate sees no VNNI, ccompiler takes the block, the answer is onnxruntime's; an
    artifact holding dnnl int8 blocks refuses to run there instead of answering."""
    script = tmp_path / "novnni.py"
    script.write_text(_NO_VNNI_SCRIPT)
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    here = Path(__file__).parents[1]
    done = subprocess.run(
        [sys.executable, str(script), str(here / "lowering"), str(here / "frontend")],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["isa"] is not None and report["isa"] & 0x48 == 0
    assert "no VNNI" in report["reason"]
    assert "ccompiler.qconv2d" in report["composites"] and "dnnl.qconv2d" not in report["composites"]
    assert report["equal"]
    if has_int8():
        artifact, io = _int8_artifact(tmp_path)
        refused = _run_loader(tmp_path, artifact, io, ONEDNN_MAX_CPU_ISA="AVX2")
        assert "VNNI" in refused.get("error", ""), refused
