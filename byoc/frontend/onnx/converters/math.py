"""Math ONNX ops: trigonometric and rounding functions, activations (Gelu, Mish, Softplus,
Softsign, Elu, Selu, Celu, ThresholdedRelu, Swish, Shrink), Sign, IsNaN/IsInf, Mod, the
bitwise ops, the reductions beyond Mean/Sum/Max, ArgMax/ArgMin, CumSum/CumProd, TopK,
Einsum, Tile, Expand, CastLike, and LogSoftmax and Hardmax composed of them (nn ops of
`byoc.dialects.nn.math_ops`)."""

from __future__ import annotations

import math

import numpy as np

import byoc.frontend.onnx.proto as proto
from byoc.dialects import nn
from byoc.dialects.nn import logic_ops as lg
from byoc.dialects.nn import math_ops as m
from byoc.frontend.onnx.base import Importer, Node, Value, converts, ints, normalize_axes, string
from byoc.frontend.onnx.converters.elementwise import cast_to, to_dtype
from byoc.frontend.onnx.converters.layout import _axes_input
from byoc.frontend.onnx.errors import OnnxImportError, UnsupportedOnnxError

_UNARY: dict[str, type[nn.NNOp]] = {
    "Sin": m.SinOp, "Cos": m.CosOp, "Tan": m.TanOp, "Asin": m.AsinOp, "Acos": m.AcosOp,
    "Atan": m.AtanOp, "Sinh": m.SinhOp, "Cosh": m.CoshOp, "Asinh": m.AsinhOp, "Acosh": m.AcoshOp,
    "Atanh": m.AtanhOp, "Floor": m.FloorOp, "Ceil": m.CeilOp, "Round": m.RoundOp,
    "Softplus": m.SoftplusOp, "Softsign": m.SoftsignOp, "Mish": m.MishOp, "Sign": m.SignOp,
    "IsNaN": m.IsNanOp, "BitwiseNot": m.BitwiseNotOp,
}  # fmt: skip


@converts(*_UNARY)
def _unary(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(_UNARY[node.op_type], node.required(0))]


_WITH_ATTRS: dict[str, tuple[type[nn.NNOp], dict[str, float]]] = {
    # op -> (nn op, ONNX attribute -> default)
    "Elu": (m.EluOp, {"alpha": 1.0}),
    "Selu": (m.SeluOp, {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}),
    "Celu": (m.CeluOp, {"alpha": 1.0}),
    "ThresholdedRelu": (m.ThresholdedReluOp, {"alpha": 1.0}),
    "Swish": (m.SwishOp, {"alpha": 1.0}),
    "Shrink": (m.ShrinkOp, {"bias": 0.0, "lambd": 0.5}),
}


@converts(*_WITH_ATTRS)
def _with_attrs(imp: Importer, node: Node) -> list[Value]:
    cls, defaults = _WITH_ATTRS[node.op_type]
    # ONNX attributes are f32: pass their f32 value, as onnxruntime and the reference use it
    attrs = {k: float(np.float32(node.attr(k, v))) for k, v in defaults.items()}
    return [imp.emit(cls, node.required(0), **attrs)]


@converts("Gelu")
def _gelu(imp: Importer, node: Node) -> list[Value]:
    approximate = string(node.attr("approximate", "none"))
    if approximate not in ("none", "tanh"):
        raise OnnxImportError(f"Gelu approximate '{approximate}' is not one of none, tanh")
    return [imp.emit(m.GeluOp, node.required(0), approximate=approximate)]


@converts("IsInf")
def _is_inf(imp: Importer, node: Node) -> list[Value]:
    return imp.emit_all(
        m.IsInfOp,
        node.required(0),
        detect_positive=bool(node.attr("detect_positive", 1)),
        detect_negative=bool(node.attr("detect_negative", 1)),
    )


def _same_dtype(imp: Importer, node: Node) -> tuple[Value, Value]:
    a, b = node.required(0), node.required(1)
    if imp.dtype(a) != imp.dtype(b):
        raise OnnxImportError(f"operand element types differ: {imp.dtype(a)} and {imp.dtype(b)}")
    return a, b


