"""The `examplejson` target: partitions become ExampleJSON graphs (seed part 2).

Support is the table `SUPPORT` below (op name -> predicate, see
`byoc.support`), owned by the ExampleJSON codegen: it lists exactly the ops
`lower-to-examplejson` emits and `ExampleJsonModule` executes — every `nn` op
with an ExampleJSON line (`byoc.dialects.examplejson.NAME_OF`: all of them
but multi-result ops, and constants, which become `const` lines). The runtime
runs each op with its numpy kernel, so any element type the op itself accepts
(f32, and i32/i64 where nn allows them) is supported; shapes must be static,
since every line states its shape. The seed's three ops are add, sub and mul;
the others travel with their attributes in the format's extension (README).

The runtime executes one op per line, so the pattern table is empty.
`codegen` / `load_component` are the hooks `byoc.build` and artifacts use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

from byoc.dialects.examplejson import NAME_OF
from byoc.support import Predicate, register_support

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp

    from byoc.runtime.examplejson_module import ExampleJsonModule

NAME = "examplejson"


def _static(op: Operation) -> bool:
    types = [v.type for v in op.operands] + [r.type for r in op.results]
    return all(isinstance(t, TensorType) and t.has_static_shape() for t in types)


STATIC = Predicate(_static, "static tensor shapes")

SUPPORT: dict[str, Predicate] = dict.fromkeys(sorted(NAME_OF), STATIC)
"""nn op name -> predicate: every op with an ExampleJSON line, when its shapes are static."""


def register() -> None:
    register_support(NAME, SUPPORT)


def pattern_table() -> list[tuple[object, ...]]:
    return []


def codegen(module: ModuleOp, funcs: list[FuncOp]) -> ExampleJsonModule:
    """One ExampleJSON runtime module holding a subgraph per partition function."""
    from byoc.lowering.lower_to_examplejson import lower_functions
    from byoc.runtime.examplejson_module import ExampleJsonModule

    return ExampleJsonModule.from_ir(lower_functions(funcs), "<build>")


def load_component(blobs: dict[str, bytes]) -> ExampleJsonModule:
    """The module `codegen` built, from the blobs its `export()` wrote into an artifact."""
    from byoc.runtime.examplejson_module import ExampleJsonModule

    return ExampleJsonModule.load_from_binary(blobs["examplejson"], "<artifact>")
