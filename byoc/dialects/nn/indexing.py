"""nn ops for ONNX's indexing, normalisation and general resize operators.

Gathers and scatters (`gather_elements`, `gather_nd`, `scatter_elements`,
`scatter_nd`), `trilu`, `one_hot`, `reverse_sequence`, the normalisations that are
one op (`layer_norm`, `rms_norm`, `log_softmax`, `hardmax`), the N-d `resize` with every
ONNX mode, `grid_sample`, `col2im`, `nll_loss` and `attention`. Each op's type relation is its `infer`; its numpy kernel is in
`byoc/interpreters/kernels_indexing.py`. None has a C kernel: they run on the host
or in ExampleJSON (docs/onnx.md says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, TensorType, f64, i32, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, var_operand_def, var_result_def

from byoc.dialects.nn.base import (  # pyright: ignore[reportPrivateUsage]
    AxisOp,
    DataOp,
    FloatTypes,
    NNOp,
    OneResultOp,
    _fail,
    broadcast_shapes,
    check_indices,
    check_one_of,
    norm_axis,
    tensor_operands,
)
from byoc.dialects.nn.props import array_prop, bool_prop, float_prop, int_prop, str_prop
from byoc.dialects.nn.types import ALL_TYPES, FLOATS, INDEX_TYPES, ints, shape_of, tensor


def _same_type(data: TensorType[Any], other: TensorType[Any], what: str) -> None:
    if other.element_type != data.element_type:
        raise _fail(f"{what} has element type {other.element_type}, data has {data.element_type}")


REDUCTIONS = ("none", "add", "mul", "max", "min")
Shape = tuple[int, ...]


class _IndexedOp(OneResultOp):
    """An injective op of data of any element type and an i32/i64 index operand."""

    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ALL_TYPES
    SAME_DTYPE: ClassVar[bool] = False


class _FloatOp(FloatTypes, OneResultOp):
    """An opaque op of float tensors."""


# ---- gathers and scatters ---------------------------------------------------------


class _GatherOp(_IndexedOp):
    data, indices = tensor_operands(2)

    @classmethod
    def gathered_shape(cls, data: Shape, indices: Shape, attrs: Mapping[str, Any]) -> Shape:
        """The result shape for data and indices of these shapes; raises VerifyException."""
        raise NotImplementedError

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        shape = cls.gathered_shape(shape_of(types[0]), check_indices(types[1]), attrs)
        return [tensor(shape, types[0].element_type)]


@irdl_op_definition
class GatherElementsOp(_GatherOp):
    """out[i][j][k] = data[index][j][k] with index = indices[i][j][k] on `axis` (ONNX GatherElements).

    indices has data's rank; negative indices count from the end."""

    name = "nn.gather_elements"
    axis = int_prop(0)

    @classmethod
    def gathered_shape(cls, data: Shape, indices: Shape, attrs: Mapping[str, Any]) -> Shape:
        norm_axis(attrs["axis"], len(data))
        if len(indices) != len(data):
            raise _fail(f"indices has rank {len(indices)}, data has rank {len(data)}")
        return indices


@irdl_op_definition
class GatherNDOp(_GatherOp):
    """Gather slices of data at the index tuples of the last axis of indices (ONNX GatherND).

    Result: indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:]."""

    name = "nn.gather_nd"
    batch_dims = int_prop(0)

    @classmethod
    def gathered_shape(cls, data: Shape, indices: Shape, attrs: Mapping[str, Any]) -> Shape:
        s, idx, b = data, indices, attrs["batch_dims"]
        if not idx or not s:
            raise _fail("data and indices must have rank at least 1")
        if b < 0 or b >= min(len(s), len(idx)):
            raise _fail(f"batch_dims {b} must be below the ranks of data and indices")
        if s[:b] != idx[:b]:
            raise _fail(f"the batch dims of data {list(s[:b])} and indices {list(idx[:b])} differ")
        k = idx[-1]
        if not 1 <= k <= len(s) - b:
            raise _fail(f"indices.shape[-1] = {k} must be in [1, {len(s) - b}]")
        return (*idx[:-1], *s[b + k :])


