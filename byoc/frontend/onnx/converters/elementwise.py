"""Elementwise ONNX ops: activations, arithmetic with broadcasting, Clip, Cast."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

import byoc.frontend.onnx.proto as proto
from byoc.dialects import nn
from byoc.frontend.onnx.base import (
    NN_DTYPES,
    Importer,
    Node,
    Value,
    converts,
)
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError

_UNARY: dict[str, type[nn.NNOp]] = {
    "Relu": nn.ReluOp,
    "Sigmoid": nn.SigmoidOp,
    "Tanh": nn.TanhOp,
    "Exp": nn.ExpOp,
    "Log": nn.LogOp,
    "Sqrt": nn.SqrtOp,
    "Neg": nn.NegativeOp,
    "Abs": nn.AbsOp,
    "Erf": nn.ErfOp,
    "Reciprocal": nn.ReciprocalOp,
    "HardSwish": nn.HardSwishOp,
}


@converts(*_UNARY)
def _unary(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(_UNARY[node.op_type], node.required(0))]


@converts("LeakyRelu")
def _leaky_relu(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.LeakyReluOp, node.required(0), alpha=float(node.attr("alpha", 0.01)))]


@converts("HardSigmoid")
def _hard_sigmoid(imp: Importer, node: Node) -> list[Value]:
    return imp.emit_all(
        nn.HardSigmoidOp,
        node.required(0),
        alpha=float(node.attr("alpha", 0.2)),
        beta=float(node.attr("beta", 0.5)),
    )


@converts("PRelu")
def _prelu(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(nn.PReluOp, node.required(0), node.required(1))]


_BINARY: dict[str, type[nn.NNOp]] = {
    "Add": nn.AddOp,
    "Sub": nn.SubtractOp,
    "Mul": nn.MultiplyOp,
    "Div": nn.DivideOp,
}


def _check_legacy_broadcast(node: Node) -> None:
    if node.attr("broadcast") and node.attr("axis") is not None:
        raise UnsupportedOnnxError("legacy broadcasting with an explicit 'axis' is not supported")


def same_type_binary(imp: Importer, node: Node, cls: type[nn.NNOp]) -> list[Value]:
    """`cls` on inputs #0 and #1, which must have one element type (the schema's `T`)."""
    a, b = node.required(0), node.required(1)
    if imp.dtype(a) != imp.dtype(b):
        raise OnnxImportError(f"operand element types differ: {imp.dtype(a)} and {imp.dtype(b)}")
    return [imp.emit(cls, a, b)]


@converts(*_BINARY)
def _binary(imp: Importer, node: Node) -> list[Value]:
    _check_legacy_broadcast(node)
    return same_type_binary(imp, node, _BINARY[node.op_type])


@converts("Pow")
def _pow(imp: Importer, node: Node) -> list[Value]:
    a, b = node.required(0), node.required(1)
    if not isinstance(a, SSAValue) and not isinstance(b, SSAValue):
        return [np.asarray(np.power(a, b), dtype=a.dtype)]
    base = imp.dtype(a)
    if base.kind != "f":  # ONNX: numpy.power(a, b).astype(a.dtype); computed in f64
        if base.kind not in "iu":
            raise UnsupportedOnnxError(f"Pow with a {base} base is not supported")
        f64 = np.dtype(np.float64)
        return [cast_to(imp, imp.emit(nn.PowerOp, cast_to(imp, a, f64), cast_to(imp, b, f64)), base)]
    return [imp.emit(nn.PowerOp, a, cast_to(imp, b, base))]


_VARIADIC: dict[str, type[nn.NNOp]] = {
    "Max": nn.MaximumOp,
    "Min": nn.MinimumOp,
    "Sum": nn.AddOp,
    "Mean": nn.AddOp,
}


