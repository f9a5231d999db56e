"""Partition functions for the C codegen tests: one small `ccompiler` function per case.

`CASES` lists every op the C codegen supports over several shapes (broadcasting,
strides/padding/groups, batch > 1, i32 where supported). `case_module(cases)`
puts them all in one module, so the tests compile a single translation unit.
`random_dags(seed, n)` builds random DAGs of supported ops (diamonds,
multi-output, broadcasts, kernels between elementwise chains).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32, i32
from xdsl.ir import Block, Operation, Region, SSAValue

from byoc.dialects import nn
from byoc.dialects.nn import indexing, logic_ops, math_ops

Build = Callable[[list[SSAValue]], "Operation | list[Operation]"]


@dataclass
class Case:
    name: str
    inputs: list[tuple[tuple[int, ...], str]]
    """(shape, dtype) of each argument."""
    build: Build
    consts: list[np.ndarray[Any, Any]] = field(default_factory=list[np.ndarray[Any, Any]])
    """Constant operands, appended after the arguments."""
    positive: bool = False
    """Draw positive inputs (log, sqrt, power)."""
    tol: float = 1e-5
    int_range: tuple[int, int] = (-1000, 1000)
    """Integer inputs other than i8/ui8 are drawn from [lo, hi) (indices: a small range)."""


def _dt(name: str) -> Any:
    return nn.element_type_named(name) or i32


def op(cls: type[nn.NNOp], **attrs: Any) -> Build:
    return lambda vs: cls.build(*vs, **attrs)


F32 = "f32"
I32 = "i32"

CASES: list[Case] = []


def case(name: str, inputs: Sequence[tuple[Sequence[int], str]], build: Build, **kw: Any) -> None:
    CASES.append(Case(name, [(tuple(s), d) for s, d in inputs], build, **kw))


# ---- binary, with numpy broadcasting -------------------------------------------------
_BINARY = {
    "add": nn.AddOp,
    "subtract": nn.SubtractOp,
    "multiply": nn.MultiplyOp,
    "maximum": nn.MaximumOp,
    "minimum": nn.MinimumOp,
    "divide": nn.DivideOp,
    "power": nn.PowerOp,
    "prelu": nn.PReluOp,
}
_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ())]
for _name, _cls in _BINARY.items():
    for _k, (_a, _b) in enumerate(_SHAPES):
        case(f"{_name}_{_k}", [(_a, F32), (_b, F32)], op(_cls), positive=_name == "power")
    if _name in ("add", "subtract", "multiply", "maximum", "minimum"):
        case(f"{_name}_i32", [((2, 3, 4), I32), ((3, 1), I32)], op(_cls))

# ---- unary -------------------------------------------------------------------------------
for _name, _cls in {
    "relu": nn.ReluOp,
    "sigmoid": nn.SigmoidOp,
    "tanh": nn.TanhOp,
    "exp": nn.ExpOp,
    "log": nn.LogOp,
    "sqrt": nn.SqrtOp,
    "negative": nn.NegativeOp,
    "abs": nn.AbsOp,
    "erf": nn.ErfOp,
    "reciprocal": nn.ReciprocalOp,
    "hard_swish": nn.HardSwishOp,
}.items():
    case(f"{_name}", [((2, 3, 5), F32)], op(_cls), positive=_name in ("log", "sqrt"))
for _name, _cls in {"relu": nn.ReluOp, "negative": nn.NegativeOp, "abs": nn.AbsOp}.items():
    case(f"{_name}_i32", [((4, 6), I32)], op(_cls))
case("clip", [((3, 7), F32)], op(nn.ClipOp, a_min=-0.5, a_max=0.75))
case("clip_low", [((3, 7), F32)], op(nn.ClipOp, a_min=0.1))
case("leaky_relu", [((3, 7), F32)], op(nn.LeakyReluOp, alpha=0.2))
case("hard_sigmoid", [((3, 7), F32)], op(nn.HardSigmoidOp, alpha=0.3, beta=0.4))
case("cast_f32_i32", [((4, 8), F32)], op(nn.CastOp, dtype="i32"))
case("cast_i32_f32", [((4, 8), I32)], op(nn.CastOp, dtype="f32"))

# ---- the f32 math ops of nn.math_ops (ccompiler.MATH_POINTWISE_OPS) -------------------------
for _cls in (
    math_ops.SinOp, math_ops.CosOp, math_ops.TanOp, math_ops.AsinOp, math_ops.AcosOp,
    math_ops.AtanOp, math_ops.SinhOp, math_ops.CoshOp, math_ops.AsinhOp, math_ops.AcoshOp,
    math_ops.AtanhOp, math_ops.FloorOp, math_ops.CeilOp, math_ops.RoundOp, math_ops.SoftplusOp,
    math_ops.SoftsignOp, math_ops.MishOp, math_ops.SignOp,
):  # fmt: skip
    case(_cls.name.removeprefix("nn."), [((2, 3, 5), F32)], op(_cls))
case("gelu", [((3, 7), F32)], op(math_ops.GeluOp))
case("gelu_tanh", [((3, 7), F32)], op(math_ops.GeluOp, approximate="tanh"))
case("elu", [((3, 7), F32)], op(math_ops.EluOp, alpha=0.7))
case("selu", [((3, 7), F32)], op(math_ops.SeluOp))
case("celu", [((3, 7), F32)], op(math_ops.CeluOp, alpha=1.5))
case("thresholded_relu", [((3, 7), F32)], op(math_ops.ThresholdedReluOp, alpha=0.3))
case("swish", [((3, 7), F32)], op(math_ops.SwishOp, alpha=2.0))
case("shrink", [((3, 7), F32)], op(math_ops.ShrinkOp, bias=0.1, lambd=0.5))
case("mod_fmod", [((3, 7), F32), ((7,), F32)], op(math_ops.ModOp, fmod=True), positive=True)
case("mod", [((3, 7), F32), ((3, 7), F32)], op(math_ops.ModOp))

# ---- bias_add, batch_norm ------------------------------------------------------------------
case("bias_add_nchw", [((2, 3, 4, 5), F32), ((3,), F32)], op(nn.BiasAddOp))
case("bias_add_2d", [((4, 6), F32), ((6,), F32)], op(nn.BiasAddOp, axis=-1))
case("bias_add_axis2", [((2, 3, 4), F32), ((4,), F32)], op(nn.BiasAddOp, axis=2))
case(
    "batch_norm_args",
    [((2, 3, 4, 4), F32), ((3,), F32), ((3,), F32), ((3,), F32), ((3,), F32)],
    op(nn.BatchNormOp, epsilon=1e-3),
    positive=True,
)
_rng = np.random.default_rng(7)
case(
    "batch_norm_const",
    [((2, 4, 3, 3), F32)],
    op(nn.BatchNormOp),
    consts=[
        _rng.standard_normal(4).astype(np.float32),
        _rng.standard_normal(4).astype(np.float32),
        _rng.standard_normal(4).astype(np.float32),
        (_rng.random(4) + 0.5).astype(np.float32),
    ],
)

# ---- conv2d ------------------------------------------------------------------------------------
_CONVS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("conv_pad1", (1, 3, 8, 8), (4, 3, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("conv_stride2", (2, 3, 9, 9), (5, 3, 3, 3), {"strides": (2, 2), "padding": (1, 1, 1, 1)}),
    ("conv_dilation", (1, 2, 10, 10), (3, 2, 3, 3), {"dilation": (2, 2), "padding": (2, 2, 2, 2)}),
    ("conv_groups", (1, 4, 6, 6), (6, 2, 3, 3), {"groups": 2, "padding": (1, 1, 1, 1)}),
    ("conv_depthwise", (2, 4, 7, 7), (4, 1, 3, 3), {"groups": 4, "padding": (1, 1, 1, 1)}),
    ("conv_asym_pad", (1, 3, 7, 6), (8, 3, 3, 2), {"padding": (1, 0, 2, 1), "strides": (1, 2)}),
    ("conv_1x1", (3, 8, 5, 5), (4, 8, 1, 1), {}),
    ("conv_5x5_s3", (1, 2, 13, 11), (3, 2, 5, 5), {"strides": (3, 3), "padding": (2, 1, 2, 1)}),
]
_CONVS += [
    ("conv_depthwise_s2", (1, 5, 11, 13), (5, 1, 3, 3), {"groups": 5, "strides": (2, 2), "padding": (1, 1, 1, 1)}),
    ("conv_depthwise_s2_d2", (1, 3, 12, 9), (3, 1, 3, 3), {"groups": 3, "strides": (2, 2), "dilation": (2, 2), "padding": (0, 2, 1, 1)}),
    ("conv_depthwise_5x5_s3", (1, 2, 10, 10), (2, 1, 5, 5), {"groups": 2, "strides": (3, 3), "padding": (2, 2, 2, 2)}),
    ("conv_1x1_wide", (1, 40, 3, 7), (13, 40, 1, 1), {}),
]
for _name, _x, _w, _attrs in _CONVS:
    case(_name, [(_x, F32), (_w, F32)], op(nn.Conv2DOp, **_attrs), tol=1e-4)

# ---- conv2d_transpose, resize2d, lrn (issue 15) -----------------------------------------------
_CONVS_T: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ("conv_t_2x2_s2", (1, 4, 5, 6), (4, 3, 2, 2), {"strides": (2, 2)}),
    ("conv_t_3x3_pad", (2, 3, 4, 4), (3, 5, 3, 3), {"strides": (2, 2), "padding": (1, 1, 1, 1), "output_padding": (1, 1)}),
    ("conv_t_groups_dil", (1, 4, 5, 3), (4, 2, 3, 2), {"groups": 2, "dilation": (2, 1), "padding": (0, 1, 2, 0)}),
    ("conv_t_s1", (1, 6, 7, 7), (6, 2, 3, 3), {"padding": (1, 1, 1, 1)}),
    ("conv_t_odd_s3", (1, 3, 3, 5), (3, 4, 4, 3), {"strides": (3, 2), "padding": (2, 0, 1, 3)}),
    # a DB text detector's 2x2 stride-2 upsampling (cols through conv2d's tiles); one channel
    # in and out of a 1x1 kernel; weights too many for the stack (cols through the tiles in
    # blocks of 408 and 72 rows); more input channels than fit the stack (the row loop)
    ("conv_t_db_head", (1, 24, 20, 21), (24, 6, 2, 2), {"strides": (2, 2)}),
    ("conv_t_1x1_one_channel", (1, 1, 5, 7), (1, 1, 1, 1), {"strides": (2, 2)}),
    ("conv_t_many_weights", (1, 40, 3, 4), (40, 120, 2, 2), {"strides": (2, 2)}),
    ("conv_t_wide_input", (1, 16400, 1, 2), (16400, 2, 1, 1), {}),
]
for _name, _x, _w, _attrs in _CONVS_T:
    case(_name, [(_x, F32), (_w, F32)], op(nn.Conv2DTransposeOp, **_attrs))
_RESIZES: list[tuple[str, tuple[int, ...], tuple[int, int], dict[str, Any]]] = [
    ("resize_nearest_x2", (1, 3, 5, 4), (10, 8), {}),
    ("resize_nearest_asym_floor", (2, 2, 5, 7), (9, 3), {"coordinate_transformation_mode": "asymmetric", "rounding_method": "floor"}),
    ("resize_nearest_ceil_tf", (1, 2, 4, 6), (7, 13), {"coordinate_transformation_mode": "tf_half_pixel_for_nn", "rounding_method": "ceil"}),
    ("resize_nearest_prefer_ceil", (1, 1, 6, 6), (4, 9), {"rounding_method": "round_prefer_ceil"}),
    ("resize_linear_half_pixel", (1, 3, 5, 4), (11, 7), {"method": "linear"}),
    ("resize_linear_align", (2, 2, 4, 5), (7, 9), {"method": "linear", "coordinate_transformation_mode": "align_corners"}),
    ("resize_linear_pytorch", (1, 2, 6, 1), (3, 5), {"method": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
    ("resize_linear_symmetric_scale", (1, 2, 5, 5), (10, 5), {"method": "linear", "coordinate_transformation_mode": "half_pixel_symmetric", "scale_h": 2.0}),
    ("resize_linear_w_only", (1, 2, 3, 4), (3, 8), {"method": "linear"}),
    ("resize_linear_h_only", (1, 2, 3, 4), (7, 4), {"method": "linear", "coordinate_transformation_mode": "asymmetric"}),
]
for _name, _x, _size, _attrs in _RESIZES:
    case(_name, [(_x, F32)], op(nn.Resize2DOp, size=_size, **_attrs))
case("lrn", [((2, 7, 3, 4), F32)], op(nn.LRNOp, size=5, alpha=1e-2, beta=0.75, bias=1.0))
case("lrn_even_last_axis", [((3, 2, 9), F32)], op(nn.LRNOp, size=4, axis=-1, alpha=0.3, beta=0.5, bias=2.0))

# ---- recurrent cells: the whole time loop in one kernel call (byoc_kernels_recurrent.h) ----------
# Operands x, W, R as arguments; B, sequence_lens, initial_h (, initial_c, P) as constants, a
# tensor with no elements where the op leaves one out. The case returns Y.
_rnn_rng = np.random.default_rng(15)
_none, _noseq = np.zeros(0, np.float32), np.zeros(0, np.int32)


def _rnn_const(*shape: int) -> np.ndarray[Any, Any]:
    return (_rnn_rng.standard_normal(shape) * 0.5).astype(np.float32)


case(
    "lstm_bidirectional_seq_peephole",
    [((5, 2, 3), F32), ((2, 16, 3), F32), ((2, 16, 4), F32)],
    op(nn.LSTMOp, hidden_size=4, direction="bidirectional", clip=1.5),
    consts=[_rnn_const(2, 32), np.array([5, 0], np.int32), _rnn_const(2, 2, 4), _rnn_const(2, 2, 4), _rnn_const(2, 12)],
)
case(
    "gru_reverse_no_bias",
    [((4, 3, 5), F32), ((1, 9, 5), F32), ((1, 9, 3), F32)],
    op(nn.GRUOp, hidden_size=3, direction="reverse"),
    consts=[_none, np.array([4, 1, 3], np.int32), _none],
)
case(
    "rnn_batch_major_relu",
    [((2, 3, 4), F32), ((1, 5, 4), F32), ((1, 5, 5), F32)],
    op(nn.RNNOp, hidden_size=5, layout=1, activations="Relu"),
    consts=[_rnn_const(1, 10), _noseq, _rnn_const(2, 1, 5)],
)

# ---- epilogues: conv2d/dense followed by bias_add, batch_norm, an activation (issue 15) ------------
Step = tuple[type[nn.NNOp], int, dict[str, Any]]
"""An op applied to the previous result: its class, how many extra operands it takes
(from the case's remaining arguments and constants, in order), its attributes."""


def _epilogue(kernel: Build, *steps: Step) -> Build:
    """kernel(args[0], args[1]), then each step on the previous result."""

    def build(vs: list[SSAValue]) -> list[Operation]:
        made = kernel(vs[:2])
        out = made if isinstance(made, list) else [made]
        extra = list(vs[2:])
        for cls, n_extra, attrs in steps:
            out.append(cls.build(out[-1].results[0], *extra[:n_extra], **attrs))
            extra = extra[n_extra:]
        return out

    return build


def _s(cls: type[nn.NNOp], n_extra: int = 0, **attrs: Any) -> Step:
    return (cls, n_extra, attrs)


def _bn_consts(n: int) -> list[np.ndarray[Any, Any]]:
    return [
        _rng.standard_normal(n).astype(np.float32),
        _rng.standard_normal(n).astype(np.float32),
        _rng.standard_normal(n).astype(np.float32),
        (_rng.random(n) + 0.5).astype(np.float32),
    ]


_CONV = op(nn.Conv2DOp, padding=(1, 1, 1, 1))
_DW = op(nn.Conv2DOp, groups=6, strides=(2, 2), padding=(1, 1, 1, 1))
case("ep_conv_bias_relu", [((1, 3, 9, 7), F32), ((8, 3, 3, 3), F32), ((8,), F32)],
     _epilogue(_CONV, _s(nn.BiasAddOp, 1), _s(nn.ReluOp)), tol=1e-4)
case("ep_conv_bn_hard_swish", [((2, 3, 6, 6), F32), ((7, 3, 3, 3), F32)],
     _epilogue(_CONV, _s(nn.BatchNormOp, 4), _s(nn.HardSwishOp)), consts=_bn_consts(7), tol=1e-4)
case("ep_conv_bias_bn_sigmoid", [((1, 4, 5, 5), F32), ((5, 4, 3, 3), F32), ((5,), F32)],
     _epilogue(_CONV, _s(nn.BiasAddOp, 1), _s(nn.BatchNormOp, 4), _s(nn.SigmoidOp)), consts=_bn_consts(5), tol=1e-4)
case("ep_conv_clip", [((1, 3, 8, 8), F32), ((6, 3, 3, 3), F32)],
     _epilogue(_CONV, _s(nn.ClipOp, a_min=-0.5, a_max=0.5)), tol=1e-4)
case("ep_conv_clip_nan", [((1, 2, 4, 4), F32), ((3, 2, 3, 3), F32)],
     _epilogue(_CONV, _s(nn.ClipOp, a_min=float("nan"), a_max=1.0)), tol=1e-4)
case("ep_conv_leaky", [((1, 3, 7, 5), F32), ((4, 3, 3, 3), F32)],
     _epilogue(_CONV, _s(nn.LeakyReluOp, alpha=0.1)), tol=1e-4)
case("ep_conv_hard_sigmoid_tanh", [((1, 3, 5, 5), F32), ((4, 3, 3, 3), F32)],
     _epilogue(_CONV, _s(nn.HardSigmoidOp, alpha=0.2, beta=0.5), _s(nn.TanhOp)), tol=1e-4)
case("ep_dw_bias_relu", [((1, 6, 9, 11), F32), ((6, 1, 3, 3), F32), ((6,), F32)],
     _epilogue(_DW, _s(nn.BiasAddOp, 1), _s(nn.ReluOp)), tol=1e-4)
case("ep_dense_bias_relu", [((5, 12), F32), ((9, 12), F32), ((9,), F32)],
     _epilogue(op(nn.DenseOp), _s(nn.BiasAddOp, 1, axis=-1), _s(nn.ReluOp)), tol=1e-4)
case("ep_dense_batched_tanh", [((2, 3, 10), F32), ((6, 10), F32)],
     _epilogue(op(nn.DenseOp), _s(nn.TanhOp)), tol=1e-4)
case("ep_dense_bias_wrong_axis", [((4, 4), F32), ((4, 4), F32), ((4,), F32)],
     _epilogue(op(nn.DenseOp), _s(nn.BiasAddOp, 1, axis=0), _s(nn.ReluOp)), tol=1e-4)


def _shared_conv(vs: list[SSAValue]) -> list[Operation]:
    """conv -> relu, and the conv's result also returned through an add: no epilogue."""
    conv = nn.Conv2DOp.build(vs[0], vs[1], padding=(1, 1, 1, 1))
    relu = nn.ReluOp.build(conv)
    return [conv, relu, nn.AddOp.build(relu, conv)]


case("ep_conv_shared", [((1, 3, 6, 6), F32), ((4, 3, 3, 3), F32)], _shared_conv, tol=1e-4)


def _silu(swap: bool = False, keep_sigmoid: bool = False, stride: int = 1) -> Build:
    """conv2d 3x3 (padding 1, bias) then SiLU as the ONNX importer makes it: x * sigmoid(x)
    (`swap`: sigmoid(x) * x); `keep_sigmoid`: the sigmoid is also returned (no epilogue)."""

    def build(vs: list[SSAValue]) -> list[Operation]:
        conv = nn.Conv2DOp.build(vs[0], vs[1], padding=(1, 1, 1, 1), strides=(stride, stride))
        bias = nn.BiasAddOp.build(conv, vs[2])
        sig = nn.SigmoidOp.build(bias)
        mul = nn.MultiplyOp.build(sig, bias) if swap else nn.MultiplyOp.build(bias, sig)
        if keep_sigmoid:
            return [conv, bias, sig, mul, nn.AddOp.build(mul, sig)]
        return [conv, bias, sig, mul]

    return build


case("ep_conv_bias_silu", [((1, 5, 11, 13), F32), ((12, 5, 3, 3), F32), ((12,), F32)], _silu(), tol=1e-4)
case("ep_conv_bias_silu_swapped", [((1, 4, 9, 9), F32), ((7, 4, 3, 3), F32), ((7,), F32)],
     _silu(swap=True, stride=2), tol=1e-4)
case("ep_conv_silu_shared", [((1, 3, 6, 6), F32), ((4, 3, 3, 3), F32), ((4,), F32)],
     _silu(keep_sigmoid=True), tol=1e-4)

# ---- dense, matmul -------------------------------------------------------------------------------
case("dense_1x16", [((1, 16), F32), ((9, 16), F32)], op(nn.DenseOp), tol=1e-4)
case("dense_batched", [((3, 5, 13), F32), ((7, 13), F32)], op(nn.DenseOp), tol=1e-4)
case("dense_const_w", [((2, 24), F32)], op(nn.DenseOp), consts=[_rng.standard_normal((6, 24)).astype(np.float32)], tol=1e-4)
case("matmul_2d", [((4, 5), F32), ((5, 3), F32)], op(nn.MatmulOp), tol=1e-4)
case("matmul_batched", [((2, 4, 5), F32), ((5, 3), F32)], op(nn.MatmulOp), tol=1e-4)
case("matmul_broadcast", [((2, 1, 4, 5), F32), ((3, 5, 6), F32)], op(nn.MatmulOp), tol=1e-4)
case("matmul_vec_mat", [((5,), F32), ((5, 3), F32)], op(nn.MatmulOp), tol=1e-4)
case("matmul_mat_vec", [((4, 5), F32), ((5,), F32)], op(nn.MatmulOp), tol=1e-4)

# ---- pooling -----------------------------------------------------------------------------------------
case("max_pool", [((2, 3, 8, 8), F32)], op(nn.MaxPool2DOp, pool_size=(2, 2), strides=(2, 2)))
case(
    "max_pool_pad_ceil",
    [((1, 2, 7, 7), F32)],
    op(nn.MaxPool2DOp, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True),
)
case("max_pool_dilation", [((1, 2, 9, 9), F32)], op(nn.MaxPool2DOp, pool_size=(2, 2), dilation=(2, 2)))
case("avg_pool", [((2, 3, 8, 8), F32)], op(nn.AvgPool2DOp, pool_size=(3, 3), strides=(1, 1)))
case(
    "avg_pool_pad",
    [((1, 2, 7, 7), F32)],
    op(nn.AvgPool2DOp, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1)),
)
case(
    "avg_pool_pad_include",
    [((1, 2, 7, 7), F32)],
    op(nn.AvgPool2DOp, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), count_include_pad=True, ceil_mode=True),
)
case("global_avg_pool", [((2, 3, 5, 4), F32)], op(nn.GlobalAvgPool2DOp))
case("global_max_pool", [((2, 3, 5, 4), F32)], op(nn.GlobalMaxPool2DOp))

