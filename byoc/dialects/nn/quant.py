"""Quantized ops of the `nn` dialect: ONNX's linear quantization.

Scales and zero points are operands (usually `nn.constant`s), as in ONNX, so a
per-tensor, per-axis or blocked parameter is just a tensor of the right shape:

    %q = nn.quantize %x, %s, %zp : (tensor<1x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8xui8>
    %x = nn.dequantize %q, %s, %zp {axis = 0} : (tensor<4x8xi8>, tensor<4xf32>, tensor<4xi8>) -> ...
    %a = nn.qconv2d %x, %w, %xzp, %wzp {padding = ...} : (..ui8.., ..i8.., ..) -> tensor<...xi32>
    %y = nn.requantize %a, %s_in, %zp_in, %s_out, %zp_out : (...xi32, ...) -> tensor<...xui8>

- `nn.quantize x, scale, zero_point {axis, block_size}`: f32 -> the zero point's
  element type (i8, ui8, i16, ui16): saturate(round_half_even(x / scale) + zero_point).
- `nn.dequantize x, scale, zero_point {axis, block_size}`: (x - zero_point) * scale, f32.
- `nn.requantize x, in_scale, in_zero_point, out_scale, out_zero_point {axis}`: an integer
  tensor (i32 accumulators, or i8/ui8) to the out zero point's type:
  saturate(round_half_even(f32(x - in_zp) * f32(in_scale / out_scale)) + out_zp), the
  multiplier computed in f32 once (onnxruntime's QLinearConv/QLinearMatMul requantization).
- `nn.qconv2d`, `nn.qdense`, `nn.qmatmul x, w, x_zero_point, w_zero_point`: i8/ui8 operands,
  i32 result, sum((x - x_zp) * (w - w_zp)) accumulated exactly in i32 (ONNX ConvInteger,
  MatMulInteger). Padding of qconv2d is the x zero point (the real value 0).
- `nn.dynamic_quantize x`: f32 -> (ui8 tensor, f32 scale, ui8 zero point), ONNX
  DynamicQuantizeLinear.

Scale shapes: `[]` or `[1]` per tensor; `[d]` with `d = x.shape[axis]` per axis; with
`block_size > 0`, the rank of x with `ceil(x.shape[axis] / block_size)` at `axis` (ONNX 21).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType, f32, i8, i16, i32
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, var_result_def

from byoc.dialects.nn.base import (  # pyright: ignore[reportPrivateUsage]
    NNOp,
    OneResultOp,
    _fail,
    norm_axis,
    tensor_operands,
)
from byoc.dialects.nn.layers import DEFAULT_LAYOUTS, Conv2DOp, DenseOp, MatmulOp
from byoc.dialects.nn.props import array_prop, int_prop
from byoc.dialects.nn.types import ints, shape_of, tensor, ui8, ui16

QUANTIZED: tuple[Attribute, ...] = (i8, ui8, i16, ui16)
"""Element types a quantized tensor may have (ONNX INT8, UINT8, INT16, UINT16)."""
INT8: tuple[Attribute, ...] = (i8, ui8)
"""Element types of the operands of the integer conv/dense/matmul."""


def check_qparams(
    x: TensorType[Any],
    scale: TensorType[Any],
    zero_point: TensorType[Any] | None,
    axis: int,
    block_size: int,
    what: str = "scale",
) -> None:
    """Raise unless `scale` (and `zero_point`, same shape) is per tensor, per axis or blocked."""
    xs, ss = shape_of(x), shape_of(scale)
    if scale.element_type != f32:
        raise _fail(f"{what} must be f32, got {scale.element_type}")
    if zero_point is not None and shape_of(zero_point) != ss and not (
        shape_of(zero_point) in ((), (1,)) and ss in ((), (1,))
    ):
        raise _fail(
            f"zero point shape {list(shape_of(zero_point))} differs from {what} shape {list(ss)}"
        )
    if block_size < 0:
        raise _fail(f"block_size {block_size} must be non-negative")
    if block_size == 0:
        if ss in ((), (1,)):
            return
        if len(ss) != 1:
            raise _fail(f"{what} must be a scalar or 1-D (per axis), got shape {list(ss)}")
        a = norm_axis(axis, len(xs))
        if ss[0] != xs[a]:
            raise _fail(f"{what} has {ss[0]} elements, x has {xs[a]} along axis {a}")
        return
    a = norm_axis(axis, len(xs))
    if len(ss) != len(xs):
        raise _fail(f"blocked {what} must have the rank of x ({len(xs)}), got {len(ss)}")
    for k, (d, s) in enumerate(zip(xs, ss, strict=True)):
        want = -(-d // block_size) if k == a else d
        if s != want:
            raise _fail(
                f"blocked {what} has {s} elements along axis {k}, expected {want} "
                f"(block_size {block_size})"
            )


class _QOp(NNOp):
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def check_dtypes(cls, types: Sequence[TensorType[Any]]) -> None:
        return  # `infer` checks each operand's element type


class _ElementwiseQOp(_QOp, OneResultOp):
    """A quantize, dequantize or requantize: one value in, one value out."""

    KIND: ClassVar[str] = "elementwise"


class _LinearQuantOp(_ElementwiseQOp):
    """The operands and properties nn.quantize and nn.dequantize share."""

    x, scale, zero_point = tensor_operands(3)
    axis = int_prop(1)
    block_size = int_prop(0)

    @classmethod
    def result_element_type(cls, x: Attribute, zero_point: Attribute) -> Attribute:
        """The result's element type for x and zero point of these element types;
        raises VerifyException for types the op does not take."""
        raise NotImplementedError

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, s, zp = types
        out = cls.result_element_type(x.element_type, zp.element_type)
        check_qparams(x, s, zp, attrs["axis"], attrs["block_size"])
        return [tensor(shape_of(x), out)]


@irdl_op_definition
class QuantizeOp(_LinearQuantOp):
    """saturate(round_half_even(x / scale) + zero_point) in the zero point's type (ONNX QuantizeLinear)."""

    name = "nn.quantize"

    @classmethod
    def result_element_type(cls, x: Attribute, zero_point: Attribute) -> Attribute:
        if x != f32:
            raise _fail(f"nn.quantize takes f32, got {x}")
        if zero_point not in QUANTIZED:
            raise _fail(
                f"zero point element type {zero_point} is not a quantized type (i8, ui8, i16, ui16)"
            )
        return zero_point


