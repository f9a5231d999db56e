"""lower-to-c for nn.lstm, nn.gru and nn.rnn: one call of `byoc_lstm_f32` / `byoc_gru_f32` /
`byoc_rnn_f32` (byoc_kernels_recurrent.h) per op, which runs the whole time loop.

The node's inputs are the op's operands in its order, except that an operand the op leaves
out (a tensor with no elements) is replaced: `sequence_lens` by a constant holding T for every
batch row, any other by X (the kernel does not read it; its `flags` bit says it is absent).
The activations become their codes (an `i64` array literal) and a constant of their alpha and
beta; the node writes Y (`out`) and Y_h, Y_c (`more_outs`), and takes a workspace of the
projection X . W^T of every step and the per-direction states (`byoc_rnn_scratch_floats_`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType, f32, i32, i64
from xdsl.ir import Attribute

from byoc.dialects.nn.recurrent import ACTIVATIONS, RecurrentOp, resolve_activations

CALLEES = {"nn.lstm": "byoc_lstm_f32", "nn.gru": "byoc_gru_f32", "nn.rnn": "byoc_rnn_f32"}
"""The kernel of each recurrent op."""

ACTIVATION_CODES = {name: code for code, name in enumerate(ACTIVATIONS)}
"""ONNX activation name -> BYOC_RNN_<name> of byoc_kernels_recurrent.h."""

DIRECTION_CODES = {"forward": 0, "reverse": 1, "bidirectional": 2}

BIAS, H0, C0, PEEPHOLE, LINEAR_BEFORE_RESET, INPUT_FORGET, BATCH_MAJOR = 1, 2, 4, 8, 16, 32, 64
"""BYOC_RNN_* flag bits of byoc_kernels_recurrent.h."""


def scratch_floats(t: int, b: int, h: int, gates: int, dirs: int) -> int:
    """byoc_rnn_scratch_floats_: the projection of every step, then per direction two h
    buffers, c, r . h and the gates of every batch row."""
    gh = gates * h
    return t * b * dirs * gh + dirs * b * (4 * h + gh)


@dataclass(frozen=True)
class RecurrentCall:
    """The kernel call of one recurrent op, for lower-to-c's graph builder."""

    callee: str
    inputs: list[int | np.ndarray[Any, Any]]
    """Per kernel pointer before the outputs: the op's operand of that index, or a constant
    to make (sequence lengths standing in for an absent operand, the activations' alpha
    and beta)."""
    args: list[Attribute]
    """The literal arguments after the pointers."""
    scratch: int
    """Floats of workspace (byoc_rnn_scratch_floats_)."""


def recurrent_call(op: RecurrentOp) -> RecurrentCall:
    """How lower-to-c calls the kernel of recurrent op `op`: its pointers (Y, then Y_h and
    Y_c, are written after them), literal arguments and workspace."""
    a = op.attr_values()
    shapes = [tuple(_shape(v.type)) for v in op.operands]
    layout = int(a["layout"])
    x = shapes[0]
    t_len, batch, inputs = x if layout == 0 else (x[1], x[0], x[2])
    hidden = int(a["hidden_size"])
    dirs = 2 if a["direction"] == "bidirectional" else 1
    per = len(op.DEFAULT_ACTIVATIONS)
    acts = resolve_activations(
        a["activations"], a["activation_alpha"], a["activation_beta"], op.DEFAULT_ACTIVATIONS, dirs
    )
    codes: list[int] = []
    coef: list[float] = []
    for d in range(dirs):
        mine = acts[d * per : (d + 1) * per]
        for slot in range(3):
            name, alpha, beta = mine[slot] if slot < per else mine[0]
            codes.append(ACTIVATION_CODES[name])
            coef.extend((alpha, beta))
    present = [shape != (0,) for shape in shapes]
    flags = BATCH_MAJOR if layout == 1 else 0
    for k, bit in ((3, BIAS), (5, H0), (6, C0), (7, PEEPHOLE)):
        if k < len(shapes) and present[k]:
            flags |= bit
    if a.get("linear_before_reset"):
        flags |= LINEAR_BEFORE_RESET
    if a.get("input_forget"):
        flags |= INPUT_FORGET
    pointers: list[int | np.ndarray[Any, Any]] = []
    for k in range(len(shapes)):
        if present[k]:
            pointers.append(k)
        elif k == 4:
            pointers.append(np.full(batch, t_len, np.int32))
        else:
            pointers.append(0)  # X stands in: the kernel does not read an absent operand
    pointers.append(np.asarray(coef, np.float32))
    args: list[Attribute] = [
        IntegerAttr(t_len, i64),
        IntegerAttr(batch, i64),
        IntegerAttr(inputs, i64),
        IntegerAttr(hidden, i64),
        IntegerAttr(DIRECTION_CODES[a["direction"]], i32),
        IntegerAttr(flags, i32),
        DenseArrayBase.from_list(i64, codes),
        FloatAttr(float(np.float32(a["clip"])), f32),
    ]
    return RecurrentCall(
        CALLEES[op.name], pointers, args, scratch_floats(t_len, batch, hidden, op.GATES, dirs)
    )


def _shape(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


__all__ = [
    "ACTIVATION_CODES",
    "CALLEES",
    "DIRECTION_CODES",
    "RecurrentCall",
    "recurrent_call",
    "scratch_floats",
]
