"""The neural-network layers of the nn dialect: convolutions, dense and matmul, bias_add,
batch_norm, the pools, softmax and LRN, and the data/kernel layouts they take."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Operation
from xdsl.irdl import irdl_op_definition

from byoc.dialects.nn.base import (
    AxisOp,
    DataOp,
    NNOp,
    OneResultOp,
    _fail,
    broadcast_shapes,
    check_len,
    check_rank,
    norm_axis,
    tensor_operands,
)
from byoc.dialects.nn.props import array_prop, bool_prop, float_prop, int_prop, str_prop
from byoc.dialects.nn.types import ints, shape_of, tensor

# --------------------------------------------------------------------------
# Neural-network ops
# --------------------------------------------------------------------------




def _window_out(
    size: int, k: int, stride: int, pad_lo: int, pad_hi: int, dilation: int, ceil_mode: bool = False
) -> int:
    if stride < 1 or dilation < 1:
        raise _fail("strides and dilation must be positive")
    if pad_lo < 0 or pad_hi < 0:
        raise _fail("padding must be non-negative")
    span = dilation * (k - 1) + 1
    avail = size + pad_lo + pad_hi - span
    if avail < 0:
        raise _fail(
            f"window of extent {span} does not fit input size {size} with padding ({pad_lo}, {pad_hi})"
        )
    if ceil_mode:
        out = -(-avail // stride) + 1
        if (out - 1) * stride >= size + pad_lo:
            out -= 1
        return out
    return avail // stride + 1


DATA_LAYOUTS: tuple[str, ...] = ("NCHW", "NHWC")
"""The 4-D data layouts of conv2d, the pools and batch_norm (`data_layout`)."""
KERNEL_LAYOUTS: tuple[str, ...] = ("OIHW", "HWIO")
"""The conv2d weight layouts (`kernel_layout`)."""
DEFAULT_LAYOUTS: dict[str, str] = {"data_layout": "NCHW", "kernel_layout": "OIHW"}
"""The layout every executor implements; anything else must be declared by a target."""


def _layout(attrs: Mapping[str, Any], key: str = "data_layout") -> str:
    value = attrs[key]
    allowed = DATA_LAYOUTS if key == "data_layout" else KERNEL_LAYOUTS
    if value not in allowed:
        raise _fail(f"{key} '{value}' is not one of {', '.join(allowed)}")
    return value


def _nchw(shape: Sequence[int], layout: str) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a 4-D shape in `layout`."""
    n, a, b, c = shape
    return (n, a, b, c) if layout == "NCHW" else (n, c, a, b)


def _from_nchw(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, int, int, int]:
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def layout_of(op: Operation) -> dict[str, str]:
    """The layout properties of `op` (data_layout, kernel_layout) that it has; {} for most ops."""
    declared = _layout_props(type(op))
    props = op.properties
    out: dict[str, str] = {}
    for key in DEFAULT_LAYOUTS:
        attr = props.get(key)
        if isinstance(attr, StringAttr):
            out[key] = attr.data
        elif key in declared:
            out[key] = DEFAULT_LAYOUTS[key]
    return out


@functools.cache
def _layout_props(cls: type[Operation]) -> tuple[str, ...]:
    """The layout properties `cls` declares, () for any class but an `nn` op's (layout_of runs
    per op in the partitioning passes: one lookup per class, no isinstance per op)."""
    if not issubclass(cls, NNOp):
        return ()
    return tuple(key for key in DEFAULT_LAYOUTS if key in cls.prop_defaults())


class _FusableOp(OneResultOp):
    """A convolution or contraction: later elementwise ops may fuse into its output loop."""

    KIND: ClassVar[str] = "out-elementwise-fusable"


