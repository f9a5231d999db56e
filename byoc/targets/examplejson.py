"""The `examplejson` target: partitions become ExampleJSON graphs (seed part 2).

Support is the table `SUPPORT` below (op name -> predicate, see
`byoc.targets.predicates`), owned by the ExampleJSON codegen: it lists exactly the ops
`lower-to-examplejson` emits and `ExampleJsonModule` executes — every `nn` op
with an ExampleJSON line (`byoc.dialects.examplejson.NAME_OF`: all of them
but multi-result ops, and constants, which become `const` lines). The runtime
runs each op with its numpy kernel, so any element type the op itself accepts
(f32, and i32/i64 where nn allows them) is supported; shapes must be static,
since every line states its shape. The seed's three ops are add, sub and mul;
the others travel with their attributes in the format's extension (docs/examplejson.md).

The runtime executes one op per line, so the pattern table is empty.
Partitions are lowered by `lower-to-examplejson` and built into an
ExampleJSON runtime module (component kind `examplejson`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from byoc.dialects.examplejson import NAME_OF
from byoc.dialects.examplejson.text import format_value
from byoc.targets.base import Target
from byoc.targets.predicates import Predicate

NAME = "examplejson"


def _static(op: Operation) -> bool:
    types = [v.type for v in op.operands] + [r.type for r in op.results]
    if not all(isinstance(t, TensorType) and t.has_static_shape() for t in types):
        return False
    try:  # every property has a spelling (an einsum equation "ij,jk->ik" has none)
        for value in op.properties.values():
            format_value(value)
    except ValueError:
        return False
    return True


STATIC = Predicate(_static, "static tensor shapes, properties the text can spell")

SUPPORT: dict[str, Predicate] = dict.fromkeys(sorted(NAME_OF), STATIC)
"""nn op name -> predicate: every op with an ExampleJSON line, when its shapes are static."""


EXAMPLEJSON = Target(
    name=NAME,
    support=SUPPORT,
    lowering="lower-to-examplejson",
    component="examplejson",
    layouts=("NCHW", "NHWC", "OIHW", "HWIO"),  # the runtime runs the numpy kernels
    description="ExampleJSON graphs run by the ExampleJSON runtime module (seed part 2)",
)
