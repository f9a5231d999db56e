"""nn.lstm, nn.gru and nn.rnn in the C target (byoc/lowering/nn_to_c/recurrent.py,
byoc_kernels_recurrent.h) against onnxruntime and the numpy reference.

Random single-node ONNX models (hypothesis): every direction, activation (with its alpha and
beta), clip, sequence lengths from 0 to T, batch sizes from 1, hidden sizes from 1 (odd ones
too), each optional operand present or not, both layouts, linear_before_reset and
input_forget. The C results must stay within the derived recurrence bound
(support/recurrent_bounds.py) of both onnxruntime and the reference, at both dispatch levels,
and be bit-identical at 1 and 2 threads. onnxruntime has no layout 1: it runs the layout-0
model on the transposed inputs. A row of length 0 has Y_h = Y_c = 0 (onnxruntime's rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from support.bounds import assert_within
from support.onnx_harness import onnxruntime_execute
from support.recurrent_bounds import recurrent_bounds

import byoc
from byoc.dialects.nn.recurrent import ACTIVATIONS
from byoc.frontend.onnx import import_model
from byoc.interpreters.kernels import KERNELS

Array = np.ndarray[Any, Any]
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
SLOTS = {"LSTM": 3, "GRU": 2, "RNN": 1}


@dataclass(frozen=True)
class Spec:
    """One recurrent node and its inputs."""

    op: str
    direction: str
    layout: int
    t: int
    batch: int
    inputs: int
    hidden: int
    lens: tuple[int, ...] | None
    bias: bool
    h0: bool
    c0: bool
    peephole: bool
    activations: tuple[str, ...] | None
    alphas: tuple[float, ...]
    betas: tuple[float, ...]
    clip: float | None
    linear_before_reset: int
    input_forget: int
    seed: int

    @property
    def dirs(self) -> int:
        return 2 if self.direction == "bidirectional" else 1


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    op = draw(st.sampled_from(list(GATES)))
    direction = draw(st.sampled_from(["forward", "reverse", "bidirectional"]))
    dirs = 2 if direction == "bidirectional" else 1
    t = draw(st.integers(1, 5))
    batch = draw(st.integers(1, 3))
    lens = draw(st.none() | st.lists(st.integers(0, t), min_size=batch, max_size=batch).map(tuple))
    acts: tuple[str, ...] | None = None
    alphas: tuple[float, ...] = ()
    betas: tuple[float, ...] = ()
    if draw(st.booleans()):
        acts = tuple(
            draw(
                st.lists(
                    st.sampled_from(list(ACTIVATIONS)),
                    min_size=SLOTS[op] * dirs,
                    max_size=SLOTS[op] * dirs,
                )
            )
        )
        takes_alpha = sum(ACTIVATIONS[a][0] for a in acts)
        takes_beta = sum(ACTIVATIONS[a][1] for a in acts)
        # every alpha and beta given: onnxruntime's defaults for a missing one differ from
        # the ONNX operators' defaults byoc uses (Affine: alpha 1, beta 0) in some activations
        alphas = tuple(draw(st.lists(st.sampled_from([0.1, 0.3, 0.8, 1.2]), min_size=takes_alpha, max_size=takes_alpha)))
        betas = tuple(draw(st.lists(st.sampled_from([0.2, 0.5, 1.1]), min_size=takes_beta, max_size=takes_beta)))
    return Spec(
        op=op,
        direction=direction,
        layout=draw(st.integers(0, 1)),
        t=t,
        batch=batch,
        inputs=draw(st.integers(1, 4)),
        hidden=draw(st.sampled_from([1, 2, 3, 5, 8, 9])),
        lens=lens,
        bias=draw(st.booleans()),
        h0=draw(st.booleans()),
        c0=op == "LSTM" and draw(st.booleans()),
        peephole=op == "LSTM" and draw(st.booleans()),
        activations=acts,
        alphas=alphas,
        betas=betas,
        clip=draw(st.none() | st.sampled_from([0.5, 1.5, 4.0])),
        linear_before_reset=int(op == "GRU" and draw(st.booleans())),
        input_forget=int(op == "LSTM" and draw(st.booleans())),
        seed=draw(st.integers(0, 2**16)),
    )


def model_and_feeds(spec: Spec, layout: int) -> tuple[Any, dict[str, Array]]:
    """The node in `layout` (W, R, B, P as initializers; X, sequence_lens, initial states as
    graph inputs) and its feeds; the same data whatever the layout."""
    rng = np.random.default_rng(spec.seed)
    d, g, h, b, t, i = spec.dirs, GATES[spec.op], spec.hidden, spec.batch, spec.t, spec.inputs

    def normal(*shape: int, scale: float = 0.5) -> Array:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x = normal(t, b, i, scale=1.0)
    inits = [
        numpy_helper.from_array(normal(d, g * h, i), "W"),
        numpy_helper.from_array(normal(d, g * h, h), "R"),
    ]
    names = ["x", "W", "R"]
    feeds = {"x": x if layout == 0 else x.transpose(1, 0, 2).copy()}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(feeds["x"].shape))]
    if spec.bias:
        inits.append(numpy_helper.from_array(normal(d, 2 * g * h), "B"))
    names.append("B" if spec.bias else "")
    if spec.lens is not None:
        feeds["seq"] = np.array(spec.lens, np.int32)
        inputs.append(helper.make_tensor_value_info("seq", TensorProto.INT32, [b]))
    names.append("seq" if spec.lens is not None else "")
    for name, present in (("h0", spec.h0), ("c0", spec.c0)):
        if name == "c0" and spec.op != "LSTM":
            continue
        if present:
            state = normal(d, b, h, scale=1.0)
            feeds[name] = state if layout == 0 else state.transpose(1, 0, 2).copy()
            inputs.append(
                helper.make_tensor_value_info(name, TensorProto.FLOAT, list(feeds[name].shape))
            )
        names.append(name if present else "")
    if spec.peephole:
        inits.append(numpy_helper.from_array(normal(d, 3 * h), "P"))
        names.append("P")
    while names[-1] == "":
        names.pop()
    attrs: dict[str, Any] = {"hidden_size": h, "direction": spec.direction}
    if layout:
        attrs["layout"] = 1
    if spec.activations is not None:
        attrs["activations"] = list(spec.activations)
        if spec.alphas:
            attrs["activation_alpha"] = list(spec.alphas)
        if spec.betas:
            attrs["activation_beta"] = list(spec.betas)
    if spec.clip is not None:
        attrs["clip"] = spec.clip
    if spec.linear_before_reset:
        attrs["linear_before_reset"] = 1
    if spec.input_forget:
        attrs["input_forget"] = 1
    outs = ["Y", "Y_h"] + (["Y_c"] if spec.op == "LSTM" else [])
    node = helper.make_node(spec.op, names, outs, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), feeds


def to_layout0(outs: list[Array], layout: int) -> list[Array]:
    if layout == 0:
        return outs
    return [outs[0].transpose(1, 2, 0, 3)] + [o.transpose(1, 0, 2) for o in outs[1:]]


def operands_and_attrs(spec: Spec) -> tuple[list[Array], dict[str, Any]]:
    """The nn op's operands (layout 0; an absent one empty) and attributes, as the importer
    makes them."""
    model, feeds = model_and_feeds(spec, 0)
    module = import_model(model)
    op = next(o for o in module.walk() if o.name == f"nn.{spec.op.lower()}")
    attrs = op.attr_values()  # type: ignore[attr-defined]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    empty_f, empty_i = np.zeros(0, np.float32), np.zeros(0, np.int32)
    operands = [
        feeds["x"],
        inits["W"],
        inits["R"],
        inits.get("B", empty_f),
        feeds.get("seq", empty_i),
        feeds.get("h0", empty_f),
    ]
    if spec.op == "LSTM":
        operands += [feeds.get("c0", empty_f), inits.get("P", empty_f)]
    return operands, attrs


def check(spec: Spec) -> None:
    ort_model, ort_feeds = model_and_feeds(spec, 0)
    want = onnxruntime_execute(ort_model, list(ort_feeds.values()))
    operands, attrs = operands_and_attrs(spec)
    reference = [np.asarray(o) for o in KERNELS[f"nn.{spec.op.lower()}"](*operands, **attrs)]
    bounds = recurrent_bounds(spec.op.lower(), operands, **attrs)
    model, feeds = model_and_feeds(spec, spec.layout)
    exe = byoc.build(import_model(model), targets=["ccompiler"], num_threads=2)
    placed = [p.target for p in exe.partitions if f"nn.{spec.op.lower()}" in p.ops]
    assert placed == ["ccompiler"], placed
    two = exe.run(**feeds)
    exe.set_num_threads(1)
    one = exe.run(**feeds)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b, err_msg=f"1 and 2 threads differ: {spec}")
    got = to_layout0(list(one), spec.layout)
    lens = np.array(spec.lens if spec.lens is not None else [spec.t] * spec.batch)
    for k, (a, e, r, bound) in enumerate(zip(got, want, reference, bounds, strict=True)):
        assert_within(a, e, bound, f"output {k} against onnxruntime: {spec}")
        assert_within(a, r, bound, f"output {k} against the reference: {spec}")
        if k > 0:  # the state of a row of length 0 is 0 (onnxruntime's rule), not initial_h
            assert not a[:, lens == 0].any(), spec


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=specs())
def test_recurrent_cells_match_onnxruntime_and_the_reference(dispatch: str, spec: Spec) -> None:
    check(spec)


@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_sequence_lengths_zero_and_full(op: str, direction: str) -> None:
    """Rows of length 0, 1 and T in one batch, with initial states: Y is 0 past each row's
    end, Y_h / Y_c are the state at its last step and 0 for the empty row (onnxruntime)."""
    spec = Spec(
        op=op, direction=direction, layout=0, t=4, batch=3, inputs=3, hidden=5, lens=(0, 1, 4),
        bias=True, h0=True, c0=op == "LSTM", peephole=op == "LSTM", activations=None, alphas=(),
        betas=(), clip=None, linear_before_reset=0, input_forget=0, seed=7,
    )  # fmt: skip
    check(spec)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_a_step_split_across_threads_gives_the_single_thread_results(op: str) -> None:
    """A recurrent product large enough for two threads (B*G*H*H past two grains) is split by
    hidden units every step (GRU without linear_before_reset: twice a step); the results are
    bit-identical to one thread's (`check`) and within the bound."""
    spec = Spec(
        op=op, direction="forward", layout=0, t=3, batch=2, inputs=5, hidden=107, lens=(3, 2),
        bias=True, h0=True, c0=op == "LSTM", peephole=op == "LSTM", activations=None, alphas=(),
        betas=(), clip=None, linear_before_reset=0, input_forget=0, seed=11,
    )  # fmt: skip
    assert spec.batch * GATES[op] * spec.hidden**2 >= 2 * 32768  # BYOC_PAR_GRAIN, 2 threads
    check(spec)