# ---- softmax, reductions ----------------------------------------------------------------------------
case("softmax_last", [((3, 10), F32)], op(nn.SoftmaxOp))
case("softmax_axis1", [((2, 5, 4), F32)], op(nn.SoftmaxOp, axis=1))
for _name, _cls in {"sum": nn.ReduceSumOp, "mean": nn.ReduceMeanOp, "max": nn.ReduceMaxOp}.items():
    case(f"reduce_{_name}_all", [((3, 4, 5), F32)], op(_cls))
    case(f"reduce_{_name}_axis1", [((3, 4, 5), F32)], op(_cls, axes=(1,)))
    case(f"reduce_{_name}_02_keep", [((3, 4, 5), F32)], op(_cls, axes=(0, 2), keepdims=True))
    case(f"reduce_{_name}_last", [((2, 3, 6), F32)], op(_cls, axes=(-1,)))
case("reduce_sum_i32", [((3, 4, 5), I32)], op(nn.ReduceSumOp, axes=(0, 2)))
case("reduce_max_i32", [((3, 4, 5), I32)], op(nn.ReduceMaxOp, axes=(1,)))

# ---- layout -------------------------------------------------------------------------------------------
case("transpose_201", [((2, 3, 4), F32)], op(nn.TransposeOp, axes=(2, 0, 1)))
case("transpose_reverse", [((2, 3, 4, 5), F32)], op(nn.TransposeOp))
case("transpose_i32", [((3, 5), I32)], op(nn.TransposeOp, axes=(1, 0)))
case("transpose_trivial", [((1, 6, 1), F32)], op(nn.TransposeOp, axes=(2, 0, 1)))
case("concat_axis0", [((2, 3), F32), ((1, 3), F32), ((4, 3), F32)], op(nn.ConcatenateOp, axis=0))
case("concat_axis1", [((2, 3, 2), F32), ((2, 1, 2), F32)], op(nn.ConcatenateOp, axis=1))
case("concat_last_i32", [((2, 3), I32), ((2, 5), I32)], op(nn.ConcatenateOp, axis=-1))
case("pad_constant", [((2, 3, 4), F32)], op(nn.PadOp, pad_width=(0, 1, 2, 0, 1, 3), pad_value=1.5))
case("pad_edge", [((3, 4), F32)], op(nn.PadOp, pad_width=(2, 1, 0, 3), pad_mode="edge"))
case("pad_reflect", [((4, 5), F32)], op(nn.PadOp, pad_width=(3, 1, 2, 4), pad_mode="reflect"))
case("pad_i32", [((3, 3), I32)], op(nn.PadOp, pad_width=(1, 1, 1, 1), pad_value=-7.0))
case("reshape", [((2, 3, 4), F32)], op(nn.ReshapeOp, newshape=(6, 4)))
case("flatten", [((2, 3, 4), I32)], op(nn.FlattenOp))


