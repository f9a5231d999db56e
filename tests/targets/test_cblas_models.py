"""The light ONNX models (real architectures shipped with onnx) built for `cblas,ccompiler`.

Each runs with seeded random weights (and its logits as an extra output) against
onnxruntime on one thread, as tests/frontend/test_onnx_models.py does for the reference.
squeezenet and resnet50 run by default; the others are `slow` (`make test-slow`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from support.bounds import assert_softmax_and_logits
from support.onnx_harness import (
    light_models,
    onnxruntime_execute,
    randomize_weights,
    softmax_logits_model,
)

import byoc
from byoc.frontend.onnx import import_model

DEFAULT = ("squeezenet", "resnet50")
NAMES = sorted(light_models())
PARAMS = [n if n in DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in NAMES]


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("byoc_cblas_models_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BYOC_CACHE_DIR", str(path))
        yield path


@pytest.mark.parametrize("name", PARAMS)
def test_light_model_on_cblas_and_ccompiler_matches_onnxruntime(name: str) -> None:
    model = softmax_logits_model(randomize_weights(onnx.load(light_models()[name]), seed=0))
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
    expected = onnxruntime_execute(model, [x])
    exe = byoc.build(import_model(model), targets=["cblas", "ccompiler"])
    composites = [op for p in exe.partitions if p.target == "cblas" for op in p.ops]
    assert composites and all(op.startswith("cblas.") for op in composites)
    assert_softmax_and_logits(import_model(model), exe.run(x), expected, name)