@irdl_op_definition
class DequantizeOp(_LinearQuantOp):
    """(x - zero_point) * scale as f32 (ONNX DequantizeLinear)."""

    name = "nn.dequantize"

    @classmethod
    def result_element_type(cls, x: Attribute, zero_point: Attribute) -> Attribute:
        if x not in (*QUANTIZED, i32):
            raise _fail(f"nn.dequantize takes i8, ui8, i16, ui16 or i32, got {x}")
        if zero_point != x:
            raise _fail(f"zero point is {zero_point}, x is {x}")
        return f32


@irdl_op_definition
class RequantizeOp(_ElementwiseQOp):
    """saturate(round_half_even(f32(x - in_zp) * f32(in_scale / out_scale)) + out_zp)."""

    name = "nn.requantize"
    x, in_scale, in_zero_point, out_scale, out_zero_point = tensor_operands(5)
    axis = int_prop(1)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, si, zi, so, zo = types
        if x.element_type not in (*QUANTIZED, i32):
            raise _fail(f"nn.requantize takes i8, ui8, i16, ui16 or i32, got {x.element_type}")
        if zi.element_type != x.element_type:
            raise _fail(f"input zero point is {zi.element_type}, x is {x.element_type}")
        if zo.element_type not in QUANTIZED:
            raise _fail(f"output zero point element type {zo.element_type} is not a quantized type")
        check_qparams(x, si, zi, attrs["axis"], 0, "input scale")
        check_qparams(x, so, zo, attrs["axis"], 0, "output scale")
        if shape_of(so) not in ((), (1,)):
            raise _fail("the output scale must be per tensor")
        return [tensor(shape_of(x), zo.element_type)]