def _reshape_chain(vs: list[SSAValue]) -> list[Operation]:
    """add -> reshape -> relu: a reshape (an alias) between two fused ops."""
    add = nn.AddOp.build(vs[0], vs[1])
    reshaped = nn.ReshapeOp.build(add, newshape=(4, 6))
    return [add, reshaped, nn.ReluOp.build(reshaped)]


case("reshape_chain", [((2, 3, 4), F32), ((4,), F32)], _reshape_chain)

# ---- every element type: i64, i8, ui8, i1 (bool) --------------------------------------------
I64, I8, UI8, BOOL = "i64", "i8", "ui8", "i1"
case("add_i64", [((2, 3, 4), I64), ((4,), I64)], op(nn.AddOp))
case("multiply_i8", [((3, 5), I8), ((3, 5), I8)], op(nn.MultiplyOp))
case("maximum_ui8", [((3, 5), UI8), ((5,), UI8)], op(nn.MaximumOp))
for _name, _cls in {
    "equal": logic_ops.EqualOp,
    "less": logic_ops.LessOp,
    "greater": logic_ops.GreaterOp,
    "less_equal": logic_ops.LessEqualOp,
    "greater_equal": logic_ops.GreaterEqualOp,
}.items():
    case(_name, [((2, 3, 4), F32), ((3, 1), F32)], op(_cls))
