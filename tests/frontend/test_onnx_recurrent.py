"""ONNX LSTM, GRU and RNN (nn.lstm, nn.gru, nn.rnn) against onnxruntime and the ONNX node tests.

Every direction, sequence_lens, initial states, peepholes, linear_before_reset, activations
with alpha/beta, clip; layout 1 (which onnxruntime's CPU provider rejects) against layout 0
transposed; a `?` sequence length."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_within, normwise_bound, reduction_length
from support.onnx_harness import load_node_cases, onnxruntime_execute, run_cases

import byoc
from byoc.dialects import nn
from byoc.frontend.onnx import import_model

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_model(
    op: str,
    *,
    direction: str = "forward",
    layout: int = 0,
    seq: bool = False,
    init: bool = False,
    peep: bool = False,
    lbr: int = 0,
    acts: tuple[list[str], dict[str, list[float]]] | None = None,
    clip: float | None = None,
    input_forget: int = 0,
    t: int = 5,
    b: int = 3,
    i: int = 4,
    h: int = 6,
    dynamic: bool = False,
    seed: int = 0,
) -> tuple[Any, dict[str, np.ndarray]]:
    """One recurrent node with W, R, B as initializers; the other inputs are graph inputs."""
    rng = np.random.default_rng(seed)
    d = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    inits = [
        numpy_helper.from_array((rng.standard_normal((d, g * h, i)) * 0.5).astype(np.float32), "W"),
        numpy_helper.from_array((rng.standard_normal((d, g * h, h)) * 0.5).astype(np.float32), "R"),
        numpy_helper.from_array((rng.standard_normal((d, 2 * g * h)) * 0.5).astype(np.float32), "B"),
    ]
    tdim: Any = "T" if dynamic else t
    xshape = (t, b, i) if layout == 0 else (b, t, i)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [tdim, b, i] if layout == 0 else [b, tdim, i])]
    feeds = {"x": rng.standard_normal(xshape).astype(np.float32)}
    names = ["x", "W", "R", "B"]
    if seq:
        names.append("seq")
        inputs.append(helper.make_tensor_value_info("seq", TensorProto.INT32, [b]))
        feeds["seq"] = rng.integers(1, t + 1, b).astype(np.int32)
    else:
        names.append("")
    state = (d, b, h) if layout == 0 else (b, d, h)
    for name in ("h0", "c0") if op == "LSTM" else ("h0",):
        if init:
            names.append(name)
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state))
            feeds[name] = rng.standard_normal(state).astype(np.float32)
        else:
            names.append("")
    if peep:
        names.append("P")
        inits.append(numpy_helper.from_array(rng.standard_normal((d, 3 * h)).astype(np.float32), "P"))
    while names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    attrs: dict[str, Any] = {"hidden_size": h, "direction": direction}
    if layout:
        attrs["layout"] = 1
    if lbr:
        attrs["linear_before_reset"] = 1
    if input_forget:
        attrs["input_forget"] = 1
    if acts:
        attrs["activations"] = acts[0]
        attrs.update(acts[1])
    if clip:
        attrs["clip"] = clip
    node = helper.make_node(op, names, outs, **attrs)
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), feeds


CASES: list[dict[str, Any]] = [
    dict(op=op, direction=direction, **extra)
    for op in GATES
    for direction in ("forward", "reverse", "bidirectional")
    for extra in (
        {},
        {"seq": True, "init": True, "peep": op == "LSTM", "lbr": int(op == "GRU")},
    )
] + [
    {"op": "RNN", "acts": (["LeakyRelu"], {"activation_alpha": [0.2]}), "clip": 1.5},
    {"op": "RNN", "acts": (["Relu", "Softsign"], {}), "direction": "bidirectional"},
    {"op": "GRU", "acts": (["HardSigmoid", "ScaledTanh"], {"activation_alpha": [0.3, 0.8], "activation_beta": [0.4, 1.2]})},
    {"op": "GRU", "acts": (["Sigmoid", "Affine"], {"activation_alpha": [0.7], "activation_beta": [0.1]}), "clip": 0.8},
    {"op": "LSTM", "direction": "bidirectional", "acts": (["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Softplus"], {"activation_alpha": [0.25, 0.9]})},
    {"op": "LSTM", "input_forget": 1, "clip": 2.0, "seq": True},
    {"op": "LSTM", "dynamic": True, "seq": True, "init": True},
]


def _check(module: Any, got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    k = reduction_length(module)
    for n, (a, e) in enumerate(zip(got, want, strict=True)):
        assert_within(a, e, normwise_bound(k, e), f"{what} output {n}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items() if k != "acts") + ("-acts" if "acts" in c else ""))
@pytest.mark.parametrize("targets", [[], ["ccompiler"]])
def test_recurrent_op_matches_onnxruntime(case: dict[str, Any], targets: list[str]) -> None:
    model, feeds = recurrent_model(**case)
    want = onnxruntime_execute(model, list(feeds.values()))
    module = import_model(model)
    exe = byoc.build(module, targets=targets)
    got = exe.run(**feeds)
    static = module if not case.get("dynamic") else import_model(model, input_shapes={"x": feeds["x"].shape})
    _check(static, got, want, str(case))


@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_layout_1_is_layout_0_transposed(op: str, direction: str) -> None:
    m0, f0 = recurrent_model(op, direction=direction, seq=True, init=True, seed=3)
    m1, f1 = recurrent_model(op, direction=direction, layout=1, seq=True, init=True, seed=3)
    feeds1 = {
        "x": f0["x"].transpose(1, 0, 2).copy(),
        "seq": f0["seq"],
        **{k: f0[k].transpose(1, 0, 2).copy() for k in ("h0", "c0") if k in f0},
    }
    assert set(feeds1) == set(f1)
    y0 = byoc.build(import_model(m0)).run(**f0)
    y1 = byoc.build(import_model(m1)).run(**feeds1)
    np.testing.assert_array_equal(y1[0], y0[0].transpose(2, 0, 1, 3))
    for a, b in zip(y1[1:], y0[1:], strict=True):
        np.testing.assert_array_equal(a, b.transpose(1, 0, 2))


def test_static_recurrent_ops_run_in_the_c_target_dynamic_ones_on_the_host() -> None:
    model, _ = recurrent_model("LSTM", seq=True)
    exe = byoc.build(import_model(model), targets=["ccompiler", "examplejson"])
    assert [p.target for p in exe.partitions if "nn.lstm" in p.ops] == ["ccompiler"]
    dynamic, _ = recurrent_model("LSTM", seq=True, dynamic=True)
    exe = byoc.build(import_model(dynamic), targets=["ccompiler", "examplejson"])
    assert not any("nn.lstm" in p.ops for p in exe.partitions)


def test_sequence_lengths_zero_the_tail_and_keep_the_last_state() -> None:
    model, feeds = recurrent_model("GRU", seq=True, direction="reverse", seed=5)
    feeds["seq"] = np.array([5, 2, 1], np.int32)
    y, y_h = byoc.build(import_model(model)).run(**feeds)
    assert not y[2:, :, 1].any() and not y[1:, :, 2].any()
    # reverse: the final state is the one computed at t = 0
    np.testing.assert_array_equal(y_h[0], y[0, 0])


@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_a_row_of_sequence_length_zero_has_zero_states_like_onnxruntime(op: str, direction: str) -> None:
    """A row with no step has Y_h (and LSTM's Y_c) 0, not its initial state."""
    model, feeds = recurrent_model(op, direction=direction, seq=True, init=True, seed=7)
    feeds["seq"] = np.array([3, 0, 5], np.int32)
    want = onnxruntime_execute(model, list(feeds.values()))
    got = byoc.build(import_model(model)).run(**feeds)
    for n, (a, e) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=f"{op} output {n}")
    for state in got[1:]:
        assert not state[:, 1].any()


