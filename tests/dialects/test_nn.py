"""nn builders and type relations: `Op.build(...)` computes result types with
`infer` for every op, and the verifier (which re-runs `infer`) rejects wrong
ranks, shapes, element types and attributes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.paths import FILECHECK
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    ModuleOp,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.dialects.test import TestOp as _TestOp
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc import parse_module
from byoc.dialects import nn


def value(shape: tuple[int, ...], element_type: Attribute = f32) -> SSAValue:
    return _TestOp.create(result_types=[nn.tensor(shape, element_type)]).results[0]


F, I32, I64 = f32, i32, i64
F64, F16, I8, I16, U8, B = f64, f16, i8, i16, nn.types.ui8, IntegerType(1)

# op name -> (operand (shape, element type)s, attrs, result (shape, element type)s)
BUILDS: dict[
    str,
    tuple[
        list[tuple[tuple[int, ...], Attribute]],
        dict[str, Any],
        list[tuple[tuple[int, ...], Attribute]],
    ],
] = {
    "nn.add": ([((2, 1, 3), F), ((4, 1), F)], {}, [((2, 4, 3), F)]),
    "nn.subtract": ([((3,), I32), ((2, 3), I32)], {}, [((2, 3), I32)]),
    "nn.multiply": ([((), I64), ((5,), I64)], {}, [((5,), I64)]),
    "nn.divide": ([((2, 3), F), ((2, 1), F)], {}, [((2, 3), F)]),
    "nn.maximum": ([((1,), F), ((3, 1, 2), F)], {}, [((3, 1, 2), F)]),
    "nn.minimum": ([((4, 4), I32), ((4, 4), I32)], {}, [((4, 4), I32)]),
    "nn.power": ([((2, 2), F), ((), F)], {}, [((2, 2), F)]),
    "nn.prelu": ([((1, 3, 2, 2), F), ((3, 1, 1), F)], {}, [((1, 3, 2, 2), F)]),
    "nn.relu": ([((2, 3), I64)], {}, [((2, 3), I64)]),
    "nn.sigmoid": ([((7,), F)], {}, [((7,), F)]),
    "nn.tanh": ([((7,), F)], {}, [((7,), F)]),
    "nn.exp": ([((7,), F)], {}, [((7,), F)]),
    "nn.log": ([((7,), F)], {}, [((7,), F)]),
    "nn.sqrt": ([((7,), F)], {}, [((7,), F)]),
    "nn.negative": ([((7,), I32)], {}, [((7,), I32)]),
    "nn.abs": ([((7,), I32)], {}, [((7,), I32)]),
    "nn.erf": ([((7,), F)], {}, [((7,), F)]),
    "nn.reciprocal": ([((7,), F)], {}, [((7,), F)]),
    "nn.hard_swish": ([((7,), F)], {}, [((7,), F)]),
    "nn.clip": ([((7,), F)], {"a_min": 0.0, "a_max": 6.0}, [((7,), F)]),
    "nn.leaky_relu": ([((7,), F)], {"alpha": 0.1}, [((7,), F)]),
    "nn.hard_sigmoid": ([((7,), F)], {"alpha": 0.2, "beta": 0.5}, [((7,), F)]),
    "nn.cast": ([((2, 2), F)], {"dtype": "i64"}, [((2, 2), I64)]),
    "nn.conv2d": (
        [((2, 4, 10, 9), F), ((6, 2, 3, 3), F)],
        {"strides": (2, 1), "padding": (1, 0, 1, 2), "dilation": (1, 2), "groups": 2},
        [((2, 6, 5, 7), F)],
    ),
    "nn.conv2d_transpose": (
        [((1, 4, 3, 3), F), ((4, 2, 3, 3), F)],
        {"strides": (2, 2), "padding": (1, 1, 1, 1), "output_padding": (1, 0)},
        [((1, 2, 6, 5), F)],
    ),
    "nn.dense": ([((2, 3, 8), F), ((5, 8), F)], {}, [((2, 3, 5), F)]),
    "nn.matmul": ([((7, 1, 2, 3), F), ((4, 3, 6), F)], {}, [((7, 4, 2, 6), F)]),
    "nn.bias_add": ([((2, 5, 3), F), ((3,), F)], {"axis": -1}, [((2, 5, 3), F)]),
    "nn.batch_norm": (
        [((1, 3, 2, 2), F)] + [((3,), F)] * 4,
        {"epsilon": 1e-3},
        [((1, 3, 2, 2), F)],
    ),
    "nn.max_pool2d": (
        [((1, 2, 7, 7), F)],
        {"pool_size": (2, 2), "strides": (2, 2), "ceil_mode": True},
        [((1, 2, 4, 4), F)],
    ),
    "nn.avg_pool2d": (
        [((1, 2, 7, 7), F)],
        {
            "pool_size": (3, 3),
            "strides": (2, 2),
            "padding": (1, 1, 1, 1),
            "count_include_pad": True,
        },
        [((1, 2, 4, 4), F)],
    ),
    "nn.global_avg_pool2d": ([((2, 3, 5, 5), F)], {}, [((2, 3, 1, 1), F)]),
    "nn.global_max_pool2d": ([((2, 3, 5, 5), F)], {}, [((2, 3, 1, 1), F)]),
    "nn.softmax": ([((2, 3), F)], {"axis": 0}, [((2, 3), F)]),
    "nn.lrn": ([((1, 5, 2, 2), F)], {"size": 3}, [((1, 5, 2, 2), F)]),
    "nn.reshape": ([((2, 3, 4), I32)], {"newshape": (4, 6)}, [((4, 6), I32)]),
    "nn.flatten": ([((2, 3, 4), F)], {"axis": 2}, [((6, 4), F)]),
    "nn.transpose": ([((2, 3, 4), F)], {"axes": (1, 0, 2)}, [((3, 2, 4), F)]),
    "nn.concatenate": ([((2, 1), F), ((2, 3), F), ((2, 2), F)], {"axis": -1}, [((2, 6), F)]),
    "nn.pad": ([((2, 3), F)], {"pad_width": (1, 0, 2, 3)}, [((3, 8), F)]),
    "nn.split": (
        [((9, 2), F)],
        {"indices": (2, 2, 7)},
        [((2, 2), F), ((0, 2), F), ((5, 2), F), ((2, 2), F)],
    ),
    "nn.strided_slice": (
        [((6, 5), F)],
        {"begin": (5, 0), "end": (-1, 5), "strides": (-2, 3)},
        [((3, 2), F)],
    ),
    "nn.take": ([((4, 5), F), ((2, 3), I32)], {"axis": 1}, [((4, 2, 3), F)]),
    "nn.resize2d": ([((1, 3, 4, 4), F)], {"size": (8, 2), "method": "linear"}, [((1, 3, 8, 2), F)]),
    "nn.reduce_mean": ([((2, 3, 4), F)], {"axes": (0, 2)}, [((3,), F)]),
    "nn.reduce_sum": ([((2, 3, 4), I64)], {"axes": (1,), "keepdims": True}, [((2, 1, 4), I64)]),
    "nn.reduce_max": ([((2, 3, 4), F)], {}, [((), F)]),
    # ---- the ops of nn.math_ops and nn.logic_ops (ONNX coverage, issue #16) ----
    **{f"nn.{n}": ([((2, 3), F64)], {}, [((2, 3), F64)]) for n in (
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
        "floor", "ceil", "round", "softplus", "softsign", "mish", "selu", "swish",
    )},  # fmt: skip
    "nn.gelu": ([((4,), F16)], {"approximate": "tanh"}, [((4,), F16)]),
    "nn.elu": ([((4,), F)], {"alpha": 0.5}, [((4,), F)]),
    "nn.celu": ([((4,), F)], {"alpha": 2.0}, [((4,), F)]),
    "nn.thresholded_relu": ([((4,), F)], {"alpha": 0.25}, [((4,), F)]),
    "nn.shrink": ([((4,), I8)], {"bias": 1.0, "lambd": 2.0}, [((4,), I8)]),
    "nn.sign": ([((4,), I64)], {}, [((4,), I64)]),
    "nn.is_nan": ([((2, 3), F)], {}, [((2, 3), B)]),
    "nn.is_inf": ([((2, 3), F64)], {"detect_negative": False}, [((2, 3), B)]),
    "nn.mod": ([((2, 3), I32), ((3,), I32)], {"fmod": True}, [((2, 3), I32)]),
    "nn.bitwise_and": ([((4,), U8), ((4,), U8)], {}, [((4,), U8)]),
    "nn.bitwise_or": ([((4,), I16), ((1,), I16)], {}, [((4,), I16)]),
    "nn.bitwise_xor": ([((4,), U8), ((4,), U8)], {}, [((4,), U8)]),
    "nn.bitwise_not": ([((4,), U8)], {}, [((4,), U8)]),
    "nn.bit_shift": ([((4,), U8), ((4,), U8)], {"direction": "right"}, [((4,), U8)]),
    "nn.reduce_min": ([((2, 3), B)], {"axes": (1,)}, [((2,), B)]),
    "nn.reduce_prod": ([((2, 3, 4), I64)], {"axes": (0, 2), "keepdims": True}, [((1, 3, 1), I64)]),
    "nn.reduce_l1": ([((2, 3), F)], {}, [((), F)]),
    "nn.reduce_l2": ([((2, 3), F)], {"axes": (-1,)}, [((2,), F)]),
    "nn.reduce_sum_square": ([((2, 3), F)], {"axes": (0,)}, [((3,), F)]),
    "nn.reduce_log_sum": ([((2, 3), F)], {"axes": (1,), "keepdims": True}, [((2, 1), F)]),
    "nn.reduce_log_sum_exp": ([((2, 3), F64)], {"axes": (1,)}, [((2,), F64)]),
    "nn.argmax": ([((2, 5), F)], {"axis": 1}, [((2, 1), I64)]),
    "nn.argmin": ([((2, 5), I32)], {"keepdims": False, "select_last_index": True}, [((5,), I64)]),
    "nn.cumsum": ([((2, 5), F)], {"axis": -1, "exclusive": True, "reverse": True}, [((2, 5), F)]),
    "nn.cumprod": ([((2, 5), I64)], {"axis": 0, "exclusive": True}, [((2, 5), I64)]),
    "nn.topk": ([((2, 5), F)], {"k": 3, "largest": False}, [((2, 3), F), ((2, 3), I64)]),
    "nn.einsum": ([((2, 5), F), ((5, 4), F)], {"equation": "ij,jk->ik"}, [((2, 4), F)]),
    "nn.tile": ([((2, 1), B)], {"reps": (2, 3)}, [((4, 3), B)]),
    "nn.bitcast": ([((2, 3), F)], {"dtype": "i32"}, [((2, 3), I32)]),
    "nn.det": ([((2, 3, 3), F64)], {}, [((2,), F64)]),
    "nn.broadcast_to": ([((2, 1), F)], {"shape": (3, 1, 4)}, [((3, 2, 4), F)]),
    "nn.equal": ([((2, 3), B), ((3,), B)], {}, [((2, 3), B)]),
    "nn.less": ([((2, 3), U8), ((3,), U8)], {}, [((2, 3), B)]),
    "nn.greater": ([((2, 3), F), ((), F)], {}, [((2, 3), B)]),
    "nn.less_equal": ([((2, 3), I64), ((2, 3), I64)], {}, [((2, 3), B)]),
    "nn.greater_equal": ([((2, 3), F16), ((2, 1), F16)], {}, [((2, 3), B)]),
    "nn.logical_and": ([((2, 3), B), ((3,), B)], {}, [((2, 3), B)]),
    "nn.logical_or": ([((2, 3), B), ((2, 3), B)], {}, [((2, 3), B)]),
    "nn.logical_xor": ([((2, 3), B), ((2, 3), B)], {}, [((2, 3), B)]),
    "nn.logical_not": ([((2, 3), B)], {}, [((2, 3), B)]),
    "nn.where": ([((2, 1), B), ((3,), I8), ((2, 3), I8)], {}, [((2, 3), I8)]),
    # second wave, h16c: recurrent ops (an absent operand has no elements)
    "nn.lstm": (
        [((5, 2, 4), F), ((2, 24, 4), F), ((2, 24, 6), F), ((2, 48), F), ((2,), I32),
         ((2, 2, 6), F), ((2, 2, 6), F), ((2, 18), F)],
        {"hidden_size": 6, "direction": "bidirectional", "clip": 2.5, "input_forget": 1},
        [((5, 2, 2, 6), F), ((2, 2, 6), F), ((2, 2, 6), F)],
    ),
    "nn.gru": (
        [((2, 5, 4), F), ((1, 9, 4), F), ((1, 9, 3), F), ((0,), F), ((0,), I32), ((0,), F)],
        {"hidden_size": 3, "layout": 1, "linear_before_reset": 1, "activations": "HardSigmoid,Elu"},
        [((2, 5, 1, 3), F), ((2, 1, 3), F)],
    ),
    "nn.rnn": (
        [((5, 2, 4), F), ((1, 3, 4), F), ((1, 3, 3), F), ((1, 6), F), ((0,), I32), ((1, 2, 3), F)],
        {"hidden_size": 3, "direction": "reverse"},
        [((5, 1, 2, 3), F), ((1, 2, 3), F)],
    ),
    # -- ONNX coverage, part B (byoc/dialects/nn/indexing.py) --
    "nn.gather_elements": ([((2, 3), F), ((2, 5), I64)], {"axis": 1}, [((2, 5), F)]),
    "nn.gather_nd": ([((2, 3, 4), F), ((2, 5, 1), I64)], {"batch_dims": 1}, [((2, 5, 4), F)]),
    "nn.scatter_elements": (
        [((4, 3), F), ((2, 3), I32), ((2, 3), F)],
        {"axis": 0, "reduction": "mul"},
        [((4, 3), F)],
    ),
    "nn.scatter_nd": ([((4, 3), I64), ((2, 1), I64), ((2, 3), I64)], {"reduction": "add"}, [((4, 3), I64)]),
    "nn.trilu": ([((3, 4, 5), I32)], {"k": -2, "upper": False}, [((3, 4, 5), I32)]),
    "nn.one_hot": ([((2, 3), I64), ((2,), F)], {"depth": 4, "axis": 1}, [((2, 4, 3), F)]),
    "nn.reverse_sequence": ([((5, 3, 2), F), ((3,), I64)], {}, [((5, 3, 2), F)]),
    "nn.layer_norm": ([((2, 3, 4), F), ((3, 1), F), ((4,), F)], {"axis": 1}, [((2, 3, 4), F)]),
    "nn.rms_norm": ([((2, 3, 4), F), ((4,), F)], {"epsilon": 1e-3}, [((2, 3, 4), F)]),
    "nn.log_softmax": ([((2, 3), F)], {"axis": 0}, [((2, 3), F)]),
    "nn.hardmax": ([((2, 3), f64)], {}, [((2, 3), f64)]),
    "nn.resize": ([((2, 3, 4), F)], {"size": (3, 6, 2), "mode": "cubic"}, [((3, 6, 2), F)]),
    "nn.attention": (
        [((2, 5, 8), F), ((2, 7, 4), F), ((2, 7, 6), F)],
        {"q_num_heads": 4, "kv_num_heads": 2, "num_outputs": 4},
        [((2, 5, 12), F), ((2, 2, 7, 2), F), ((2, 2, 7, 3), F), ((2, 4, 5, 7), F)],
    ),
    "nn.nll_loss": ([((2, 3, 4), F), ((2, 4), I64), ((3,), F)], {"reduction": "none"}, [((2, 4), F)]),
    "nn.grid_sample": ([((2, 3, 4, 5), F), ((2, 6, 7, 2), F)], {"mode": "cubic"}, [((2, 3, 6, 7), F)]),
    "nn.col2im": (
        [((1, 8, 6), F)],
        {"image_shape": (3, 4), "block_shape": (2, 2), "strides": (1, 2), "pads": (0, 1, 0, 1)},
        [((1, 2, 3, 4), F)],
    ),
}
# issue #13: the quantized ops (byoc/dialects/nn/quant.py; more cases in test_nn_quant.py)
_U8, _I8 = nn.ELEMENT_TYPES[7].element_type, nn.ELEMENT_TYPES[5].element_type
BUILDS.update({
    "nn.quantize": ([((2, 3), F), ((3,), F), ((3,), _I8)], {"axis": 1}, [((2, 3), _I8)]),
    "nn.dequantize": ([((2, 4), _U8), ((2, 2), F), ((2, 2), _U8)], {"axis": 1, "block_size": 2}, [((2, 4), F)]),
    "nn.requantize": ([((1, 4), I32), ((4,), F), ((4,), I32), ((), F), ((), _U8)], {}, [((1, 4), _U8)]),
    "nn.qconv2d": (
        [((1, 4, 6, 6), _U8), ((4, 1, 3, 3), _I8), ((), _U8), ((4,), _I8)],
        {"padding": (1, 1, 1, 1), "groups": 4},
        [((1, 4, 6, 6), I32)],
    ),
    "nn.qdense": ([((2, 8), _I8), ((5, 8), _I8), ((), _I8), ((), _I8)], {}, [((2, 5), I32)]),
    "nn.qmatmul": ([((3, 2, 8), _U8), ((8, 5), _U8), ((), _U8), ((5,), _U8)], {}, [((3, 2, 5), I32)]),
    "nn.dynamic_quantize": ([((2, 3), F)], {}, [((2, 3), _U8), ((), F), ((), _U8)]),
})
# issue #16 (h16): detectors and transformers (byoc/dialects/nn/detection.py)
BUILDS.update({
    "nn.roi_align": (
        [((1, 3, 8, 8), F), ((5, 4), F), ((5,), I64)],
        {"output_height": 2, "output_width": 3, "mode": "max", "spatial_scale": 0.5},
        [((5, 3, 2, 3), F)],
    ),
    "nn.rotary_embedding": (
        [((2, 3, 16), F), ((10, 2), F), ((10, 2), F), ((2, 3), I64)],
        {"num_heads": 2, "rotary_embedding_dim": 4, "interleaved": True},
        [((2, 3, 16), F)],
    ),
    "nn.deform_conv2d": (
        [((1, 4, 6, 6), F), ((6, 2, 3, 3), F), ((1, 36, 4, 2), F), ((6,), F), ((0,), F)],
        {"groups": 2, "offset_group": 2, "strides": (1, 2)},
        [((1, 6, 4, 2), F)],
    ),
    "nn.tensor_scatter": (
        [((2, 3, 8, 4), I64), ((2, 3, 2, 4), I64), ((2,), I64)], {"mode": "circular"}, [((2, 3, 8, 4), I64)]
    ),
    "nn.linear_attention": (
        [((2, 3, 16), F), ((2, 3, 8), F), ((2, 3, 12), F), ((0,), F), ((2, 3, 2), F), ((2, 3, 1), F)],
        {"q_num_heads": 4, "kv_num_heads": 2},
        [((2, 3, 24), F), ((2, 2, 4, 6), F)],
    ),
})


def test_every_op_is_built_here() -> None:
    assert set(BUILDS) | {"nn.constant"} == set(nn.NN_OPS)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_build_infers_result_types(name: str) -> None:
    operands, attrs, results = BUILDS[name]
    cls = nn.NN_OPS[name]
    op = cls.build(*[value(s, t) for s, t in operands], **attrs)
    assert [r.type for r in op.results] == [nn.tensor(s, t) for s, t in results]
    op.verify()
    # the relation and the builder agree
    assert cls.infer([v.type for v in op.operands], op.attr_values()) == list(op.result_types)  # type: ignore[arg-type]
    # properties given as Python values come back as the same Python values
    values = op.attr_values()
    for key, given in attrs.items():
        assert values[key] == (tuple(given) if isinstance(given, tuple) else given)


RECURRENT_FIELDS = {
    "nn.rnn": (("x", "w", "r", "b", "sequence_lens", "initial_h"), ("y", "y_h")),
    "nn.gru": (("x", "w", "r", "b", "sequence_lens", "initial_h"), ("y", "y_h")),
    "nn.lstm": (
        ("x", "w", "r", "b", "sequence_lens", "initial_h", "initial_c", "p"),
        ("y", "y_h", "y_c"),
    ),
}


@pytest.mark.parametrize("name", sorted(RECURRENT_FIELDS))
def test_recurrent_fields_are_in_onnx_order(name: str) -> None:
    """The named operands and results sit at the ONNX positions the builder and the lowerings use
    (a subclass's own fields would otherwise come before the shared ones)."""
    operands, attrs, _ = BUILDS[name]
    args = [value(s, t) for s, t in operands]
    op = nn.NN_OPS[name].build(*args, **attrs)
    operand_names, result_names = RECURRENT_FIELDS[name]
    definition = op.get_irdl_definition()
    assert tuple(n for n, _ in definition.operands) == operand_names
    assert tuple(n for n, _ in definition.results) == result_names
    for i, field in enumerate(operand_names):
        assert getattr(op, field) is args[i], field


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_built_op_round_trips_through_text(name: str) -> None:
    operands, attrs, _ = BUILDS[name]
    cls = nn.NN_OPS[name]
    args = [value(s, t) for s, t in operands]
    op = cls.build(*args, **attrs)
    signature = ", ".join(f"%a{i}: {v.type}" for i, v in enumerate(args))
    for i, v in enumerate(args):
        v.name_hint = f"a{i}"
    from io import StringIO

    from xdsl.printer import Printer

    stream = StringIO()
    printer = Printer(stream=stream)
    for v in args:
        printer._ssa_values[v] = v.name_hint  # pyright: ignore[reportPrivateUsage]
    printer.print_op(op)
    text = f"func.func @f({signature}) {{\n  {stream.getvalue()}\n  func.return\n}}"
    module = parse_module(text)
    parsed = next(o for o in module.walk() if isinstance(o, cls))
    assert parsed.result_types == op.result_types
    assert parsed.attr_values() == op.attr_values() or name == "nn.split"
    assert parsed.properties.keys() <= op.properties.keys() | set(cls.prop_defaults())


def test_defaults_fill_in_attr_values() -> None:
    op = nn.Conv2DOp.build(value((1, 1, 3, 3)), value((1, 1, 3, 3)))
    assert op.attr_values() == {
        "strides": (1, 1),
        "padding": (0, 0, 0, 0),
        "dilation": (1, 1),
        "groups": 1,
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
    }
    clip = nn.ClipOp.build(value((2,)))
    assert clip.attr_values()["a_min"] == float("-inf")


def test_discardable_attributes_are_kept() -> None:
    from xdsl.dialects.builtin import StringAttr

    op = nn.ReluOp.build(value((2,)), attributes={"byoc.target": StringAttr("ccompiler")})
    assert op.attributes["byoc.target"] == StringAttr("ccompiler")


# --------------------------------------------------------------------------
# rejections at build time (the relation raises VerifyException)
# --------------------------------------------------------------------------

REJECTED: list[tuple[str, list[tuple[tuple[int, ...], Attribute]], dict[str, Any], str]] = [
    ("nn.add", [((2, 3), F), ((4,), F)], {}, "not broadcast-compatible"),
    ("nn.conv2d", [((1, 3, 8), F), ((4, 3, 3, 3), F)], {}, "data must have rank 4, got 3"),
    ("nn.conv2d", [((1, 3, 8, 8), F), ((4, 3, 3), F)], {}, "weight must have rank 4, got 3"),
    (
        "nn.conv2d",
        [((1, 3, 8, 8), F), ((4, 3, 3, 3), F)],
        {"padding": (1, 1)},
        "'padding' must have 4 values",
    ),
    ("nn.conv2d", [((1, 3, 8, 8), F), ((4, 3, 3, 3), F)], {"groups": 0}, "groups 0 must divide"),
    ("nn.conv2d", [((1, 3, 2, 2), F), ((4, 3, 3, 3), F)], {}, "does not fit input size 2"),
    ("nn.dense", [((2, 3), F), ((4, 5), F)], {}, "contraction sizes differ"),
    ("nn.matmul", [((2, 3), F), ((4,), F)], {}, "contraction sizes differ: 3 and 4"),
    ("nn.bias_add", [((2, 3), F), ((2,), F)], {}, "bias has 2 elements"),
    (
        "nn.batch_norm",
        [((1, 3, 2), F), ((3,), F), ((3,), F), ((3,), F), ((2,), F)],
        {},
        "moving_var has 2",
    ),
    ("nn.max_pool2d", [((1, 1, 4, 4), F)], {"pool_size": (2,)}, "'pool_size' must have 2 values"),
    (
        "nn.avg_pool2d",
        [((1, 1, 4, 4), F)],
        {"pool_size": (2, 2), "strides": (0, 1)},
        "must be positive",
    ),
    ("nn.softmax", [((2, 3), F)], {"axis": -3}, "axis -3 is out of range for rank 2"),
    ("nn.reshape", [((2, 3), F)], {"newshape": (5,)}, "cannot reshape 6 elements"),
    ("nn.transpose", [((2, 3), F)], {"axes": (0,)}, "not a permutation"),
    ("nn.concatenate", [((2, 3), F), ((2, 3, 1), F)], {}, "incompatible with"),
    (
        "nn.pad",
        [((2, 3), F)],
        {"pad_width": (1, 1, 1, 1), "pad_mode": "mirror"},
        "pad_mode 'mirror'",
    ),
    ("nn.cast", [((2,), F)], {"dtype": "bf16"}, "cast to 'bf16' is not supported"),
    ("nn.clip", [((2,), F)], {"a_min": 1.0, "a_max": 0.0}, "greater than a_max"),
    ("nn.reduce_sum", [((2, 3), F)], {"axes": (2,)}, "axis 2 is out of range for rank 2"),
    ("nn.take", [((0, 3), F), ((1,), I64)], {}, "cannot take from the empty axis 0"),
    ("nn.split", [((4,), F)], {"indices": (5,)}, "must be non-decreasing within [0, 4]"),
    (
        "nn.strided_slice",
        [((4,), F)],
        {"begin": (0,), "end": (4,), "strides": (0,)},
        "strides must be non-zero",
    ),
    (
        "nn.resize2d",
        [((1, 1, 2, 2), F)],
        {"size": (4, 4), "rounding_method": "up"},
        "rounding_method 'up'",
    ),
    ("nn.lrn", [((1, 2, 2, 2), F)], {"size": -1}, "must be positive"),
    # ---- nn.math_ops and nn.logic_ops ----
    ("nn.gelu", [((2,), F)], {"approximate": "erf"}, "approximate 'erf'"),
    ("nn.celu", [((2,), F)], {"alpha": 0.0}, "alpha must be non-zero"),
    ("nn.bit_shift", [((2,), U8), ((2,), U8)], {"direction": "up"}, "direction 'up'"),
    ("nn.argmax", [((2, 0), F)], {"axis": 1}, "empty axis 1"),
    ("nn.argmin", [((2, 3), F)], {"axis": 2}, "axis 2 is out of range for rank 2"),
    ("nn.topk", [((2, 3), F)], {"k": 4}, "k 4 is out of range [0, 3]"),
    ("nn.cumsum", [((2, 3), F)], {"axis": -3}, "axis -3 is out of range"),
    ("nn.einsum", [((2, 3), F), ((4, 5), F)], {"equation": "ij,jk->ik"}, "label 'j' has sizes 3 and 4"),
    ("nn.einsum", [((2, 3), F)], {"equation": "ij,jk->ik"}, "has 2 inputs, got 1 operands"),
    ("nn.einsum", [((2, 3), F)], {"equation": "ij->iz"}, "names a label no input has"),
    ("nn.einsum", [((2, 3), F)], {"equation": "i$->i"}, "malformed term"),
    ("nn.tile", [((2, 3), F)], {"reps": (2,)}, "must be 2 non-negative values"),
    ("nn.bitcast", [((2,), F)], {"dtype": "f64"}, "changes the element width"),
    ("nn.det", [((2, 3), F)], {}, "square matrices"),
    ("nn.broadcast_to", [((2, 3), F)], {"shape": (4, 1)}, "not broadcast-compatible"),
    ("nn.where", [((2,), B), ((2,), F), ((2,), F64)], {}, "x and y must have the same element type"),
]


@pytest.mark.parametrize(
    ("name", "operands", "attrs", "message"), REJECTED, ids=[f"{r[0]}-{r[3]}" for r in REJECTED]
)
def test_build_rejects(
    name: str,
    operands: list[tuple[tuple[int, ...], Attribute]],
    attrs: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(VerifyException) as info:
        nn.NN_OPS[name].build(*[value(s, t) for s, t in operands], **attrs)
    assert message in str(info.value)


def test_build_rejects_non_tensor_operands_and_unknown_properties() -> None:
    scalar = _TestOp.create(result_types=[f32]).results[0]
    with pytest.raises(TypeError, match="operands must be tensors"):
        nn.ReluOp.build(scalar)
    with pytest.raises(TypeError, match="'nn.relu' has no property 'alpha'"):
        nn.ReluOp.build(value((2,)), alpha=0.1)
    with pytest.raises(VerifyException, match="'nn.reshape' requires the property 'newshape'"):
        nn.ReshapeOp.build(value((2, 3)))


# --------------------------------------------------------------------------
# rejections by the verifier on ops created with wrong types
# --------------------------------------------------------------------------


def test_verifier_rejects_a_wrong_result_type() -> None:
    x = value((2, 3))
    op = nn.ReluOp.create(operands=[x], result_types=[nn.tensor((3, 2))])
    with pytest.raises(VerifyException, match="does not match the inferred type tensor<2x3xf32>"):
        op.verify()


@pytest.mark.parametrize(
    ("cls", "element_type"),
    [
        (nn.DivideOp, IntegerType(1)),
        (nn.AddOp, IntegerType(1)),
        (nn.math_ops.SinOp, i32),
        (nn.math_ops.BitwiseAndOp, f32),
        (nn.logic_ops.LogicalAndOp, f32),
        (nn.logic_ops.WhereOp, f32),
        (nn.Conv2DOp, i64),
        (nn.SigmoidOp, i32),
        (nn.ReduceMeanOp, i64),
    ],
)
def test_verifier_rejects_element_types(cls: type[nn.NNOp], element_type: Attribute) -> None:
    shape = (1, 1, 3, 3)
    arity = len(cls.get_irdl_definition().operands)
    props: dict[str, Attribute] = {}
    args = [value(shape, element_type) for _ in range(arity)]
    result = nn.tensor(
        () if cls is nn.ReduceMeanOp else (1, 1, 1, 1) if cls is nn.Conv2DOp else shape,
        element_type,
    )
    op = cls.create(operands=args, result_types=[result], properties=props)
    with pytest.raises(VerifyException, match=f"element type {element_type} is not supported"):
        op.verify()


def test_verifier_rejects_mixed_element_types() -> None:
    op = nn.AddOp.create(operands=[value((2,)), value((2,), i32)], result_types=[nn.tensor((2,))])
    with pytest.raises(VerifyException, match="same element type"):
        op.verify()


def test_verifier_rejects_a_wrong_property_kind() -> None:
    from xdsl.dialects.builtin import StringAttr

    op = nn.SoftmaxOp.create(
        operands=[value((2,))], result_types=[nn.tensor((2,))], properties={"axis": StringAttr("0")}
    )
    with pytest.raises(VerifyException):
        op.verify()


# --------------------------------------------------------------------------
# constants
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_constant_from_array_is_a_zero_copy_view(dtype: type) -> None:
    array = np.arange(12, dtype=dtype).reshape(3, 4)
    op = nn.ConstantOp.from_array(array)
    op.verify()
    assert op.result.type == nn.tensor((3, 4), nn.element_type_of(dtype))
    view = op.ndarray()
    assert view.dtype == dtype and view.tolist() == array.tolist()
    assert not view.flags.writeable  # a view of the stored bytes
    assert op.attr_values()["value"] is not None


def test_constant_over_whole_bytes_keeps_them_and_copies_any_other_view() -> None:
    """An array viewing all of one bytes object (an ONNX tensor's raw data) becomes the
    payload as is; a view of part of it, or in another order, is copied in C order."""
    raw = np.arange(12, dtype="<f4").tobytes()
    whole = np.frombuffer(raw, dtype="<f4").reshape(3, 4)
    assert nn.ConstantOp.from_array(whole).value.data.data is raw
    for view in (whole.T, whole[1:], whole[:, ::2], np.frombuffer(raw, np.uint8)[4:]):
        op = nn.ConstantOp.from_array(view)
        op.verify()
        assert op.value.data.data is not raw
        assert op.value.data.data == np.ascontiguousarray(view).tobytes()
        assert op.ndarray().tolist() == view.tolist()
    swapped = np.frombuffer(raw, dtype=">f4")  # not native: no nn element type
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        nn.ConstantOp.from_array(swapped)


def test_constant_rejects_unsupported_dtypes_and_bad_payloads() -> None:
    with pytest.raises(ValueError, match="unsupported numpy dtype"):
        nn.ConstantOp.from_array(np.zeros(2, np.complex64))
    nn.ConstantOp.from_array(np.zeros(2, np.float64)).verify()  # every table type is a constant
    ty = nn.tensor((4,))
    short = DenseIntOrFPElementsAttr(ty, BytesAttr(b"\x00" * 8))
    op = nn.ConstantOp.create(properties={"value": short}, result_types=[ty])
    with pytest.raises(VerifyException, match="payload holds 8 bytes, expected 4 elements"):
        op.verify()


def test_constant_large_payload_prints_as_hex_and_parses_back_exactly() -> None:
    rng = np.random.default_rng(7)
    array = rng.standard_normal((8, 9)).astype(np.float32)
    module = ModuleOp([nn.ConstantOp.from_array(array)])
    text = str(module)
    assert 'dense<"0x' in text
    back = parse_module(text)
    (parsed,) = [o for o in back.walk() if isinstance(o, nn.ConstantOp)]
    assert parsed.ndarray().tobytes() == array.tobytes()


def test_elided_constants_print_a_placeholder() -> None:
    from io import StringIO

    from byoc.printer import ByocPrinter

    module = ModuleOp([nn.ConstantOp.from_array(np.zeros(100, np.float32))])
    out = StringIO()
    ByocPrinter(out, elide_constants_larger_than=10).print_op(module)
    assert "dense_resource<__elided__> : tensor<100xf32>" in out.getvalue()
    assert "__elided__" not in str(module)


def test_every_op_is_in_the_round_trip_filecheck_test() -> None:
    """tests/filecheck/dialects/nn.mlir round-trips each op in both forms; a new op goes there too."""
    import re

    text = "".join(
        (FILECHECK / "dialects" / f).read_text()
        for f in ("nn.mlir", "nn-math-logic.mlir", "nn-quant.mlir")
    )
    missing = [name for name in nn.NN_OPS if not re.search(rf"= {re.escape(name)} ", text)]
    assert missing == []


@pytest.mark.parametrize(
    "name", sorted(n for n, c in nn.NN_OPS.items() if c in (*nn.math_ops.OPS, *nn.logic_ops.OPS))
)
def test_math_logic_ops_round_trip_in_the_generic_form(name: str) -> None:
    """tests/filecheck/dialects/nn-math-logic.mlir checks the custom form; this the generic one."""
    from io import StringIO

    from xdsl.printer import Printer

    operands, attrs, _ = BUILDS[name]
    block = Block(arg_types=[nn.tensor(s, t) for s, t in operands])
    op = nn.NN_OPS[name].build(*block.args, **attrs)
    block.add_ops([op, ReturnOp(*op.results)])
    func = FuncOp("f", ([a.type for a in block.args], list(op.result_types)), Region(block))
    stream = StringIO()
    Printer(stream=stream, print_generic_format=True).print_op(ModuleOp([func]))
    parsed = parse_module(stream.getvalue())
    again = next(o for o in parsed.walk() if isinstance(o, nn.NN_OPS[name]))
    assert again.attr_values() == op.attr_values() and again.result_types == op.result_types