@converts(*_VARIADIC)
def _variadic(imp: Importer, node: Node) -> list[Value]:
    values = [v for v in node.inputs if v is not None]
    if not values:
        raise OnnxImportError(f"{node.op_type} needs at least one input")
    acc = values[0]
    for v in values[1:]:
        acc = imp.emit(_VARIADIC[node.op_type], acc, v)
    if node.op_type == "Mean" and len(values) > 1:
        acc = imp.emit(nn.DivideOp, acc, imp.scalar_like(len(values), acc))
    return [acc]


@converts("Clip")
def _clip(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    if node.version < 11:
        lo: Value | None = np.asarray(node.attr("min", -3.4028234663852886e38), dtype=imp.dtype(x))
        hi: Value | None = np.asarray(node.attr("max", 3.4028234663852886e38), dtype=imp.dtype(x))
    else:
        lo, hi = node.input(1), node.input(2)
    static = all(v is None or not isinstance(v, SSAValue) for v in (lo, hi))
    if static and imp.dtype(x) == np.float32:
        a_min = -math.inf if lo is None else float(np.asarray(lo))
        a_max = math.inf if hi is None else float(np.asarray(hi))
        if a_min <= a_max:
            return [imp.emit(nn.ClipOp, x, a_min=a_min, a_max=a_max)]
    # dynamic bounds (or min > max, which ONNX defines as all max): max then min
    y = x
    if lo is not None:
        y = imp.emit(nn.MaximumOp, y, lo)
    if hi is not None:
        y = imp.emit(nn.MinimumOp, y, hi)
    return [y]


@converts("Identity")
def _identity(imp: Importer, node: Node) -> list[Value]:
    return [node.required(0)]


@converts("Dropout")
def _dropout(imp: Importer, node: Node) -> list[Value | None]:
    if node.version >= 12 and node.input(2) is not None:
        training = imp.static(node, 2, "training_mode")
        if training is not None and bool(np.asarray(training)):
            ratio = imp.static(node, 1, "ratio")
            if ratio is None or float(np.asarray(ratio)) != 0.0:  # ratio 0 drops nothing
                raise UnsupportedOnnxError("Dropout in training mode is not supported (random)")
    if node.version < 7 and not node.attr("is_test", 0):
        raise UnsupportedOnnxError("Dropout in training mode (is_test = 0) is not supported")
    x = node.required(0)
    return [x, np.ones(imp.shape(x), dtype=np.bool_)]  # the mask: all true at inference


def to_dtype(node: Node, unsupported: str) -> np.dtype[Any]:
    """The numpy dtype of the node's `to` attribute (a `TensorProto.DataType`); one that is
    no nn element type's is an UnsupportedOnnxError: `<op> to <type> is not supported`
    followed by `unsupported`."""
    to = int(node.required_attr("to"))
    try:
        target = proto.np_dtype(to)
    except Exception:
        target = None
    if target is None or target not in NN_DTYPES:
        raise UnsupportedOnnxError(
            f"{node.op_type} to {proto.dtype_name(to)} is not supported{unsupported}"
        )
    return target


@converts("Cast")
def _cast(imp: Importer, node: Node) -> list[Value]:
    why = "; nn.cast targets the nn element types (f32, f64, f16, i8..i64, ui8..ui64, bool)"
    return [cast_to(imp, node.required(0), to_dtype(node, why))]


def cast_to(imp: Importer, x: Value, target: np.dtype) -> Value:  # type: ignore[type-arg]
    """`x` converted to `target` (an nn element type's dtype): folded when known, else nn.cast."""
    if target not in NN_DTYPES:
        raise UnsupportedOnnxError(f"a cast to {target} is not supported (no nn element type)")
    if not isinstance(x, SSAValue):
        with np.errstate(all="ignore"):
            return np.asarray(x).astype(target)
    if target == imp.dtype(x):
        return x
    name = nn.DTYPE_NAMES[nn.element_type_of(target)]
    return imp.emit(nn.CastOp, x, dtype=name)
