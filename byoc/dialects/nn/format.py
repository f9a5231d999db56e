"""The text format of nn ops, shared by all of them (except `nn.constant`):

    %2 = nn.add %0, %1 : tensor<10x10xf32>                      // all types agree
    %3 = nn.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>}
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>

Only properties that differ from their default are printed; any other
(discardable) attribute, such as `byoc.target`, is printed in the same
dictionary and kept as an attribute when parsed.

A model repeats a few tensor types thousands of times, and xDSL parses and
prints each one token by token (most of an op's parse time), so the text of
plain tensor types and attribute dictionaries is cached here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from io import StringIO
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.dense import format_dense, parse_dense
from byoc.dialects.nn.types import (
    check_static_shape,
    is_known_element_type,
    machine_memory_bytes,
    numpy_dtype,
    shape_of,
)
from byoc.printer import elides_constant

_Op = TypeVar("_Op", bound=IRDLOperation)

# ---- type text caches -------------------------------------------------------------

_PLAIN_TENSOR_TYPE = re.compile(r"tensor<(?:[0-9]+x)*(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64)>")
_PARSED_TYPES: dict[str, Attribute] = {}
_PRINTED_TYPES: dict[Attribute, str] = {}
_PRINTED_TYPES_BY_ID: dict[int, tuple[Attribute, str]] = {}
_PRINTED_ATTR_DICTS: dict[tuple[tuple[str, Attribute], ...], str] = {}
_TYPE_CACHE_LIMIT = 4096
_STATELESS_ATTRS = (IntegerAttr, FloatAttr, StringAttr, DenseArrayBase)
"""Attributes whose text does not depend on the printer's state (aliases, resources)."""


def _skip_to(parser: Parser, end: int) -> None:
    """Continue parsing at character `end` of the input.

    xDSL has no public way to skip text it did not lex; this is the one place
    that uses its private `_resume_from`.
    """
    parser._resume_from(end)  # pyright: ignore[reportPrivateUsage]


def parse_optional_type(parser: Parser) -> Attribute | None:
    """`parser.parse_optional_type()`, served from a cache for static tensor types."""
    start = parser.pos
    match = _PLAIN_TENSOR_TYPE.match(parser.lexer.input.content, start)  # type: ignore[arg-type]
    if match is None:
        return parser.parse_optional_type()
    cached = _PARSED_TYPES.get(match.group())
    if cached is None:
        cached = parser.parse_optional_type()
        if cached is not None and len(_PARSED_TYPES) < _TYPE_CACHE_LIMIT:
            _PARSED_TYPES[match.group()] = cached
        return cached
    _skip_to(parser, match.end())
    return cached


def parse_type(parser: Parser) -> Attribute:
    found = parse_optional_type(parser)
    if found is None:
        parser.raise_error("Expected type")
    return found


def _type_text(t: Attribute) -> str | None:
    """The text of a tensor type without encoding, from a cache; None for other types."""
    entry = _PRINTED_TYPES_BY_ID.get(id(t))
    if entry is not None and entry[0] is t:
        return entry[1]
    if not isinstance(t, TensorType) or not isinstance(t.encoding, NoneAttr):
        return None
    text = _PRINTED_TYPES.get(t)
    if text is None:
        text = str(t)
        if len(_PRINTED_TYPES) < _TYPE_CACHE_LIMIT:
            _PRINTED_TYPES[t] = text
    if len(_PRINTED_TYPES_BY_ID) < _TYPE_CACHE_LIMIT:
        _PRINTED_TYPES_BY_ID[id(t)] = (t, text)  # holds t, so its id stays unique
    return text


def _attr_dict_text(attrs: dict[str, Attribute]) -> str | None:
    """The text of an attribute dictionary of plain builtin values, from a cache."""
    if not all(isinstance(v, _STATELESS_ATTRS) for v in attrs.values()):
        return None
    key = tuple(attrs.items())
    text = _PRINTED_ATTR_DICTS.get(key)
    if text is None:
        stream = StringIO()
        Printer(stream=stream).print_attr_dict(attrs)
        text = stream.getvalue()
        if len(_PRINTED_ATTR_DICTS) < _TYPE_CACHE_LIMIT:
            _PRINTED_ATTR_DICTS[key] = text
    return text


def _signature_text(in_types: Sequence[Attribute], out_types: Sequence[Attribute]) -> str | None:
    """`T` when all types agree, else `(Ts) -> T` or `(Ts) -> (Ts)`; None if a type is not cached."""
    texts = [_type_text(t) for t in (*in_types, *out_types)]
    if any(t is None for t in texts):
        return None
    ins, outs = texts[: len(in_types)], texts[len(in_types) :]
    if len(outs) == 1 and all(t == outs[0] for t in ins):
        return outs[0]
    result = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"  # type: ignore[arg-type]
    return "(" + ", ".join(ins) + ") -> " + result  # type: ignore[arg-type]


# ---- the format of every op but nn.constant ------------------------------------------


