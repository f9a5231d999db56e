"""The `graphref` target: partitions run by the native graph runtime's reference engine.

It exists to prove the graph runtime base (docs/graph.md) without a vendor
library, and as the smallest example of a graph-engine target: a support table, a
pattern table, `lowering="lower-to-graph"`, `component="graph"` and a
`GraphEngine` naming one C source (`byoc/runtime/engines/reference_engine.c`).
The engine runs float32 add / subtract / multiply / maximum / minimum (numpy
broadcasting), relu, bias_add and dense, with static shapes of rank <= 8; a
composite runs its body op by op, so its patterns (dense + bias_add [+ relu])
show how composites reach an engine.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation

from byoc.runtime.graph_module import REFERENCE_ENGINE
from byoc.targets.base import Target
from byoc.targets.patterns import is_constant, is_op, wildcard
from byoc.targets.predicates import Predicate, dtypes, max_rank

NAME = "graphref"


def _static(op: Operation) -> bool:
    types = [v.type for v in op.operands] + [r.type for r in op.results]
    return all(isinstance(t, TensorType) and t.has_static_shape() for t in types)


def _dense_2d(op: Operation) -> bool:
    return all(isinstance(v.type, TensorType) and v.type.get_num_dims() == 2 for v in op.operands)


BASE = dtypes(f32) & max_rank(8) & Predicate(_static, "static shapes")

SUPPORT: dict[str, Predicate] = {
    "nn.add": BASE,
    "nn.subtract": BASE,
    "nn.multiply": BASE,
    "nn.maximum": BASE,
    "nn.minimum": BASE,
    "nn.relu": BASE,
    "nn.bias_add": BASE,
    "nn.dense": BASE & Predicate(_dense_2d, "2-D operands"),
}
"""nn op name -> predicate: what reference_engine.c has kernels for."""

_dense_bias = is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), is_constant()), is_constant())

PATTERNS = [
    ("dense_bias_relu", is_op("nn.relu")(_dense_bias)),
    ("dense_bias", _dense_bias),
]

GRAPHREF = Target(
    name=NAME,
    support=SUPPORT,
    patterns=PATTERNS,
    lowering="lower-to-graph",
    component="graph",
    graph_engine=REFERENCE_ENGINE,
    description="partitions as graphs run by the native graph runtime's reference engine",
)