@pytest.mark.parametrize("op", list(GATES))
@pytest.mark.parametrize("hidden", [37, 40])
def test_hidden_sizes_past_one_vector(dispatch: str, op: str, hidden: int) -> None:
    """Hidden sizes past 16: the recurrent product's whole vectors of 16 (AVX-512F) or 8
    terms, then a block of 8 (40) or single terms (37), rows in groups of 4 and a last group
    of 1 (37); bidirectional with rows of different lengths, against both references."""
    spec = Spec(
        op=op, direction="bidirectional", layout=0, t=4, batch=3, inputs=21, hidden=hidden,
        lens=(4, 2, 3), bias=True, h0=True, c0=op == "LSTM", peephole=op == "LSTM",
        activations=None, alphas=(), betas=(), clip=None, linear_before_reset=0, input_forget=0,
        seed=5,
    )  # fmt: skip
    check(spec)


def test_the_bound_grows_with_the_sequence() -> None:
    """The recurrence bound is not one dot product's: later steps carry the earlier errors."""
    spec = Spec(
        op="LSTM", direction="forward", layout=0, t=5, batch=1, inputs=3, hidden=4, lens=None,
        bias=True, h0=True, c0=True, peephole=False, activations=None, alphas=(), betas=(),
        clip=None, linear_before_reset=0, input_forget=0, seed=3,
    )  # fmt: skip
    operands, attrs = operands_and_attrs(spec)
    y_bound = recurrent_bounds("lstm", operands, **attrs)[0]
    per_step = y_bound.max(axis=(1, 2, 3))
    assert np.all(np.diff(per_step) > 0), per_step
