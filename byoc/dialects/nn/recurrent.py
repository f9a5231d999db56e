"""The recurrent ops of the `nn` dialect: `nn.lstm`, `nn.gru`, `nn.rnn` (ONNX LSTM, GRU, RNN).

    %y, %y_h, %y_c = nn.lstm %x, %w, %r, %b, %seq, %h0, %c0, %p {hidden_size = 16 : i64}
        : (tensor<5x2x8xf32>, ...) -> (tensor<5x1x2x16xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>)

The operands are ONNX's, in ONNX's order and layouts (W [D, G*H, I], R [D, G*H, H],
B [D, 2*G*H], sequence_lens [B] i32, initial_h/initial_c [D, B, H] (layout 1: [B, D, H]),
P [D, 3*H]); an operand ONNX leaves out is given as a tensor with no elements
(`tensor<0xf32>`, `tensor<0xi32>`): the kernel treats it as absent (zeros, full length).
Every result is always produced: Y, Y_h and, for LSTM, Y_c.

Properties: `direction` (forward, reverse, bidirectional), `hidden_size`, `activations`
(comma-separated ONNX names, empty = the op's defaults), `activation_alpha` /
`activation_beta` (consumed in order by the activations that take them), `clip`
(0 = none), `layout` (0: time-major, 1: batch-major), `linear_before_reset` (GRU),
`input_forget` (LSTM).

With static shapes the ccompiler target runs them: one call of a byoc_kernels_recurrent.h
kernel per op holds the whole loop over time (`byoc.lowering.nn_to_c.recurrent`). With a
`?` dim they run on the host (numpy kernels in `byoc.interpreters.recurrent`); unrolling
T steps into nn ops would tie the graph to one sequence length and multiply its size by T.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.irdl import irdl_op_definition, result_def

from byoc.dialects.nn.base import NNOp, _fail, tensor_operands
from byoc.dialects.nn.props import array_prop, float_prop, int_prop, str_prop
from byoc.dialects.nn.types import floats, shape_of, tensor

DIRECTIONS = ("forward", "reverse", "bidirectional")

ACTIVATIONS: dict[str, tuple[bool, bool, float, float]] = {
    # name -> (takes alpha, takes beta, default alpha, default beta)
    "Relu": (False, False, 0.0, 0.0),
    "Tanh": (False, False, 0.0, 0.0),
    "Sigmoid": (False, False, 0.0, 0.0),
    "Affine": (True, True, 1.0, 0.0),
    "LeakyRelu": (True, False, 0.01, 0.0),
    "ThresholdedRelu": (True, False, 1.0, 0.0),
    "ScaledTanh": (True, True, 1.0, 1.0),
    "HardSigmoid": (True, True, 0.2, 0.5),
    "Elu": (True, False, 1.0, 0.0),
    "Softsign": (False, False, 0.0, 0.0),
    "Softplus": (False, False, 0.0, 0.0),
}
"""The activation functions ONNX's recurrent ops name, with their alpha/beta use."""


def resolve_activations(
    names: str, alphas: Sequence[float], betas: Sequence[float], defaults: Sequence[str], directions: int
) -> list[tuple[str, float, float]]:
    """(name, alpha, beta) of every activation, all directions; raises VerifyException."""
    listed = [n.strip() for n in names.split(",") if n.strip()] if names else []
    if not listed:
        listed = list(defaults) * directions
    if len(listed) != len(defaults) * directions:
        raise _fail(
            f"{len(listed)} activations given, expected {len(defaults)} per direction "
            f"({len(defaults) * directions})"
        )
    out: list[tuple[str, float, float]] = []
    ai = bi = 0
    for name in listed:
        spec = ACTIVATIONS.get(name)
        if spec is None:
            raise _fail(f"activation '{name}' is not one of {', '.join(ACTIVATIONS)}")
        takes_a, takes_b, alpha, beta = spec
        if takes_a and ai < len(alphas):
            alpha, ai = alphas[ai], ai + 1
        if takes_b and bi < len(betas):
            beta, bi = betas[bi], bi + 1
        out.append((name, alpha, beta))
    return out