case("equal_i64", [((3, 4), I64), ((3, 4), I64)], op(logic_ops.EqualOp), int_range=(-2, 2))
case("less_ui8", [((3, 4), UI8), ((4,), UI8)], op(logic_ops.LessOp))
case("equal_bool", [((3, 4), BOOL), ((3, 4), BOOL)], op(logic_ops.EqualOp))
case("logical_and", [((3, 4), BOOL), ((4,), BOOL)], op(logic_ops.LogicalAndOp))
case("logical_or", [((3, 4), BOOL), ((3, 1), BOOL)], op(logic_ops.LogicalOrOp))
case("logical_xor", [((3, 4), BOOL), ((3, 4), BOOL)], op(logic_ops.LogicalXorOp))
case("logical_not", [((3, 4), BOOL)], op(logic_ops.LogicalNotOp))
case("where", [((3, 1), BOOL), ((2, 3, 4), F32), ((4,), F32)], op(logic_ops.WhereOp))
case("where_i64", [((3, 4), BOOL), ((3, 4), I64), ((), I64)], op(logic_ops.WhereOp))
for _src, _dst in [("i1", "f32"), ("f32", "i1"), ("i64", "i32"), ("f32", "i64"), ("ui8", "f32"), ("i32", "i8"), ("i64", "i1")]:
    case(f"cast_{_src}_{_dst}", [((4, 8), _src)], op(nn.CastOp, dtype=_dst))

