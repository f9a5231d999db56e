"""The `DNNL` Target object: support, patterns, lower-to-graph, and the oneDNN engine."""

from __future__ import annotations

from byoc.runtime.graph_module import ENGINES_DIR, GraphEngine
from byoc.targets.base import Target
from byoc.targets.dnnl.onednn import build_options, unavailable_reason
from byoc.targets.dnnl.patterns import pattern_table
from byoc.targets.dnnl.quant import batch_norm_reason
from byoc.targets.dnnl.quant import pattern_table as int8_pattern_table
from byoc.targets.dnnl.support import SUPPORT
from byoc.targets.predicates import Predicate

ENGINE_SOURCE = ENGINES_DIR / "dnnl_engine.c"
"""The graph the planner reads, its slots, steps and attribute helpers; first of the f32 parts."""
F32_SOURCES = tuple(
    ENGINES_DIR / name
    for name in ("dnnl_guard.c", "dnnl_chain.c", "dnnl_anchor.c", "dnnl_ops.c", "dnnl_run.c")
)
"""The rest of the f32 engine, in this order: NaN guards, post-op chains, anchors, the other
ops, init/run."""
INT8_SOURCE = ENGINES_DIR / "dnnl_int8.c"
"""The int8 blocks; defines byoc_graph_engine_def, so it comes last."""

DNNL_ENGINE = GraphEngine(
    "dnnl",
    (ENGINE_SOURCE, *F32_SOURCES, INT8_SOURCE),
    build_options=build_options,  # oneDNN's headers and library from the wheels, -fopenmp
)
"""byoc_graph_engine.h on oneDNN's C primitive API (docs/dnnl.md)."""

DNNL = Target(
    name="dnnl",
    support={  # batch_norm parameters may be dequantized constants (quant.py)
        **SUPPORT,
        "nn.batch_norm": Predicate(
            lambda op: batch_norm_reason(op) is None, SUPPORT["nn.batch_norm"].description
        ),
    },
    patterns=int8_pattern_table() + pattern_table(),  # int8 blocks first
    lowering="lower-to-graph",
    component="graph",
    graph_engine=DNNL_ENGINE,
    prepare=("fold-batch-norm",),  # batch_norm into the conv's constants, before partitioning
    availability=unavailable_reason,  # the oneDNN wheels are installed and the library loads
    description="partitions as graphs run by oneDNN (conv/dense/matmul with fused post-ops, layer norm, "
    "pools, softmax, LRN, batch_norm, concat, elementwise)",
)
