"""How far apart two float32 evaluations of nn.lstm / nn.gru / nn.rnn may be.

A recurrence feeds each step's rounding error into the next step through the state, so a
bound on T steps is not a bound on one dot product times T: an error δh in h_(t-1) moves
every gate pre-activation of step t by up to |R| δh (the absolute recurrent weights times
the error vector), an activation scales it by at most its Lipschitz constant, and the gate
products mix it with the errors of the other gates. `recurrent_bounds` propagates a
componentwise, first-order bound E_t >= |computed - exact| along the exact (float64)
trajectory, step by step:

- a gate pre-activation a = x·W_j + h·R_j + Wb_j + Rb_j (+ p_j c) is a sum of
  n = I + H + 3 terms: its rounding error is at most gamma(n) times the sum of their
  absolute values (Higham eq. 3.5, any order, with or without FMA; bounds.py), and it
  inherits |R_j|·E(h) + |p_j| E(c) from the state;
- clip is 1-Lipschitz; an activation f adds L_f E(a) (L_f: its Lipschitz constant, e.g.
  1 for tanh, 1/4 for sigmoid, |alpha beta| for ScaledTanh; ThresholdedRelu also its jump
  alpha where a is within E(a) of alpha) plus its own evaluation error, ULPS units in the
  last place of max(|f(a)|, 1) (bounds.ULPS): onnxruntime's recurrent kernels evaluate
  their activations with approximations whose error is absolute, not relative (measured on
  a dense grid: tanh 3 u at 4.3, sigmoid 1.5 u, softplus 2 u of max(|f|, 1); tanh(0.0083)
  off by 120 ulp of the result), libm, numpy and byoc's vector tanh / sigmoid (2.5 ulp)
  stay within it;
- a product u·v adds |u| E(v) + |v| E(u) and one rounding, a sum one rounding;
- a row past its sequence length keeps its state and its bound; Y there is exactly 0.

Magnitudes are taken as |value| + E (the computed value may be that far from the exact
one), so the bound holds to first order in u whatever path each executor takes. Two
executors that each stay within E of the exact result are within 2E of each other: the
returned bounds are 2E (Y, Y_h and, for LSTM, Y_c, in the op's layout).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from byoc.dialects.nn.recurrent import resolve_activations
from byoc.interpreters.recurrent import _activation  # pyright: ignore[reportPrivateUsage]
from support.bounds import ULPS, U, gamma

Array = np.ndarray[Any, Any]

DEFAULTS = {"rnn": ("Tanh",), "gru": ("Sigmoid", "Tanh"), "lstm": ("Sigmoid", "Tanh", "Tanh")}
GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def lipschitz(name: str, alpha: float, beta: float) -> float:
    """The Lipschitz constant of an ONNX recurrent activation (ThresholdedRelu: away from
    its jump at alpha, which `_activation_error` adds separately)."""
    return {
        "Relu": 1.0,
        "Tanh": 1.0,
        "Sigmoid": 0.25,
        "Affine": abs(alpha),
        "LeakyRelu": max(1.0, abs(alpha)),
        "ThresholdedRelu": 1.0,
        "ScaledTanh": abs(alpha * beta),
        "HardSigmoid": abs(alpha),
        "Elu": max(1.0, abs(alpha)),
        "Softsign": 1.0,
        "Softplus": 1.0,
    }[name]


def _activation_error(spec: tuple[str, float, float], a: Array, ea: Array) -> tuple[Array, Array]:
    """(f(a), bound on |f(computed a) - f(a)| + f's evaluation error) for pre-activation a
    with error bound ea. The input's own rounding inside f (alpha * x, beta * x) counts as
    one more rounding of a."""
    name, alpha, beta = spec
    with np.errstate(all="ignore"):
        v = _activation(name, alpha, beta)(a)
    ea = ea + U * np.abs(a)
    scale = max(1.0, abs(alpha)) if name == "ScaledTanh" else 1.0
    err = lipschitz(name, alpha, beta) * ea + ULPS * 2 * U * np.maximum(np.abs(v), scale)
    if name == "ThresholdedRelu":
        near = np.abs(a - alpha) <= ea
        err = err + np.where(near, np.abs(alpha) + ea, 0.0)
    return v, err


def recurrent_bounds(kind: str, operands: Sequence[Array], **attrs: Any) -> list[Array]:
    """2E for each result of nn.<kind> (lstm, gru, rnn) on `operands` (the op's operands,
    an absent one as an array with no elements) with the op's attributes: see the module
    docstring."""
    x, w, r, b, seq, h0 = (np.asarray(o) for o in operands[:6])
    c0 = np.asarray(operands[6]) if kind == "lstm" else np.zeros(0)
    p = np.asarray(operands[7]) if kind == "lstm" else np.zeros(0)
    direction = attrs.get("direction", "forward")
    hidden = int(attrs["hidden_size"])
    layout = int(attrs.get("layout", 0))
    clip = float(attrs.get("clip", 0.0))
    lbr = int(attrs.get("linear_before_reset", 0))
    input_forget = int(attrs.get("input_forget", 0))
    dirs = 2 if direction == "bidirectional" else 1
    per = len(DEFAULTS[kind])
    acts = resolve_activations(
        attrs.get("activations", ""),
        attrs.get("activation_alpha", ()),
        attrs.get("activation_beta", ()),
        DEFAULTS[kind],
        dirs,
    )
    if layout == 1:
        x = x.transpose(1, 0, 2)
        h0 = h0.transpose(1, 0, 2) if h0.size else h0
        c0 = c0.transpose(1, 0, 2) if c0.size else c0
    t_len, batch, inputs = x.shape
    h = hidden
    g_count = GATES[kind]
    n_terms = inputs + h + 3
    gam = gamma(n_terms)
    lens = np.clip(seq.astype(np.int64), 0, t_len) if seq.size else np.full(batch, t_len, np.int64)
    xd = x.astype(np.float64)
    ey = np.zeros((t_len, dirs, batch, h))
    eyh = np.zeros((dirs, batch, h))
    eyc = np.zeros((dirs, batch, h))
    rows = np.arange(batch)

    def clipped(v: Array) -> Array:
        return np.clip(v, -clip, clip) if clip > 0 else v

    for d in range(dirs):
        f_spec, g_spec, h_spec = (acts[d * per + k] if k < per else acts[d * per] for k in range(3))
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        bd = b[d].astype(np.float64) if b.size else np.zeros(2 * g_count * h)
        wb, rb = bd[: g_count * h], bd[g_count * h :]
        pd = p[d].astype(np.float64) if p.size else np.zeros(3 * h)
        ht = h0[d].astype(np.float64) if h0.size else np.zeros((batch, h))
        ct = c0[d].astype(np.float64) if c0.size else np.zeros((batch, h))
        eh = np.zeros((batch, h))
        ec = np.zeros((batch, h))
        reverse = direction == "reverse" or d == 1
        aw, ar = np.abs(wd), np.abs(rd)
        for s in range(t_len):
            valid = s < lens
            idx = np.where(valid, (lens - 1 - s) if reverse else s, 0)
            xt = xd[idx, rows]
            ax = np.abs(xt)
            mh = np.abs(ht) + eh  # |computed h| may be that large
            xw = xt @ wd.T + wb
            rec = ht @ rd.T + rb
            # rounding of every pre-activation sum, and what the state's error moves it by
            mag = ax @ aw.T + mh @ ar.T + np.abs(wb) + np.abs(rb)
            carried = eh @ ar.T
            if kind == "rnn":
                a = clipped(xw + rec)
                new_h, e_new_h = _activation_error(f_spec, a, gam * mag + carried)
                new_c, e_new_c = ct, ec
            elif kind == "gru":
                az = clipped(xw[:, :h] + rec[:, :h])
                arr = clipped(xw[:, h : 2 * h] + rec[:, h : 2 * h])
                z, ez = _activation_error(f_spec, az, gam * mag[:, :h] + carried[:, :h])
                rr, er = _activation_error(
                    f_spec, arr, gam * mag[:, h : 2 * h] + carried[:, h : 2 * h]
                )
                rh_w, rb_h = rd[2 * h :], rb[2 * h :]
                x_part = np.abs(xt) @ aw[2 * h :].T + np.abs(wb[2 * h :])
                if lbr:
                    inner = ht @ rh_w.T + rb_h
                    e_inner = gam * (mh @ ar[2 * h :].T + np.abs(rb_h)) + eh @ ar[2 * h :].T
                    ah = xw[:, 2 * h :] + rr * inner
                    e_ah = (
                        gam * (x_part + (np.abs(rr) + er) * (np.abs(inner) + e_inner))
                        + (np.abs(rr) + er) * e_inner
                        + np.abs(inner) * er
                    )
                else:
                    rhv = rr * ht
                    e_rh = np.abs(rr) * eh + mh * er + U * np.abs(rhv)
                    ah = xw[:, 2 * h :] + rhv @ rh_w.T + rb_h
                    e_ah = (
                        gam * (x_part + (np.abs(rhv) + e_rh) @ ar[2 * h :].T + np.abs(rb_h))
                        + e_rh @ ar[2 * h :].T
                    )
                cand, ecand = _activation_error(g_spec, clipped(ah), e_ah)
                new_h = (1 - z) * cand + z * ht
                e_new_h = (
                    (np.abs(1 - z) + ez) * ecand
                    + (np.abs(cand) + ecand + mh) * ez
                    + (np.abs(z) + ez) * eh
                    + 4 * U * (np.abs(cand) + ecand + mh)
                )
                new_c, e_new_c = ct, ec
            else:
                pre = xw + rec
                mc = np.abs(ct) + ec
                ai = clipped(pre[:, :h] + pd[:h] * ct)
                e_ai = (
                    gam * (mag[:, :h] + np.abs(pd[:h]) * mc) + carried[:, :h] + np.abs(pd[:h]) * ec
                )
                i, ei = _activation_error(f_spec, ai, e_ai)
                if input_forget:
                    fg, ef = 1 - i, ei + U * np.abs(1 - i)
                else:
                    af = clipped(pre[:, 2 * h : 3 * h] + pd[2 * h :] * ct)
                    e_af = (
                        gam * (mag[:, 2 * h : 3 * h] + np.abs(pd[2 * h :]) * mc)
                        + carried[:, 2 * h : 3 * h]
                        + np.abs(pd[2 * h :]) * ec
                    )
                    fg, ef = _activation_error(f_spec, af, e_af)
                cand, ecand = _activation_error(
                    g_spec, clipped(pre[:, 3 * h :]), gam * mag[:, 3 * h :] + carried[:, 3 * h :]
                )
                new_c = fg * ct + i * cand
                e_new_c = (
                    (np.abs(fg) + ef) * ec
                    + mc * ef
                    + (np.abs(i) + ei) * ecand
                    + (np.abs(cand) + ecand) * ei
                    + 2 * U * ((np.abs(fg) + ef) * mc + (np.abs(i) + ei) * (np.abs(cand) + ecand))
                )
                mnc = np.abs(new_c) + e_new_c
                ao = clipped(pre[:, h : 2 * h] + pd[h : 2 * h] * new_c)
                e_ao = (
                    gam * (mag[:, h : 2 * h] + np.abs(pd[h : 2 * h]) * mnc)
                    + carried[:, h : 2 * h]
                    + np.abs(pd[h : 2 * h]) * e_new_c
                )
                o, eo = _activation_error(f_spec, ao, e_ao)
                hc, ehc = _activation_error(h_spec, new_c, e_new_c)
                new_h = o * hc
                e_new_h = (
                    (np.abs(o) + eo) * ehc
                    + (np.abs(hc) + ehc) * eo
                    + U * (np.abs(o) + eo) * (np.abs(hc) + ehc)
                )
            keep = valid[:, None]
            ht = np.where(keep, new_h, ht)
            ct = np.where(keep, new_c, ct)
            eh = np.where(keep, e_new_h, eh)
            ec = np.where(keep, e_new_c, ec)
            ey[idx[valid], d, rows[valid]] = e_new_h[valid]
        started = (lens > 0)[:, None]
        eyh[d] = np.where(started, eh, 0.0)
        eyc[d] = np.where(started, ec, 0.0)
    if layout == 1:
        outs = [ey.transpose(2, 0, 1, 3), eyh.transpose(1, 0, 2), eyc.transpose(1, 0, 2)]
    else:
        outs = [ey, eyh, eyc]
    outs = [2 * o for o in outs]
    return outs if kind == "lstm" else outs[:2]


__all__ = ["lipschitz", "recurrent_bounds"]