# ---- views: broadcast_to, strided_slice, split, take, tile -----------------------------------
case("broadcast_to", [((3, 1), F32)], op(math_ops.BroadcastToOp, shape=(2, 3, 4)))
case("broadcast_to_bool", [((1, 4), BOOL)], op(math_ops.BroadcastToOp, shape=(3, 1)))
case("strided_slice", [((5, 6), F32)], op(nn.StridedSliceOp, begin=(1, 5), end=(5, -1), strides=(2, -2)))
case("strided_slice_i64", [((4, 6), I64)], op(nn.StridedSliceOp, begin=(0, 1), end=(4, 4)))


def _split_add(vs: list[SSAValue]) -> list[Operation]:
    """split into two halves, added: both pieces read by one fused loop."""
    split = nn.SplitOp.build(vs[0], indices=(3,), axis=1)
    return [split, nn.AddOp.build(split.results[0], split.results[1])]


case("split_add", [((2, 6, 2), F32)], _split_add)
case("split_bool", [((4, 3), BOOL)], op(nn.SplitOp, indices=(1, 3), axis=0))
case("take_axis0", [((5, 3), F32), ((2, 4), I64)], op(nn.TakeOp, axis=0), int_range=(-7, 7))
case("take_axis1_i32", [((2, 5, 3), I64), ((4,), I32)], op(nn.TakeOp, axis=1), int_range=(-5, 5))
case("take_const", [((4, 6), F32)], op(nn.TakeOp, axis=1), consts=[np.array([5, -1, 0, 9], np.int64)])
case("take_scalar", [((4, 6), BOOL)], op(nn.TakeOp, axis=0), consts=[np.array(-2, np.int64)])
case("tile", [((2, 3), F32)], op(math_ops.TileOp, reps=(2, 3)))
case("tile_ui8", [((3,), UI8)], op(math_ops.TileOp, reps=(4,)))