class _ScatterOp(OneResultOp):
    data, indices, updates = tensor_operands(3)
    reduction = str_prop("none")
    DTYPES: ClassVar[tuple[Attribute, ...]] = ALL_TYPES
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def _check(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]) -> None:
        check_one_of(attrs, "reduction", REDUCTIONS)
        check_indices(types[1])
        _same_type(types[0], types[2], "updates")


@irdl_op_definition
class ScatterElementsOp(_ScatterOp):
    """A copy of data with updates written (or reduced: add, mul, max, min) at indices on `axis`
    (ONNX ScatterElements); indices and updates have one shape, of data's rank."""

    name = "nn.scatter_elements"
    axis = int_prop(0)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        cls._check(types, attrs)
        s, idx, upd = shape_of(types[0]), shape_of(types[1]), shape_of(types[2])
        norm_axis(attrs["axis"], len(s))
        if idx != upd or len(idx) != len(s):
            raise _fail(f"indices {list(idx)} and updates {list(upd)} must have one shape of rank {len(s)}")
        return [types[0]]


@irdl_op_definition
class ScatterNDOp(_ScatterOp):
    """A copy of data with updates written (or reduced) at the index tuples of indices (ONNX ScatterND).

    updates.shape = indices.shape[:-1] + data.shape[indices.shape[-1]:]."""

    name = "nn.scatter_nd"

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        cls._check(types, attrs)
        s, idx, upd = shape_of(types[0]), shape_of(types[1]), shape_of(types[2])
        if not idx or not 1 <= idx[-1] <= len(s):
            raise _fail(f"indices.shape[-1] must be in [1, {len(s)}]")
        want = (*idx[:-1], *s[idx[-1] :])
        if upd != want:
            raise _fail(f"updates has shape {list(upd)}, expected {list(want)}")
        return [types[0]]


# ---- triangles, one-hot, sequences ----------------------------------------------


@irdl_op_definition
class TriluOp(DataOp):
    """Keep the upper (`upper`) or lower triangle of the last two dims from diagonal `k` (ONNX Trilu)."""

    name = "nn.trilu"
    k = int_prop(0)
    upper = bool_prop(True)
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ALL_TYPES

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if len(shape_of(types[0])) < 2:
            raise _fail("trilu needs rank at least 2")
        return [types[0]]


@irdl_op_definition
class OneHotOp(_IndexedOp):
    """values[1] where index == position on the new `axis` of size `depth`, else values[0] (ONNX OneHot).

    Negative indices count from depth; indices outside [-depth, depth) give all off_value."""

    name = "nn.one_hot"
    indices, values = tensor_operands(2)
    depth = int_prop()
    axis = int_prop(-1)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        if types[0].element_type not in (*INDEX_TYPES, *FLOATS):
            raise _fail(f"indices must be numeric, got {types[0].element_type}")
        if shape_of(types[1]) != (2,):
            raise _fail(f"values must have shape [2] (off, on), got {list(shape_of(types[1]))}")
        if attrs["depth"] < 1:
            raise _fail(f"depth {attrs['depth']} must be positive")
        axis = norm_axis(attrs["axis"], len(s) + 1)
        out = [*s[:axis], attrs["depth"], *s[axis:]]
        return [tensor(out, types[1].element_type)]


@irdl_op_definition
class ReverseSequenceOp(_IndexedOp):
    """Reverse the first sequence_lens[b] elements along `time_axis` of each batch b (ONNX ReverseSequence)."""

    name = "nn.reverse_sequence"
    data, sequence_lens = tensor_operands(2)
    batch_axis = int_prop(1)
    time_axis = int_prop(0)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        lens = check_indices(types[1], "sequence_lens")
        if len(s) < 2:
            raise _fail("reverse_sequence needs rank at least 2")
        b = norm_axis(attrs["batch_axis"], len(s), "batch_axis")
        t = norm_axis(attrs["time_axis"], len(s), "time_axis")
        if b == t:
            raise _fail("batch_axis and time_axis must differ")
        if lens != (s[b],):
            raise _fail(f"sequence_lens has shape {list(lens)}, expected [{s[b]}]")
        return [types[0]]