class RecurrentOp(NNOp):
    """Shared type relation of nn.lstm / nn.gru / nn.rnn."""

    x, w, r, b, sequence_lens, initial_h = tensor_operands(6)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    direction = str_prop("forward")
    hidden_size = int_prop()
    activations = str_prop("")
    activation_alpha = array_prop(floats())
    activation_beta = array_prop(floats())
    clip = float_prop(0.0)
    layout = int_prop(0)
    KIND: ClassVar[str] = "opaque"
    SAME_DTYPE: ClassVar[bool] = False
    GATES: ClassVar[int] = 1
    DEFAULT_ACTIVATIONS: ClassVar[tuple[str, ...]] = ("Tanh",)
    STATES: ClassVar[int] = 1
    """Hidden states carried (LSTM: h and c)."""

    @classmethod
    def check_dtypes(cls, types: Sequence[TensorType[Any]]) -> None:
        for i, t in enumerate(types):
            want = i32 if i == 4 else f32
            if t.element_type != want:
                raise _fail(f"operand #{i} must be {want}, got {t.element_type}")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if attrs["direction"] not in DIRECTIONS:
            raise _fail(f"direction '{attrs['direction']}' is not one of {', '.join(DIRECTIONS)}")
        d = 2 if attrs["direction"] == "bidirectional" else 1
        h = attrs["hidden_size"]
        g = cls.GATES
        if h < 1:
            raise _fail(f"hidden_size {h} must be positive")
        if attrs["layout"] not in (0, 1):
            raise _fail(f"layout {attrs['layout']} must be 0 or 1")
        if attrs["clip"] < 0:
            raise _fail(f"clip {attrs['clip']} must be positive (0: no clip)")
        resolve_activations(
            attrs["activations"],
            attrs["activation_alpha"],
            attrs["activation_beta"],
            cls.DEFAULT_ACTIVATIONS,
            d,
        )
        xs = shape_of(types[0])
        if len(xs) != 3:
            raise _fail(f"X must have rank 3, got {len(xs)}")
        t, b, i = xs if attrs["layout"] == 0 else (xs[1], xs[0], xs[2])
        expect = {
            1: ("W", (d, g * h, i)),
            2: ("R", (d, g * h, h)),
            3: ("B", (d, 2 * g * h)),
            4: ("sequence_lens", (b,)),
            5: ("initial_h", (d, b, h) if attrs["layout"] == 0 else (b, d, h)),
            6: ("initial_c", (d, b, h) if attrs["layout"] == 0 else (b, d, h)),
            7: ("P", (d, 3 * h)),
        }
        for k, ty in enumerate(types[1:], start=1):
            name, want = expect[k]
            got = shape_of(ty)
            if k >= 3 and got == (0,):
                continue  # absent
            if got != want:
                raise _fail(f"{name} has shape {list(got)}, expected {list(want)}")
        y = (t, d, b, h) if attrs["layout"] == 0 else (b, t, d, h)
        state = (d, b, h) if attrs["layout"] == 0 else (b, d, h)
        return [tensor(y, f32)] + [tensor(state, f32)] * cls.STATES


@irdl_op_definition
class RNNOp(RecurrentOp):
    """Ht = f(Xt·Wᵀ + Ht-1·Rᵀ + Wb + Rb) (ONNX RNN)."""

    name = "nn.rnn"


@irdl_op_definition
class GRUOp(RecurrentOp):
    """ONNX GRU: gates z, r, h; `linear_before_reset` applies R before the reset gate."""

    name = "nn.gru"
    linear_before_reset = int_prop(0)
    GATES: ClassVar[int] = 3
    DEFAULT_ACTIVATIONS: ClassVar[tuple[str, ...]] = ("Sigmoid", "Tanh")


@irdl_op_definition
class LSTMOp(RecurrentOp):
    """ONNX LSTM: gates i, o, f, c; peepholes P (i, o, f); `input_forget` couples f = 1 - i."""

    name = "nn.lstm"
    # All of them again, so that the extra operands and result come after the shared ones
    # (xDSL lists a subclass's own fields before those it inherits).
    x, w, r, b, sequence_lens, initial_h, initial_c, p = tensor_operands(8)
    y = result_def(TensorType)
    y_h = result_def(TensorType)
    y_c = result_def(TensorType)
    input_forget = int_prop(0)
    GATES: ClassVar[int] = 4
    DEFAULT_ACTIVATIONS: ClassVar[tuple[str, ...]] = ("Sigmoid", "Tanh", "Tanh")
    STATES: ClassVar[int] = 2


RECURRENT_OPS: tuple[type[NNOp], ...] = (LSTMOp, GRUOp, RNNOp)

__all__ = ["ACTIVATIONS", "DIRECTIONS", "GRUOp", "LSTMOp", "RECURRENT_OPS", "RNNOp", "RecurrentOp", "resolve_activations"]