# ---- kernels of every element type: reductions, scans, one-hot, layer_norm, einsum ------------
case("reduce_min", [((3, 4, 5), F32)], op(math_ops.ReduceMinOp, axes=(0, 2)))
case("reduce_min_i64", [((3, 4), I64)], op(math_ops.ReduceMinOp, axes=(1,), keepdims=True))
case("reduce_prod", [((3, 4, 5), F32)], op(math_ops.ReduceProdOp, axes=(1,)), positive=True)
case("reduce_prod_i32", [((3, 4), I32)], op(math_ops.ReduceProdOp))
case("reduce_sum_i64", [((3, 4), I64)], op(nn.ReduceSumOp, axes=(0,)))
case("reduce_max_i64", [((3, 4), I64)], op(nn.ReduceMaxOp, axes=(1,)))
case("reduce_log_sum_exp", [((3, 4, 5), F32)], op(math_ops.ReduceLogSumExpOp, axes=(1, 2)))
case("argmax", [((3, 4, 5), F32)], op(math_ops.ArgMaxOp, axis=1))
case("argmin_last_i32", [((3, 4), I32)], op(math_ops.ArgMinOp, axis=1, keepdims=False, select_last_index=True), int_range=(-2, 2))
case("argmax_ui8", [((6, 2), UI8)], op(math_ops.ArgMaxOp, axis=0))
case("cumsum", [((3, 4, 5), F32)], op(math_ops.CumSumOp, axis=1))
case("cumsum_exclusive_reverse_i64", [((3, 4), I64)], op(math_ops.CumSumOp, axis=-1, exclusive=True, reverse=True))
case("one_hot", [((2, 3), I64)], op(indexing.OneHotOp, depth=5), consts=[np.array([0.5, 2.0], np.float32)], int_range=(-6, 6))
case("one_hot_axis0_f32", [((4,), F32), ((2,), I32)], op(indexing.OneHotOp, depth=3, axis=0))
case("layer_norm", [((2, 3, 8), F32), ((8,), F32), ((1,), F32)], op(indexing.LayerNormOp, axis=-1))
case("layer_norm_axis1", [((2, 3, 4), F32), ((3, 4), F32), ((4,), F32)], op(indexing.LayerNormOp, axis=1))
case("einsum_bmm", [((2, 3, 4), F32), ((2, 4, 5), F32)], op(math_ops.EinsumOp, equation="bij,bjk->bik"), tol=1e-4)
case("einsum_attention", [((2, 2, 3, 4), F32), ((2, 2, 5, 4), F32)], op(math_ops.EinsumOp, equation="bhqd,bhkd->bhqk"), tol=1e-4)
case("einsum_out_perm", [((3, 4), F32), ((4, 5), F32)], op(math_ops.EinsumOp, equation="ij,jk->ki"), tol=1e-4)
case("transpose_i64", [((2, 3, 4), I64)], op(nn.TransposeOp, axes=(2, 0, 1)))
case("transpose_bool", [((3, 5), BOOL)], op(nn.TransposeOp))
case("pad_ui8", [((3, 3), UI8)], op(nn.PadOp, pad_width=(1, 0, 2, 1), pad_value=200.0))
case("pad_bool_edge", [((2, 3), BOOL)], op(nn.PadOp, pad_width=(1, 1, 0, 2), pad_mode="edge"))
case("concat_bool", [((2, 3), BOOL), ((2, 1), BOOL)], op(nn.ConcatenateOp, axis=1))
case("reshape_i8", [((2, 3, 4), I8)], op(nn.ReshapeOp, newshape=(4, 6)))
case("is_nan", [((3, 7), F32)], op(math_ops.IsNanOp))
case("is_inf_negative", [((3, 7), F32)], op(math_ops.IsInfOp, detect_positive=False))
case("reduce_l1", [((3, 4, 5), F32)], op(math_ops.ReduceL1Op, axes=(1,)))
case("reduce_l2_keep", [((3, 4, 5), F32)], op(math_ops.ReduceL2Op, axes=(0, 2), keepdims=True))
case("reduce_sum_square", [((3, 4, 5), F32)], op(math_ops.ReduceSumSquareOp))
case("reduce_log_sum", [((3, 4, 5), F32)], op(math_ops.ReduceLogSumOp, axes=(2,)), positive=True)
case("cumprod_reverse", [((3, 4, 5), F32)], op(math_ops.CumProdOp, axis=2, reverse=True))
case("cumprod_exclusive_i32", [((3, 4), I32)], op(math_ops.CumProdOp, axis=0, exclusive=True), int_range=(-3, 3))
case("rms_norm", [((2, 3, 8), F32), ((8,), F32)], op(indexing.RMSNormOp, axis=-1))
case("log_softmax", [((2, 5, 3), F32)], op(indexing.LogSoftmaxOp, axis=1))