def test_a_dynamic_sequence_length_runs_any_length() -> None:
    model, _ = recurrent_model("RNN", dynamic=True)
    module = import_model(model)
    assert "tensor<?x3x4xf32>" in str(module) and "tensor<?x1x3x6xf32>" in str(module)
    exe = byoc.build(module, targets=["ccompiler"])
    for t in (2, 7):
        x = np.random.default_rng(t).standard_normal((t, 3, 4)).astype(np.float32)
        assert exe.run(x)[0].shape == (t, 1, 3, 6)


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        ({"direction": "sideways"}, "direction 'sideways' is not one of forward, reverse, bidirectional"),
        ({"activations": "Sigmoid,Cosh"}, "activation 'Cosh' is not one of"),
        ({"activations": "Sigmoid"}, "1 activations given, expected 2 per direction"),
        ({"layout": 2}, "layout 2 must be 0 or 1"),
        ({"hidden_size": 4}, r"W has shape \[1, 9, 4\], expected \[1, 12, 4\]"),
    ],
)
def test_the_type_relation_rejects_bad_attributes(attrs: dict[str, Any], match: str) -> None:
    from xdsl.utils.exceptions import VerifyException

    x, w, r = (nn.ConstantOp.from_array(np.zeros(s, np.float32)) for s in ((5, 2, 4), (1, 9, 4), (1, 9, 3)))
    none = nn.ConstantOp.from_array(np.zeros(0, np.float32))
    noseq = nn.ConstantOp.from_array(np.zeros(0, np.int32))
    with pytest.raises(VerifyException, match=match):
        nn.GRUOp.build(x, w, r, none, noseq, none, **{"hidden_size": 3, **attrs})


def test_every_recurrent_node_test_passes() -> None:
    cases = [c for c in load_node_cases() if any(k in c.name for k in ("lstm", "gru", "rnn"))]
    assert len(cases) == 18
    results = run_cases(cases)
    assert [r.name for r in results if r.status != "passed"] == []


def test_recurrent_steps_survive_export_and_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model, feeds = recurrent_model(
        "LSTM", direction="bidirectional", seq=True, init=True, peep=True, clip=2.5,
        acts=(["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Softsign"], {"activation_alpha": [0.25, 0.9]}),
    )
    exe = byoc.build(import_model(model), targets=["ccompiler"])
    exe.export_library(str(tmp_path / "lstm.byoc"))
    loaded = byoc.load_module(str(tmp_path / "lstm.byoc"))
    for a, b in zip(exe.run(**feeds), loaded.run(**feeds), strict=True):
        np.testing.assert_array_equal(a, b)
