"""The `examplejson` target: partitions become ExampleJSON graphs (seed part 2).

The ExampleJSON runtime computes in float32 only. Support is the table
`SUPPORT` below (op name -> predicate, see `byoc.support`); the ExampleJSON
codegen owns it and lists exactly the ops `lower-to-examplejson` emits. The
seed's three ops are add, sub and mul; the others travel with their
attributes in the format's extension (README).
"""

from __future__ import annotations

from xdsl.dialects.builtin import f32

from byoc.support import Predicate, dtypes, register_support

NAME = "examplejson"

F32 = dtypes(f32)

SUPPORT: dict[str, Predicate] = {
    # the seed's ops
    "nn.add": F32,
    "nn.subtract": F32,
    "nn.multiply": F32,
    # elementwise extension
    "nn.divide": F32,
    "nn.maximum": F32,
    "nn.minimum": F32,
    "nn.relu": F32,
    "nn.sigmoid": F32,
    "nn.tanh": F32,
    "nn.exp": F32,
    "nn.log": F32,
    "nn.sqrt": F32,
    "nn.negative": F32,
    "nn.abs": F32,
    "nn.clip": F32,
    # layer extension
    "nn.dense": F32,
    "nn.bias_add": F32,
    "nn.conv2d": F32,
    "nn.softmax": F32,
    "nn.reshape": F32,
    "nn.flatten": F32,
}


def register() -> None:
    register_support(NAME, SUPPORT)


def pattern_table() -> list[tuple[object, ...]]:
    return []