@converts("Mod")
def _mod(imp: Importer, node: Node) -> list[Value]:
    a, b = _same_dtype(imp, node)
    fmod = bool(node.attr("fmod", 0))
    return [imp.emit(m.ModOp, a, b, fmod=fmod)]


_BITWISE: dict[str, type[nn.NNOp]] = {
    "BitwiseAnd": m.BitwiseAndOp,
    "BitwiseOr": m.BitwiseOrOp,
    "BitwiseXor": m.BitwiseXorOp,
}


@converts(*_BITWISE)
def _bitwise(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(_BITWISE[node.op_type], *_same_dtype(imp, node))]


@converts("BitShift")
def _bit_shift(imp: Importer, node: Node) -> list[Value]:
    direction = string(node.required_attr("direction")).lower()
    return [imp.emit(m.BitShiftOp, *_same_dtype(imp, node), direction=direction)]


_REDUCE: dict[str, type[nn.NNOp]] = {
    "ReduceMin": m.ReduceMinOp,
    "ReduceProd": m.ReduceProdOp,
    "ReduceL1": m.ReduceL1Op,
    "ReduceL2": m.ReduceL2Op,
    "ReduceSumSquare": m.ReduceSumSquareOp,
    "ReduceLogSum": m.ReduceLogSumOp,
    "ReduceLogSumExp": m.ReduceLogSumExpOp,
}


@converts(*_REDUCE)
def _reduce(imp: Importer, node: Node) -> list[Value]:
    """axes an attribute before opset 18, input #1 from 18; no axes reduces everything,
    or nothing with noop_with_empty_axes (18+). An empty reduction gives the identity."""
    x = node.required(0)
    shape = imp.shape(x)
    axes = _axes_input(imp, node, 18)
    if not axes:
        if node.attr("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(len(shape)))
    axes = normalize_axes(axes, len(shape))
    keepdims = bool(node.attr("keepdims", 1))
    return [imp.emit(_REDUCE[node.op_type], x, axes=tuple(axes), keepdims=keepdims)]


@converts("ArgMax", "ArgMin")
def _arg(imp: Importer, node: Node) -> list[Value]:
    cls = m.ArgMaxOp if node.op_type == "ArgMax" else m.ArgMinOp
    return imp.emit_all(
        cls,
        node.required(0),
        axis=int(node.attr("axis", 0)),
        keepdims=bool(node.attr("keepdims", 1)),
        select_last_index=bool(node.attr("select_last_index", 0)),
    )


@converts("CumSum", "CumProd")
def _scan(imp: Importer, node: Node) -> list[Value]:
    axis = imp.static(node, 1, "axis")
    if axis is None:
        raise OnnxImportError(f"{node.op_type} needs an axis")
    return imp.emit_all(
        m.CumSumOp if node.op_type == "CumSum" else m.CumProdOp,
        node.required(0),
        axis=int(np.asarray(axis).reshape(-1)[0]),
        exclusive=bool(node.attr("exclusive", 0)),
        reverse=bool(node.attr("reverse", 0)),
    )


def _coerced_2d(imp: Importer, node: Node, x: Value, default_axis: int) -> tuple[Value, int]:
    """Before opset 13, Softmax-like ops see their input as 2-D, split at `axis`."""
    shape = imp.shape(x)
    axis = int(node.attr("axis", default_axis))
    if node.version >= 13:
        return x, axis
    (axis,) = normalize_axes([axis], max(len(shape), 1))
    return imp.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:]))), 1


@converts("LogSoftmax")
def _log_softmax(imp: Importer, node: Node) -> list[Value]:
    """x - log(sum(exp(x))) along the axis."""
    x = node.required(0)
    flat, axis = _coerced_2d(imp, node, x, 1 if node.version < 13 else -1)
    lse = imp.emit(m.ReduceLogSumExpOp, flat, axes=(axis,), keepdims=True)
    return [imp.reshape(imp.emit(nn.SubtractOp, flat, lse), imp.shape(x))]