# ---------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------


def make_partition(name: str, c: Case) -> func.FuncOp:
    arg_types = [nn.tensor(s, _dt(d)) for s, d in c.inputs]
    block = Block(arg_types=arg_types)
    for i, a in enumerate(block.args):
        a.name_hint = f"x{i}"
    consts = [nn.ConstantOp.from_array(a) for a in c.consts]
    block.add_ops(consts)
    operands: list[SSAValue] = [*block.args, *(k.result for k in consts)]
    built = c.build(operands)
    ops = built if isinstance(built, list) else [built]
    block.add_ops(ops)
    result = ops[-1]
    block.add_op(func.ReturnOp(result.results[0]))
    f = func.FuncOp(name, (arg_types, [result.results[0].type]), Region(block), visibility="private")
    f.attributes["byoc.compiler"] = StringAttr("ccompiler")
    return f


def case_module(cases: Sequence[Case]) -> ModuleOp:
    return ModuleOp([make_partition(f"ccompiler_{c.name}", c) for c in cases])


def random_inputs(c: Case, rng: np.random.Generator) -> list[np.ndarray[Any, Any]]:
    out: list[np.ndarray[Any, Any]] = []
    for shape, dtype in c.inputs:
        if dtype == "i1":
            a = rng.random(shape) < 0.5
        elif dtype in ("i8", "ui8"):
            info = np.iinfo(nn.numpy_dtype(_dt(dtype)))
            a = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=nn.numpy_dtype(_dt(dtype)))
        elif dtype == "i64":
            a = rng.integers(*c.int_range, size=shape, dtype=np.int64)
            if a.size > 2 and c.int_range == (-1000, 1000):
                a.reshape(-1)[:2] = [2**63 - 1, -(2**63)]  # wrap-around and INT64_MIN
        elif dtype == "i32":
            a = rng.integers(*c.int_range, size=shape, dtype=np.int32)
            if a.size > 2 and c.int_range == (-1000, 1000):
                a.reshape(-1)[:2] = [2**31 - 1, -(2**31)]  # wrap-around and INT_MIN
        elif c.positive:
            a = (rng.random(shape) + 0.1).astype(np.float32)
        else:
            a = rng.standard_normal(shape).astype(np.float32)
            special: list[float] = []
            if c.name.startswith(("is_nan", "is_inf")):
                special = [np.nan, np.inf, -np.inf]
            if c.name == "cast_f32_i32":
                a = (a * 1e3).astype(np.float32)
                special = [3e9, -3e9, np.nan, -2.5]
            k = min(a.size, len(special))
            a.reshape(-1)[:k] = special[:k]
        out.append(np.asarray(a))
    return out


