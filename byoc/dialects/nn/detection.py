"""nn ops for detectors and transformers (issue 16): `roi_align` and `rotary_embedding`.

    %y = nn.roi_align %x, %rois, %batch {output_height = 7 : i64, output_width = 7 : i64}
        : (tensor<1x8x32x32xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x8x7x7xf32>
    %q = nn.rotary_embedding %x, %cos, %sin, %pos {num_heads = 4 : i64}
        : (tensor<2x3x32xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<2x3xi64>) -> tensor<2x3x32xf32>

`roi_align` is ONNX RoiAlign: bilinear samples on a `sampling_ratio` grid in each output
bin of each region, averaged or maxed (`mode`), `spatial_scale`, and the
`coordinate_transformation_mode` half_pixel (opset 16) or output_half_pixel (opset 10).
`rotary_embedding` is ONNX RotaryEmbedding (opset 23): the input is (B, S, hidden) with
`num_heads` or (B, heads, S, head); the first `rotary_embedding_dim` (0 = all) features
of each head are rotated, in halves or `interleaved`; `position_ids` (B, S) select rows
of the (max_pos, dim/2) caches, and an empty `position_ids` (`tensor<0xi64>`, ONNX leaves
it out) means the caches are already (B, S, dim/2).

Their numpy kernels are in `byoc/interpreters/kernels_detection.py`. Neither has a C
kernel: RoiAlign gathers at data-dependent positions (each region's coordinates are
values), which the C emitter's static loop nests cannot index without per-region bounds
checks, and RotaryEmbedding's cache rows are gathers by `position_ids`; both run in the
ExampleJSON runtime or on the host with the numpy kernel (one result each).

NonMaxSuppression has no nn op: its result has one row per selected box, a count that only
the values decide. Like NonZero, it is evaluated at import when its inputs are known
(`byoc/frontend/onnx/converters/detection.py`) and is otherwise a `StaticValueRequired`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.nn.ops import NNOp
from byoc.dialects.nn.types import float_attr, int_attr, shape_of, tensor

FLOATS: tuple[Attribute, ...] = (f32, f64, f16)
ROI_MODES = ("avg", "max")
ROI_COORDINATE_MODES = ("half_pixel", "output_half_pixel")


def _fail(msg: str) -> VerifyException:
    return VerifyException(msg)


@irdl_op_definition
class RoiAlignOp(NNOp):
    """Pool each region of interest of x (N, C, H, W) to (output_height, output_width) by
    bilinear sampling (ONNX RoiAlign). rois (R, 4) are [x1, y1, x2, y2] in input
    coordinates before `spatial_scale`; batch_indices (R,) pick the image. Result (R, C, oh, ow)."""

    name = "nn.roi_align"
    data = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    result = result_def(TensorType)
    mode = prop_def(StringAttr, default_value=StringAttr("avg"))
    output_height = prop_def(IntegerAttr, default_value=int_attr(1))
    output_width = prop_def(IntegerAttr, default_value=int_attr(1))
    sampling_ratio = prop_def(IntegerAttr, default_value=int_attr(0))
    spatial_scale = prop_def(FloatAttr, default_value=float_attr(1.0))
    coordinate_transformation_mode = prop_def(StringAttr, default_value=StringAttr("half_pixel"))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "opaque"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, rois, idx = (shape_of(t) for t in types)
        if len(x) != 4:
            raise _fail(f"roi_align needs an (N, C, H, W) input, got rank {len(x)}")
        if types[1].element_type != types[0].element_type:
            raise _fail(f"rois must have the input's element type {types[0].element_type}, got {types[1].element_type}")
        if types[2].element_type not in (i32, i64):
            raise _fail(f"batch_indices must be i32 or i64, got {types[2].element_type}")
        if len(rois) != 2 or rois[1] != 4 or idx != (rois[0],):
            raise _fail(f"rois {list(rois)} and batch_indices {list(idx)} must be (R, 4) and (R,)")
        oh, ow = attrs["output_height"], attrs["output_width"]
        if oh < 1 or ow < 1 or attrs["sampling_ratio"] < 0:
            raise _fail("output_height and output_width must be at least 1, sampling_ratio at least 0")
        if attrs["mode"] not in ROI_MODES:
            raise _fail(f"mode '{attrs['mode']}' is not one of avg, max")
        if attrs["coordinate_transformation_mode"] not in ROI_COORDINATE_MODES:
            raise _fail(
                f"coordinate_transformation_mode '{attrs['coordinate_transformation_mode']}' "
                "is not one of half_pixel, output_half_pixel"
            )
        return [tensor((rois[0], x[1], oh, ow), types[0].element_type)]


@irdl_op_definition
class RotaryEmbeddingOp(NNOp):
    """Rotate pairs of features of x by the angles of the cos/sin caches (ONNX
    RotaryEmbedding); the result has x's type."""

    name = "nn.rotary_embedding"
    data = operand_def(TensorType)
    cos_cache = operand_def(TensorType)
    sin_cache = operand_def(TensorType)
    position_ids = operand_def(TensorType)
    result = result_def(TensorType)
    interleaved = prop_def(IntegerAttr, default_value=BoolAttr.from_bool(False))
    num_heads = prop_def(IntegerAttr, default_value=int_attr(0))
    rotary_embedding_dim = prop_def(IntegerAttr, default_value=int_attr(0))
    traits = traits_def(Pure())
    KIND: ClassVar[str] = "opaque"
    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, cos, sin, pos = (shape_of(t) for t in types)
        for t, what in ((types[1], "cos_cache"), (types[2], "sin_cache")):
            if t.element_type != types[0].element_type:
                raise _fail(f"{what} must have the input's element type {types[0].element_type}")
        if types[3].element_type not in (i32, i64):
            raise _fail(f"position_ids must be i32 or i64, got {types[3].element_type}")
        heads = attrs["num_heads"]
        if len(x) == 3:
            if heads < 1 or x[2] % heads:
                raise _fail(f"a 3-D input needs num_heads dividing its hidden size {x[2]}, got {heads}")
            b, s, head = x[0], x[1], x[2] // heads
        elif len(x) == 4:
            b, s, head = x[0], x[2], x[3]
        else:
            raise _fail(f"rotary_embedding needs a rank 3 or 4 input, got rank {len(x)}")
        dim = attrs["rotary_embedding_dim"] or head
        if dim % 2 or dim > head or dim < 0:
            raise _fail(f"rotary_embedding_dim {dim} must be even and at most the head size {head}")
        if cos != sin:
            raise _fail(f"cos_cache {list(cos)} and sin_cache {list(sin)} must have one shape")
        if pos == (0,):  # no position_ids: the caches are indexed already
            if cos != (b, s, dim // 2):
                raise _fail(f"without position_ids the caches must be {[b, s, dim // 2]}, got {list(cos)}")
        else:
            if pos != (b, s):
                raise _fail(f"position_ids {list(pos)} must be (batch, sequence) = {[b, s]}")
            if len(cos) != 2 or cos[1] != dim // 2:
                raise _fail(f"with position_ids the caches must be (max_position, {dim // 2}), got {list(cos)}")
        return [types[0]]


DETECTION_OPS: tuple[type[NNOp], ...] = (RoiAlignOp, RotaryEmbeddingOp)
"""The ops of this module, appended to the nn dialect's list."""

__all__ = ["DETECTION_OPS", "ROI_COORDINATE_MODES", "ROI_MODES", "RoiAlignOp", "RotaryEmbeddingOp"]