@converts("Hardmax")
def _hardmax(imp: Importer, node: Node) -> list[Value]:
    """1 at the first maximum along the axis, else 0: the argmax compared with an arange."""
    x = node.required(0)
    flat, axis = _coerced_2d(imp, node, x, 1 if node.version < 13 else -1)
    shape = imp.shape(flat)
    (axis,) = normalize_axes([axis], len(shape))
    where = imp.emit(m.ArgMaxOp, flat, axis=axis, keepdims=True)
    index = np.arange(shape[axis], dtype=np.int64).reshape(
        [shape[axis] if i == axis else 1 for i in range(len(shape))]
    )
    hit = imp.emit(lg.EqualOp, where, index)
    return [imp.reshape(cast_to(imp, hit, imp.dtype(x)), imp.shape(x))]


@converts("TopK")
def _topk(imp: Importer, node: Node) -> list[Value]:
    if node.version < 10:
        k = int(node.required_attr("k"))
    else:
        k = int(np.asarray(imp.required_static(node, 1, "k", "k")).reshape(-1)[0])
    return imp.emit_all(
        m.TopKOp,
        node.required(0),
        k=k,
        axis=int(node.attr("axis", -1)),
        largest=bool(node.attr("largest", 1)),
    )


@converts("Einsum")
def _einsum(imp: Importer, node: Node) -> list[Value]:
    values = [v for v in node.inputs if v is not None]
    equation = string(node.required_attr("equation"))
    return [imp.emit(m.EinsumOp, *values, equation=equation)]


@converts("Tile")
def _tile(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    reps_list = ints(imp.required_static(node, 1, "repeats", "repeats"))
    if all(r == 1 for r in reps_list) and len(reps_list) == len(imp.shape(x)):
        return [x]
    return [imp.emit(m.TileOp, x, reps=tuple(reps_list))]


@converts("Expand")
def _expand(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    target = tuple(ints(imp.required_static(node, 1, "shape", "a shape")))
    if any(d < 0 for d in target):
        raise OnnxImportError(f"Expand shape {list(target)} has a negative dim")
    try:
        out = np.broadcast_shapes(imp.shape(x), target)
    except ValueError:
        raise OnnxImportError(
            f"Expand shape {list(target)} does not broadcast with {list(imp.shape(x))}"
        ) from None
    if tuple(out) == imp.shape(x):
        return [x]
    return [imp.emit(m.BroadcastToOp, x, shape=target)]


@converts("CastLike")
def _cast_like(imp: Importer, node: Node) -> list[Value]:
    target = imp.dtype(node.required(1))
    if target.kind not in "biuf":
        raise UnsupportedOnnxError(f"CastLike to {target} is not supported")
    return [cast_to(imp, node.required(0), target)]


@converts("EyeLike")
def _eye_like(imp: Importer, node: Node) -> list[Value]:
    """Ones on the k-th diagonal of a 2-D shape: known at import (shapes are static)."""
    shape = imp.shape(node.required(0))
    if len(shape) != 2:
        raise OnnxImportError(f"EyeLike needs a 2-D input, got shape {list(shape)}")
    to = node.attr("dtype")
    dtype = imp.dtype(node.required(0)) if to is None else proto.np_dtype(int(to))
    return [np.eye(shape[0], shape[1], k=int(node.attr("k", 0)), dtype=dtype)]


@converts("BitCast")
def _bitcast(imp: Importer, node: Node) -> list[Value]:
    x = node.required(0)
    target = to_dtype(node, " (no nn element type)")
    if target == imp.dtype(x):
        return [x]
    return [imp.emit(m.BitcastOp, x, dtype=nn.DTYPE_NAMES[nn.element_type_of(target)])]


@converts("Det")
def _det(imp: Importer, node: Node) -> list[Value]:
    return [imp.emit(m.DetOp, node.required(0))]


@converts("SwiGLU")
def _swiglu(imp: Importer, node: Node) -> list[Value]:
    """swish(a, alpha) * b, a and b of one shape (no broadcasting)."""
    a, b = _same_dtype(imp, node)
    if imp.shape(a) != imp.shape(b):
        raise OnnxImportError(
            f"SwiGLU needs A and B of one shape, got {list(imp.shape(a))} and {list(imp.shape(b))}"
        )
    alpha = float(np.float32(node.attr("alpha", 1.0)))
    return [imp.emit(nn.MultiplyOp, imp.emit(m.SwishOp, a, alpha=alpha), b)]