# ---- normalisations ----------------------------------------------------------------


@irdl_op_definition
class LayerNormOp(_FloatOp):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the dims from `axis` on (ONNX
    LayerNormalization's Y); gamma and beta broadcast against those dims."""

    name = "nn.layer_norm"
    data, gamma, beta = tensor_operands(3)
    axis = int_prop(-1)
    epsilon = float_prop(1e-5)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        axis = norm_axis(attrs["axis"], len(s))
        inner = s[axis:]
        for name, t in zip(("gamma", "beta"), types[1:], strict=True):
            if len(shape_of(t)) > len(inner) or broadcast_shapes(shape_of(t), inner) != inner:
                raise _fail(f"{name} of shape {list(shape_of(t))} does not broadcast to {list(inner)}")
        return [types[0]]


@irdl_op_definition
class RMSNormOp(_FloatOp):
    """x / sqrt(mean(x^2) + epsilon) * gamma over the dims from `axis` on (ONNX RMSNormalization);
    gamma broadcasts against those dims."""

    name = "nn.rms_norm"
    data, gamma = tensor_operands(2)
    axis = int_prop(-1)
    epsilon = float_prop(1e-5)

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        inner = s[norm_axis(attrs["axis"], len(s)) :]
        g = shape_of(types[1])
        if len(g) > len(inner) or broadcast_shapes(g, inner) != inner:
            raise _fail(f"gamma of shape {list(g)} does not broadcast to {list(inner)}")
        return [types[0]]


class _AxisOp(AxisOp, _FloatOp):
    axis = int_prop(-1)


@irdl_op_definition
class LogSoftmaxOp(_AxisOp):
    """log(softmax(x)) along `axis`, computed as x - max - log(sum(exp(x - max)))."""

    name = "nn.log_softmax"


@irdl_op_definition
class HardmaxOp(_AxisOp):
    """1 at the first maximum along `axis`, 0 elsewhere (ONNX Hardmax)."""

    name = "nn.hardmax"


# ---- resize ---------------------------------------------------------------------------


@irdl_op_definition
class ResizeOp(DataOp):
    """N-d resize with every mode of ONNX Resize (nn.resize2d is the NCHW subset with C kernels).

    `size` is the output shape; `scales` (f64 per axis, empty: size / input) the
    scales the coordinate mapping uses; `roi` (start..., end... per axis, empty: all
    0 and 1) only with tf_crop_and_resize. `mode` nearest, linear or cubic; `antialias`
    widens the linear/cubic filter when downscaling; `exclude_outside` drops taps
    outside the input and renormalises; `extrapolation_value` fills outputs whose
    coordinate falls outside the input under tf_crop_and_resize."""

    name = "nn.resize"
    size = array_prop()
    scales = array_prop(DenseArrayBase.from_list(f64, []))
    roi = array_prop(DenseArrayBase.from_list(f64, []))
    mode = str_prop("nearest")
    coordinate_transformation_mode = str_prop("half_pixel")
    nearest_mode = str_prop("round_prefer_floor")
    cubic_coeff_a = float_prop(-0.75)
    exclude_outside = bool_prop(False)
    antialias = bool_prop(False)
    extrapolation_value = float_prop(0.0)
    KIND: ClassVar[str] = "injective"
    DTYPES: ClassVar[tuple[Attribute, ...]] = tuple(t for t in ALL_TYPES if t != IntegerType(1))

    MODES: ClassVar[tuple[str, ...]] = ("nearest", "linear", "cubic")
    COORDINATE_MODES: ClassVar[tuple[str, ...]] = (
        "half_pixel",
        "half_pixel_symmetric",
        "pytorch_half_pixel",
        "align_corners",
        "asymmetric",
        "tf_half_pixel_for_nn",
        "tf_crop_and_resize",
    )
    NEAREST_MODES: ClassVar[tuple[str, ...]] = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        s = shape_of(types[0])
        size = attrs["size"]
        if len(size) != len(s):
            raise _fail(f"size must have {len(s)} values, got {len(size)}")
        if any(d < 1 for d in size) or any(d < 1 for d in s):
            raise _fail("input and output dims must be positive")
        check_one_of(attrs, "mode", cls.MODES)
        check_one_of(attrs, "coordinate_transformation_mode", cls.COORDINATE_MODES)
        check_one_of(attrs, "nearest_mode", cls.NEAREST_MODES)
        if attrs["scales"] and (len(attrs["scales"]) != len(s) or min(attrs["scales"]) <= 0):
            raise _fail(f"scales must be {len(s)} positive values")
        if attrs["roi"] and len(attrs["roi"]) != 2 * len(s):
            raise _fail(f"roi must have {2 * len(s)} values")
        if attrs["antialias"] and attrs["mode"] == "nearest":
            raise _fail("antialias applies to linear and cubic modes only")
        return [tensor(size, types[0].element_type)]


@irdl_op_definition
class NLLLossOp(_FloatOp):
    """Negative log-likelihood: -x[n, target[n, d...], d...] * weight[target] (ONNX
    NegativeLogLikelihoodLoss), x (N, C, d...), target (N, d...); `reduction` none, sum
    or mean (weighted: sum / sum of the weights); targets equal to `ignore_index`
    (when `has_ignore`) count 0 with weight 0. With `has_weight`, a (C,) weight operand."""

    name = "nn.nll_loss"
    inputs = var_operand_def(TensorType)
    reduction = str_prop("mean")
    ignore_index = int_prop(0)
    has_ignore = bool_prop(False)
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        if len(types) not in (2, 3):
            raise _fail(f"nll_loss takes x, target and an optional weight, got {len(types)} operands")
        x, t = shape_of(types[0]), check_indices(types[1], "target")
        if len(x) < 2 or t != (x[0], *x[2:]):
            raise _fail(f"target of shape {list(t)} does not fit x of shape {list(x)} (N, C, d...)")
        if len(types) == 3:
            _same_type(types[0], types[2], "weight")
            if shape_of(types[2]) != (x[1],):
                raise _fail(f"weight must have shape [{x[1]}], got {list(shape_of(types[2]))}")
        check_one_of(attrs, "reduction", ("none", "sum", "mean"))
        return [tensor(t if attrs["reduction"] == "none" else (), types[0].element_type)]


@irdl_op_definition
class GridSampleOp(_FloatOp):
    """Sample x (N, C, D...) at the normalised coordinates of grid (N, O..., r), last axis
    in reverse dim order (ONNX GridSample): `mode` nearest, linear or cubic, `padding_mode`
    zeros, border or reflection, `align_corners`. Result (N, C, O...)."""

    name = "nn.grid_sample"
    data, grid = tensor_operands(2)
    mode = str_prop("linear")
    padding_mode = str_prop("zeros")
    align_corners = bool_prop(False)
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x, g = shape_of(types[0]), shape_of(types[1])
        if types[1].element_type not in FLOATS:
            raise _fail(f"grid must be a float tensor, got {types[1].element_type}")
        r = len(x) - 2
        if r < 1 or len(g) != r + 2 or g[0] != x[0] or g[-1] != r:
            raise _fail(f"grid of shape {list(g)} does not fit data {list(x)}: (N, O..., {r}) expected")
        check_one_of(attrs, "mode", ("nearest", "linear", "cubic"))
        check_one_of(attrs, "padding_mode", ("zeros", "border", "reflection"))
        return [tensor((x[0], x[1], *g[1:-1]), types[0].element_type)]


@irdl_op_definition
class Col2ImOp(DataOp):
    """Sum the sliding blocks of x (N, C * prod(block_shape), L) back into an image
    (N, C, image_shape...) (ONNX Col2Im); `pads` is (begin..., end...)."""

    name = "nn.col2im"
    image_shape = array_prop()
    block_shape = array_prop()
    dilations = array_prop(ints())
    pads = array_prop(ints())
    strides = array_prop(ints())
    KIND: ClassVar[str] = "opaque"
    DTYPES: ClassVar[tuple[Attribute, ...]] = (*FLOATS, i32, i64)

    @staticmethod
    def blocks(attrs: Mapping[str, Any]) -> list[int]:
        """The number of block positions along each image dim; raises if they do not fit."""
        image, block = attrs["image_shape"], attrs["block_shape"]
        r = len(image)
        dil = attrs["dilations"] or (1,) * r
        pads = attrs["pads"] or (0,) * (2 * r)
        strides = attrs["strides"] or (1,) * r
        if len(block) != r or len(dil) != r or len(strides) != r or len(pads) != 2 * r:
            raise _fail(f"image_shape, block_shape, dilations, strides and pads disagree on rank {r}")
        out = []
        for i in range(r):
            span = dil[i] * (block[i] - 1) + 1
            room = image[i] + pads[i] + pads[r + i] - span
            if min(image[i], block[i], dil[i], strides[i]) < 1 or min(pads) < 0 or room < 0:
                raise _fail(f"a block of {block[i]} (dilation {dil[i]}) does not fit image dim {image[i]}")
            out.append(room // strides[i] + 1)
        return out

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        x = shape_of(types[0])
        positions = cls.blocks(attrs)
        size = 1
        for b in attrs["block_shape"]:
            size *= b
        count = 1
        for n in positions:
            count *= n
        if len(x) != 3 or x[1] % size or x[2] != count:
            raise _fail(f"input {list(x)} must be (N, C * {size}, {count})")
        return [tensor((x[0], x[1] // size, *attrs["image_shape"]), types[0].element_type)]


# ---- attention -------------------------------------------------------------------------


@irdl_op_definition
class AttentionOp(FloatTypes, NNOp):
    """Scaled dot-product attention (ONNX Attention, opsets 23-25).

    Operands: q, k, v, then the optional ones `has_mask`, `has_past` (past_key,
    past_value) and `has_nonpad` (nonpad_kv_seqlen) say are present, in that order.
    q/k/v are 4-D (batch, heads, seq, head_size) or 3-D (batch, seq, heads * head_size)
    with `q_num_heads`/`kv_num_heads`. Results: y, then with `num_outputs` 3 or 4 the
    present key and value and the QK product (`qk_matmul_output_mode` 0-3).
    `scale` 0 means 1/sqrt(head_size); `softcap` 0 means none; a window size -1 is
    unbounded; `softmax_precision` 0 keeps the input type (else an ONNX type code)."""

    name = "nn.attention"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    has_mask = bool_prop(False)
    has_past = bool_prop(False)
    has_nonpad = bool_prop(False)
    num_outputs = int_prop(1)
    is_causal = bool_prop(False)
    q_num_heads = int_prop(0)
    kv_num_heads = int_prop(0)
    scale = float_prop(0.0)
    softcap = float_prop(0.0)
    qk_matmul_output_mode = int_prop(0)
    softmax_precision = int_prop(0)
    left_window_size = int_prop(-1)
    right_window_size = int_prop(-1)
    SAME_DTYPE: ClassVar[bool] = False

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        want = 3 + attrs["has_mask"] + 2 * attrs["has_past"] + attrs["has_nonpad"]
        if len(types) != want:
            raise _fail(f"expected {want} operands for the optional inputs given, got {len(types)}")
        q, k, v = (shape_of(t) for t in types[:3])
        et = types[0].element_type
        for name, t in zip(("k", "v"), types[1:3], strict=True):
            _same_type(types[0], t, name)
        if not (len(q) == len(k) == len(v) and len(q) in (3, 4)):
            raise _fail("q, k and v must all be 3-D or all 4-D")
        hq, hkv = attrs["q_num_heads"], attrs["kv_num_heads"]
        if len(q) == 3:
            if hq < 1 or hkv < 1 or q[2] % hq or k[2] % hkv or v[2] % hkv:
                raise _fail("3-D inputs need q_num_heads and kv_num_heads dividing their hidden sizes")
            b, sq, d = q[0], q[1], q[2] // hq
            skv, dk, dv = k[1], k[2] // hkv, v[2] // hkv
        else:
            b, hq, sq, d = q
            _, hkv, skv, dk = k
            dv = v[3]
            if v[:3] != (b, hkv, skv):
                raise _fail(f"v has shape {list(v)}, incompatible with k {list(k)}")
        if k[0] != b or v[0] != b or d != dk:
            raise _fail(f"q {list(q)} and k {list(k)} disagree on batch or head size")
        if hq % hkv:
            raise _fail(f"q heads {hq} must be a multiple of kv heads {hkv}")
        rest = list(types[3:])
        total = skv
        if attrs["has_mask"]:
            rest.pop(0)
        if attrs["has_past"]:
            pk, pv = (shape_of(t) for t in rest[:2])
            if len(pk) != 4 or pk[:2] != (b, hkv) or pk[3] != d or len(pv) != 4 or pv[:3] != pk[:3]:
                raise _fail(f"past_key {list(pk)} / past_value {list(pv)} do not fit (b, kv heads, s, d)")
            total += pk[2]
            rest = rest[2:]
        if attrs["has_nonpad"]:
            check_indices(rest[0], "nonpad_kv_seqlen")
        if attrs["softmax_precision"] not in (0, 1, 10, 11):
            raise _fail(f"softmax_precision {attrs['softmax_precision']} is not float, float16 or double")
        if attrs["qk_matmul_output_mode"] not in (0, 1, 2, 3):
            raise _fail(f"qk_matmul_output_mode {attrs['qk_matmul_output_mode']} is not 0-3")
        y = (b, hq, sq, dv) if len(q) == 4 else (b, sq, hq * dv)
        out = [tensor(y, et), tensor((b, hkv, total, d), et), tensor((b, hkv, total, dv), et)]
        out.append(tensor((b, hq, sq, total), et))
        n = attrs["num_outputs"]
        if n not in (1, 3, 4):
            raise _fail(f"num_outputs {n} is not 1, 3 or 4")
        return out[:n]


def float_array(values: Sequence[float]) -> DenseArrayBase[Any]:
    """An f64 array property (ResizeOp's scales and roi)."""
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


INDEXING_OPS: tuple[type[NNOp], ...] = (
    GatherElementsOp,
    GatherNDOp,
    ScatterElementsOp,
    ScatterNDOp,
    TriluOp,
    OneHotOp,
    ReverseSequenceOp,
    LayerNormOp,
    RMSNormOp,
    LogSoftmaxOp,
    HardmaxOp,
    ResizeOp,
    AttentionOp,
    NLLLossOp,
    GridSampleOp,
    Col2ImOp,
)
"""The ops of this module, appended to the nn dialect's list."""

__all__ = [
    "AttentionOp",
    "Col2ImOp",
    "FLOATS",
    "INDEXING_OPS",
    "GatherElementsOp",
    "GatherNDOp",
    "GridSampleOp",
    "HardmaxOp",
    "LayerNormOp",
    "LogSoftmaxOp",
    "NLLLossOp",
    "OneHotOp",
    "RMSNormOp",
    "ResizeOp",
    "ReverseSequenceOp",
    "ScatterElementsOp",
    "ScatterNDOp",
    "TriluOp",
    "float_array",
    "ints",
]
