"""The `dnnl` target: partitions run by oneDNN through the native graph runtime.

    byoc-opt model.onnx -p 'byoc{targets=dnnl},lower-to-graph{target=dnnl}' -t graph
    exe = byoc.build(module, targets=["dnnl", "ccompiler"])   # the rest on C, then the host

oneDNN 3.2 comes from PyPI (`pip install 'byoc[dnnl]'`: the `onednn-cpu-gomp` and
`onednn-devel-cpu-gomp` wheels, found through their installed files, `onednn.py`). The
partitions are lowered to the generic graph format (`lower-to-graph{target=dnnl}`); the
engine `byoc/runtime/engines/dnnl_engine.c` implements byoc_graph_engine.h with oneDNN's
C primitive API: it builds every primitive, memory descriptor, weight reorder and buffer
offset at init and runs them on a per-call workspace (docs/dnnl.md).

Files: `support.py` (which ops, which forms), `patterns.py` (the composite table),
`target.py` (the `DNNL` Target and its `GraphEngine`), `onednn.py` (finding the wheels;
compiler and linker flags). A batch_norm after a conv/dense is folded into its weights
and bias at build time by the `fold-batch-norm` pass (`Target.prepare`); bias_add and
per-channel add/multiply are folded into the primitive's weights and bias by the engine,
once at init, from the graph's constants (docs/dnnl.md).
"""

from __future__ import annotations

from byoc.targets.dnnl.onednn import (
    OneDNN,
    OneDnnMissing,
    build_options,
    find,
    missing_reason,
)
from byoc.targets.dnnl.patterns import pattern_table
from byoc.targets.dnnl.support import SUPPORT, SUPPORTED_OPS, is_supported, unsupported_reason

NAME = "dnnl"

__all__ = [
    "NAME",
    "SUPPORT",
    "SUPPORTED_OPS",
    "OneDNN",
    "OneDnnMissing",
    "build_options",
    "find",
    "is_supported",
    "missing_reason",
    "pattern_table",
    "unsupported_reason",
]
