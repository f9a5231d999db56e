"""The nn ops that move data or reduce it: reshape, flatten, transpose, concatenate,
take, pad, split, strided_slice, resize2d and the reductions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, var_operand_def, var_result_def

from byoc.dialects.nn.base import (
    AnyTypes,
    DataOp,
    FloatTypes,
    NNOp,
    NumberTypes,
    OneResultOp,
    _fail,
    check_indices,
    check_len,
    check_one_of,
    check_rank,
    norm_axis,
    tensor_operands,
)
from byoc.dialects.nn.props import array_prop, bool_prop, float_prop, int_prop, str_prop
from byoc.dialects.nn.types import ANY, ints, numpy_dtype, shape_of, tensor

# --------------------------------------------------------------------------
# Layout ops
# --------------------------------------------------------------------------


class _InjectiveOp(OneResultOp):
    """An injective op that moves elements of any type."""

    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY


@irdl_op_definition
class ReshapeOp(DataOp, _InjectiveOp):
    """Reshape to `newshape` (the element count is kept); one -1 entry is the dim that holds
    the remaining elements (numpy's -1), which is how a `?` dim passes through a reshape."""

    name = "nn.reshape"
    newshape = array_prop()

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        src = shape_of(types[0])
        new = list(attrs["newshape"])
        if any(d < -1 for d in new) or new.count(-1) > 1:
            raise _fail(
                f"newshape {list(new)} must be non-negative, with at most one -1 (the rest)"
            )
        if -1 in new:  # numpy's -1: the one dim that holds the remaining elements
            rest = math.prod(d for d in new if d != -1)
            if rest == 0 or math.prod(src) % rest:
                raise _fail(f"cannot reshape {math.prod(src)} elements {list(src)} into {new}")
            new[new.index(-1)] = math.prod(src) // rest
        if math.prod(new) != math.prod(src):
            raise _fail(
                f"cannot reshape {math.prod(src)} elements {list(src)} into {list(new)}"
            )
        return [tensor(new, types[0].element_type)]


@irdl_op_definition
class FlattenOp(DataOp, _InjectiveOp):
    """Collapse to 2-D: (prod(shape[:axis]), prod(shape[axis:])); axis in [-rank, rank], negative adds rank."""

    name = "nn.flatten"
    axis = int_prop(1)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = attrs["axis"]
        if not -len(s) <= axis <= len(s):
            raise _fail(f"axis {axis} is out of range for rank {len(s)}")
        axis += len(s) if axis < 0 else 0  # ONNX: a negative axis counts from the end
        return [tensor((math.prod(s[:axis]), math.prod(s[axis:])), types[0].element_type)]


@irdl_op_definition
class TransposeOp(DataOp, _InjectiveOp):
    """Permute dimensions; empty `axes` reverses them (numpy)."""

    name = "nn.transpose"
    axes = array_prop(ints())

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axes = attrs["axes"] or tuple(reversed(range(len(s))))
        if sorted(a % len(s) if len(s) else a for a in axes) != list(range(len(s))) or len(axes) != len(s):
            raise _fail(f"axes {list(axes)} is not a permutation of rank {len(s)}")
        return [tensor([s[a] for a in axes], types[0].element_type)]


@irdl_op_definition
class ConcatenateOp(_InjectiveOp):
    name = "nn.concatenate"
    inputs = var_operand_def(TensorType)
    axis = int_prop(0)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if not types:
            raise _fail("concatenate needs at least one input")
        first = shape_of(types[0])
        axis = norm_axis(attrs["axis"], len(first))
        total = 0
        for i, t in enumerate(types):
            s = shape_of(t)
            if len(s) != len(first) or any(
                a != b for k, (a, b) in enumerate(zip(s, first, strict=True)) if k != axis
            ):
                raise _fail(
                    f"input #{i} has shape {list(s)}, incompatible with {list(first)} along axis {axis}"
                )
            total += s[axis]
        out = list(first)
        out[axis] = total
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class TakeOp(_InjectiveOp):
    """Gather slices of `data` along `axis` at `indices` (i32/i64; ONNX Gather, Relay take).

    Result shape: data.shape[:axis] + indices.shape + data.shape[axis + 1:]. A
    negative index counts from the end; indices outside [-dim, dim) are clamped.
    """

    name = "nn.take"
    data, indices = tensor_operands(2)
    axis = int_prop(0)
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = norm_axis(attrs["axis"], len(s))
        indices = check_indices(types[1])
        if s[axis] == 0:
            raise _fail(f"cannot take from the empty axis {axis}")
        out = [*s[:axis], *indices, *s[axis + 1 :]]
        return [tensor(out, types[0].element_type)]


def _check_fits(value: float, element_type: Attribute, what: str) -> None:
    """Raise unless the f64 property `value` is exactly a value of `element_type`.

    Integers take finite integral values in their range (no inf, nan, 0.5 or
    2**31 for i32); f32 takes inf and nan but no finite value beyond its range.
    """
    dt = numpy_dtype(element_type)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not (math.isfinite(value) and value == int(value) and info.min <= int(value) <= info.max):
            raise _fail(f"{what} {value} is not a value of the element type {element_type}")
    elif dt.kind == "f" and math.isfinite(value) and abs(value) > float(np.finfo(dt).max):
        raise _fail(f"{what} {value} is out of the range of the element type {element_type}")


@irdl_op_definition
class PadOp(DataOp, _InjectiveOp):
    """Pad with `pad_width` = (before_0, after_0, before_1, after_1, ...).

    `pad_mode` is constant (with `pad_value`), edge, reflect or wrap (numpy's modes).
    """

    name = "nn.pad"
    pad_width = array_prop()
    pad_value = float_prop(0.0)
    pad_mode = str_prop("constant")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        pw = check_len(attrs, "pad_width", 2 * len(s))
        check_one_of(attrs, "pad_mode", ("constant", "edge", "reflect", "wrap"))
        out = [d + pw[2 * i] + pw[2 * i + 1] for i, d in enumerate(s)]
        if any(p < 0 for p in pw):
            raise _fail("pad_width must be non-negative")
        if attrs["pad_mode"] == "reflect" and any(
            pw[2 * i] >= d or pw[2 * i + 1] >= d for i, d in enumerate(s) if pw[2 * i] or pw[2 * i + 1]
        ):
            raise _fail("reflect padding must be smaller than the dimension")
        _check_fits(attrs["pad_value"], types[0].element_type, "pad_value")
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class SplitOp(NNOp):
    """Split along `axis` at the (non-decreasing) `indices`: len(indices) + 1 results.

    numpy.split with a list of indices; a repeated index gives an empty piece.
    """

    name = "nn.split"
    data = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    indices = array_prop()
    axis = int_prop(0)
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = norm_axis(attrs["axis"], len(s))
        bounds = [0, *attrs["indices"], s[axis]]
        if any(a > b for a, b in zip(bounds, bounds[1:], strict=False)):
            raise _fail(
                f"indices {list(attrs['indices'])} must be non-decreasing within [0, {s[axis]}]"
            )
        out: list[TensorType[Any]] = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            piece = list(s)
            piece[axis] = hi - lo
            out.append(tensor(piece, types[0].element_type))
        return out


@irdl_op_definition
class StridedSliceOp(DataOp, _InjectiveOp):
    """Take elements begin, begin + stride, ... up to (excluding) end, along every axis.

    One (begin, end, stride) per dimension, already resolved against the static
    shape (no wrap-around of negative indices). Positive stride:
    0 <= begin, end <= dim. Negative stride: -1 <= begin, end <= dim - 1, and
    end = -1 runs through index 0. Empty `strides` means all 1.
    """

    name = "nn.strided_slice"
    begin = array_prop()
    end = array_prop()
    strides = array_prop(ints())

    @staticmethod
    def extent(dim: int, begin: int, end: int, stride: int) -> int:
        """Number of elements one axis keeps; raises VerifyException when out of range."""
        if stride == 0:
            raise _fail("strides must be non-zero")
        lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
        if not (lo <= begin <= hi and lo <= end <= hi):
            raise _fail(
                f"begin {begin} / end {end} out of range [{lo}, {hi}] for size {dim} "
                f"and stride {stride}"
            )
        return len(range(begin, end, stride))

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        begin = check_len(attrs, "begin", len(s))
        end = check_len(attrs, "end", len(s))
        strides = attrs["strides"] or (1,) * len(s)
        if len(strides) != len(s):
            raise _fail(f"'strides' must have {len(s)} values, got {len(strides)}")
        out = [cls.extent(*args) for args in zip(s, begin, end, strides, strict=True)]
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class Resize2DOp(DataOp):
    """Resize the H and W dimensions of an NCHW tensor to `size` (ONNX Resize).

    `method`: nearest_neighbor or linear. `coordinate_transformation_mode` maps an
    output index to an input coordinate: half_pixel, align_corners, asymmetric,
    pytorch_half_pixel, half_pixel_symmetric or tf_half_pixel_for_nn.
    `rounding_method` (nearest only): round_prefer_floor, round_prefer_ceil, floor,
    ceil. `scale_h`/`scale_w` are the scales the mapping uses (ONNX `scales`);
    0 means output size / input size.
    """

    name = "nn.resize2d"
    size = array_prop()
    method = str_prop("nearest_neighbor")
    coordinate_transformation_mode = str_prop("half_pixel")
    rounding_method = str_prop("round_prefer_floor")
    scale_h = float_prop(0.0)
    scale_w = float_prop(0.0)
    KIND: ClassVar[str] = "injective"

    METHODS: ClassVar[tuple[str, ...]] = ("nearest_neighbor", "linear")
    COORDINATE_MODES: ClassVar[tuple[str, ...]] = (
        "half_pixel",
        "align_corners",
        "asymmetric",
        "pytorch_half_pixel",
        "half_pixel_symmetric",
        "tf_half_pixel_for_nn",
    )
    ROUNDING_METHODS: ClassVar[tuple[str, ...]] = (
        "round_prefer_floor",
        "round_prefer_ceil",
        "floor",
        "ceil",
    )

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        n, c, _, _ = check_rank(types[0], 4, "data")
        oh, ow = check_len(attrs, "size", 2)
        check_one_of(attrs, "method", cls.METHODS)
        check_one_of(attrs, "coordinate_transformation_mode", cls.COORDINATE_MODES)
        check_one_of(attrs, "rounding_method", cls.ROUNDING_METHODS)
        if oh < 1 or ow < 1:
            raise _fail("size must be positive")
        if attrs["scale_h"] < 0 or attrs["scale_w"] < 0:
            raise _fail("scales must be non-negative")
        return [tensor((n, c, oh, ow), types[0].element_type)]


class ReduceOp(DataOp):
    """Reduce over `axes` (empty: all axes); `keepdims` keeps them as size 1."""

    axes = array_prop(ints())
    keepdims = bool_prop(False)
    KIND: ClassVar[str] = "reduce"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axes = {norm_axis(a, len(s)) for a in attrs["axes"]} or set(range(len(s)))
        if len(axes) != len(attrs["axes"]) and attrs["axes"]:
            raise _fail(f"axes {list(attrs['axes'])} repeat an axis")
        if attrs["keepdims"]:
            out = [1 if i in axes else d for i, d in enumerate(s)]
        else:
            out = [d for i, d in enumerate(s) if i not in axes]
        return [tensor(out, types[0].element_type)]


@irdl_op_definition
class ReduceMeanOp(FloatTypes, ReduceOp):
    name = "nn.reduce_mean"


@irdl_op_definition
class ReduceSumOp(NumberTypes, ReduceOp):
    name = "nn.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(AnyTypes, ReduceOp):
    name = "nn.reduce_max"


OPS: tuple[type[NNOp], ...] = (
    ReshapeOp,
    FlattenOp,
    TransposeOp,
    ConcatenateOp,
    TakeOp,
    PadOp,
    SplitOp,
    StridedSliceOp,
    Resize2DOp,
    ReduceMeanOp,
    ReduceSumOp,
    ReduceMaxOp,
)
"""The ops of this module, registered in the nn dialect."""
