"""The ExampleJSON text format: print the `examplejson` dialect as text, read text back.

It lives with the dialect because every layer above needs it: `-t examplejson`
prints with `to_text`, the `.examplejson` frontend reads with
`parse_examplejson`, and the runtime module stores this text and rebuilds
itself from it (`save_to_binary`, `load_module("g.examplejson")`).

The grammar (the seed's two line kinds, plus an extension that keeps every
seed line valid; docs, "ExampleJSON"):

    text     := { subgraph | blank | '#' comment }
    subgraph := NAME NEWLINE { line NEWLINE }      NAME: the only word on its line
    line     := 'input' ID DIM* [dtype]
              | 'const' ID DIM* [dtype] 'data:' 0xHEX
              | OP ID 'inputs:' ID+ 'shape:' DIM* [dtype] ['attrs:' KEY=VALUE ...]
              | 'output' ID+
    dtype    := 'dtype:' ELEMENT-TYPE          MLIR's spelling (i32, f64, ...); f32 when absent
    VALUE    := [1,2] | true | false | INT | FLOAT | NAME   (no spaces)

For add/sub/mul graphs in f32 the printed text is exactly the seed's. Ids are
given when printing: the n-th value line gets id n, unless the subgraph kept
the ids it was read with. Without an `output` line a subgraph returns its last
line's value (the seed's rule); the printer leaves the line out in that case.
Arguments are the `input` lines in order, whatever their ids. Every line is
checked as it is read (ids defined once and before use, then the line's own
verifier); an error names the line and column of the offending word. Text in
the canonical form (two-space indentation, single spaces, no comments) prints
back unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

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
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from byoc.dialects.dense import encode_hex
from byoc.dialects.examplejson import ops as ej
from byoc.dialects.nn import NNOp, numpy_dtype, tensor

# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------

_BARE_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_INT = re.compile(r"-?[0-9]+$")


class TextFormatError(ValueError):
    """An op or value that the text cannot spell; `op` is the op at fault."""

    def __init__(self, op: Operation, msg: str):
        super().__init__(msg)
        self.op = op


def format_value(attr: Attribute) -> str:
    """One attribute value in the text: [1,2] | true | 3 | 0.5 | name."""
    if isinstance(attr, DenseArrayBase):
        if not isinstance(attr.elt_type, IntegerType):  # f64 arrays: exact reprs
            return "[" + ",".join(repr(float(v)) for v in attr.get_values()) + "]"
        return "[" + ",".join(str(v) for v in attr.get_values()) + "]"
    if isinstance(attr, IntegerAttr):
        if attr.type == IntegerType(1):
            return "true" if attr.value.data else "false"
        return str(attr.value.data)
    if isinstance(attr, FloatAttr):
        return repr(float(attr.value.data))
    if isinstance(attr, StringAttr) and _BARE_STRING.match(attr.data):
        return attr.data
    raise ValueError(f"value {attr} has no ExampleJSON spelling")


def _type_words(t: TensorType[Any]) -> tuple[list[str], list[str]]:
    """The dims, and `dtype: <t>` unless the element type is f32 (the default)."""
    numpy_dtype(t.element_type)  # only element types of the one dtype table
    dims = [str(d) for d in t.get_shape()]
    return dims, ([] if t.element_type == f32 else ["dtype:", str(t.element_type)])


def format_line(op: Operation, ids: Mapping[SSAValue, int]) -> str:
    """The text of one line, without indentation; `ids` numbers the values."""
    if isinstance(op, ej.OutputOp):
        return " ".join(["output", *(str(ids[v]) for v in op.outputs)])
    if not isinstance(op, ej.ValueOp):
        raise ValueError(f"'{op.name}' is not an ExampleJSON line")
    dims, dtype = _type_words(op.tensor_type)
    value_id = str(ids[op.result])
    if isinstance(op, ej.InputOp):
        return " ".join(["input", value_id, *dims, *dtype])
    if isinstance(op, ej.ConstOp):
        return " ".join(
            ["const", value_id, *dims, *dtype, "data:", encode_hex(op.payload())]
        )
    assert isinstance(op, ej.NodeOp)
    words = [op.op.data, value_id, "inputs:", *(str(ids[v]) for v in op.inputs), "shape:"]
    words += dims + dtype
    if op.attrs.data:
        words.append("attrs:")
        words += [f"{k}={format_value(v)}" for k, v in sorted(op.attrs.data.items())]
    return " ".join(words)


def format_subgraph(subgraph: ej.SubgraphOp) -> str:
    """The text of one subgraph: its name, then one indented line per op."""
    name = subgraph.sym_name.data
    ids = subgraph.value_ids()
    out = [name]
    lines = subgraph.lines
    for op in subgraph.body.block.ops:
        if isinstance(op, ej.OutputOp) and lines and tuple(op.outputs) == (lines[-1].result,):
            continue  # the seed's rule: the last line is the result
        try:
            out.append("  " + format_line(op, ids))
        except (ValueError, VerifyException) as e:
            raise TextFormatError(op, f"subgraph {name}: {e}") from None
    return "\n".join(out) + "\n"


def to_text(op: Operation) -> str:
    """ExampleJSON text of every subgraph in `op`, in order."""
    return "".join(format_subgraph(s) for s in ej.subgraphs_of(op))


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


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


@cache
def element_type_named(name: str) -> Attribute | None:
    """The element type `dtype: <name>` spells (MLIR's spelling), if the runtime holds it."""
    try:
        parsed = Parser(Context(), name).parse_type()
        numpy_dtype(parsed)
    except (ParseError, VerifyException):
        return None
    return parsed


@dataclass
class _Word:
    text: str
    start: int  # offset in the whole input
    end: int


@dataclass
class _Subgraph:
    """A subgraph being read: its header word, its ops, and the id -> value map."""

    header: _Word
    ops: list[Operation]
    values: dict[int, SSAValue]
    ids: list[int]


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

    def fail(self, word: _Word, msg: str) -> ExampleJsonSyntaxError:
        return ExampleJsonSyntaxError(Span(word.start, word.end, self.input), msg)

    def integer(self, word: _Word, what: str, minimum: int = 0) -> int:
        if not _INT.match(word.text):
            raise self.fail(word, f"expected {what}, got '{word.text}'")
        value = int(word.text)
        if value < minimum:
            raise self.fail(word, f"{what} must be at least {minimum}, got {value}")
        return value

    def dims(self, words: list[_Word]) -> list[int]:
        return [self.integer(w, "a dimension (a non-negative integer)") for w in words]

    def dtype(self, word: _Word) -> Attribute:
        dt = element_type_named(word.text)
        if dt is None:
            raise self.fail(word, f"unknown dtype '{word.text}' (an element type such as i32)")
        return dt

    def value(self, sub: _Subgraph, word: _Word, what: str) -> SSAValue:
        """The value an id word names; it must be defined by an earlier line."""
        value_id = self.integer(word, "an id")
        value = sub.values.get(value_id)
        if value is None:
            raise self.fail(word, f"{what} id {value_id} is not defined by an earlier line")
        return value


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
    """How a property of nn op `cls` is spelled: list, floats, bool, int, float or string."""
    pdef = cls.get_irdl_definition().properties[key]
    default = pdef.default_value
    if isinstance(default, DenseArrayBase):
        return "list" if isinstance(default.elt_type, IntegerType) else "floats"
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
    if kind == "floats":  # an f64 array (nn.resize's scales and roi)
        if not (text.startswith("[") and text.endswith("]")):
            raise ValueError("expected a list such as [1.0,2.5]")
        body = text[1:-1]
        try:
            return DenseArrayBase.from_list(f64, [float(i) for i in (body.split(",") if body else [])])
        except ValueError:
            raise ValueError("expected a list of numbers such as [1.0,2.5]") from None
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
    if not _BARE_STRING.match(text):
        raise ValueError("expected a name")
    return StringAttr(text)


def parse_examplejson(text: str, name: str = "<examplejson>") -> ModuleOp:
    """Parse ExampleJSON text into `builtin.module { examplejson.module { subgraphs } }`."""
    reader = _Reader(text, name)
    subgraphs: list[ej.SubgraphOp] = []
    current: _Subgraph | None = None
    names: set[str] = set()

    def finish(sub: _Subgraph | None) -> None:
        if sub is None:
            return
        if not sub.ops:
            raise reader.fail(sub.header, f"subgraph '{sub.header.text}' has no lines")
        last = sub.ops[-1]
        if isinstance(last, ej.ValueOp):
            sub.ops.append(ej.OutputOp([last.result]))
        canonical = sub.ids == list(range(len(sub.ids)))
        subgraphs.append(ej.SubgraphOp(sub.header.text, sub.ops, None if canonical else sub.ids))

    offset = 0
    for raw_line in text.split("\n"):
        line_start = offset
        offset += len(raw_line) + 1
        words = [
            _Word(m.group(), line_start + m.start(), line_start + m.end())
            for m in re.finditer(r"\S+", raw_line)
        ]
        if not words or words[0].text.startswith("#"):
            continue
        if len(words) == 1:
            header = words[0]
            if header.text in ej.KEYWORDS or header.text in ej.OPS:
                raise reader.fail(
                    header,
                    f"'{header.text}' alone on a line: a line needs an id, and a subgraph "
                    "name must not be an op name",
                )
            if header.text in names:
                raise reader.fail(header, f"subgraph '{header.text}' is defined twice")
            finish(current)
            names.add(header.text)
            current = _Subgraph(header, [], {}, [])
            continue
        if current is None:
            raise reader.fail(words[0], "expected a subgraph name before the first line")
        if current.ops and isinstance(current.ops[-1], ej.OutputOp):
            raise reader.fail(words[0], "the output line must be the last line of its subgraph")
        current.ops.append(_parse_line(reader, current, words))
    finish(current)
    return ModuleOp([ej.ExampleJsonModuleOp(subgraphs)])


def _parse_line(reader: _Reader, sub: _Subgraph, words: list[_Word]) -> Operation:
    head = words[0]
    kind = head.text
    if kind == "output":
        output = ej.OutputOp([reader.value(sub, w, "output") for w in words[1:]])
        _check(reader, output, {"inputs": words[1:]}, head)
        return output
    if kind not in ej.KEYWORDS and kind not in ej.OPS:
        raise reader.fail(
            head, f"unknown op '{kind}'; ExampleJSON ops are: {', '.join(sorted(ej.OPS))}"
        )
    id_word = words[1]
    value_id = reader.integer(id_word, "an id")
    if value_id in sub.values:
        raise reader.fail(id_word, f"id {value_id} is already defined")
    if kind in ("input", "const"):
        value = _parse_input_or_const(reader, kind, words)
    else:
        value = _parse_node(reader, sub, words)
    sub.values[value_id] = value.result
    sub.ids.append(value_id)
    return value


def _parse_input_or_const(reader: _Reader, kind: str, words: list[_Word]) -> ej.ValueOp:
    head = words[0]
    sections = _split(words[2:], ("dtype:", "data:"))
    dim_words: list[_Word] = []
    for w in words[2:]:
        if w.text in ("dtype:", "data:"):
            break
        if w.text.endswith(":"):
            raise reader.fail(w, f"unexpected '{w.text}' in an {kind} line")
        dim_words.append(w)
    dims = reader.dims(dim_words)
    ty = reader.tensor(dims, _single(reader, sections, "dtype:", reader.dtype) or f32)
    if kind == "input":
        if "data:" in sections:
            raise reader.fail(sections["data:"][0], "an input line has no data; use a const line")
        op: ej.ValueOp = ej.InputOp(ty)
        _check(reader, op, {"shape": dim_words or [head]}, head)
        return op
    if "data:" not in sections:
        raise reader.fail(head, "a const line needs 'data: 0x<hex>'")
    data_word, data = sections["data:"]
    if len(data) != 1 or not data[0].text.startswith("0x"):
        raise reader.fail(data[0] if data else data_word, "expected one 0x<hex> word after 'data:'")
    try:
        raw = bytes.fromhex(data[0].text[2:])
    except ValueError:
        raise reader.fail(data[0], "malformed hex data") from None
    need = math.prod(dims) * numpy_dtype(ty.element_type).itemsize
    if len(raw) != need:
        raise reader.fail(data[0], f"data holds {len(raw)} bytes, {ty} needs {need}")
    op = ej.ConstOp(DenseIntOrFPElementsAttr(ty, BytesAttr(raw)))
    _check(reader, op, {"data": data, "shape": dim_words or [head]}, head)
    return op


_NODE_SECTIONS = ("inputs:", "shape:", "dtype:", "attrs:")


def _parse_node(reader: _Reader, sub: _Subgraph, words: list[_Word]) -> ej.NodeOp:
    head = words[0]
    kind = head.text
    cls = ej.OPS[kind]
    if len(words) < 3 or words[2].text != "inputs:":
        at = words[2] if len(words) > 2 else words[-1]
        raise reader.fail(at, "expected 'inputs: <ids> shape: <dims>' after the id")
    seen: list[str] = []
    for w in words[2:]:
        if w.text in _NODE_SECTIONS:
            order = _NODE_SECTIONS.index
            if w.text in seen or (seen and order(w.text) < order(seen[-1])):
                raise reader.fail(
                    w, "sections appear once each, in the order inputs: shape: dtype: attrs:"
                )
            seen.append(w.text)
    sections = _split(words[2:], _NODE_SECTIONS)
    if "shape:" not in sections:
        raise reader.fail(words[-1], "expected 'shape: <dims>' after the inputs")
    inputs_word, input_words = sections["inputs:"]
    inputs = [reader.value(sub, w, "input") for w in input_words]
    shape_word, dim_words = sections["shape:"]
    dims = reader.dims(dim_words)
    elt = _single(reader, sections, "dtype:", reader.dtype) or f32
    attr_words: list[_Word] = []
    attrs: dict[str, Attribute] = {}
    if "attrs:" in sections:
        attrs_word, attr_words = sections["attrs:"]
        if not attr_words:
            raise reader.fail(attrs_word, "expected key=value after 'attrs:'")
        attrs = _parse_attrs(reader, cls, kind, attr_words)
    op = ej.NodeOp(kind, inputs, reader.tensor(dims, elt), attrs)
    _check(
        reader,
        op,
        {
            "inputs": input_words or [inputs_word],
            "shape": [shape_word],
            "attrs": attr_words or [shape_word],
        },
        head,
    )
    return op


def _parse_attrs(
    reader: _Reader, cls: type[NNOp], kind: str, words: Sequence[_Word]
) -> dict[str, Attribute]:
    props = cls.get_irdl_definition().properties
    attrs: dict[str, Attribute] = {}
    for w in words:
        key, eq, value = w.text.partition("=")
        if not eq:
            raise reader.fail(w, f"expected key=value, got '{w.text}'")
        if key not in props:
            known = ", ".join(props) or "none"
            raise reader.fail(w, f"'{kind}' has no attribute '{key}' (attributes: {known})")
        if key in attrs:
            raise reader.fail(w, f"attribute '{key}' is given twice")
        try:
            attr = _parse_value(_attr_kind(cls, key), value)
            props[key].constr.verify(attr, VerificationContext())
        except (ValueError, VerifyException) as e:
            raise reader.fail(w, f"attribute '{key}': {e}") from None
        attrs[key] = attr
    return attrs


def _single(
    reader: _Reader, sections: dict[str, tuple[_Word, list[_Word]]], key: str, conv: Any
) -> Any:
    if key not in sections:
        return None
    word, values = sections[key]
    if len(values) != 1:
        raise reader.fail(values[1] if values else word, f"expected one word after '{key}'")
    return conv(values[0])


def _check(
    reader: _Reader, op: ej.ValueOp | ej.OutputOp, where: dict[str, list[_Word]], head: _Word
) -> None:
    """Run the line's own checks; an error points at the word its `field` names."""
    try:
        op.check()
    except ej.LineError as e:
        words = where.get(e.field) or [head]
        raise reader.fail(words[min(e.index, len(words) - 1)], str(e)) from None
    except VerifyException as e:
        raise reader.fail(head, str(e)) from None


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
