"""fold-batch-norm (byoc/passes/fold_batch_norm.py): the folded graph computes the values of
the unfolded one within the bound the pass states, and the dnnl target's build runs it.

The bound, per output element: both evaluations are within gamma(k + 8) * M of the exact
value, M = |s| * (sum |x * w| + |c| + |mean|) + |beta| with s = gamma / sqrt(var + eps) and
k the terms of one output of the anchor; so they differ by at most 2 * gamma(k + 8) * M.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.bounds import gamma
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import PassPipeline

import byoc
from byoc.dialects import nn
from byoc.driver import prepare_for
from byoc.interpreters import run_reference
from byoc.passes import ALL_PASSES
from byoc.passes.fold_batch_norm import FoldBatchNormPass

Array = np.ndarray[Any, Any]

# name: (anchor, input shape, weight shape, anchor attrs, bias form, channel axis)
FORMS: dict[str, tuple[type[Any], tuple[int, ...], tuple[int, ...], dict[str, Any], str, int]] = {
    "conv": (nn.Conv2DOp, (2, 5, 9, 7), (6, 5, 3, 3), {"padding": (1, 0, 2, 1), "strides": (2, 1)}, "none", 1),
    "conv_bias_add": (nn.Conv2DOp, (1, 8, 6, 6), (8, 8, 1, 1), {}, "bias_add", 1),
    "conv_add_c11": (nn.Conv2DOp, (1, 6, 7, 7), (10, 3, 3, 3), {"groups": 2, "dilation": (2, 1), "padding": (2, 1, 2, 1)}, "add", 1),
    "depthwise": (nn.Conv2DOp, (1, 16, 10, 10), (16, 1, 3, 3), {"groups": 16, "padding": (1, 1, 1, 1)}, "bias_add", 1),
    "conv_transpose": (nn.Conv2DTransposeOp, (1, 6, 5, 5), (6, 4, 3, 3), {"groups": 2, "strides": (2, 2)}, "bias_add", 1),
    "dense": (nn.DenseOp, (3, 4, 33), (17, 33), {}, "add", 2),
}


def _module(form: str, rng: np.random.Generator) -> tuple[ModuleOp, list[Array], dict[str, Array]]:
    cls, xshape, wshape, attrs, bias_form, axis = FORMS[form]
    x = rng.standard_normal(xshape).astype(np.float32)
    block = Block(arg_types=[nn.tensor(xshape, nn.element_type_of(x.dtype))])

    def const(a: Array) -> Any:
        op = nn.ConstantOp.from_array(np.asarray(a, dtype=np.float32))
        block.add_op(op)
        return op.result

    def add(op: Any) -> Any:
        block.add_op(op)
        return op.results[0]

    w = rng.standard_normal(wshape).astype(np.float32) / np.sqrt(np.prod(wshape[1:]))
    y = add(cls.build(block.args[0], const(w), **attrs))
    shape = y.type.get_shape()
    c = shape[axis]
    params = {
        "c": np.zeros(c, np.float32),
        "gamma": (rng.standard_normal(c) + 1.5).astype(np.float32),
        "beta": rng.standard_normal(c).astype(np.float32),
        "mean": rng.standard_normal(c).astype(np.float32),
        "var": (np.abs(rng.standard_normal(c)) + 0.1).astype(np.float32),
    }
    if bias_form != "none":
        params["c"] = rng.standard_normal(c).astype(np.float32)
        if bias_form == "bias_add":
            y = add(nn.BiasAddOp.build(y, const(params["c"]), axis=axis))
        else:
            per = [1] * (len(shape) - axis)
            per[0] = c
            y = add(nn.AddOp.build(const(params["c"].reshape(per)), y))
    p = [const(params[k]) for k in ("gamma", "beta", "mean", "var")]
    z = add(nn.BatchNormOp.build(y, *p, axis=axis, epsilon=1e-3))
    out = add(nn.ReluOp.build(z))
    block.add_op(func.ReturnOp(out))
    fn = func.FuncOp("main", ([block.args[0].type], [out.type]), Region(block))
    params["w"] = w
    return ModuleOp([fn]), [x], params


def _fold(module: ModuleOp) -> ModuleOp:
    out = module.clone()
    PassPipeline((FoldBatchNormPass(),)).apply(byoc.make_context(), out)
    out.verify()
    return out


def _bound(module: ModuleOp, form: str, x: Array, params: dict[str, Array]) -> Array:
    """2 * gamma(k + 8) * M of the pass's docstring, M from the anchor run on |x|, |w|."""
    cls, _, wshape, attrs, _, axis = FORMS[form]
    k = int(np.prod(wshape)) if cls is nn.Conv2DTransposeOp else int(np.prod(wshape[1:]))
    anchor = next(op for op in module.walk() if isinstance(op, cls))
    from byoc.interpreters.kernels import KERNELS  # noqa: PLC0415

    kern = KERNELS[cls.name]
    mag = np.abs(kern(np.abs(x), np.abs(params["w"]), **anchor.attr_values()).astype(np.float64))
    s = params["gamma"].astype(np.float64) / np.sqrt(params["var"].astype(np.float64) + 1e-3)
    shape = [1] * mag.ndim
    shape[axis] = -1
    per = lambda v: np.abs(v.astype(np.float64)).reshape(shape)  # noqa: E731
    m = per(s) * (mag + per(params["c"]) + per(params["mean"])) + per(params["beta"])
    return 2 * gamma(k + 8) * m


@pytest.mark.parametrize("form", FORMS)
def test_the_folded_graph_agrees_within_the_stated_bound(form: str) -> None:
    rng = np.random.default_rng(sum(map(ord, form)))
    module, inputs, params = _module(form, rng)
    folded = _fold(module)
    names = [op.name for op in folded.walk()]
    assert "nn.batch_norm" not in names and names.count("nn.bias_add") == 1, names
    assert names.count(FORMS[form][0].name) == 1
    (want,) = run_reference(module, *inputs)
    (got,) = run_reference(folded, *inputs)
    bound = _bound(module, form, inputs[0], params)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert (diff <= bound).all(), f"{form}: worst {diff.max()} > its bound {bound.flat[diff.argmax()]}"


def test_the_pass_is_registered_and_the_dnnl_target_prepares_with_it() -> None:
    assert ALL_PASSES["fold-batch-norm"]() is FoldBatchNormPass
    module, _, _ = _module("conv_bias_add", np.random.default_rng(0))
    prepare_for(module, ["dnnl", "ccompiler"])
    assert "nn.batch_norm" not in [op.name for op in module.walk()]
    untouched, _, _ = _module("conv_bias_add", np.random.default_rng(0))
    prepare_for(untouched, ["ccompiler"])  # the C targets apply batch_norm in the epilogue
    assert "nn.batch_norm" in [op.name for op in untouched.walk()]
