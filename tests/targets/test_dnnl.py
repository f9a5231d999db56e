"""The dnnl target end to end: every composite and every op the engine plans, against the
numpy reference, with default and odd shapes, groups, padding, dilation and strides.

Each case is its own `@main`, built for `dnnl` alone (the engine library is compiled
once: the partitions reach it as graph blobs) and compared with the host executor
(every op a numpy kernel) within the bound `tests/support/bounds.py` derives for the graph.
Skipped, with the reason, only where the `byoc[dnnl]` extra is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.bounds import assert_within, graph_bounds
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

import byoc
from byoc.dialects import nn
from byoc.dialects.nn.indexing import LayerNormOp
from byoc.targets.dnnl import missing_reason, unsupported_reason
from byoc.targets.dnnl.patterns import pattern_table

Array = np.ndarray[Any, Any]

REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"oneDNN extra absent: {REASON}")


class Graph:
    """@main under construction: inputs (with the arrays fed to them), constants, ops."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.block = Block()
        self.inputs: list[Array] = []
        self.results: list[SSAValue] = []

    def rand(self, *shape: int, scale: float = 1.0) -> Array:
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def arg(self, array: Array) -> SSAValue:
        self.inputs.append(array)
        return self.block.insert_arg(
            nn.tensor(array.shape, nn.element_type_of(array.dtype)), len(self.block.args)
        )

    def const(self, array: Array) -> SSAValue:
        op = nn.ConstantOp.from_array(np.asarray(array, dtype=np.float32))
        self.block.add_op(op)
        return op.result

    def op(self, cls: Any, *operands: SSAValue, **attrs: Any) -> SSAValue:
        op = cls.build(*operands, **attrs)
        self.block.add_op(op)
        return op.results[0]

    def module(self) -> ModuleOp:
        self.block.add_op(func.ReturnOp(*self.results))
        types = ([a.type for a in self.block.args], [r.type for r in self.results])
        return ModuleOp([func.FuncOp("main", types, Region(self.block))])


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Graph], None]
    """Adds inputs, ops and results to the graph."""
    composites: tuple[str, ...] = ()
    """Composites (`dnnl.<name>`) the partition must hold."""


# --------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------


