"""Elementwise ATen ops: arithmetic with PyTorch's type promotion, activations, comparisons,
logic, `where`, casts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import nn
from byoc.dialects.nn import logic_ops, math_ops
from byoc.frontend.torch.base import Call, Importer, Tensor, converts
from byoc.frontend.torch.errors import UnsupportedTorchError

UNARY: dict[str, tuple[type[nn.NNOp], dict[str, Any]]] = {
    "aten.relu.default": (nn.ReluOp, {}),
    "aten.sigmoid.default": (nn.SigmoidOp, {}),
    "aten.tanh.default": (nn.TanhOp, {}),
    "aten.exp.default": (nn.ExpOp, {}),
    "aten.log.default": (nn.LogOp, {}),
    "aten.sqrt.default": (nn.SqrtOp, {}),
    "aten.neg.default": (nn.NegativeOp, {}),
    "aten.abs.default": (nn.AbsOp, {}),
    "aten.erf.default": (nn.ErfOp, {}),
    "aten.reciprocal.default": (nn.ReciprocalOp, {}),
    "aten.sin.default": (math_ops.SinOp, {}),
    "aten.cos.default": (math_ops.CosOp, {}),
    "aten.tan.default": (math_ops.TanOp, {}),
    "aten.asin.default": (math_ops.AsinOp, {}),
    "aten.acos.default": (math_ops.AcosOp, {}),
    "aten.atan.default": (math_ops.AtanOp, {}),
    "aten.sinh.default": (math_ops.SinhOp, {}),
    "aten.cosh.default": (math_ops.CoshOp, {}),
    "aten.asinh.default": (math_ops.AsinhOp, {}),
    "aten.acosh.default": (math_ops.AcoshOp, {}),
    "aten.atanh.default": (math_ops.AtanhOp, {}),
    "aten.floor.default": (math_ops.FloorOp, {}),
    "aten.ceil.default": (math_ops.CeilOp, {}),
    "aten.round.default": (math_ops.RoundOp, {}),
    "aten.sign.default": (math_ops.SignOp, {}),
    "aten.hardswish.default": (nn.HardSwishOp, {}),
    "aten.hardsigmoid.default": (nn.HardSigmoidOp, {"alpha": 1 / 6, "beta": 0.5}),
    "aten.mish.default": (math_ops.MishOp, {}),
    "aten.silu.default": (math_ops.SwishOp, {}),
    "aten.isnan.default": (math_ops.IsNanOp, {}),
    "aten.isinf.default": (math_ops.IsInfOp, {}),
    "aten.logical_not.default": (logic_ops.LogicalNotOp, {}),
}
"""One-to-one unary ops: ATen overload -> (nn op, fixed properties)."""

FLOAT_UNARY = frozenset(
    name for name, (cls, _) in UNARY.items() if cls.DTYPES == nn.FLOATS
)
"""Unary ops defined on floats only: integer operands are cast to the result type first."""


def _unary(imp: Importer, call: Call) -> Tensor:
    cls, attrs = UNARY[call.op]
    x = call["self"]
    if call.op == "aten.logical_not.default":
        return imp.emit(cls, _as_bool(imp, x))
    if call.op in FLOAT_UNARY and call.out_dtype.kind == "f":
        x = imp.cast(x, call.out_dtype)
    return imp.emit(cls, x, **attrs)


for _name in UNARY:
    converts(_name)(_unary)


def _as_bool(imp: Importer, x: Tensor) -> Tensor:
    if imp.dtype(x) == np.bool_:
        return x
    zero = np.zeros((), dtype=imp.dtype(x))
    return imp.emit(logic_ops.LogicalNotOp, imp.emit(logic_ops.EqualOp, x, zero))


def is_tensor(v: Any) -> bool:
    return isinstance(v, SSAValue | np.ndarray)


def promote(imp: Importer, *values: Any) -> np.dtype[Any]:
    """PyTorch's result type of `values` (tensors and Python scalars): the tensors' common
    type; a Python float over integer or bool tensors gives float32, an int over bool int64."""
    tensors = [imp.dtype(v) for v in values if is_tensor(v)]
    dt = np.result_type(*tensors) if tensors else np.dtype(np.float32)
    scalars = [v for v in values if not is_tensor(v)]
    if any(isinstance(s, float) for s in scalars) and dt.kind != "f":
        return np.dtype(np.float32)
    if any(isinstance(s, int) and not isinstance(s, bool) for s in scalars) and dt == np.bool_:
        return np.dtype(np.int64)
    return dt


def binary(imp: Importer, cls: type[nn.NNOp], a: Any, b: Any, dtype: Any) -> Tensor:
    """`cls(a, b)` with both operands in `dtype` (scalars become 0-d constants)."""
    return imp.emit(cls, imp.cast(imp.tensor(a, dtype), dtype), imp.cast(imp.tensor(b, dtype), dtype))


def _scaled(imp: Importer, v: Any, alpha: Any, dtype: Any) -> Any:
    if alpha is None or alpha == 1:
        return v
    if not is_tensor(v):
        return v * alpha
    return binary(imp, nn.MultiplyOp, v, alpha, dtype)


@converts("aten.add.Tensor", "aten.add.Scalar")
def _add(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    if dt == np.bool_:
        return binary(imp, logic_ops.LogicalOrOp, call["self"], call["other"], dt)
    return binary(imp, nn.AddOp, call["self"], _scaled(imp, call["other"], call.get("alpha"), dt), dt)


@converts("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    return binary(imp, nn.SubtractOp, call["self"], _scaled(imp, call["other"], call.get("alpha"), dt), dt)


@converts("aten.rsub.Scalar", "aten.rsub.Tensor")
def _rsub(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    return binary(imp, nn.SubtractOp, call["other"], _scaled(imp, call["self"], call.get("alpha"), dt), dt)


@converts("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    if dt == np.bool_:
        return binary(imp, logic_ops.LogicalAndOp, call["self"], call["other"], dt)
    return binary(imp, nn.MultiplyOp, call["self"], call["other"], dt)


@converts("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    mode = call.get("rounding_mode")
    a, b = call["self"], call["other"]
    if mode is None or dt.kind == "f":
        q = binary(imp, nn.DivideOp, a, b, dt)
        if mode == "floor":
            return imp.emit(math_ops.FloorOp, q)
        if mode == "trunc":  # toward zero: sign(q) * floor(|q|)
            return imp.emit(nn.MultiplyOp, imp.emit(math_ops.SignOp, q), imp.emit(math_ops.FloorOp, imp.emit(nn.AbsOp, q)))
        return q
    if mode == "trunc":
        return binary(imp, nn.DivideOp, a, b, dt)  # nn.divide truncates integers
    # integer floor division: (a - a mod b) / b is exact, and mod takes the divisor's sign
    a_, b_ = imp.cast(imp.tensor(a, dt), dt), imp.cast(imp.tensor(b, dt), dt)
    r = imp.emit(math_ops.ModOp, a_, b_, fmod=False)
    return imp.emit(nn.DivideOp, imp.emit(nn.SubtractOp, a_, r), b_)


@converts("aten.remainder.Tensor", "aten.remainder.Scalar", "aten.fmod.Tensor", "aten.fmod.Scalar")
def _remainder(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    a, b = imp.cast(imp.tensor(call["self"], dt), dt), imp.cast(imp.tensor(call["other"], dt), dt)
    return imp.emit(math_ops.ModOp, a, b, fmod=call.op.startswith("aten.fmod"))


@converts("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def _pow(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    base, exp = call["self"], call["exponent"]
    if not is_tensor(exp) and dt.kind == "f":
        x = imp.cast(imp.tensor(base, dt), dt)
        if exp == 2:
            return imp.emit(nn.MultiplyOp, x, x)
        if exp == 1:
            return x
        if exp == 0.5:
            return imp.emit(nn.SqrtOp, x)
        if exp == -1:
            return imp.emit(nn.ReciprocalOp, x)
    if dt.kind != "f":
        raise UnsupportedTorchError("an integer power is not supported (nn.power takes floats)")
    return binary(imp, nn.PowerOp, base, exp, dt)


@converts("aten.rsqrt.default")
def _rsqrt(imp: Importer, call: Call) -> Tensor:
    x = imp.cast(call["self"], call.out_dtype)
    return imp.emit(nn.ReciprocalOp, imp.emit(nn.SqrtOp, x))


@converts("aten.log1p.default", "aten.expm1.default", "aten.log2.default", "aten.log10.default", "aten.exp2.default")
def _log_exp_variants(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    x = imp.cast(call["self"], dt)
    one = imp.tensor(1.0, dt)
    if call.op == "aten.log1p.default":
        return imp.emit(nn.LogOp, imp.emit(nn.AddOp, x, one))
    if call.op == "aten.expm1.default":
        return imp.emit(nn.SubtractOp, imp.emit(nn.ExpOp, x), one)
    if call.op == "aten.exp2.default":
        return imp.emit(nn.ExpOp, imp.emit(nn.MultiplyOp, x, imp.tensor(math.log(2.0), dt)))
    base = 2.0 if call.op == "aten.log2.default" else 10.0
    return imp.emit(nn.MultiplyOp, imp.emit(nn.LogOp, x), imp.tensor(1.0 / math.log(base), dt))


@converts("aten.maximum.default", "aten.minimum.default")
def _max_min(imp: Importer, call: Call) -> Tensor:
    cls = nn.MaximumOp if call.op == "aten.maximum.default" else nn.MinimumOp
    return binary(imp, cls, call["self"], call["other"], call.out_dtype)


@converts("aten.gelu.default")
def _gelu(imp: Importer, call: Call) -> Tensor:
    return imp.emit(math_ops.GeluOp, call["self"], approximate=call.get("approximate", "none"))


@converts("aten.leaky_relu.default")
def _leaky_relu(imp: Importer, call: Call) -> Tensor:
    return imp.emit(nn.LeakyReluOp, call["self"], alpha=float(call.get("negative_slope", 0.01)))


@converts("aten.elu.default")
def _elu(imp: Importer, call: Call) -> Tensor:
    alpha, scale, input_scale = (float(call.get(k, 1.0)) for k in ("alpha", "scale", "input_scale"))
    x = call["self"]
    if input_scale != 1.0:
        x = imp.emit(nn.MultiplyOp, x, imp.tensor(input_scale, imp.dtype(x)))
    y = imp.emit(math_ops.EluOp, x, alpha=alpha)
    if scale != 1.0:
        y = imp.emit(nn.MultiplyOp, y, imp.tensor(scale, imp.dtype(y)))
    return y


@converts("aten.softplus.default")
def _softplus(imp: Importer, call: Call) -> Tensor:
    x, beta, threshold = call["self"], float(call.get("beta", 1.0)), float(call.get("threshold", 20.0))
    dt = imp.dtype(x)
    bx = x if beta == 1.0 else imp.emit(nn.MultiplyOp, x, imp.tensor(beta, dt))
    y = imp.emit(math_ops.SoftplusOp, bx)
    if beta != 1.0:
        y = imp.emit(nn.DivideOp, y, imp.tensor(beta, dt))
    # above the threshold PyTorch returns x itself
    keep = imp.emit(logic_ops.GreaterOp, bx, imp.tensor(threshold, dt))
    return imp.emit(logic_ops.WhereOp, keep, x, y)


def _clip_bound(v: Any) -> float | None:
    return None if v is None else float(v)


@converts("aten.clamp.default", "aten.hardtanh.default", "aten.clamp_min.default", "aten.clamp_max.default")
def _clamp(imp: Importer, call: Call) -> Tensor:
    x = imp.cast(call["self"], call.out_dtype)
    if call.op == "aten.hardtanh.default":
        lo, hi = float(call.get("min_val", -1.0)), float(call.get("max_val", 1.0))
    elif call.op == "aten.clamp_min.default":
        lo, hi = _clip_bound(call["min"]), None
    elif call.op == "aten.clamp_max.default":
        lo, hi = None, _clip_bound(call["max"])
    else:
        lo, hi = _clip_bound(call.get("min")), _clip_bound(call.get("max"))
    if imp.dtype(x).kind == "f":
        return imp.emit(
            nn.ClipOp, x, a_min=-math.inf if lo is None else lo, a_max=math.inf if hi is None else hi
        )
    dt = imp.dtype(x)
    if lo is not None:
        x = imp.emit(nn.MaximumOp, x, imp.tensor(lo, dt))
    if hi is not None:
        x = imp.emit(nn.MinimumOp, x, imp.tensor(hi, dt))
    return x


@converts("aten.clamp.Tensor")
def _clamp_tensor(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    x = imp.cast(call["self"], dt)
    if call.get("min") is not None:
        x = binary(imp, nn.MaximumOp, x, call["min"], dt)
    if call.get("max") is not None:
        x = binary(imp, nn.MinimumOp, x, call["max"], dt)
    return x


COMPARE = {
    "eq": logic_ops.EqualOp, "ne": logic_ops.EqualOp, "lt": logic_ops.LessOp,
    "le": logic_ops.LessEqualOp, "gt": logic_ops.GreaterOp, "ge": logic_ops.GreaterEqualOp,
}  # fmt: skip


def _compare(imp: Importer, call: Call) -> Tensor:
    kind = call.op.split(".")[1]
    a, b = call["self"], call["other"]
    dt = promote(imp, a, b)
    if kind in ("eq", "ne") and dt == np.bool_:
        y = binary(imp, logic_ops.LogicalXorOp, a, b, dt)
        return y if kind == "ne" else imp.emit(logic_ops.LogicalNotOp, y)
    y = binary(imp, COMPARE[kind], a, b, dt)
    return imp.emit(logic_ops.LogicalNotOp, y) if kind == "ne" else y


for _kind in COMPARE:
    converts(f"aten.{_kind}.Tensor", f"aten.{_kind}.Scalar")(_compare)


LOGICAL = {
    "aten.logical_and.default": logic_ops.LogicalAndOp,
    "aten.logical_or.default": logic_ops.LogicalOrOp,
    "aten.logical_xor.default": logic_ops.LogicalXorOp,
}


@converts(*LOGICAL)
def _logical(imp: Importer, call: Call) -> Tensor:
    return imp.emit(LOGICAL[call.op], _as_bool(imp, call["self"]), _as_bool(imp, call["other"]))


BITWISE = {
    "aten.bitwise_and.Tensor": (logic_ops.LogicalAndOp, math_ops.BitwiseAndOp),
    "aten.bitwise_or.Tensor": (logic_ops.LogicalOrOp, math_ops.BitwiseOrOp),
    "aten.bitwise_xor.Tensor": (logic_ops.LogicalXorOp, math_ops.BitwiseXorOp),
}


@converts(*BITWISE)
def _bitwise(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    logical, bitwise = BITWISE[call.op]
    return binary(imp, logical if dt == np.bool_ else bitwise, call["self"], call["other"], dt)


@converts("aten.bitwise_not.default")
def _bitwise_not(imp: Importer, call: Call) -> Tensor:
    x = call["self"]
    if imp.dtype(x) == np.bool_:
        return imp.emit(logic_ops.LogicalNotOp, x)
    return imp.emit(math_ops.BitwiseNotOp, x)


@converts("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(imp: Importer, call: Call) -> Tensor:
    dt = call.out_dtype
    cond = _as_bool(imp, call["condition"])
    a = imp.cast(imp.tensor(call["self"], dt), dt)
    b = imp.cast(imp.tensor(call["other"], dt), dt)
    return imp.emit(logic_ops.WhereOp, cond, a, b)


@converts("aten._to_copy.default", "aten.to.dtype")
def _to_copy(imp: Importer, call: Call) -> Tensor:
    return imp.cast(call["self"], call.out_dtype)


@converts(
    "aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default",
    "aten.contiguous.default", "aten.dropout.default", "aten.native_dropout.default",
)  # fmt: skip
def _identity(imp: Importer, call: Call) -> Any:
    if call.op == "aten.native_dropout.default":
        if call.get("train"):
            raise UnsupportedTorchError("dropout in training mode is not supported; export in eval mode")
        return (call["input"], np.ones(imp.shape(call["input"]), dtype=np.bool_))
    x = call.args.get("self", call.args.get("input"))
    return x
