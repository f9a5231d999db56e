"""The `dense<...>` literal of constant payloads, shared by every dialect that prints one.

    dense<"0x0000803F00000040">      raw little-endian bytes, as hex (large or non-finite data)
    dense<[1.0, 2.0]>                the values, flattened (small data)

`format_dense` picks the form, `parse_dense` reads either; `encode_hex` / `decode_hex`
are the hex codec itself (also used by the ExampleJSON text's `data: 0x...`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.parser import Parser


class HexPayloadError(ValueError):
    """A hex payload that is not `0x` followed by an even number of hex digits."""


def encode_hex(payload: bytes) -> str:
    """`0x` and the bytes as upper-case hex."""
    return "0x" + payload.hex().upper()


def decode_hex(text: str) -> bytes:
    if not text.startswith("0x"):
        raise HexPayloadError("hex payload must start with 0x")
    try:
        return bytes.fromhex(text[2:])
    except ValueError:
        raise HexPayloadError("malformed hex payload") from None


def format_dense(array: np.ndarray[Any, Any], payload: bytes, hex_above: int) -> str:
    """`dense<"0x...">` when the array has more than `hex_above` elements or a non-finite
    value (no number literal for inf/nan), else `dense<[v, ...]>`."""
    if array.size > hex_above or (array.dtype.kind == "f" and not np.isfinite(array).all()):
        return f'dense<"{encode_hex(payload)}">'
    if array.dtype.kind == "f":
        return "dense<[" + ", ".join(repr(float(v)) for v in array.flat) + "]>"
    return "dense<[" + ", ".join(str(int(v)) for v in array.flat) + "]>"


def parse_dense(parser: Parser, start: int | None = None) -> bytes | list[float]:
    """After the `dense` keyword: `<"0x...">` (the decoded bytes) or `<values>` (a scalar or a
    list, nested lists flattened). A bad payload is reported from `start` (the literal's)."""
    start = parser.pos if start is None else start
    parser.parse_punctuation("<")
    hex_text = parser.parse_optional_str_literal()
    if hex_text is not None:
        try:
            raw = decode_hex(hex_text)
        except HexPayloadError as e:
            parser.raise_error(str(e), start, parser.pos)
        parser.parse_punctuation(">")
        return raw
    values: list[float] = []

    def element() -> None:
        if parser.parse_optional_punctuation("[") is None:
            values.append(parser.parse_number())
        elif parser.parse_optional_punctuation("]") is None:
            parser.parse_comma_separated_list(parser.Delimiter.NONE, element)
            parser.parse_punctuation("]")

    element()
    parser.parse_punctuation(">")
    return values


__all__ = ["HexPayloadError", "decode_hex", "encode_hex", "format_dense", "parse_dense"]
