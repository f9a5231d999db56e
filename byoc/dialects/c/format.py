"""The text of literals, shared by `c.constant` and `c.global`, and the `{attrs} : type` end
that the hand-parsed ops share."""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.printer import Printer

from byoc.dialects.c.types import float32_repr, global_array
from byoc.dialects.dense import encode_hex
from byoc.dialects.nn.format import HEX_CONSTANTS_LARGER_THAN
from byoc.printer import elides_constant

AttributeT = TypeVar("AttributeT", bound=Attribute)


def print_attrs_and_type(printer: Printer, op: Operation, type_: Attribute) -> None:
    """` {attrs} : <type>`, the end of a hand-printed op (`parse_attrs_and_type` reads it)."""
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(type_)


def parse_attrs_and_type(
    parser: Parser, kind: type[AttributeT], what: str
) -> tuple[dict[str, Attribute], AttributeT]:
    """`{attrs} : <type>`, the end of an op whose type must be a `kind`; another type is an
    error at it: `<what>, got <type>`."""
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    t = parser.parse_type()
    if not isinstance(t, kind):
        parser.raise_error(f"{what}, got {t}", pos, parser.pos)
    return attrs, t


def print_scalar(printer: Printer, value: IntegerAttr[Any] | FloatAttr[Any]) -> None:
    """Print a literal exactly; non-finite floats as their bit pattern (as MLIR does)."""
    if isinstance(value, FloatAttr):
        v = float(value.value.data)
        if not math.isfinite(v):
            width = value.type.bitwidth  # type: ignore[union-attr]
            dt = np.float32 if width == 32 else np.float64
            bits = np.array([v], dtype=dt).view(np.uint32 if width == 32 else np.uint64)[0]
            printer.print_string(f"0x{int(bits):X}")
        elif value.type == f32:
            text = float32_repr(v)
            printer.print_string(text if ("." in text or "e" in text) else text + ".0")
        else:
            printer.print_string(repr(v))
    else:
        printer.print_string(str(int(value.value.data)))


def print_dense(printer: Printer, value: DenseIntOrFPElementsAttr[Any]) -> None:
    ty = value.type
    assert isinstance(ty, TensorType)
    n = math.prod(ty.get_shape())
    if elides_constant(printer, n):
        printer.print_string("dense_resource<__elided__>")
    elif n > HEX_CONSTANTS_LARGER_THAN:
        printer.print_string(f'dense<"{encode_hex(value.data.data)}">')
    else:
        arr = global_array(value)
        vals = arr.reshape(-1).tolist()
        if arr.dtype.kind == "f":
            body = ", ".join(
                float32_repr(v) if arr.dtype == np.float32 else repr(float(v)) for v in vals
            )
            if not all(math.isfinite(v) for v in vals):
                body = None
        else:
            body = ", ".join(str(int(v)) for v in vals)
        if body is None:
            printer.print_string(f'dense<"{encode_hex(value.data.data)}">')
        else:
            printer.print_string(f"dense<[{body}]>")
    printer.print_string(" : ")
    printer.print_attribute(ty)

