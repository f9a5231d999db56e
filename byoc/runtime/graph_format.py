"""The serialised graph format (version 1): what the native graph runtime parses.

    blob = encode(describe(graph_module_op))     # bytes an artifact stores
    text = to_text(describe(graph_module_op))    # what `-t graph` prints

`describe` numbers the values of a `graph.module` (byoc.dialects.graph) the way
the runtime sees them — entries — and `encode` writes them compactly, in
little-endian binary that C reads with a bounds-checked cursor (no JSON
library). The layout is documented in docs/graph.md; the C reader
(`byoc_graph_runtime.c`) checks every field before it uses it.

Entry ids: a graph's inputs first (0..n-1, in argument order), then every
other value in program order (a composite's outputs before its inner values).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue

from byoc.dialects import graph as gd
from byoc.dialects.nn import numpy_dtype, shape_of
from byoc.runtime import dlpack
from byoc.runtime.dlpack import dl_dtype

MAGIC = b"BYOCGRPH"
VERSION = 1

ENTRY_INPUT, ENTRY_CONST, ENTRY_NODE, ENTRY_INNER = 0, 1, 2, 3
ENTRY_KINDS = ("input", "const", "node", "inner")
ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS = 0, 1, 2, 3, 4

@dataclass
class Entry:
    kind: int
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    name: str = ""
    """INPUT: the argument's name; CONST: the constant's name."""


@dataclass
class Node:
    op: str
    attrs: list[tuple[str, int, Any]]
    inputs: list[int]
    outputs: list[int]
    body: list[Node] = field(default_factory=list["Node"])


@dataclass
class Graph:
    name: str
    entries: list[Entry]
    inputs: list[int]
    outputs: list[int]
    nodes: list[Node]


@dataclass
class Constant:
    name: str
    array: np.ndarray[Any, Any]


@dataclass
class GraphSet:
    """Everything one blob holds: the constants (each once) and the graphs."""

    constants: list[Constant]
    graphs: list[Graph]


# --------------------------------------------------------------------------
# From the dialect
# --------------------------------------------------------------------------


def attr_value(name: str, value: Attribute) -> tuple[int, Any]:
    """(kind, Python value) of a node attribute."""
    gd.check_attr_value(name, value)
    if isinstance(value, IntegerAttr):
        return ATTR_INT, int(value.value.data)
    if isinstance(value, FloatAttr):
        return ATTR_FLOAT, float(value.value.data)
    if isinstance(value, StringAttr):
        return ATTR_STRING, value.data
    if isinstance(value, DenseArrayBase):
        values = value.get_values()
        if all(isinstance(v, int) for v in values):
            return ATTR_INTS, [int(v) for v in values]
        return ATTR_FLOATS, [float(v) for v in values]
    assert isinstance(value, ArrayAttr)
    return ATTR_INTS, [int(v.value.data) for v in value.data]  # type: ignore[attr-defined]


def _entry_of(kind: int, ty: Attribute, name: str = "") -> Entry:
    assert isinstance(ty, TensorType)
    return Entry(kind, numpy_dtype(ty.element_type), shape_of(ty), name)


def describe(module: gd.GraphModuleOp) -> GraphSet:
    """The entries, nodes and constants of a verified `graph.module`."""
    constants = [Constant(c.sym_name.data, c.ndarray()) for c in module.constants]
    return GraphSet(constants, [_describe_graph(g) for g in module.graphs])


def _describe_graph(graph: gd.GraphOp) -> Graph:
    entries: list[Entry] = []
    ids: dict[SSAValue, int] = {}

    def add(value: SSAValue, entry: Entry) -> int:
        ids[value] = len(entries)
        entries.append(entry)
        return ids[value]

    def node_of(op: gd.NodeOp, kind: int, keep: dict[SSAValue, int] | None = None) -> Node:
        inputs = [ids[v] for v in op.inputs]
        outputs = []
        for r in op.outputs:
            if keep is not None and r in keep:  # a composite output: already numbered
                outputs.append(keep[r])
            else:
                outputs.append(add(r, _entry_of(kind, r.type)))
        attrs = [(k, *attr_value(k, v)) for k, v in op.attrs.data.items()]
        return Node(op.op.data, attrs, inputs, outputs)

    inputs = [add(op.result, _entry_of(ENTRY_INPUT, op.result.type, op.arg_name.data)) for op in graph.inputs]
    nodes: list[Node] = []
    outputs: list[int] = []
    for op in graph.body.block.ops:
        if isinstance(op, gd.ConstRefOp):
            add(op.result, _entry_of(ENTRY_CONST, op.result.type, op.constant.root_reference.data))
        elif isinstance(op, gd.NodeOp):
            nodes.append(node_of(op, ENTRY_NODE))
        elif isinstance(op, gd.CompositeOp):
            outs = [add(r, _entry_of(ENTRY_NODE, r.type)) for r in op.outputs]
            block = op.body.block
            for arg, operand in zip(block.args, op.inputs, strict=True):
                ids[arg] = ids[operand]
            yielded = block.last_op
            assert isinstance(yielded, gd.YieldOp)
            # the body value a composite output is: that output's entry
            final: dict[SSAValue, int] = {}
            for v, out in zip(yielded.operands, outs, strict=True):
                if v in final or not isinstance(v.owner, gd.NodeOp):
                    raise ValueError(
                        f"graph.composite '{op.composite.data}' returns a value its body does "
                        "not compute once (an argument, a constant, or one value twice)"
                    )
                final[v] = out
            comp_inputs = [ids[v] for v in op.inputs]
            body: list[Node] = []
            for inner in block.ops:
                if isinstance(inner, gd.ConstRefOp):
                    cid = add(
                        inner.result,
                        _entry_of(ENTRY_CONST, inner.result.type, inner.constant.root_reference.data),
                    )
                    comp_inputs.append(cid)  # what the body reads from outside is an input
                elif isinstance(inner, gd.NodeOp):
                    node = node_of(inner, ENTRY_INNER, final)
                    for r, eid in zip(inner.outputs, node.outputs, strict=True):
                        ids[r] = eid
                    body.append(node)
            nodes.append(Node(op.composite.data, [], comp_inputs, outs, body))
        elif isinstance(op, gd.OutputOp):
            outputs = [ids[v] for v in op.values]
    return Graph(graph.sym_name.data, entries, inputs, outputs, nodes)


# --------------------------------------------------------------------------
# Binary
# --------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def u8(self, v: int) -> None:
        self.parts.append(struct.pack("<B", v))

    def u32(self, v: int) -> None:
        self.parts.append(struct.pack("<I", v))

    def i64s(self, vs: list[int] | tuple[int, ...]) -> None:
        self.parts.append(struct.pack(f"<{len(vs)}q", *vs))

    def str(self, s: str) -> None:
        b = s.encode()
        self.u32(len(b))
        self.parts.append(b)

    def ids(self, vs: list[int]) -> None:
        self.u32(len(vs))
        self.parts.append(struct.pack(f"<{len(vs)}I", *vs))

    def dtype_shape(self, dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
        code_bits = dl_dtype(dtype)
        assert code_bits is not None, dtype  # every dtype of an element type has one
        code, bits = code_bits
        self.u8(code)
        self.u8(bits)
        self.u8(len(shape))
        self.i64s(shape)


def _write_node(w: _Writer, node: Node) -> None:
    w.str(node.op)
    w.u32(len(node.attrs))
    for name, kind, value in node.attrs:
        w.str(name)
        w.u8(kind)
        if kind == ATTR_INT:
            w.parts.append(struct.pack("<q", value))
        elif kind == ATTR_FLOAT:
            w.parts.append(struct.pack("<d", value))
        elif kind == ATTR_STRING:
            w.str(value)
        elif kind == ATTR_INTS:
            w.u32(len(value))
            w.i64s(value)
        else:
            w.u32(len(value))
            w.parts.append(struct.pack(f"<{len(value)}d", *value))
    w.ids(node.inputs)
    w.ids(node.outputs)
    w.u32(len(node.body))
    for inner in node.body:
        _write_node(w, inner)


def encode(gs: GraphSet) -> bytes:
    """The version-1 blob (layout in docs/graph.md)."""
    w = _Writer()
    w.u32(len(gs.constants))
    for c in gs.constants:
        w.str(c.name)
        w.dtype_shape(c.array.dtype, tuple(c.array.shape))
        data = np.ascontiguousarray(c.array).astype(c.array.dtype.newbyteorder("<"), copy=False)
        raw = data.tobytes()
        w.parts.append(struct.pack("<Q", len(raw)))
        w.parts.append(raw)
    w.u32(len(gs.graphs))
    for g in gs.graphs:
        w.str(g.name)
        w.u32(len(g.entries))
        for e in g.entries:
            w.u8(e.kind)
            w.dtype_shape(e.dtype, e.shape)
            w.str(e.name)
        w.ids(g.inputs)
        w.ids(g.outputs)
        w.u32(len(g.nodes))
        for node in g.nodes:
            _write_node(w, node)
    body = b"".join(w.parts)
    header = MAGIC + struct.pack("<IIQ", VERSION, 0, len(MAGIC) + 16 + len(body))
    return header + body


def check_header(blob: bytes) -> None:
    """A ValueError unless `blob` starts like a version-1 graph blob of its own length
    (the C reader checks the rest)."""
    if len(blob) < len(MAGIC) + 16 or not blob.startswith(MAGIC):
        raise ValueError("not a byoc graph blob (bad magic or too short)")
    version, flags, size = struct.unpack_from("<IIQ", blob, len(MAGIC))
    if version != VERSION:
        raise ValueError(f"graph format version {version}; this byoc reads version {VERSION}")
    if flags != 0:
        raise ValueError(f"graph blob flags {flags:#x} are not known")
    if size != len(blob):
        raise ValueError(f"graph blob says it is {size} bytes, it is {len(blob)} (truncated?)")


class _Reader:
    """A bounds-checked cursor over a blob: every read past the end is a ValueError."""

    def __init__(self, blob: bytes, offset: int):
        self.blob = memoryview(blob)
        self.pos = offset

    def take(self, n: int) -> memoryview:
        if n < 0 or n > len(self.blob) - self.pos:
            raise ValueError(f"graph blob truncated at byte {self.pos}")
        out = self.blob[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def u8(self) -> int:
        return int(self.unpack("<B")[0])

    def u32(self) -> int:
        return int(self.unpack("<I")[0])

    def count(self, min_size: int) -> int:
        """A count of items each at least `min_size` bytes: no more than the bytes left hold."""
        n = self.u32()
        if n * min_size > len(self.blob) - self.pos:
            raise ValueError(f"graph blob: count {n} at byte {self.pos - 4} is larger than the blob")
        return n

    def str(self) -> str:
        n = self.u32()
        try:
            return bytes(self.take(n)).decode()
        except UnicodeDecodeError:
            raise ValueError(f"graph blob: a string before byte {self.pos} is not UTF-8") from None

    def ids(self) -> list[int]:
        n = self.count(4)
        return list(self.unpack(f"<{n}I"))

    def dtype_shape(self) -> tuple[np.dtype[Any], tuple[int, ...]]:
        code, bits, rank = self.unpack("<BBB")
        try:
            dtype = dlpack.numpy_dtype(code, bits)
        except ValueError:
            dtype = None
        if dtype is None or dtype.kind == "c":  # what the C reader takes (byoc_dtype_ok_)
            raise ValueError(f"graph blob: unknown dtype (code {code}, {bits} bits)")
        dtype = dtype.newbyteorder("<")
        if rank > 8:
            raise ValueError(f"graph blob: rank {rank} is above 8")
        return dtype, tuple(int(d) for d in self.unpack(f"<{rank}q"))


def _read_node(r: _Reader, depth: int) -> Node:
    op = r.str()
    attrs: list[tuple[str, int, Any]] = []
    for _ in range(r.count(5)):
        name = r.str()
        kind = r.u8()
        value: Any
        if kind == ATTR_INT:
            value = int(r.unpack("<q")[0])
        elif kind == ATTR_FLOAT:
            value = float(r.unpack("<d")[0])
        elif kind == ATTR_STRING:
            value = r.str()
        elif kind in (ATTR_INTS, ATTR_FLOATS):
            n = r.count(8)
            value = [int(v) for v in r.unpack(f"<{n}q")] if kind == ATTR_INTS else list(r.unpack(f"<{n}d"))
        else:
            raise ValueError(f"graph blob: attribute '{name}' of '{op}' has unknown kind {kind}")
        attrs.append((name, kind, value))
    inputs, outputs = r.ids(), r.ids()
    body_count = r.count(16)
    if body_count and depth > 0:
        raise ValueError(f"graph blob: node '{op}' inside a composite has a body")
    body = [_read_node(r, depth + 1) for _ in range(body_count)]
    return Node(op, attrs, inputs, outputs, body)


def decode(blob: bytes) -> GraphSet:
    """The graphs and constants of a version-1 blob (constants are views of `blob`).
    A ValueError says where the bytes are not a blob; what the blob means is checked by
    `byoc.runtime.graph_check`, its structure again by the C reader."""
    check_header(blob)
    r = _Reader(blob, len(MAGIC) + 16)
    constants: list[Constant] = []
    for _ in range(r.count(15)):
        name = r.str()
        dtype, shape = r.dtype_shape()
        (nbytes,) = r.unpack("<Q")
        if any(d < 0 for d in shape) or nbytes != math.prod(shape) * dtype.itemsize:
            raise ValueError(f"graph blob: constant '{name}' stores {nbytes} bytes for {shape}")
        data = np.frombuffer(r.take(nbytes), dtype=dtype).reshape(shape)
        constants.append(Constant(name, data))
    graphs: list[Graph] = []
    for _ in range(r.count(20)):
        name = r.str()
        entries = []
        for _ in range(r.count(8)):
            kind = r.u8()
            dtype, shape = r.dtype_shape()
            entries.append(Entry(kind, dtype, shape, r.str()))
        inputs, outputs = r.ids(), r.ids()
        nodes = [_read_node(r, 0) for _ in range(r.count(16))]
        graphs.append(Graph(name, entries, inputs, outputs, nodes))
    if r.pos != len(blob):
        raise ValueError(f"graph blob: {len(blob) - r.pos} bytes after the last graph")
    return GraphSet(constants, graphs)


# --------------------------------------------------------------------------
# Text (`-t graph`)
# --------------------------------------------------------------------------

_DTYPE_NAMES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    np.dtype(np.bool_): "i1",
}


def _type_text(dtype: np.dtype[Any], shape: tuple[int, ...]) -> str:
    return f"{_DTYPE_NAMES.get(dtype, str(dtype))}[{', '.join(map(str, shape))}]"


def _attr_text(kind: int, value: Any) -> str:
    if kind == ATTR_STRING:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if kind == ATTR_FLOAT:
        return repr(float(value))
    if kind in (ATTR_INTS, ATTR_FLOATS):
        return "[" + ", ".join(map(repr, value)) + "]"
    return str(value)


def _node_text(node: Node, entries: list[Entry], indent: str) -> list[str]:
    outs = ", ".join(
        f"%{o}: {_type_text(entries[o].dtype, entries[o].shape)}" for o in node.outputs
    )
    attrs = ", ".join(f"{k} = {_attr_text(kind, v)}" for k, kind, v in node.attrs)
    line = f"{indent}{outs} = {node.op}({', '.join(f'%{i}' for i in node.inputs)})"
    if attrs:
        line += f" {{{attrs}}}"
    lines = [line + (" {" if node.body else "")]
    for inner in node.body:
        lines += _node_text(inner, entries, indent + "  ")
    if node.body:
        lines.append(f"{indent}}}")
    return lines


def to_text(gs: GraphSet) -> str:
    """A readable listing of exactly what the blob holds (entry ids as `%n`)."""
    lines = [f"byoc-graph version {VERSION}"]
    for c in gs.constants:
        size = c.array.nbytes
        lines.append(f"constant @{c.name}: {_type_text(c.array.dtype, tuple(c.array.shape))} ({size} bytes)")
    for g in gs.graphs:
        lines.append(f"graph @{g.name} {{")
        for i in g.inputs:
            e = g.entries[i]
            lines.append(f"  input %{i}: {_type_text(e.dtype, e.shape)} \"{e.name}\"")
        for i, e in enumerate(g.entries):
            if e.kind == ENTRY_CONST:
                lines.append(f"  const %{i}: {_type_text(e.dtype, e.shape)} = @{e.name}")
        for node in g.nodes:
            lines += _node_text(node, g.entries, "  ")
        lines.append(f"  output {', '.join(f'%{o}' for o in g.outputs)}")
        lines.append("}")
    return "\n".join(lines) + "\n"


__all__ = [
    "MAGIC",
    "VERSION",
    "Constant",
    "Entry",
    "Graph",
    "GraphSet",
    "Node",
    "check_header",
    "decode",
    "describe",
    "encode",
    "to_text",
]