@irdl_op_definition
class Conv2DOp(_FusableOp):
    """2-D convolution, data NCHW (or NHWC), weight OIHW (or HWIO) (I = C / groups).

    padding is (top, left, bottom, right). `data_layout` (NCHW, NHWC) is the layout
    of the data and the result, `kernel_layout` (OIHW, HWIO) that of the weight.
    """

    name = "nn.conv2d"
    data, weight = tensor_operands(2)
    strides = array_prop(ints(1, 1))
    padding = array_prop(ints(0, 0, 0, 0))
    dilation = array_prop(ints(1, 1))
    groups = int_prop(1)
    data_layout = str_prop("NCHW")
    kernel_layout = str_prop("OIHW")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        layout, klayout = _layout(attrs), _layout(attrs, "kernel_layout")
        n, c, h, w = _nchw(check_rank(types[0], 4, "data"), layout)
        ws = check_rank(types[1], 4, "weight")
        o, i, kh, kw = ws if klayout == "OIHW" else (ws[3], ws[2], ws[0], ws[1])
        sh, sw = check_len(attrs, "strides", 2)
        pt, pl, pb, pr = check_len(attrs, "padding", 4)
        dh, dw = check_len(attrs, "dilation", 2)
        g = attrs["groups"]
        if g < 1 or c % g or o % g:
            raise _fail(f"groups {g} must divide the input channels {c} and output channels {o}")
        if i * g != c:
            raise _fail(f"weight has {i} input channels per group, expected {c // g} ({c} / groups {g})")
        oh = _window_out(h, kh, sh, pt, pb, dh)
        ow = _window_out(w, kw, sw, pl, pr, dw)
        return [tensor(_from_nchw(n, o, oh, ow, layout), types[0].element_type)]


@irdl_op_definition
class Conv2DTransposeOp(_FusableOp):
    """Transposed 2-D convolution (the gradient of conv2d), data NCHW, weight IOHW.

    The weight is (C, O / groups, KH, KW), as in ONNX ConvTranspose. The full
    output is (H - 1) * stride + dilation * (KH - 1) + 1 + output_padding rows;
    `padding` (top, left, bottom, right) then crops it.
    """

    name = "nn.conv2d_transpose"
    data, weight = tensor_operands(2)
    strides = array_prop(ints(1, 1))
    padding = array_prop(ints(0, 0, 0, 0))
    output_padding = array_prop(ints(0, 0))
    dilation = array_prop(ints(1, 1))
    groups = int_prop(1)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, h, w = check_rank(types[0], 4, "data")
        i, og, kh, kw = check_rank(types[1], 4, "weight")
        strides = check_len(attrs, "strides", 2)
        padding = check_len(attrs, "padding", 4)
        out_pad = check_len(attrs, "output_padding", 2)
        dilation = check_len(attrs, "dilation", 2)
        g = attrs["groups"]
        if g < 1 or c % g:
            raise _fail(f"groups {g} must divide the input channels {c}")
        if i != c:
            raise _fail(f"weight has {i} input channels, data has {c}")
        if min(strides) < 1 or min(dilation) < 1:
            raise _fail("strides and dilation must be positive")
        if min(padding) < 0 or min(out_pad) < 0:
            raise _fail("padding and output_padding must be non-negative")
        out = [
            (size - 1) * s + d * (k - 1) + 1 + op - lo - hi
            for size, k, s, d, op, lo, hi in (
                (h, kh, strides[0], dilation[0], out_pad[0], padding[0], padding[2]),
                (w, kw, strides[1], dilation[1], out_pad[1], padding[1], padding[3]),
            )
        ]
        if min(out) < 1:
            raise _fail(f"padding {list(padding)} leaves an empty output")
        return [tensor((n, og * g, *out), types[0].element_type)]


@irdl_op_definition
class DenseOp(_FusableOp):
    """x · Wᵀ: data (..., K), weight (N, K) -> (..., N)."""

    name = "nn.dense"
    data, weight = tensor_operands(2)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        wt = check_rank(types[1], 2, "weight")
        if len(d) < 1:
            raise _fail("data must have rank at least 1")
        if d[-1] != wt[1]:
            raise _fail(f"contraction sizes differ: data has {d[-1]}, weight has {wt[1]}")
        return [tensor((*d[:-1], wt[0]), types[0].element_type)]


@irdl_op_definition
class MatmulOp(_FusableOp):
    """numpy.matmul semantics (batched, broadcasting leading dims)."""

    name = "nn.matmul"
    lhs, rhs = tensor_operands(2)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        a, b = shape_of(types[0]), shape_of(types[1])
        if not a or not b:
            raise _fail("matmul operands must have rank at least 1")
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise _fail(f"contraction sizes differ: {a2[-1]} and {b2[-2]}")
        batch = broadcast_shapes(a2[:-2], b2[:-2])
        out = [*batch, a2[-2], b2[-1]]
        if len(a) == 1:
            out.pop(-2)
        if len(b) == 1:
            out.pop(-1)
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class BiasAddOp(OneResultOp):
    name = "nn.bias_add"
    data, bias = tensor_operands(2)
    axis = int_prop(1)
    KIND: ClassVar[str] = "broadcast"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        (b,) = check_rank(types[1], 1, "bias")
        axis = norm_axis(attrs["axis"], len(d))
        if d[axis] != b:
            raise _fail(f"bias has {b} elements, data has {d[axis]} along axis {axis}")
        return [types[0]]


