"""Real architectures shipped with onnx (light_*.onnx): import, run on the numpy reference
and through `byoc.build` for the `ccompiler` target, and match the stored output and
onnxruntime.

The stored outputs come from weights that are all 0.02 and do not depend on the
input, so each model also runs with seeded random weights (and its logits, the
input of the final Softmax, as an extra output) against onnxruntime on one thread.
Through build, the host must keep exactly the ops ccompiler's predicates reject.
Six models run through build by default (about 30 s with an empty library cache);
densenet121, zfnet512 and vgg19 are `@pytest.mark.slow` (`make test-slow`).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from support.bounds import (
    assert_softmax_and_logits,
    assert_within,
    normwise_bound,
    reduction_length,
    softmax_bound,
)
from support.onnx_harness import (
    accepting_targets,
    host_ops,
    light_model_output,
    light_models,
    onnxruntime_execute,
    randomize_weights,
    softmax_logits_model,
)

import byoc
from byoc.dialects import nn
from byoc.frontend.onnx import import_model
from byoc.interpreters import run_reference
from byoc.passes.byoc_pipeline import partition_for

NAMES = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]
SLOW = {"vgg19"}  # 550 MB of random weights: about 20 s on this machine
PARAMS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NAMES]


def test_every_light_model_is_listed() -> None:
    assert sorted(light_models()) == NAMES


def _input(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, 224, 224), dtype=np.float32)


@pytest.mark.parametrize("name", PARAMS)
def test_light_model_matches_stored_output(name: str) -> None:
    """The stored output is the softmax of logits that are equal in exact arithmetic and
    of order 1e9-1e20 (every weight is 0.02): a one-ulp difference between two channels'
    summation orders, which differ between CPUs, turns it into a one-hot vector. So the
    logits are compared, against onnxruntime on the same model, and the stored
    probabilities only within the bound the logits' bound implies (here: none)."""
    model = softmax_logits_model(onnx.load(light_models()[name]))
    module = import_model(model)
    x = _input(0)
    actual = run_reference(module, x)
    assert_softmax_and_logits(module, actual, onnxruntime_execute(model, [x]), name)
    stored = light_model_output(name)
    (probs,) = run_reference(import_model(light_models()[name]), x)
    bound = normwise_bound(reduction_length(module), actual[-1])
    if len(actual) == 2:
        bound = softmax_bound(stored, bound)
    assert_within(probs, stored, bound, f"{name} stored output")


@pytest.mark.parametrize("name", PARAMS)
def test_light_model_with_random_weights_matches_onnxruntime(name: str) -> None:
    model = softmax_logits_model(randomize_weights(onnx.load(light_models()[name]), seed=0))
    x = _input(1)
    expected = onnxruntime_execute(model, [x])
    module = import_model(model)
    assert_softmax_and_logits(module, run_reference(module, x), expected, name)
    # the random weights make the output depend on the input, unlike the stored weights
    assert np.ptp(expected[0]) > 1e-3


# ---- through byoc.build for ccompiler ----------------------------------------------

BUILD_DEFAULT = {
    "bvlc_alexnet",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
}
BUILD_PARAMS = [n if n in BUILD_DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in NAMES]
HOST_OPS: dict[str, list[str]] = {}
"""What ccompiler leaves on the host: nothing (LRN has a C kernel since issue 15)."""


def _check_host_ops(module: object, name: str) -> list[str]:
    """Partition for ccompiler; the host ops are exactly those its predicates reject."""
    main = next(iter(module.ops))  # type: ignore[attr-defined]
    rejected = [
        op.name
        for op in main.body.block.ops
        if isinstance(op, nn.NNOp)
        and not isinstance(op, nn.ConstantOp)
        and not accepting_targets(op, ["ccompiler"])
    ]
    host = host_ops(partition_for(module.clone(), ["ccompiler"]))  # type: ignore[attr-defined]
    assert [op.name for op in host] == rejected == HOST_OPS.get(name, [])
    return rejected


@pytest.mark.parametrize("name", BUILD_PARAMS)
def test_light_model_through_ccompiler(name: str) -> None:
    module = import_model(light_models()[name])
    rejected = _check_host_ops(module, name)
    exe = byoc.build(module, targets=["ccompiler"])
    assert {p.target for p in exe.partitions} == {"ccompiler"}
    assert [s.name for s in exe.plan.steps if s.kind == "kernel"] == rejected
    # every LRN splits the C code: one partition before, between and after them
    assert len(exe.partitions) == len(rejected) + 1
    (out,) = exe.run(_input(0))
    (want,) = run_reference(module, _input(0))
    assert out.shape == want.shape and out.dtype == want.dtype  # values: see the stored-output test

    model = softmax_logits_model(randomize_weights(onnx.load(light_models()[name]), seed=0))
    x = _input(1)
    expected = onnxruntime_execute(model, [x])
    module = import_model(model)
    assert_softmax_and_logits(module, byoc.build(module, targets=["ccompiler"]).run(x), expected, name)
    assert np.ptp(expected[0]) > 1e-3
