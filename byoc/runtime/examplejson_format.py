"""Read ExampleJSON text into the `examplejson` dialect, with `file:line:col` errors.

The grammar (the seed's two line kinds, plus an extension that keeps every
seed line valid; README, "ExampleJSON"):

    text     := { subgraph | blank | '#' comment }
    subgraph := NAME NEWLINE { line NEWLINE }      NAME: the only word on its line
    line     := 'input' ID DIM* [dtype]
              | 'const' ID DIM* [dtype] 'data:' 0xHEX
              | OP ID 'inputs:' ID+ 'shape:' DIM* [dtype] ['attrs:' KEY=VALUE ...]
              | 'output' ID+
    dtype    := 'dtype:' (f32 | f64 | i32 | i64 | i1)       f32 when absent
    VALUE    := [1,2] | true | false | INT | FLOAT | NAME   (no spaces)

Without an `output` line a subgraph returns its last line's id (the seed's
rule). Arguments are the `input` lines in order, whatever their ids. Every
line is checked as it is read (ids defined once and before use, arity,
attributes, the op's type relation); an error names the line and column of
the offending word. `parse_examplejson(text)` returns a `builtin.module`
holding one `examplejson.module`; printing that with `-t examplejson` gives
the text back (for text in the canonical form the emitter prints: two-space
indentation, single spaces, no comments).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import (
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl.constraints import VerificationContext
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.frontend import Frontend
from xdsl.utils.lexer import Input, Span

from byoc.dialects import examplejson as ej
from byoc.dialects.dense import HexPayloadError, decode_hex
from byoc.dialects.nn import NNOp, numpy_dtype, tensor
from byoc.lowering.emit_examplejson import DTYPE_NAMES

DTYPES: dict[str, Attribute] = {name: attr for attr, name in DTYPE_NAMES.items()}

_WORD = re.compile(r"\S+")
_INT = re.compile(r"-?[0-9]+$")


class ExampleJsonSyntaxError(ParseError):
    """Malformed ExampleJSON text: `str(e)` is `file:line:col: error: msg` and the line, marked."""

    def __init__(self, span: Span[str], msg: str):
        super().__init__(span, msg)
        loc = span.get_location()
        self.line: int = loc.line
        self.column: int = loc.col
        start = span.input.get_start_of_line(span.start)
        self.source_line: str = span.input.content[start : span.input.get_end_of_line(span.start)]

    def __str__(self) -> str:
        width = max(
            1, min(self.span.end - self.span.start, len(self.source_line) - self.column + 1)
        )
        caret = " " * (self.column - 1) + "^" * width
        return (
            f"{self.span.input.name}:{self.line}:{self.column}: "
            f"error: {self.msg}\n{self.source_line}\n{caret}"
        )


@dataclass
class _Word:
    text: str
    start: int  # offset in the whole input
    end: int


class _Reader:
    """Reads one input; every error points at a word of it."""

    def __init__(self, text: str, name: str):
        self.input = Input(text, name)
        self.types: dict[tuple[tuple[int, ...], Attribute], TensorType[Any]] = {}

    def tensor(self, dims: list[int], elt: Attribute) -> TensorType[Any]:
        """The tensor type (shared: a graph repeats few shapes, and building one is slow)."""
        key = (tuple(dims), elt)
        ty = self.types.get(key)
        if ty is None:
            ty = self.types[key] = tensor(dims, elt)
        return ty

    def fail(self, msg: str, start: int, end: int | None = None) -> ExampleJsonSyntaxError:
        return ExampleJsonSyntaxError(
            Span(start, end if end is not None else start + 1, self.input), msg
        )

    def fail_at(self, word: _Word, msg: str) -> ExampleJsonSyntaxError:
        return self.fail(msg, word.start, word.end)

    # ---- words --------------------------------------------------------------------
    def integer(self, word: _Word, what: str, minimum: int = 0) -> int:
        if not _INT.match(word.text):
            raise self.fail_at(word, f"expected {what}, got '{word.text}'")
        value = int(word.text)
        if value < minimum:
            raise self.fail_at(word, f"{what} must be at least {minimum}, got {value}")
        return value

    def dims(self, words: list[_Word]) -> list[int]:
        return [self.integer(w, "a dimension (a non-negative integer)") for w in words]

    def dtype(self, word: _Word) -> Attribute:
        dt = DTYPES.get(word.text)
        if dt is None:
            raise self.fail_at(word, f"unknown dtype '{word.text}' (one of {', '.join(DTYPES)})")
        return dt


def _split(words: list[_Word], keys: tuple[str, ...]) -> dict[str, tuple[_Word, list[_Word]]]:
    """Split words at the section keywords (`inputs:`, `shape:`, ...) they contain."""
    sections: dict[str, tuple[_Word, list[_Word]]] = {}
    current: list[_Word] | None = None
    for w in words:
        if w.text in keys:
            current = []
            sections[w.text] = (w, current)
        elif current is not None:
            current.append(w)
    return sections


def _attr_kind(cls: type[NNOp], key: str) -> str:
    pdef = cls.get_irdl_definition().properties[key]
    default = pdef.default_value
    if isinstance(default, DenseArrayBase):
        return "list"
    if isinstance(default, IntegerAttr):
        return "bool" if default.type == IntegerType(1) else "int"
    if isinstance(default, FloatAttr):
        return "float"
    if isinstance(default, StringAttr):
        return "string"
    for kind, sample in (
        ("list", DenseArrayBase.from_list(i64, [])),
        ("string", StringAttr("")),
        ("float", FloatAttr(0.0, f64)),
        ("int", IntegerAttr(0, i64)),
    ):
        if pdef.constr.verifies(sample):
            return kind
    raise AssertionError(f"{cls.name}.{key} has no ExampleJSON spelling")


def _parse_value(kind: str, text: str) -> Attribute:
    """The attribute a value word spells, for a property of `kind`; ValueError if it does not."""
    if kind == "list":
        if not (text.startswith("[") and text.endswith("]")):
            raise ValueError("expected a list such as [1,2]")
        body = text[1:-1]
        items = body.split(",") if body else []
        if not all(_INT.match(i) for i in items):
            raise ValueError("expected a list of integers such as [1,2]")
        return DenseArrayBase.from_list(i64, [int(i) for i in items])
    if kind == "bool":
        if text not in ("true", "false"):
            raise ValueError("expected true or false")
        return BoolAttr.from_bool(text == "true")
    if kind == "int":
        if not _INT.match(text):
            raise ValueError("expected an integer")
        return IntegerAttr(int(text), i64)
    if kind == "float":
        try:
            return FloatAttr(float(text), f64)
        except ValueError:
            raise ValueError("expected a number") from None
    if not re.match(r"[A-Za-z_][A-Za-z0-9_.]*$", text):
        raise ValueError("expected a name")
    return StringAttr(text)


def parse_examplejson(text: str, name: str = "<examplejson>") -> ModuleOp:
    """Parse ExampleJSON text into `builtin.module { examplejson.module { subgraphs } }`."""
    reader = _Reader(text, name)
    subgraphs: list[ej.SubgraphOp] = []
    current: tuple[_Word, list[Any], dict[int, TensorType[Any]]] | None = None
    names: dict[str, _Word] = {}

    def finish() -> None:
        if current is None:
            return
        header, ops, env = current
        if not ops:
            raise reader.fail_at(header, f"subgraph '{header.text}' has no lines")
        if not isinstance(ops[-1], ej.OutputOp):
            ops.append(ej.OutputOp([ops[-1].value_id]))
        subgraphs.append(ej.SubgraphOp(header.text, ops))

    offset = 0
    for raw_line in text.split("\n"):
        line_start = offset
        offset += len(raw_line) + 1
        words = [
            _Word(m.group(), line_start + m.start(), line_start + m.end())
            for m in _WORD.finditer(raw_line)
        ]
        if not words or words[0].text.startswith("#"):
            continue
        if len(words) == 1:
            header = words[0]
            if header.text in ej.KEYWORDS or header.text in ej.OPS:
                raise reader.fail_at(
                    header,
                    f"'{header.text}' alone on a line: a line needs an id, and a subgraph "
                    "name must not be an op name",
                )
            if header.text in names:
                raise reader.fail_at(header, f"subgraph '{header.text}' is defined twice")
            finish()
            names[header.text] = header
            current = (header, [], {})
            continue
        if current is None:
            raise reader.fail_at(words[0], "expected a subgraph name before the first line")
        _, ops, env = current
        if ops and isinstance(ops[-1], ej.OutputOp):
            raise reader.fail_at(words[0], "the output line must be the last line of its subgraph")
        op = _parse_line(reader, words, env)
        ops.append(op)
        if isinstance(op, ej.LineOp):
            env[op.value_id] = op.value_type()
    finish()
    return ModuleOp([ej.ExampleJsonModuleOp(subgraphs)])


def _parse_line(reader: _Reader, words: list[_Word], env: dict[int, TensorType[Any]]) -> Any:
    head = words[0]
    kind = head.text
    if kind == "output":
        ids = [reader.integer(w, "an id") for w in words[1:]]
        op: Any = ej.OutputOp(ids)
        _check(reader, op, env, {"inputs": words[1:]}, head)
        return op
    if kind not in ej.KEYWORDS and kind not in ej.OPS:
        raise reader.fail_at(
            head, f"unknown op '{kind}'; ExampleJSON ops are: {', '.join(sorted(ej.OPS))}"
        )
    value_id = reader.integer(words[1], "an id")
    if kind in ("input", "const"):
        sections = _split(words[2:], ("dtype:", "data:"))
        dim_words = []
        for w in words[2:]:
            if w.text in ("dtype:", "data:"):
                break
            dim_words.append(w)
        for w in dim_words:
            if w.text.endswith(":"):
                raise reader.fail_at(w, f"unexpected '{w.text}' in an {kind} line")
        dims = reader.dims(dim_words)
        elt = _single(reader, sections, "dtype:", reader.dtype)
        if elt is None:
            elt = DTYPES["f32"]
        ty = reader.tensor(dims, elt)
        if kind == "input":
            if "data:" in sections:
                raise reader.fail_at(
                    sections["data:"][0], "an input line has no data; use a const line"
                )
            op = ej.InputOp(value_id, ty)
            _check(reader, op, env, {"id": [words[1]], "shape": dim_words or [head]}, head)
            return op
        if "data:" not in sections:
            raise reader.fail_at(head, "a const line needs 'data: 0x<hex>'")
        data_word, data = sections["data:"]
        if len(data) != 1 or not data[0].text.startswith("0x"):
            raise reader.fail_at(
                data[0] if data else data_word, "expected one 0x<hex> word after 'data:'"
            )
        try:
            raw = decode_hex(data[0].text)
        except HexPayloadError:
            raise reader.fail_at(data[0], "malformed hex data") from None
        need = math.prod(dims) * numpy_dtype(elt).itemsize
        if len(raw) != need:
            raise reader.fail_at(data[0], f"data holds {len(raw)} bytes, {ty} needs {need}")
        op = ej.ConstOp(value_id, DenseIntOrFPElementsAttr(ty, BytesAttr(raw)))
        _check(reader, op, env, {"id": [words[1]], "data": data}, head)
        return op
    cls = ej.OPS[kind]
    keys = ("inputs:", "shape:", "dtype:", "attrs:")
    if len(words) < 3 or words[2].text != "inputs:":
        at = words[2] if len(words) > 2 else words[-1]
        raise reader.fail_at(at, "expected 'inputs: <ids> shape: <dims>' after the id")
    sections = _split(words[2:], keys)
    seen: list[str] = []
    for w in words[2:]:
        if w.text in keys:
            if w.text in seen or keys.index(w.text) < keys.index(seen[-1] if seen else keys[0]):
                raise reader.fail_at(
                    w, "sections appear once each, in the order inputs: shape: dtype: attrs:"
                )
            seen.append(w.text)
    if "shape:" not in sections:
        raise reader.fail_at(words[-1], "expected 'shape: <dims>' after the inputs")
    input_words = sections["inputs:"][1]
    ids = [reader.integer(w, "an input id") for w in input_words]
    shape_word, dim_words = sections["shape:"]
    dims = reader.dims(dim_words)
    elt = _single(reader, sections, "dtype:", reader.dtype) or DTYPES["f32"]
    attrs: dict[str, Attribute] = {}
    attr_words: list[_Word] = []
    if "attrs:" in sections:
        props = cls.get_irdl_definition().properties
        attrs_word, attr_words = sections["attrs:"]
        if not attr_words:
            raise reader.fail_at(attrs_word, "expected key=value after 'attrs:'")
        for w in attr_words:
            key, eq, value = w.text.partition("=")
            if not eq:
                raise reader.fail_at(w, f"expected key=value, got '{w.text}'")
            if key not in props:
                known = ", ".join(props) or "none"
                raise reader.fail_at(w, f"'{kind}' has no attribute '{key}' (attributes: {known})")
            if key in attrs:
                raise reader.fail_at(w, f"attribute '{key}' is given twice")
            try:
                attr = _parse_value(_attr_kind(cls, key), value)
                props[key].constr.verify(attr, VerificationContext())
            except (ValueError, VerifyException) as e:
                raise reader.fail_at(w, f"attribute '{key}': {e}") from None
            attrs[key] = attr
    op = ej.NodeOp(kind, value_id, ids, reader.tensor(dims, elt), attrs)
    _check(
        reader,
        op,
        env,
        {
            "id": [words[1]],
            "inputs": input_words or [sections["inputs:"][0]],
            "shape": [shape_word],
            "attrs": attr_words or [shape_word],
        },
        head,
    )
    return op


def _single(
    reader: _Reader, sections: dict[str, tuple[_Word, list[_Word]]], key: str, conv: Any
) -> Any:
    if key not in sections:
        return None
    word, values = sections[key]
    if len(values) != 1:
        raise reader.fail_at(values[1] if values else word, f"expected one word after '{key}'")
    return conv(values[0])


def _check(
    reader: _Reader,
    op: Any,
    env: dict[int, TensorType[Any]],
    where: dict[str, list[_Word]],
    head: _Word,
) -> None:
    try:
        op.check(env)
    except ej.LineError as e:
        words = where.get(e.field) or [head]
        word = words[min(e.index, len(words) - 1)]
        raise reader.fail_at(word, str(e)) from None
    except VerifyException as e:
        raise reader.fail_at(head, str(e)) from None


def read_examplejson(data: bytes | str, name: str = "<examplejson>") -> ModuleOp:
    """`parse_examplejson` of bytes (UTF-8) or text."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ExampleJsonSyntaxError(
                Span(0, 1, Input(data.decode("utf-8", "replace"), name)),
                f"not UTF-8 text (byte {e.start})",
            ) from None
    return parse_examplejson(data, name)


@dataclass(frozen=True)
class ExampleJsonFrontend(Frontend):
    """byoc-opt's frontend for `.examplejson` files (or `-f examplejson`)."""

    name = "examplejson"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "input") -> ModuleOp:
        return read_examplejson(input.read(), input_name)
