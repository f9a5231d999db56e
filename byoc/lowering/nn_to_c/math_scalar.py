"""lower-to-c's scalar expressions of the f32 pointwise ops of `nn.math_ops`
(`ccompiler.MATH_POINTWISE_OPS`); each matches its numpy kernel in
`byoc.interpreters.kernels_math` within the f32 error bounds."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import f32
from xdsl.ir import SSAValue

from byoc.dialects import c

_LIBM: dict[str, str] = {
    "nn.sin": "sinf", "nn.cos": "cosf", "nn.tan": "tanf", "nn.asin": "asinf",
    "nn.acos": "acosf", "nn.atan": "atanf", "nn.sinh": "sinhf", "nn.cosh": "coshf",
    "nn.asinh": "asinhf", "nn.acosh": "acoshf", "nn.atanh": "atanhf", "nn.floor": "floorf",
    "nn.ceil": "ceilf", "nn.round": "rintf",  # rintf: half to even in the default rounding mode
}  # fmt: skip


def math_scalar_op(b: object, name: str, params: dict[str, object], args: list[SSAValue]) -> SSAValue:
    """The C expression of f32 pointwise op `name` on scalar operands (`b` is emission's CBuilder)."""

    def add(op: object) -> SSAValue:
        return b.add(op)  # type: ignore[attr-defined]

    def k(v: float) -> SSAValue:
        return b.const(float(f32_value(v)), f32)  # type: ignore[attr-defined]

    def call(fn: str, *xs: SSAValue) -> SSAValue:
        return add(c.CallOpaqueOp(fn, list(xs), [f32]))

    def cmp(pred: str, x: SSAValue, y: SSAValue) -> SSAValue:
        return add(c.CmpOp(pred, x, y))

    def sel(cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        return add(c.SelectOp(cond, x, y))

    def mul(x: SSAValue, y: SSAValue) -> SSAValue:
        return add(c.MulOp(x, y))

    def plus(x: SSAValue, y: SSAValue) -> SSAValue:
        return add(c.AddOp(x, y))

    def softplus(x: SSAValue) -> SSAValue:  # max(x, 0) + log1p(exp(-|x|)): no overflow
        return plus(call("fmaxf", x, k(0)), call("log1pf", call("expf", add(c.NegOp(call("fabsf", x))))))

    def exp_minus_one(x: SSAValue, alpha: float) -> SSAValue:  # alpha * (exp(x) - 1)
        return mul(k(alpha), call("expm1f", x))

    x = args[0]
    p = params
    if name in _LIBM:
        return call(_LIBM[name], x)
    if name == "nn.softplus":
        return softplus(x)
    if name == "nn.softsign":
        return add(c.DivOp(x, plus(k(1), call("fabsf", x))))
    if name == "nn.mish":
        return mul(x, call("byoc_tanhf", softplus(x)))
    if name == "nn.gelu":
        if p["approximate"] == "tanh":
            # 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): one exp (byoc_math.h's, which
            # vectorises), and no cancellation in 1 + tanh(u) where x is negative
            cube = mul(k(0.044715), mul(x, mul(x, x)))
            inner = mul(k(-2 * math.sqrt(2 / math.pi)), plus(x, cube))
            return add(c.DivOp(x, plus(k(1), call("byoc_expf", inner))))
        return call("byoc_gelu_erff", x)  # byoc_math.h: vectorises, no cancellation for x < 0
    if name == "nn.elu":
        return sel(cmp("gt", x, k(0)), x, exp_minus_one(x, float(p["alpha"])))  # type: ignore[arg-type]
    if name == "nn.selu":
        neg = exp_minus_one(x, float(p["alpha"]))  # type: ignore[arg-type]
        return mul(k(float(p["gamma"])), sel(cmp("gt", x, k(0)), x, neg))  # type: ignore[arg-type]
    if name == "nn.celu":
        alpha = float(p["alpha"])  # type: ignore[arg-type]
        # max(x, 0) + min(alpha * expm1(x / alpha), 0), as a select: fmaxf and fminf
        # would turn a NaN into 0
        neg = exp_minus_one(add(c.DivOp(x, k(alpha))), alpha)
        return sel(cmp("gt", x, k(0)), x, neg)
    if name == "nn.thresholded_relu":
        return sel(cmp("gt", x, k(float(p["alpha"]))), x, k(0))  # type: ignore[arg-type]
    if name == "nn.swish":
        alpha = float(p["alpha"])  # type: ignore[arg-type]
        return add(c.DivOp(x, plus(k(1), call("expf", mul(k(-alpha), x)))))
    if name == "nn.shrink":
        lambd, bias = float(p["lambd"]), float(p["bias"])  # type: ignore[arg-type]
        inner = sel(cmp("gt", x, k(lambd)), add(c.SubOp(x, k(bias))), k(0))
        return sel(cmp("lt", x, k(-lambd)), plus(x, k(bias)), inner)
    if name == "nn.sign":  # NaN and zeros pass through
        return sel(cmp("gt", x, k(0)), k(1), sel(cmp("lt", x, k(0)), k(-1), x))
    if name == "nn.mod":
        r = call("fmodf", x, args[1])
        if p["fmod"]:
            return r
        # numpy.mod: a non-zero remainder takes the divisor's sign
        fix = add(
            c.LogicalAndOp(
                cmp("ne", r, k(0)), cmp("ne", cmp("lt", r, k(0)), cmp("lt", args[1], k(0)))
            )
        )
        return sel(fix, plus(r, args[1]), r)
    raise AssertionError(f"no scalar lowering for {name}")


def f32_value(v: float) -> float:
    import numpy as np

    return float(np.float32(v))
