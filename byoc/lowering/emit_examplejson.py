"""`-t examplejson`: print the `examplejson` dialect as ExampleJSON text (seed part 2).

For add/sub/mul graphs in f32 the output is exactly the seed's format:

    subgraph_0
      input 0 10 10
      input 1 10 10
      add 2 inputs: 0 1 shape: 10 10

Everything else uses the extension `byoc/runtime/examplejson_format.py` reads
back (README, "ExampleJSON"): ` dtype: <t>` after the shape when the element
type is not f32, ` attrs: k=v ...` after that for a node's attributes (sorted by name),
`const <id> <dims> data: 0x<hex>` lines, and an `output <ids>` line when the
result is not just the last line's id. Text printed here parses back to the
same IR, and that IR prints back to the same text.
"""

from __future__ import annotations

import re
from typing import IO, Any

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    f64,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation

from byoc.diagnostics import EmitError
from byoc.dialects import examplejson as ej
from byoc.dialects.byoc import COMPILER_ATTR
from byoc.dialects.dense import encode_hex

DTYPE_NAMES: dict[Attribute, str] = {
    f32: "f32",
    f64: "f64",
    i32: "i32",
    i64: "i64",
    IntegerType(1): "i1",
}
"""Element type -> its name after `dtype:` (f32, the default, is not printed)."""

_BARE_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")


def format_value(attr: Attribute) -> str:
    """One attribute value in the text: [1,2] | true | 3 | 0.5 | name."""
    if isinstance(attr, DenseArrayBase):
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


def _dims(t: TensorType[Any]) -> list[str]:
    return [str(d) for d in t.get_shape()]


def _dtype(t: TensorType[Any]) -> list[str]:
    name = DTYPE_NAMES.get(t.element_type)
    if name is None:
        raise ValueError(f"element type {t.element_type} has no ExampleJSON spelling")
    return [] if name == "f32" else ["dtype:", name]


def format_line(op: Operation) -> str | None:
    """The text of one line (without indentation), or None for an output the text leaves implicit."""
    if isinstance(op, ej.InputOp):
        return " ".join(
            ["input", str(op.value_id), *_dims(op.tensor_type), *_dtype(op.tensor_type)]
        )
    if isinstance(op, ej.ConstOp):
        ty = op.value_type()
        return " ".join(
            [
                "const",
                str(op.value_id),
                *_dims(ty),
                *_dtype(ty),
                "data:",
                encode_hex(op.payload()),
            ]
        )
    if isinstance(op, ej.NodeOp):
        words = [op.op.data, str(op.value_id), "inputs:", *map(str, op.input_ids), "shape:"]
        words += _dims(op.tensor_type) + _dtype(op.tensor_type)
        if op.attrs.data:
            words.append("attrs:")
            words += [f"{k}={format_value(v)}" for k, v in sorted(op.attrs.data.items())]
        return " ".join(words)
    if isinstance(op, ej.OutputOp):
        return " ".join(["output", *map(str, op.output_ids)])
    raise ValueError(f"'{op.name}' is not an ExampleJSON line")


def format_subgraph(subgraph: ej.SubgraphOp) -> str:
    """The text of one subgraph: its name, then one indented line per op."""
    name = subgraph.sym_name.data
    out = [name]
    lines = subgraph.lines
    for op in subgraph.body.block.ops:
        if isinstance(op, ej.OutputOp) and lines and op.output_ids == (lines[-1].value_id,):
            continue  # the seed's rule: the last line is the result
        try:
            text = format_line(op)
        except ValueError as e:
            raise EmitError(op, f"subgraph {name}: {e}") from None
        out.append("  " + text)
    return "\n".join(out) + "\n"


def to_text(op: Operation) -> str:
    """ExampleJSON text of every subgraph in `op`, in order."""
    return "".join(format_subgraph(s) for s in ej.subgraphs_of(op))


def emit_examplejson(module: ModuleOp, stream: IO[str]) -> None:
    """The `-t examplejson` emitter: every `examplejson.subgraph` of `module`."""
    for f in module.walk():
        if (
            isinstance(f, FuncOp)
            and f.body.blocks
            and isinstance(attr := f.attributes.get(COMPILER_ATTR), StringAttr)
            and attr.data == "examplejson"
        ):
            raise EmitError(
                f,
                f"@{f.sym_name.data} is still a func.func; run lower-to-examplejson first "
                "(byoc-opt -p 'lower-to-examplejson' -t examplejson)",
            )
    stream.write(to_text(module))