def conv(g: Graph, x: SSAValue, c: int, o: int, k: tuple[int, int], **attrs: Any) -> SSAValue:
    groups = attrs.get("groups", 1)
    w = g.const(g.rand(o, c // groups, *k, scale=1.0 / np.sqrt(c // groups * k[0] * k[1])))
    return g.op(nn.Conv2DOp, x, w, **attrs)


def deconv(g: Graph, x: SSAValue, c: int, o: int, k: tuple[int, int], **attrs: Any) -> SSAValue:
    groups = attrs.get("groups", 1)
    w = g.const(g.rand(c, o // groups, *k, scale=0.3))
    return g.op(nn.Conv2DTransposeOp, x, w, **attrs)


def dense(g: Graph, x: SSAValue, k: int, n: int) -> SSAValue:
    return g.op(nn.DenseOp, x, g.const(g.rand(n, k, scale=1.0 / np.sqrt(k))))


def bias(g: Graph, y: SSAValue, n: int, axis: int = 1) -> SSAValue:
    return g.op(nn.BiasAddOp, y, g.const(g.rand(n)), axis=axis)


def bn(g: Graph, y: SSAValue, n: int) -> SSAValue:
    gamma, beta = g.const(g.rand(n) + 1.5), g.const(g.rand(n))
    mean, var = g.const(g.rand(n)), g.const(np.abs(g.rand(n)) + 0.5)
    return g.op(nn.BatchNormOp, y, gamma, beta, mean, var, epsilon=1e-3)


def gelu(g: Graph, x: SSAValue) -> SSAValue:
    d = g.op(nn.DivideOp, x, g.const(np.float32(np.sqrt(2.0))))
    t = g.op(nn.AddOp, g.op(nn.ErfOp, d), g.const(np.float32(1.0)))
    return g.op(nn.MultiplyOp, g.op(nn.MultiplyOp, x, t), g.const(np.float32(0.5)))


ACTS: dict[str, Callable[[Graph, SSAValue], SSAValue]] = {
    "relu": lambda g, y: g.op(nn.ReluOp, y),
    "clip": lambda g, y: g.op(nn.ClipOp, y, a_min=0.0, a_max=6.0),
    "sigmoid": lambda g, y: g.op(nn.SigmoidOp, y),
    "tanh": lambda g, y: g.op(nn.TanhOp, y),
    "gelu": gelu,
    "hard_swish": lambda g, y: g.op(nn.HardSwishOp, y),
    "leaky_relu": lambda g, y: g.op(nn.LeakyReluOp, y, alpha=0.1),
    "hard_sigmoid": lambda g, y: g.op(nn.HardSigmoidOp, y),
}


def one(build: Callable[[Graph], SSAValue]) -> Callable[[Graph], None]:
    def add(g: Graph) -> None:
        g.results.append(build(g))

    return add


# --------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------

CONV_FORMS: dict[str, tuple[tuple[int, ...], dict[str, Any], int, tuple[int, int]]] = {
    # name: (input shape, attrs, out channels, kernel)
    "default": ((1, 8, 12, 12), {"padding": (1, 1, 1, 1)}, 16, (3, 3)),
    "odd": ((2, 5, 11, 7), {"padding": (0, 2, 1, 0), "strides": (2, 1)}, 7, (3, 2)),
    "groups": ((1, 12, 9, 9), {"groups": 3, "padding": (1, 1, 1, 1)}, 6, (3, 3)),
    "depthwise": ((1, 16, 10, 10), {"groups": 16, "padding": (1, 1, 1, 1), "strides": (2, 2)}, 16, (3, 3)),
    "dilation": ((1, 4, 13, 13), {"dilation": (2, 3), "padding": (2, 3, 2, 3)}, 8, (3, 3)),
    "pointwise": ((1, 24, 7, 7), {}, 32, (1, 1)),
}


def _conv_case(form: str, chain: str) -> Case:
    shape, attrs, o, k = CONV_FORMS[form]

    def build(g: Graph) -> SSAValue:
        x = g.arg(g.rand(*shape))
        y = conv(g, x, shape[1], o, k, **attrs)
        if chain == "bias":
            y = bias(g, y, o)
        elif chain == "bias_relu":
            y = g.op(nn.ReluOp, bias(g, y, o))
        elif chain == "bn_relu":
            y = g.op(nn.ReluOp, bn(g, bias(g, y, o), o))
        elif chain.startswith("bias_"):
            y = ACTS[chain[5:]](g, bias(g, y, o))
        elif chain in ACTS:
            y = ACTS[chain](g, y)
        elif chain == "sum_relu":
            residual = g.op(nn.ReluOp, g.arg(g.rand(*y.type.get_shape())))  # type: ignore[attr-defined]
            y = g.op(nn.ReluOp, g.op(nn.AddOp, bias(g, y, o), residual))
        return y

    composite = {
        "bias": "conv2d_bias",
        "bn_relu": "conv2d_bias_act",
        "sum_relu": "conv2d_bias_sum",
        "plain": "",
        **{act: "conv2d_act" for act in ACTS},
    }.get(chain, "conv2d_bias_act")
    return Case(f"conv2d_{form}_{chain}", one(build), (composite,) if composite else ())


CASES: list[Case] = [
    *(_conv_case(form, "bias_relu") for form in CONV_FORMS),
    *(_conv_case("odd", chain) for chain in ("plain", "bias", "bn_relu", "sum_relu")),
    *(_conv_case("default", f"bias_{act}") for act in ACTS),
    *(_conv_case("depthwise", chain) for chain in ("bias_clip", "bias_hard_swish", "sum_relu")),
    *(_conv_case("dilation", act) for act in ("relu", "gelu")),
]


def _case(name: str, composites: tuple[str, ...] = ()) -> Callable[[Callable[[Graph], None]], Case]:
    def wrap(build: Callable[[Graph], None]) -> Case:
        case = Case(name, build, composites)
        CASES.append(case)
        return case

    return wrap


@_case("conv2d_sum_before_act", ("conv2d_sum",))
def _(g: Graph) -> None:
    x = g.arg(g.rand(1, 8, 9, 9))
    r = g.op(nn.SigmoidOp, g.arg(g.rand(1, 8, 9, 9)))
    y = conv(g, x, 8, 8, (3, 3), padding=(1, 1, 1, 1))
    g.results.append(g.op(nn.TanhOp, g.op(nn.AddOp, r, g.op(nn.ReluOp, y))))


@_case("resnet_block")
def _(g: Graph) -> None:
    """conv-bn-relu, conv-bn, + shortcut, relu: the residual in place (a sum post-op)."""
    x = g.arg(g.rand(1, 16, 14, 14))
    a = g.op(nn.ReluOp, bn(g, conv(g, x, 16, 16, (3, 3), padding=(1, 1, 1, 1)), 16))
    b = bn(g, conv(g, a, 16, 16, (3, 3), padding=(1, 1, 1, 1)), 16)
    s = bn(g, conv(g, x, 16, 16, (1, 1)), 16)
    g.results.append(g.op(nn.ReluOp, g.op(nn.AddOp, b, s)))


for _form, (_shape, _attrs, _o) in {
    "default": ((1, 8, 6, 6), {"strides": (2, 2), "padding": (1, 1, 1, 1), "output_padding": (1, 1)}, 4),
    "odd": ((2, 3, 5, 7), {"strides": (3, 2), "padding": (0, 1, 2, 1)}, 5),
    "groups": ((1, 6, 5, 5), {"groups": 3, "strides": (2, 2), "dilation": (2, 1)}, 9),
}.items():

    def _deconv_build(g: Graph, shape: Any = _shape, attrs: Any = _attrs, o: int = _o) -> SSAValue:
        x = g.arg(g.rand(*shape))
        return g.op(nn.ReluOp, bias(g, deconv(g, x, shape[1], o, (3, 3), **attrs), o))

    CASES.append(Case(f"conv2d_transpose_{_form}", one(_deconv_build), ("conv2d_transpose_bias_act",)))


def _deconv_chain(chain: str) -> Case:
    """conv2d_transpose (odd strides, padding) + bias + each activation, or + a residual."""

    def build(g: Graph) -> SSAValue:
        x = g.arg(g.rand(1, 6, 5, 6))
        y = bias(g, deconv(g, x, 6, 8, (3, 3), strides=(2, 2), padding=(1, 0, 1, 1)), 8)
        if chain == "sum":
            residual = g.op(nn.TanhOp, g.arg(g.rand(*y.type.get_shape())))  # type: ignore[attr-defined]
            return g.op(nn.ReluOp, g.op(nn.AddOp, y, residual))
        return ACTS[chain](g, y)

    name = "conv2d_transpose_bias_sum" if chain == "sum" else "conv2d_transpose_bias_act"
    return Case(f"conv2d_transpose_bias_{chain}", one(build), (name,))


CASES += [_deconv_chain(chain) for chain in (*ACTS, "sum")]


@_case("dense_bias_relu", ("dense_bias_act",))
def _(g: Graph) -> None:
    x = g.arg(g.rand(4, 1024))
    g.results.append(g.op(nn.ReluOp, bias(g, dense(g, x, 1024, 1024), 1024, axis=-1)))


@_case("dense_odd_bias_gelu", ("dense_bias_act",))
def _(g: Graph) -> None:
    x = g.arg(g.rand(3, 5, 17))
    y = g.op(nn.AddOp, dense(g, x, 17, 13), g.const(g.rand(13)))
    g.results.append(gelu(g, y))


@_case("dense_sum", ("dense_sum",))
def _(g: Graph) -> None:
    x = g.arg(g.rand(7, 33))
    r = g.op(nn.ExpOp, g.arg(g.rand(7, 9, scale=0.1)))
    g.results.append(g.op(nn.AddOp, dense(g, x, 33, 9), r))


@_case("dense_computed_weight")
def _(g: Graph) -> None:
    x, w = g.arg(g.rand(6, 10)), g.arg(g.rand(4, 10))
    g.results.append(g.op(nn.DenseOp, x, g.op(nn.TanhOp, w)))


@_case("matmul_batched_bias_tanh", ("matmul_bias_act",))
def _(g: Graph) -> None:
    a, b = g.arg(g.rand(2, 3, 5, 8)), g.const(g.rand(8, 6))
    g.results.append(g.op(nn.TanhOp, g.op(nn.AddOp, g.op(nn.MatmulOp, a, b), g.const(g.rand(6)))))


for _act in ("clip", "sigmoid", "hard_swish", "gelu"):

    def _mm_build(g: Graph, act: str = _act) -> SSAValue:
        a, b = g.arg(g.rand(3, 4, 9)), g.const(g.rand(9, 5))
        return ACTS[act](g, g.op(nn.AddOp, g.op(nn.MatmulOp, a, b), g.const(g.rand(5))))

    CASES.append(Case(f"matmul_batched_bias_{_act}", one(_mm_build), ("matmul_bias_act",)))


def _anchor_case(anchor: str, chain: str) -> Case:
    """The remaining (anchor, composite) pairs: bias only, activation only, residual with and
    without a bias, for conv2d_transpose, dense and batched matmul."""

    def build(g: Graph) -> SSAValue:
        if anchor == "conv2d_transpose":
            y = deconv(g, g.arg(g.rand(1, 4, 5, 5)), 4, 6, (2, 2), strides=(2, 2))
            n, axis = 6, 1
        elif anchor == "dense":
            y, n, axis = dense(g, g.arg(g.rand(5, 19)), 19, 11), 11, -1
        else:
            y = g.op(nn.MatmulOp, g.arg(g.rand(2, 3, 7)), g.const(g.rand(7, 9)))
            n, axis = 9, -1
        if "bias" in chain:
            y = bias(g, y, n, axis=axis)
        if chain.endswith("act"):
            y = g.op(nn.SigmoidOp, y)
        if chain.endswith("sum"):
            residual = g.op(nn.ReluOp, g.arg(g.rand(*y.type.get_shape())))  # type: ignore[attr-defined]
            y = g.op(nn.AddOp, residual, y)
        return y

    return Case(f"{anchor}_{chain}_only", one(build), (f"{anchor}_{chain}",))


CASES += [
    _anchor_case(a, c)
    for a, chains in {
        "conv2d_transpose": ("bias", "act", "sum"),
        "dense": ("bias", "act", "bias_sum"),
        "matmul": ("bias", "act", "sum", "bias_sum"),
    }.items()
    for c in chains
]


@_case("matmul_broadcast_computed")
def _(g: Graph) -> None:
    a, b = g.arg(g.rand(3, 1, 4, 7)), g.arg(g.rand(5, 7, 2))
    g.results.append(g.op(nn.MatmulOp, a, b))


POOLS: dict[str, tuple[type[Any], dict[str, Any]]] = {
    "max_default": (nn.MaxPool2DOp, {"pool_size": (2, 2), "strides": (2, 2)}),
    "max_odd": (nn.MaxPool2DOp, {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 0, 1, 1), "ceil_mode": True}),
    "max_dilation": (nn.MaxPool2DOp, {"pool_size": (2, 2), "dilation": (2, 2)}),
    "avg_default": (nn.AvgPool2DOp, {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1)}),
    "avg_include_pad": (nn.AvgPool2DOp, {"pool_size": (3, 3), "padding": (1, 1, 1, 1), "count_include_pad": True}),
    "avg_ceil": (nn.AvgPool2DOp, {"pool_size": (3, 3), "strides": (2, 2), "ceil_mode": True}),
}
for _name, (_cls, _pattrs) in POOLS.items():

    def _pool_build(g: Graph, cls: Any = _cls, attrs: Any = _pattrs) -> SSAValue:
        return g.op(cls, g.arg(g.rand(2, 5, 11, 10)), **attrs)

    CASES.append(Case(f"pool_{_name}", one(_pool_build)))
for _cls in (nn.GlobalAvgPool2DOp, nn.GlobalMaxPool2DOp):
    CASES.append(Case(_cls.name[3:], one(lambda g, cls=_cls: g.op(cls, g.arg(g.rand(2, 7, 5, 6))))))


@_case("conv_pool_chain")
def _(g: Graph) -> None:
    """Pools on blocked layouts between convolutions, a global pool, flatten, dense, softmax."""
    x = g.arg(g.rand(1, 3, 16, 16))
    y = g.op(nn.ReluOp, bias(g, conv(g, x, 3, 16, (3, 3), padding=(1, 1, 1, 1)), 16))
    y = g.op(nn.MaxPool2DOp, y, pool_size=(2, 2), strides=(2, 2))
    y = g.op(nn.ReluOp, bias(g, conv(g, y, 16, 24, (3, 3), padding=(1, 1, 1, 1)), 24))
    y = g.op(nn.FlattenOp, g.op(nn.GlobalAvgPool2DOp, y))
    g.results.append(g.op(nn.SoftmaxOp, bias(g, dense(g, y, 24, 10), 10, axis=-1)))


for _shape, _axis in (((4, 10), -1), ((2, 3, 7), 1), ((1, 16, 5, 5), 1)):
    CASES.append(Case(f"softmax_{'x'.join(map(str, _shape))}_axis{_axis}", one(
        lambda g, s=_shape, a=_axis: g.op(nn.SoftmaxOp, g.arg(g.rand(*s, scale=3.0)), axis=a))))


@_case("lrn")
def _(g: Graph) -> None:
    x = g.arg(g.rand(1, 7, 6, 5))
    g.results.append(g.op(nn.LRNOp, x, size=5, alpha=1e-3, beta=0.75, bias=2.0))


@_case("lrn_after_conv")
def _(g: Graph) -> None:
    x = g.arg(g.rand(1, 3, 12, 12))
    y = g.op(nn.ReluOp, bias(g, conv(g, x, 3, 16, (5, 5), padding=(2, 2, 2, 2)), 16))
    g.results.append(g.op(nn.LRNOp, y, size=3, alpha=1e-4, beta=0.75, bias=1.0))


# layer norm: transformer rows (axis -1), several trailing dims (axis 1 of a 4-D tensor),
# odd sizes, gamma/beta broadcasting within the normalised dims, computed gamma/beta
LAYER_NORMS: dict[str, tuple[tuple[int, ...], int, tuple[int, ...], float]] = {
    # name: (data shape, axis, gamma/beta shape, epsilon)
    "rows": ((2, 7, 64), -1, (64,), 1e-5),
    "odd": ((3, 5, 13), 2, (13,), 1e-3),
    "trailing_dims": ((2, 6, 5, 3), 1, (6, 5, 3), 1e-5),
    "broadcast_param": ((4, 3, 9), 1, (1, 9), 1e-6),
    "whole_tensor": ((17,), 0, (17,), 1e-5),
}
for _name, (_shape, _axis, _pshape, _eps) in LAYER_NORMS.items():

    def _ln_build(g: Graph, shape: Any = _shape, axis: int = _axis, pshape: Any = _pshape,
                  eps: float = _eps) -> SSAValue:
        x = g.arg(g.rand(*shape, scale=3.0) + 1.0)
        gamma, beta = g.const(g.rand(*pshape) + 1.0), g.const(g.rand(*pshape))
        return g.op(LayerNormOp, x, gamma, beta, axis=axis, epsilon=eps)

    CASES.append(Case(f"layer_norm_{_name}", one(_ln_build)))


@_case("layer_norm_computed_params_after_dense")
def _(g: Graph) -> None:
    """A transformer block's tail: dense + bias + residual, then layer norm whose gamma and
    beta are computed (graph inputs through an op)."""
    x = g.arg(g.rand(2, 5, 24))
    y = g.op(nn.AddOp, g.op(nn.AddOp, dense(g, x, 24, 24), g.const(g.rand(24))), x)
    gamma = g.op(nn.AbsOp, g.arg(g.rand(24)))
    g.results.append(g.op(LayerNormOp, y, gamma, g.arg(g.rand(24)), axis=-1, epsilon=1e-5))


@_case("batch_norm_relu")
def _(g: Graph) -> None:
    x = g.arg(g.rand(2, 6, 5, 4))
    g.results.append(g.op(nn.ReluOp, bn(g, x, 6)))


@_case("batch_norm_scale_shift_relu")
def _(g: Graph) -> None:
    """A Caffe BatchNorm + Scale pair after a concat (densenet): one oneDNN batch norm."""
    x = g.op(nn.ConcatenateOp, g.arg(g.rand(1, 4, 6, 6)), g.arg(g.rand(1, 5, 6, 6)), axis=1)
    y = g.op(nn.MultiplyOp, bn(g, x, 9), g.const(g.rand(1, 9, 1, 1)))
    g.results.append(g.op(nn.ReluOp, g.op(nn.AddOp, y, g.const(g.rand(9, 1, 1)))))


@_case("residual_layout_grouped")
def _(g: Graph) -> None:
    """shufflenet's unit: a grouped 1x1 conv (34 channels a group: channels-last) whose
    residual add comes from a blocked-layout value (reordered to the conv's layout)."""
    x = g.arg(g.rand(1, 136, 14, 14))
    r = g.op(nn.ReluOp, bias(g, conv(g, x, 136, 136, (3, 3), padding=(1, 1, 1, 1)), 136))
    y = bias(g, conv(g, x, 136, 136, (1, 1), groups=4), 136)
    g.results.append(g.op(nn.ReluOp, g.op(nn.AddOp, y, r)))


@_case("concat_branches")
def _(g: Graph) -> None:
    """An inception/squeezenet fork: two convolutions of one input, concatenated."""
    x = g.arg(g.rand(1, 8, 9, 9))
    a = g.op(nn.ReluOp, bias(g, conv(g, x, 8, 16, (1, 1)), 16))
    b = g.op(nn.ReluOp, bias(g, conv(g, x, 8, 8, (3, 3), padding=(1, 1, 1, 1)), 8))
    c = g.arg(g.rand(1, 3, 9, 9))
    g.results.append(g.op(nn.ConcatenateOp, a, b, c, axis=1))


@_case("concat_last_axis")
def _(g: Graph) -> None:
    a, b = g.arg(g.rand(2, 3, 4)), g.arg(g.rand(2, 3, 5))
    g.results.append(g.op(nn.ConcatenateOp, a, b, g.const(g.rand(2, 3, 1)), axis=-1))


for _bin in (nn.AddOp, nn.SubtractOp, nn.MultiplyOp, nn.DivideOp, nn.MaximumOp, nn.MinimumOp):
    # maximum/minimum broadcasting stay off dnnl: their NaN guard is elementwise
    _nan_guarded = _bin in (nn.MaximumOp, nn.MinimumOp)
    for _bshape in ((2, 3, 4, 5),) if _nan_guarded else ((3, 4, 5), (4, 1), (1,)):

        def _bin_build(g: Graph, cls: Any = _bin, shape: Any = _bshape) -> None:
            a = g.arg(g.rand(2, 3, 4, 5))
            b = g.arg(np.abs(g.rand(*shape)) + 0.5)
            g.results.append(g.op(cls, a, b))

        CASES.append(Case(f"{_bin.name[3:]}_{'x'.join(map(str, _bshape))}", _bin_build))


@_case("add_broadcast_first_commutative")
def _(g: Graph) -> None:
    a, b = g.arg(g.rand(1, 5)), g.arg(g.rand(3, 5))
    g.results.append(g.op(nn.AddOp, a, b))


for _uop in (nn.ReluOp, nn.SigmoidOp, nn.TanhOp, nn.ExpOp, nn.AbsOp, nn.NegativeOp,
             nn.HardSwishOp, nn.SqrtOp, nn.ReciprocalOp):

    def _unary_build(g: Graph, cls: Any = _uop) -> None:
        x = g.rand(3, 7, 5)
        if cls in (nn.SqrtOp, nn.ReciprocalOp):
            x = np.abs(x) + 0.25
        g.results.append(g.op(cls, g.arg(x)))

    CASES.append(Case(_uop.name[3:], _unary_build))


@_case("reshape_transpose_shuffle")
def _(g: Graph) -> None:
    """shufflenet's channel shuffle between two convolutions."""
    x = g.arg(g.rand(1, 12, 6, 6))
    y = g.op(nn.ReluOp, bias(g, conv(g, x, 12, 12, (1, 1), groups=3), 12))
    y = g.op(nn.ReshapeOp, y, newshape=(1, 3, 4, 6, 6))
    y = g.op(nn.TransposeOp, y, axes=(0, 2, 1, 3, 4))
    y = g.op(nn.ReshapeOp, y, newshape=(1, 12, 6, 6))
    g.results.append(conv(g, y, 12, 12, (3, 3), groups=12, padding=(1, 1, 1, 1)))


@_case("conv_bn_read_twice")
def _(g: Graph) -> None:
    """A conv whose value is also an output: fold-batch-norm leaves its batch_norm, which the
    engine runs as a batch normalization primitive (with the relu fused)."""
    x = g.arg(g.rand(1, 6, 7, 7))
    y = conv(g, x, 6, 8, (3, 3), padding=(1, 1, 1, 1))
    g.results += [y, g.op(nn.ReluOp, bn(g, y, 8))]


@_case("two_outputs_one_interior")
def _(g: Graph) -> None:
    """A conv's value used outside the chain stays a value of its own."""
    x = g.arg(g.rand(1, 4, 6, 6))
    y = bias(g, conv(g, x, 4, 8, (3, 3)), 8)
    g.results += [y, g.op(nn.ReluOp, y)]


# --------------------------------------------------------------------------
# Running them
# --------------------------------------------------------------------------


def _built(case: Case) -> tuple[Any, list[Array], list[Array], list[Array]]:
    g = Graph(seed=zlib.crc32(case.name.encode()))
    case.build(g)
    module = g.module()
    expected = byoc.build(module.clone()).run(*g.inputs)
    bounds = graph_bounds(module, g.inputs, expected)
    exe = byoc.build(module.clone(), targets=["dnnl"])
    return exe, g.inputs, expected, bounds


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_against_the_reference(case: Case) -> None:
    exe, inputs, expected, bounds = _built(case)
    parts = exe.partitions
    assert parts and all(p.target == "dnnl" for p in parts), parts
    ops = [op for p in parts for op in p.ops]
    for name in case.composites:
        assert f"dnnl.{name}" in ops, (name, ops)
    outputs = exe.run(*inputs)
    for i, (out, want, bound) in enumerate(zip(outputs, expected, bounds, strict=True)):
        assert_within(out, want, bound, f"{case.name} output {i}")
    # a second call on the same workspace gives the same answer
    again = exe.run(*inputs)
    for a, b in zip(outputs, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_build_folds_batch_norm_into_the_conv(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """fold-batch-norm runs before partitioning (Target.prepare): the plan has one
    convolution with its bias (the relu after it is planned alone, with its NaN guard), no
    batch normalization; a batch_norm the pass cannot fold (the conv's value read twice) is a
    primitive of its own."""
    monkeypatch.setenv("BYOC_DNNL_VERBOSE", "1")
    for name, want, unwanted in (
        ("conv2d_odd_bn_relu", "conv2d+1:", "batch_norm"),
        ("conv_bn_read_twice", "batch_norm:", None),
    ):
        case = next(c for c in CASES if c.name == name)
        exe, inputs, expected, bounds = _built(case)
        plan = capfd.readouterr().err
        assert want in plan, plan
        assert unwanted is None or unwanted not in plan, plan
        for out, e, b in zip(exe.run(*inputs), expected, bounds, strict=True):
            assert_within(out, e, b, name)


def test_every_pattern_entry_has_a_case() -> None:
    # the f32 entries (conv2d, conv2d_transpose, dense, matmul anchors)
    names = {e[0] for e in pattern_table() if str(e[0]).split("_")[0] in ("conv2d", "dense", "matmul")}
    covered = {c for case in CASES for c in case.composites}
    assert len(names) == 20 and names <= covered, sorted(names - covered)


def test_unsupported_forms_stay_off_dnnl() -> None:
    g = Graph()
    x = g.arg(g.rand(2, 3))
    y = g.op(nn.SubtractOp, g.arg(g.rand(3)), x)  # broadcasting the first operand
    z = g.op(nn.LRNOp, g.arg(g.rand(1, 4, 3, 3)), size=2)  # even window
    w = g.op(nn.LogOp, g.arg(np.abs(g.rand(3, 4)) + 0.5))  # oneDNN's log: ~100 ulps off
    m = g.op(nn.MaximumOp, g.arg(g.rand(3, 4)), g.arg(g.rand(4)))  # its NaN guard is elementwise
    g.results += [y, z, w, m]
    module = g.module()
    ops = [op for op in module.walk() if op.name in ("nn.subtract", "nn.lrn", "nn.log", "nn.maximum")]
    assert all(unsupported_reason(op) for op in ops)
    exe = byoc.build(module, targets=["dnnl", "ccompiler"])
    assert all(p.target == "ccompiler" for p in exe.partitions)


# --------------------------------------------------------------------------
# Threads, artifacts
# --------------------------------------------------------------------------


def _model() -> tuple[Any, list[Array]]:
    g = Graph(seed=7)
    x = g.arg(g.rand(1, 8, 20, 20))
    y = g.op(nn.ReluOp, bias(g, conv(g, x, 8, 32, (3, 3), padding=(1, 1, 1, 1)), 32))
    y = g.op(nn.ReluOp, bn(g, conv(g, y, 32, 32, (3, 3), groups=32, padding=(1, 1, 1, 1)), 32))
    y = g.op(nn.MaxPool2DOp, y, pool_size=(2, 2), strides=(2, 2))
    y = g.op(nn.FlattenOp, g.op(nn.GlobalAvgPool2DOp, y))
    # layer norm over both dims, gamma and beta broadcast (expanded by the engine at init)
    y = g.op(LayerNormOp, y, g.const(g.rand(32) + 1.0), g.const(g.rand(1, 32)), axis=0)
    g.results.append(g.op(nn.SoftmaxOp, bias(g, dense(g, y, 32, 10), 10, axis=-1)))
    return g.module(), g.inputs


def test_eight_threads_agree_with_a_serial_run() -> None:
    module, _ = _model()
    exe = byoc.build(module, targets=["dnnl"])
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((1, 8, 20, 20)).astype(np.float32) for _ in range(8)]
    serial = [exe.run(x)[0] for x in xs]
    errors: list[str] = []

    def worker(k: int) -> None:
        for _ in range(20):
            (y,) = exe.run(xs[k])
            if not np.array_equal(y, serial[k]):
                errors.append(f"thread {k} differs")
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_thread_count_changes_keep_the_answer() -> None:
    module, inputs = _model()
    exe = byoc.build(module, targets=["dnnl"])
    (one_thread,) = exe.run(*inputs)
    component = exe.components["dnnl"]
    for n in (2, 1):
        component.set_num_threads(n)
        (y,) = exe.run(*inputs)
        expected = byoc.build(_model()[0]).run(*inputs)
        assert_within(y, expected[0], graph_bounds(_model()[0], inputs, expected)[0])
    np.testing.assert_array_equal(exe.run(*inputs)[0], one_thread)


_LOAD_SCRIPT = """
import json, sys
import numpy as np
import byoc
exe = byoc.load_module(sys.argv[1])
data = np.load(sys.argv[2])
(got,) = exe.run(data["x"])
print(json.dumps({
    "targets": sorted({p.target for p in exe.partitions}),
    "max_error": float(np.max(np.abs(got - data["want"]))),
}))
"""


def test_artifact_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """The library finds libdnnl.so.3 by its run path; nothing is recompiled (CC=false)."""
    module, inputs = _model()
    exe = byoc.build(module, targets=["dnnl", "ccompiler"])
    artifact = tmp_path / "model.byoc"
    exe.export_library(str(artifact))
    np.savez(tmp_path / "io.npz", x=inputs[0], want=exe.run(*inputs)[0])
    script = tmp_path / "load.py"
    script.write_text(_LOAD_SCRIPT)
    env = dict(os.environ, BYOC_CACHE_DIR=str(tmp_path / "fresh_cache"), CC="false")
    done = subprocess.run(
        [sys.executable, str(script), str(artifact), str(tmp_path / "io.npz")],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert "dnnl" in report["targets"]
    assert report["max_error"] == 0.0


def test_onednn_found_through_the_wheels() -> None:
    from byoc.targets.dnnl import build_options, find

    found = find()
    assert (found.include_dir / "oneapi" / "dnnl" / "dnnl.h").is_file()
    assert (found.lib_dir / "libdnnl.so.3").is_file()
    flags, libs = build_options()
    assert f"-I{found.include_dir}" in flags and f"-Wl,-rpath,{found.lib_dir}" in libs
