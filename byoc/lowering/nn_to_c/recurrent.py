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

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr, TensorType, f32
from xdsl.ir import Attribute

from byoc.dialects.nn.recurrent import ACTIVATIONS, RecurrentOp, resolve_activations
from byoc.lowering.nn_to_c.graph import Computation, Tensor, i32_attr, i64_array, i64_attr
from byoc.targets.ccompiler import dtype_name

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


def recurrent_computation(
    op: RecurrentOp,
    ins: list[Tensor],
    out: Tensor,
    const: Callable[[np.ndarray[Any, Any]], Tensor],
) -> Computation:
    """The kernel node of recurrent op `op` on `ins` (its operands' values), writing `out` (Y)
    and, as `more_outs`, Y_h (and Y_c); `const` makes a constant value."""
    a = op.attr_values()
    x = ins[0]
    layout = int(a["layout"])
    t_len, batch, inputs = x.shape if layout == 0 else (x.shape[1], x.shape[0], x.shape[2])
    hidden = int(a["hidden_size"])
    dirs = 2 if a["direction"] == "bidirectional" else 1
    gates = op.GATES
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
    present = [v.numel > 0 for v in ins]
    flags = BATCH_MAJOR if layout == 1 else 0
    for k, bit in ((3, BIAS), (5, H0), (6, C0), (7, PEEPHOLE)):
        if k < len(ins) and present[k]:
            flags |= bit
    if a.get("linear_before_reset"):
        flags |= LINEAR_BEFORE_RESET
    if a.get("input_forget"):
        flags |= INPUT_FORGET
    inputs_of: list[Tensor] = []
    for k, v in enumerate(ins):
        if present[k]:
            inputs_of.append(v)
        elif k == 4:
            inputs_of.append(const(np.full(batch, t_len, np.int32)))
        else:
            inputs_of.append(x)
    inputs_of.append(const(np.asarray(coef, np.float32)))
    more = [_result(r.type) for r in op.results[1:]]
    args: list[Attribute] = [
        i64_attr(t_len),
        i64_attr(batch),
        i64_attr(inputs),
        i64_attr(hidden),
        i32_attr(DIRECTION_CODES[a["direction"]]),
        i32_attr(flags),
        i64_array(codes),
        FloatAttr(float(np.float32(a["clip"])), f32),
    ]
    return Computation(
        "kernel",
        op.name,
        inputs_of,
        out,
        callee=CALLEES[op.name],
        args=args,
        scratch=scratch_floats(t_len, batch, hidden, gates, dirs),
        source=op,
        more_outs=more,
    )


def _result(t: Attribute) -> Tensor:
    assert isinstance(t, TensorType)
    return Tensor(tuple(t.get_shape()), dtype_name(t.element_type), "node")


__all__ = [
    "ACTIVATION_CODES",
    "CALLEES",
    "DIRECTION_CODES",
    "recurrent_computation",
    "scratch_floats",
]
