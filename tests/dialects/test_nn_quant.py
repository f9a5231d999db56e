"""The quantized nn ops (issue #13): type relations, verifier errors, text round trip,
registry records."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import f32, i8, i32
from xdsl.dialects.test import TestOp as _TestOp
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import VerifyException

from byoc import get_op, parse_module
from byoc.dialects import nn
from byoc.dialects.nn.types import ui8

F, I8, U8, I32 = f32, i8, ui8, i32


def value(shape: tuple[int, ...], element_type: Attribute = f32) -> SSAValue:
    return _TestOp.create(result_types=[nn.tensor(shape, element_type)]).results[0]


def build(name: str, operands: list[tuple[tuple[int, ...], Attribute]], **attrs: Any) -> nn.NNOp:
    return nn.NN_OPS[name].build(*[value(s, t) for s, t in operands], **attrs)


@pytest.mark.parametrize(
    ("name", "operands", "attrs", "result"),
    [
        ("nn.quantize", [((2, 3), F), ((), F), ((), U8)], {}, ((2, 3), U8)),
        ("nn.quantize", [((2, 3), F), ((1,), F), ((1,), I8)], {}, ((2, 3), I8)),
        ("nn.quantize", [((4, 6), F), ((4, 2), F), ((4, 2), I8)], {"axis": 1, "block_size": 3}, ((4, 6), I8)),
        ("nn.dequantize", [((2, 3), I32), ((), F), ((), I32)], {}, ((2, 3), F)),
        ("nn.dequantize", [((5, 3), I8), ((5,), F), ((5,), I8)], {"axis": 0}, ((5, 3), F)),
        ("nn.dequantize", [((5, 3), I8), ((3,), F), ((3,), I8)], {"axis": -1}, ((5, 3), F)),
        ("nn.requantize", [((2, 3), U8), ((), F), ((), U8), ((), F), ((), I8)], {}, ((2, 3), I8)),
        (
            "nn.qconv2d",
            [((1, 3, 5, 5), U8), ((4, 3, 3, 3), U8), ((), U8), ((), U8)],
            {"strides": (2, 2)},
            ((1, 4, 2, 2), I32),
        ),
        ("nn.qdense", [((3, 8), U8), ((2, 8), I8), ((1,), U8), ((2,), I8)], {}, ((3, 2), I32)),
        ("nn.qmatmul", [((8,), I8), ((8, 3), I8), ((), I8), ((), I8)], {}, ((3,), I32)),
    ],
)
def test_build_infers_and_round_trips(
    name: str, operands: list[tuple[tuple[int, ...], Attribute]], attrs: dict[str, Any], result: Any
) -> None:
    op = build(name, operands, **attrs)
    op.verify()
    assert op.result_types[0] == nn.tensor(*result)
    args = ", ".join(f"%a{i}: {nn.tensor(s, t)}" for i, (s, t) in enumerate(operands))
    names = ", ".join(f"%a{i}" for i in range(len(operands)))
    sig = ", ".join(str(nn.tensor(s, t)) for s, t in operands)
    props = {k: v for k, v in op.properties.items() if nn.NN_OPS[name].prop_defaults().get(k) != v}
    prop_text = (" {" + ", ".join(f"{k} = {v}" for k, v in props.items()) + "}") if props else ""
    text = (
        f"func.func @f({args}) -> {op.result_types[0]} {{\n"
        f"  %r = {name} {names}{prop_text} : ({sig}) -> {op.result_types[0]}\n"
        f"  func.return %r : {op.result_types[0]}\n}}"
    )
    module = parse_module(text)
    parsed = next(o for o in module.walk() if isinstance(o, nn.NN_OPS[name]))
    assert parsed.attr_values() == op.attr_values()
    assert parse_module(str(module)).is_structurally_equivalent(module)


REJECTED = [
    ("nn.quantize", [((2, 3), I32), ((), F), ((), U8)], {}, "nn.quantize takes f32"),
    ("nn.quantize", [((2, 3), F), ((), F), ((), I32)], {}, "not a quantized type"),
    ("nn.quantize", [((2, 3), F), ((), I32), ((), U8)], {}, "scale must be f32"),
    ("nn.quantize", [((2, 3), F), ((4,), F), ((4,), U8)], {}, "x has 3 along axis 1"),
    ("nn.quantize", [((2, 3), F), ((3,), F), ((2,), U8)], {}, "differs from scale shape"),
    ("nn.quantize", [((2, 3), F), ((3, 1), F), ((3, 1), U8)], {}, "scalar or 1-D"),
    ("nn.quantize", [((4, 6), F), ((4, 3), F), ((4, 3), U8)], {"block_size": 4}, "expected 2"),
    ("nn.quantize", [((4, 6), F), ((2,), F), ((2,), U8)], {"block_size": 4}, "rank of x"),
    ("nn.quantize", [((4, 6), F), ((), F), ((), U8)], {"block_size": -1}, "non-negative"),
    ("nn.quantize", [((4, 6), F), ((4,), F), ((4,), U8)], {"axis": 2}, "out of range"),
    ("nn.dequantize", [((2, 3), F), ((), F), ((), F)], {}, "takes i8, ui8, i16, ui16 or i32"),
    ("nn.dequantize", [((2, 3), I8), ((), F), ((), U8)], {}, "zero point is ui8, x is i8"),
    ("nn.requantize", [((2,), I32), ((), F), ((), I32), ((2,), F), ((2,), U8)], {"axis": 0}, "per tensor"),
    ("nn.requantize", [((2,), I32), ((), F), ((), I8), ((), F), ((), U8)], {}, "input zero point"),
    ("nn.qconv2d", [((1, 3, 5, 5), F), ((4, 3, 3, 3), U8), ((), F), ((), U8)], {}, "x must be i8 or ui8"),
    ("nn.qconv2d", [((1, 3, 5, 5), U8), ((4, 3, 3, 3), U8), ((), I8), ((), U8)], {}, "zero points"),
    ("nn.qconv2d", [((1, 3, 5, 5), U8), ((4, 3, 3, 3), I8), ((3,), U8), ((), I8)], {}, "x zero point"),
    ("nn.qconv2d", [((1, 3, 5, 5), U8), ((4, 3, 3, 3), I8), ((), U8), ((3,), I8)], {}, "4 elements"),
    ("nn.qconv2d", [((1, 3, 5, 5), U8), ((4, 2, 3, 3), I8), ((), U8), ((), I8)], {}, "input channels"),
    ("nn.qdense", [((3, 8), U8), ((2, 7), I8), ((), U8), ((), I8)], {}, "contraction sizes differ"),
    ("nn.qmatmul", [((3, 8), U8), ((8, 2), I8), ((), U8), ((3,), I8)], {}, "2 elements"),
    ("nn.dynamic_quantize", [((3,), I32)], {}, "takes f32"),
]


@pytest.mark.parametrize(
    ("name", "operands", "attrs", "message"), REJECTED, ids=[f"{r[0]}-{r[3]}" for r in REJECTED]
)
def test_build_rejects(
    name: str, operands: list[tuple[tuple[int, ...], Attribute]], attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(VerifyException) as info:
        build(name, operands, **attrs)
    assert message in str(info.value)


def test_verifier_rejects_a_wrong_result_type() -> None:
    op = nn.QuantizeOp.create(
        operands=[value((2,)), value(()), value((), U8)], result_types=[nn.tensor((2,), I8)]
    )
    with pytest.raises(VerifyException, match="does not match the inferred type tensor<2xui8>"):
        op.verify()


def test_a_bad_quantized_op_in_text_is_a_located_error() -> None:
    text = (
        "func.func @f(%x: tensor<2xf32>, %s: tensor<f32>, %z: tensor<i32>) -> tensor<2xi32> {\n"
        "  %q = nn.quantize %x, %s, %z : (tensor<2xf32>, tensor<f32>, tensor<i32>) -> tensor<2xi32>\n"
        "  func.return %q : tensor<2xi32>\n}"
    )
    with pytest.raises(VerifyException, match="not a quantized type"):
        parse_module(text)


def test_quantized_constants_round_trip() -> None:
    for dtype in (np.int8, np.uint8, np.int16, np.uint16):
        arr = np.arange(-3, 20).astype(dtype).reshape(23)
        op = nn.ConstantOp.from_array(arr)
        op.verify()
        module = parse_module("func.func @f() {\n  func.return\n}")
        block = next(iter(module.ops)).regions[0].block  # type: ignore[attr-defined]
        block.insert_op_before(op, block.first_op)  # type: ignore[arg-type]
        module = parse_module(str(module))
        (parsed,) = [o for o in module.walk() if isinstance(o, nn.ConstantOp)]
        np.testing.assert_array_equal(parsed.ndarray(), arr)
        assert parsed.ndarray().dtype == dtype


@pytest.mark.parametrize("name", [op.name for op in nn.QUANT_OPS])
def test_registry_records_each_quantized_op(name: str) -> None:
    record = get_op(name)
    assert record.op_class is nn.NN_OPS[name]
    assert record.num_inputs == len(nn.NN_OPS[name].get_irdl_definition().operands)
    assert record.description
