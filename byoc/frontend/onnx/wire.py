"""A serialized ModelProto's tensor payloads, cut out before protobuf parses the rest.

    skeleton, payloads = split_payloads(data)   # None when nothing is worth cutting

Parsing a model with protobuf copies every weight twice more than reading the file did:
into the parsed message, and out of it again through the `raw_data` accessor (a copy
into fresh memory costs about a millisecond per megabyte, most of it page faults). Here
the `raw_data` of the main graph's initializers and of its nodes' tensor attributes
(`Constant` values) is cut out of the serialized bytes, each payload sliced once into
its own `bytes` object (which `nn.constant` then keeps as is), and what is left, a few
kilobytes, is what protobuf parses: the weights are copied once after the read instead
of twice.

Only the protobuf wire format is read (tags, varint lengths); a layout this walk does
not expect (a tensor that names external data, a raw_data field given twice, a length
past its message) makes it cut nothing, and the model is parsed whole as before. A cut
tensor is marked in the parsed message as external data whose location is
`PAYLOAD_MARKER` and an id (`mark_cut_tensors`), so that a reader without the payloads
fails to find a file rather than reading an empty tensor.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

PAYLOAD_MARKER = "byoc-payload:"
"""The external-data location prefix of a tensor whose raw_data was cut out."""

MIN_CUT_BYTES = 1 << 20
"""Cut only when the payloads hold at least this many bytes: below, walking the graph's
fields costs more than the copies it saves."""

MIN_WALK_BYTES = 4096
"""A node, attribute or tensor shorter than this is kept as it is, not walked into: the
copies its payload would save cost less than walking its fields."""

_LEN = 2
# (message kind, field number) -> kind of the length-delimited sub-message to walk into
_MODEL, _GRAPH, _NODE, _ATTRIBUTE, _TENSOR = range(5)
_CHILDREN = {
    (_MODEL, 7): _GRAPH,  # ModelProto.graph
    (_GRAPH, 5): _TENSOR,  # GraphProto.initializer
    (_GRAPH, 1): _NODE,  # GraphProto.node
    (_NODE, 5): _ATTRIBUTE,  # NodeProto.attribute
    (_ATTRIBUTE, 5): _TENSOR,  # AttributeProto.t
}
_RAW_DATA = 9  # TensorProto.raw_data
_DATA_LOCATION = 14  # TensorProto.data_location


class _Unexpected(Exception):
    """A layout the walk does not handle: cut nothing."""


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Unexpected
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _fields(buf: memoryview, pos: int, end: int) -> Iterator[tuple[int, int, int, int, int, int]]:
    """(field number, wire type, field start, tag end, value start, value end) of each
    field; a varint's value lies between value start and end."""
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos, end)
        number, wire, tag_end = tag >> 3, tag & 7, pos
        if wire == 0:
            _, pos = _varint(buf, pos, end)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == _LEN:
            length, pos = _varint(buf, pos, end)
            tag_end_len = pos
            pos += length
            if pos > end:
                raise _Unexpected
            yield number, wire, start, tag_end, tag_end_len, pos
            continue
        else:  # groups (3, 4) and reserved types
            raise _Unexpected
        if pos > end:
            raise _Unexpected
        yield number, wire, start, tag_end, tag_end, pos


class _Cutter:
    def __init__(self, data: bytes) -> None:
        self.buf = memoryview(data)
        self.payloads: list[tuple[tuple[int, ...], int, int]] = []
        """(where: initializer index or node and attribute index, start, end) per cut."""
        self.cut_bytes = 0

    def message(self, kind: int, start: int, end: int, where: tuple[int, ...]) -> list[Any] | None:
        """The pieces of the message between `start` and `end` with payloads cut out, or None
        when nothing in it is cut (its bytes stay as they are)."""
        if kind == _TENSOR:
            return self.tensor(start, end, where)
        pieces: list[Any] = []
        kept = start  # bytes from here to the current field are copied as they are
        counts: dict[int, int] = {}
        changed = False
        for number, wire, _, tag_end, value, stop in _fields(self.buf, start, end):
            child = _CHILDREN.get((kind, number))
            if child is None:
                continue
            index = counts.get(number, 0)  # the field's place in its repeated list
            counts[number] = index + 1
            if wire != _LEN or (index and kind in (_MODEL, _ATTRIBUTE)):
                raise _Unexpected  # a singular message given twice: protobuf merges them
            if stop - value < MIN_WALK_BYTES:
                continue
            inner = self.message(child, value, stop, (*where, number, index))
            if inner is None:
                continue
            changed = True
            length = sum(len(p) for p in inner)
            pieces += [self.buf[kept:tag_end], _encode_varint(length), *inner]
            kept = stop
        if not changed:
            return None
        pieces.append(self.buf[kept:end])
        return pieces

    def tensor(self, start: int, end: int, where: tuple[int, ...]) -> list[Any] | None:
        raw: tuple[int, int, int] | None = None
        for number, wire, field, _, value, stop in _fields(self.buf, start, end):
            if number == _DATA_LOCATION:
                if wire != 0 or _varint(self.buf, value, stop)[0] != 0:
                    raise _Unexpected  # external data: onnx.load's business
            elif number == _RAW_DATA:
                if raw is not None or wire != _LEN:
                    raise _Unexpected
                raw = (field, value, stop)
        if raw is None or raw[2] - raw[1] == 0:
            return None
        field, value, stop = raw
        self.payloads.append((where, value, stop))
        self.cut_bytes += stop - value
        return [self.buf[start:field], self.buf[stop:end]]


def split_payloads(data: bytes) -> tuple[bytes, dict[tuple[int, ...], bytes]] | None:
    """The serialized ModelProto `data` with the raw_data of the main graph's initializers
    and node tensor attributes cut out, and each payload by where it was: `(7, 0, 5, i)`
    for initializer i, `(7, 0, 1, n, 5, a, 5, 0)` for attribute a of node n. None when the
    layout is not the expected one or the payloads are under `MIN_CUT_BYTES`."""
    cutter = _Cutter(data)
    try:
        pieces = cutter.message(_MODEL, 0, len(data), ())
    except (_Unexpected, IndexError):
        return None
    if pieces is None or cutter.cut_bytes < MIN_CUT_BYTES:
        return None
    skeleton = b"".join(pieces)
    payloads = {where: cutter.buf[s:e].tobytes() for where, s, e in cutter.payloads}
    return skeleton, payloads


def tensor_at(model: Any, where: tuple[int, ...]) -> Any:
    """The TensorProto of `model` that `split_payloads` names `where`."""
    graph = model.graph
    if where[2] == 5:
        return graph.initializer[where[3]]
    return graph.node[where[3]].attribute[where[5]].t


def mark_cut_tensors(model: Any, payloads: dict[tuple[int, ...], bytes], token: str) -> dict[str, bytes]:
    """Mark each cut tensor of the parsed skeleton `model` as external data at
    `PAYLOAD_MARKER` + `token` + its number; the payloads by those locations."""
    table: dict[str, bytes] = {}
    for where, payload in payloads.items():
        tensor = tensor_at(model, where)
        location = f"{PAYLOAD_MARKER}{token}/{len(table)}"
        tensor.data_location = 1  # EXTERNAL
        entry = tensor.external_data.add()
        entry.key = "location"
        entry.value = location
        table[location] = payload
    return table
