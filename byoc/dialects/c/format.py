"""The text of literals, shared by `c.constant` and `c.global`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
    f32,
)
from xdsl.printer import Printer

from byoc.dialects.c.types import float32_repr, global_array
from byoc.dialects.dense import encode_hex
from byoc.dialects.nn.format import HEX_CONSTANTS_LARGER_THAN
from byoc.printer import elides_constant


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