@irdl_op_definition
class BatchNormOp(OneResultOp):
    """Inference batch norm: (x - mean) / sqrt(var + epsilon) * gamma + beta; one result."""

    name = "nn.batch_norm"
    data, gamma, beta, moving_mean, moving_var = tensor_operands(5)
    axis = int_prop(1)
    epsilon = float_prop(1e-5)
    data_layout = str_prop("NCHW")
    KIND: ClassVar[str] = "broadcast"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        d = shape_of(types[0])
        axis = norm_axis(attrs["axis"], len(d))
        if _layout(attrs) == "NHWC" and (len(d) != 4 or axis != 3):
            raise _fail(f"data_layout NHWC needs 4-D data and the channel axis 3, got axis {axis}")
        for name, t in zip(("gamma", "beta", "moving_mean", "moving_var"), types[1:], strict=True):
            (n,) = check_rank(t, 1, name)
            if n != d[axis]:
                raise _fail(f"{name} has {n} elements, data has {d[axis]} along axis {axis}")
        return [types[0]]


class Pool2DOp(DataOp):
    pool_size = array_prop()
    strides = array_prop(ints(1, 1))
    padding = array_prop(ints(0, 0, 0, 0))
    dilation = array_prop(ints(1, 1))
    ceil_mode = bool_prop(False)
    data_layout = str_prop("NCHW")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        layout = _layout(attrs)
        n, c, h, w = _nchw(check_rank(types[0], 4, "data"), layout)
        kh, kw = check_len(attrs, "pool_size", 2)
        sh, sw = check_len(attrs, "strides", 2)
        pt, pl, pb, pr = check_len(attrs, "padding", 4)
        dh, dw = check_len(attrs, "dilation", 2)
        if kh < 1 or kw < 1:
            raise _fail("pool_size must be positive")
        if min(dh, dw) < 1:
            raise _fail("strides and dilation must be positive")
        span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        if pt >= span_h or pb >= span_h or pl >= span_w or pr >= span_w:
            raise _fail(
                "padding must be smaller than the pooling window "
                f"(dilated extent {span_h}x{span_w}), got {[pt, pl, pb, pr]}"
            )
        cm = attrs["ceil_mode"]
        oh = _window_out(h, kh, sh, pt, pb, dh, cm)
        ow = _window_out(w, kw, sw, pl, pr, dw, cm)
        return [tensor(_from_nchw(n, c, oh, ow, layout), types[0].element_type)]


@irdl_op_definition
class MaxPool2DOp(Pool2DOp):
    name = "nn.max_pool2d"


@irdl_op_definition
class AvgPool2DOp(Pool2DOp):
    name = "nn.avg_pool2d"
    count_include_pad = bool_prop(False)


class GlobalPool2DOp(DataOp):
    data_layout = str_prop("NCHW")
    KIND: ClassVar[str] = "reduce"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        layout = _layout(attrs)
        n, c, _, _ = _nchw(check_rank(types[0], 4, "data"), layout)
        return [tensor(_from_nchw(n, c, 1, 1, layout), types[0].element_type)]


@irdl_op_definition
class GlobalAvgPool2DOp(GlobalPool2DOp):
    name = "nn.global_avg_pool2d"


@irdl_op_definition
class GlobalMaxPool2DOp(GlobalPool2DOp):
    name = "nn.global_max_pool2d"


@irdl_op_definition
class SoftmaxOp(AxisOp):
    name = "nn.softmax"
    axis = int_prop(-1)


@irdl_op_definition
class LRNOp(AxisOp):
    """Local response normalisation across `axis` (ONNX LRN, Relay nn.lrn).

    x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta;
    the window spans floor((size - 1) / 2) channels before, ceil((size - 1) / 2) after.
    """

    name = "nn.lrn"
    size = int_prop()
    axis = int_prop(1)
    alpha = float_prop(1e-4)
    beta = float_prop(0.75)
    bias = float_prop(1.0)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        out = super().infer(types, attrs)
        if attrs["size"] < 1:
            raise _fail(f"size {attrs['size']} must be positive")
        return out


OPS: tuple[type[NNOp], ...] = (
    Conv2DOp,
    Conv2DTransposeOp,
    DenseOp,
    MatmulOp,
    BiasAddOp,
    BatchNormOp,
    MaxPool2DOp,
    AvgPool2DOp,
    GlobalAvgPool2DOp,
    GlobalMaxPool2DOp,
    SoftmaxOp,
    LRNOp,
)
"""The ops of this module, registered in the nn dialect."""