# ---------------------------------------------------------------------------
# Random DAGs of supported ops
# ---------------------------------------------------------------------------

_DAG_UNARY = [nn.ReluOp, nn.SigmoidOp, nn.TanhOp, nn.NegativeOp, nn.AbsOp, nn.ExpOp]
_DAG_BINARY = [nn.AddOp, nn.SubtractOp, nn.MultiplyOp, nn.MaximumOp, nn.MinimumOp]


def random_dag(name: str, rng: np.random.Generator, n_ops: int) -> tuple[func.FuncOp, list[tuple[tuple[int, ...], str]]]:
    """A random partition: elementwise/broadcast chains over (2, C, H, W) tensors, with
    conv2d, bias_add, pooling, softmax, reshape and concatenate mixed in; several outputs."""
    c_ch = int(rng.integers(2, 5))
    hw = int(rng.integers(3, 7))
    full = (2, c_ch, hw, hw)
    shapes = [full, full, (c_ch, 1, 1), (hw,)]
    n_args = int(rng.integers(1, 4))
    arg_shapes = [shapes[int(rng.integers(0, len(shapes)))] for _ in range(n_args)]
    arg_shapes[0] = full
    arg_types = [nn.tensor(s, f32) for s in arg_shapes]
    block = Block(arg_types=arg_types)
    values: list[SSAValue] = list(block.args)
    used: set[SSAValue] = set()

    def add(op: Operation) -> SSAValue:
        block.add_op(op)
        values.append(op.results[0])
        return op.results[0]

    def pick() -> SSAValue:
        # prefer recent values, so chains form; sometimes reach back (diamonds)
        k = len(values) - 1 - int(min(rng.geometric(0.4) - 1, len(values) - 1))
        v = values[k]
        used.add(v)
        return v

    def full_value() -> SSAValue:
        for _ in range(8):
            v = pick()
            if nn.shape_of(v.type) == full:
                return v
        return block.args[0]

    for _ in range(n_ops):
        kind = rng.random()
        if kind < 0.3:
            add(_DAG_UNARY[int(rng.integers(0, len(_DAG_UNARY)))].build(pick()))
        elif kind < 0.65:
            a, b = pick(), pick()
            try:
                nn.broadcast_shapes(nn.shape_of(a.type), nn.shape_of(b.type))
            except Exception:
                b = a
            add(_DAG_BINARY[int(rng.integers(0, len(_DAG_BINARY)))].build(a, b))
        elif kind < 0.72:
            x = full_value()
            w = nn.ConstantOp.from_array(rng.standard_normal((c_ch, c_ch, 3, 3)).astype(np.float32) * 0.3)
            block.add_op(w)
            add(nn.Conv2DOp.build(x, w, padding=(1, 1, 1, 1)))
        elif kind < 0.79:
            x = full_value()
            bias = nn.ConstantOp.from_array(rng.standard_normal(c_ch).astype(np.float32))
            block.add_op(bias)
            add(nn.BiasAddOp.build(x, bias))
        elif kind < 0.84:
            x = full_value()
            pooled = add(nn.MaxPool2DOp.build(x, pool_size=(3, 3), padding=(1, 1, 1, 1)))
            used.add(pooled)
        elif kind < 0.89:
            add(nn.SoftmaxOp.build(full_value(), axis=1))
        elif kind < 0.94:
            x = full_value()
            r = add(nn.ReshapeOp.build(x, newshape=(2, c_ch * hw * hw)))
            used.add(r)
            back = add(nn.ReshapeOp.build(r, newshape=full))
            used.add(back)
        else:
            x, y = full_value(), full_value()
            cat = add(nn.ConcatenateOp.build(x, y, axis=1))
            used.add(cat)
            add(nn.ReduceSumOp.build(cat, axes=(1,), keepdims=True))
    produced = [v for v in values[n_args:]]
    outs = [v for v in produced if v not in used] or produced[-1:]
    if len(outs) > 1 and rng.random() < 0.5:
        outs.append(produced[int(rng.integers(0, len(produced)))])  # an interior value too
    outs = list(dict.fromkeys(outs))
    block.add_op(func.ReturnOp(*outs))
    f = func.FuncOp(name, (arg_types, [v.type for v in outs]), Region(block), visibility="private")
    f.attributes["byoc.compiler"] = StringAttr("ccompiler")
    return f, [(s, "f32") for s in arg_shapes]


def tensor_spec(t: Any) -> tuple[tuple[int, ...], str]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape()), "f32" if t.element_type == f32 else "i32"
