"""numpy kernels of nn.lstm, nn.gru and nn.rnn (ONNX LSTM, GRU, RNN semantics).

One loop over time steps; each step is vectorised over the batch. Rows whose
`sequence_lens` is shorter stop early: their Y entries past the end are 0 and their
final state is the state at their last step (0 for a row of length 0, as onnxruntime).
Computed in float64, returned as float32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from byoc.dialects.nn.recurrent import resolve_activations
from byoc.interpreters.kernels import kernel

Array = np.ndarray[Any, Any]


def _activation(name: str, alpha: float, beta: float) -> Callable[[Array], Array]:
    with np.errstate(over="ignore"):
        table: dict[str, Callable[[Array], Array]] = {
            "Relu": lambda x: np.maximum(x, 0),
            "Tanh": np.tanh,
            "Sigmoid": lambda x: 0.5 * (1 + np.tanh(0.5 * x)),
            "Affine": lambda x: alpha * x + beta,
            "LeakyRelu": lambda x: np.where(x >= 0, x, alpha * x),
            "ThresholdedRelu": lambda x: np.where(x > alpha, x, 0.0),
            "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
            "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
            "Elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1)),
            "Softsign": lambda x: x / (1 + np.abs(x)),
            "Softplus": lambda x: np.logaddexp(0, x),
        }
    return table[name]


def _recurrence(
    kind: str,
    operands: Sequence[Array],
    *,
    direction: str,
    hidden_size: int,
    activations: str,
    activation_alpha: Sequence[float],
    activation_beta: Sequence[float],
    clip: float,
    layout: int,
    linear_before_reset: int = 0,
    input_forget: int = 0,
) -> tuple[Array, ...]:
    x, w, r, b, seq, h0 = operands[:6]
    c0 = operands[6] if kind == "lstm" else None
    p = operands[7] if kind == "lstm" else None
    gates = {"rnn": 1, "gru": 3, "lstm": 4}[kind]
    defaults = {"rnn": ("Tanh",), "gru": ("Sigmoid", "Tanh"), "lstm": ("Sigmoid", "Tanh", "Tanh")}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    h = hidden_size
    acts = resolve_activations(activations, activation_alpha, activation_beta, defaults, dirs)
    per = len(defaults)
    if layout == 1:
        x = x.transpose(1, 0, 2)
        h0 = h0.transpose(1, 0, 2) if h0.size else h0
        c0 = c0.transpose(1, 0, 2) if c0 is not None and c0.size else c0
    t_len, batch, _ = x.shape
    xd = x.astype(np.float64)
    lens = seq.astype(np.int64) if seq.size else np.full(batch, t_len, np.int64)
    y = np.zeros((t_len, dirs, batch, h), np.float64)
    y_h = np.zeros((dirs, batch, h), np.float64)
    y_c = np.zeros((dirs, batch, h), np.float64)
    rows = np.arange(batch)

    def clipped(v: Array) -> Array:
        return np.clip(v, -clip, clip) if clip > 0 else v

    for d in range(dirs):
        f, g, hh = (_activation(*a) for a in (acts[d * per + k] if k < per else acts[d * per] for k in range(3)))
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        bd = b[d].astype(np.float64) if b.size else np.zeros(2 * gates * h)
        wb, rb = bd[: gates * h], bd[gates * h :]
        ht = h0[d].astype(np.float64) if h0.size else np.zeros((batch, h))
        ct = c0[d].astype(np.float64) if c0 is not None and c0.size else np.zeros((batch, h))
        pd = p[d].astype(np.float64) if p is not None and p.size else np.zeros(3 * h)
        reverse = direction == "reverse" or d == 1
        for s in range(t_len):
            valid = s < lens
            idx = np.where(valid, (lens - 1 - s) if reverse else s, 0)
            xt = xd[idx, rows]
            xw = xt @ wd.T + wb
            if kind == "rnn":
                new_h = f(clipped(xw + ht @ rd.T + rb))
                new_c = ct
            elif kind == "gru":
                rz = ht @ rd[: 2 * h].T + rb[: 2 * h]
                z = f(clipped(xw[:, :h] + rz[:, :h]))
                rr = f(clipped(xw[:, h : 2 * h] + rz[:, h:]))
                if linear_before_reset:
                    cand = xw[:, 2 * h :] + rr * (ht @ rd[2 * h :].T + rb[2 * h :])
                else:
                    cand = xw[:, 2 * h :] + (rr * ht) @ rd[2 * h :].T + rb[2 * h :]
                cand = g(clipped(cand))
                new_h = (1 - z) * cand + z * ht
                new_c = ct
            else:
                pre = xw + ht @ rd.T + rb
                i = f(clipped(pre[:, :h] + pd[:h] * ct))
                fg = 1 - i if input_forget else f(clipped(pre[:, 2 * h : 3 * h] + pd[2 * h :] * ct))
                cand = g(clipped(pre[:, 3 * h :]))
                new_c = fg * ct + i * cand
                o = f(clipped(pre[:, h : 2 * h] + pd[h : 2 * h] * new_c))
                new_h = o * hh(new_c)
            keep = valid[:, None]
            ht = np.where(keep, new_h, ht)
            ct = np.where(keep, new_c, ct)
            y[idx[valid], d, rows[valid]] = new_h[valid]
        # a row with no step has no final state: 0, as onnxruntime gives (not its initial state)
        empty = (lens <= 0)[:, None]
        y_h[d], y_c[d] = np.where(empty, 0.0, ht), np.where(empty, 0.0, ct)
    if layout == 1:
        outs = (y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2))
    else:
        outs = (y, y_h, y_c)
    outs = tuple(np.ascontiguousarray(o, dtype=np.float32) for o in outs)
    return outs if kind == "lstm" else outs[:2]


@kernel("nn.rnn")
def rnn(*operands: Array, **attrs: Any) -> tuple[Array, ...]:
    return _recurrence("rnn", operands, **attrs)


@kernel("nn.gru")
def gru(*operands: Array, **attrs: Any) -> tuple[Array, ...]:
    return _recurrence("gru", operands, **attrs)


@kernel("nn.lstm")
def lstm(*operands: Array, **attrs: Any) -> tuple[Array, ...]:
    return _recurrence("lstm", operands, **attrs)


RECURRENT_KERNELS = ("nn.lstm", "nn.gru", "nn.rnn")
"""The kernels this module registers in KERNELS."""