def print_nn_op(op: Operation, defaults: Mapping[str, Attribute | None], printer: Printer) -> None:
    """Print `op`, an nn op whose properties default to `defaults` (`NNOp.prop_defaults()`)."""
    if op.operands:
        printer.print_string(" ")
        printer.print_list(op.operands, printer.print_operand)
    shown: dict[str, Attribute] = {
        k: v for k, v in op.properties.items() if defaults.get(k, None) != v
    }
    shown.update(op.attributes)
    in_types = [o.type for o in op.operands]
    out_types = list(op.result_types)
    if type(printer) is Printer:  # not a subclass (e.g. syntax highlighting): use the caches
        attr_text = _attr_dict_text(shown) if shown else ""
        signature = _signature_text(in_types, out_types)
        if attr_text is not None and signature is not None:
            printer.print_string((" " + attr_text if attr_text else "") + " : " + signature)
            return
    if shown:
        printer.print_string(" ")
        printer.print_attr_dict(shown)
    printer.print_string(" : ")
    if len(out_types) == 1 and all(t == out_types[0] for t in in_types):
        printer.print_attribute(out_types[0])
    else:
        printer.print_function_type(in_types, out_types)


def parse_nn_op(cls: type[_Op], defaults: Mapping[str, Attribute | None], parser: Parser) -> _Op:
    """Parse an op of class `cls`, whose properties default to `defaults`."""
    pos = parser.pos
    unresolved = parser.parse_optional_undelimited_comma_separated_list(
        parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
    ) or []
    attr_dict = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")

    def one_type() -> Attribute:
        return parse_type(parser)

    if parser.parse_optional_punctuation("(") is not None:
        in_types = parser.parse_optional_undelimited_comma_separated_list(
            lambda: parse_optional_type(parser), one_type
        ) or []
        parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        if parser.parse_optional_punctuation("(") is not None:
            out_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, one_type)
            parser.parse_punctuation(")")
        else:
            out_types = [one_type()]
    else:
        single = one_type()
        in_types = [single] * len(unresolved)
        out_types = [single]
    if len(in_types) != len(unresolved):
        found = f"{len(unresolved)} operands but {len(in_types)} operand types"
        parser.raise_error(f"'{cls.name}' has {found}", pos, parser.pos)
    operands = parser.resolve_operands(unresolved, in_types, pos)
    props = {k: v for k, v in attr_dict.items() if k in defaults}
    attributes = {k: v for k, v in attr_dict.items() if k not in defaults}
    return cls.create(
        operands=operands,
        result_types=out_types,
        properties=props,
        attributes=attributes,
    )


# ---- nn.constant ------------------------------------------------------------------------

HEX_CONSTANTS_LARGER_THAN = 16
"""Constants with more elements print as a compact little-endian hex string."""


def print_constant(
    op: Operation, array: np.ndarray[Any, Any], payload: bytes, printer: Printer
) -> None:
    """Print `op`, an `nn.constant` of value `array` whose bytes are `payload`."""
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    n = math.prod(shape_of(ty))
    if elides_constant(printer, n):  # byoc-opt --elide-constants
        printer.print_string(" dense_resource<__elided__>")
    else:
        dense = format_dense(array, payload, HEX_CONSTANTS_LARGER_THAN)
        printer.print_string(" " + dense)
    if op.attributes:
        printer.print_string(" ")
        printer.print_attr_dict(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(ty)


def parse_constant(parser: Parser) -> tuple[np.ndarray[Any, Any], dict[str, Attribute]]:
    """The value (shaped as the type says) and the attributes of an `nn.constant`."""
    start = parser.pos
    if parser.parse_optional_keyword("dense_resource") is not None:
        parser.raise_error(
            "an elided constant (dense_resource<__elided__>) cannot be read back; "
            "print the IR without --elide-constants",
            start,
            parser.pos,
        )
    parser.parse_keyword("dense")
    payload = parse_dense(parser, start)
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty_pos = parser.pos
    ty = parser.parse_type()
    if not isinstance(ty, TensorType) or not is_known_element_type(ty.element_type):
        parser.raise_error(
            f"nn.constant needs a tensor of an nn element type (nn.ELEMENT_TYPES), got {ty}",
            ty_pos,
            parser.pos,
        )
    try:
        check_static_shape(ty)
    except VerifyException as e:
        parser.raise_error(f"nn.constant: {e}", ty_pos, parser.pos)
    shape = shape_of(ty)
    dt = numpy_dtype(ty.element_type)
    n = math.prod(shape)
    memory = machine_memory_bytes()
    if n * dt.itemsize > memory:
        parser.raise_error(
            f"nn.constant: {ty} is {n * dt.itemsize} bytes, more than this machine's "
            f"memory ({memory} bytes)",
            ty_pos,
            parser.pos,
        )
    arr: np.ndarray[Any, Any]
    if isinstance(payload, bytes):
        raw = payload
        if len(raw) != n * dt.itemsize:
            parser.raise_error(
                f"hex payload holds {len(raw)} bytes, {ty} needs {n * dt.itemsize}",
                start,
                parser.pos,
            )
        arr = np.frombuffer(raw, dtype=dt)
    else:
        values = payload
        if len(values) == 1 and n != 1:  # a splat: one value, filled without a Python list
            return np.full(shape, np.asarray(values, dtype=dt)[0], dtype=dt), attributes
        if len(values) != n:
            parser.raise_error(
                f"constant has {len(values)} values, {ty} needs {n}", start, parser.pos
            )
        arr = np.asarray(values, dtype=dt)
    return arr.reshape(shape), attributes
