"""ONNX LSTM, GRU and RNN -> nn.lstm, nn.gru, nn.rnn (byoc/dialects/nn/recurrent.py).

An input ONNX leaves out (an empty name, or past the end) becomes a constant with no
elements, which the op reads as absent. W, R and B known at import time stay constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from byoc.dialects import nn
from byoc.dialects.nn.recurrent import GRUOp, LSTMOp, RecurrentOp, RNNOp
from byoc.frontend.onnx.base import Importer, Node, Value, converts, string
from byoc.frontend.onnx.errors import UnsupportedOnnxError


def _recurrent(imp: Importer, node: Node, cls: type[RecurrentOp], operands: int) -> list[Value]:
    values: list[Any] = []
    for i in range(operands):
        v = node.input(i)
        if v is None:
            if i < 3:
                v = node.required(i)
            v = np.zeros((0,), np.int32 if i == 4 else np.float32)
        elif i == 4 and imp.dtype(v) != np.int32:
            raise UnsupportedOnnxError(f"sequence_lens must be int32, got {imp.dtype(v)}")
        elif i != 4 and imp.dtype(v) != np.float32:
            raise UnsupportedOnnxError(f"{node.op_type} on {imp.dtype(v)} is not supported (float32)")
        values.append(v)
    hidden = node.attr("hidden_size")
    if hidden is None:
        hidden = imp.shape(values[2])[-1]
    acts = node.attr("activations")
    attrs: dict[str, Any] = {
        "direction": string(node.attr("direction", b"forward")),
        "hidden_size": int(hidden),
        "activations": ",".join(_canonical(string(a)) for a in acts) if acts else "",
        "activation_alpha": nn.floats(*node.attr("activation_alpha", [])),
        "activation_beta": nn.floats(*node.attr("activation_beta", [])),
        "clip": float(node.attr("clip", 0.0)),
        "layout": int(node.attr("layout", 0)),
    }
    if cls is GRUOp:
        attrs["linear_before_reset"] = int(node.attr("linear_before_reset", 0))
    if cls is LSTMOp:
        attrs["input_forget"] = int(node.attr("input_forget", 0))
    return imp.emit_all(cls, *values, **attrs)


def _canonical(name: str) -> str:
    """ONNX activation names are case-insensitive in practice (onnxruntime lowers them)."""
    from byoc.dialects.nn.recurrent import ACTIVATIONS

    for known in ACTIVATIONS:
        if known.lower() == name.lower():
            return known
    raise UnsupportedOnnxError(f"activation '{name}' is not supported ({', '.join(ACTIVATIONS)})")


@converts("LSTM")
def _lstm(imp: Importer, node: Node) -> list[Value]:
    return _recurrent(imp, node, LSTMOp, 8)


@converts("GRU")
def _gru(imp: Importer, node: Node) -> list[Value]:
    return _recurrent(imp, node, GRUOp, 6)


@converts("RNN")
def _rnn(imp: Importer, node: Node) -> list[Value]:
    return _recurrent(imp, node, RNNOp, 6)