def _check_int_operands(
    name: str, x: TensorType[Any], w: TensorType[Any], xzp: TensorType[Any], wzp: TensorType[Any], channels: int
) -> None:
    for what, t in (("x", x), ("w", w)):
        if t.element_type not in INT8:
            raise _fail(f"{name} {what} must be i8 or ui8, got {t.element_type}")
    if xzp.element_type != x.element_type or wzp.element_type != w.element_type:
        raise _fail(f"{name} zero points must have the element types of x and w")
    if shape_of(xzp) not in ((), (1,)):
        raise _fail(f"{name} x zero point must be per tensor, got shape {list(shape_of(xzp))}")
    if shape_of(wzp) not in ((), (1,), (channels,)):
        raise _fail(
            f"{name} w zero point must be per tensor or have {channels} elements, "
            f"got shape {list(shape_of(wzp))}"
        )


def _as_float(t: TensorType[Any]) -> TensorType[Any]:
    return tensor(shape_of(t), f32)


class _IntegerOp(_QOp, OneResultOp):
    """An integer conv/dense/matmul: i8/ui8 operands and their zero points (x, w, x_zp, w_zp),
    an i32 result of the shape its float op (`FLOAT_OP`) gives."""

    KIND: ClassVar[str] = "out-elementwise-fusable"
    FLOAT_OP: ClassVar[type[NNOp]]
    """The float op whose type relation gives the result shape."""

    @staticmethod
    def zero_point_channels(w: tuple[int, ...]) -> int:
        """The element count of a per-channel weight zero point: the output channels."""
        return w[0] if w else 0

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, w, xzp, wzp = types
        _check_int_operands(cls.name, x, w, xzp, wzp, cls.zero_point_channels(shape_of(w)))
        float_types = [_as_float(x), _as_float(w)]
        (out,) = cls.FLOAT_OP.infer(float_types, {**DEFAULT_LAYOUTS, **attrs})
        return [tensor(shape_of(out), i32)]


@irdl_op_definition
class QConv2DOp(_IntegerOp):
    """Integer conv2d (ONNX ConvInteger): sum((x - x_zp) * (w - w_zp)) in i32; NCHW, OIHW."""

    name = "nn.qconv2d"
    data, weight, data_zero_point, weight_zero_point = tensor_operands(4)
    strides = array_prop(ints(1, 1))
    padding = array_prop(ints(0, 0, 0, 0))
    dilation = array_prop(ints(1, 1))
    groups = int_prop(1)
    FLOAT_OP: ClassVar[type[NNOp]] = Conv2DOp


@irdl_op_definition
class QDenseOp(_IntegerOp):
    """Integer dense (x · Wᵀ): data (..., K) and weight (N, K) i8/ui8 -> (..., N) i32."""

    name = "nn.qdense"
    data, weight, data_zero_point, weight_zero_point = tensor_operands(4)
    FLOAT_OP: ClassVar[type[NNOp]] = DenseOp


@irdl_op_definition
class QMatmulOp(_IntegerOp):
    """Integer matmul (ONNX MatMulInteger): numpy.matmul of i8/ui8 operands into i32.

    The b zero point is per tensor or, per column, has b.shape[-1] elements."""

    name = "nn.qmatmul"
    lhs, rhs, lhs_zero_point, rhs_zero_point = tensor_operands(4)
    FLOAT_OP: ClassVar[type[NNOp]] = MatmulOp

    @staticmethod
    def zero_point_channels(w: tuple[int, ...]) -> int:
        return w[-1] if len(w) >= 2 else 1


@irdl_op_definition
class DynamicQuantizeOp(_QOp):
    """ONNX DynamicQuantizeLinear: (ui8 tensor, f32 scale, ui8 zero point) from the range of x."""

    name = "nn.dynamic_quantize"
    x = operand_def(TensorType)
    outputs = var_result_def(TensorType)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        (x,) = types
        if x.element_type != f32:
            raise _fail(f"nn.dynamic_quantize takes f32, got {x.element_type}")
        return [tensor(shape_of(x), ui8), tensor((), f32), tensor((), ui8)]


QUANT_OPS: tuple[type[NNOp], ...] = (
    QuantizeOp,
    DequantizeOp,
    RequantizeOp,
    QConv2DOp,
    QDenseOp,
    QMatmulOp,
    DynamicQuantizeOp,
)
"""The quantized ops, appended to the `nn` dialect's op list."""
