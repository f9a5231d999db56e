"""`lower-to-c`: partitions of C-lowered targets -> the `c` dialect.

    graph.py      a partition as tensor values and nodes (loops, kernel calls, copies)
    fusion.py     which nodes share one loop nest, and the order of the resulting steps
    buffers.py    where each value lives: arguments, constants, the planned workspace
    emission.py   the steps as C functions: kernels, subgraph, DLTensor wrapper, packed entry
    lower_to_c.py the pass (`LowerToCPass`) and the composite-lowering hooks of targets
    cblas.py      the cblas target's hook: a GEMM composite -> one byoc_cblas.h kernel node
"""

from byoc.lowering.nn_to_c.fusion import fuse_groups
from byoc.lowering.nn_to_c.graph import Computation, GraphBuilder, Tensor
from byoc.lowering.nn_to_c.lower_to_c import (
    COMPOSITE_LOWERINGS,
    LowerToCPass,
    constants_of,
    register_composite_lowering,
)

__all__ = [
    "COMPOSITE_LOWERINGS",
    "GraphBuilder",
    "LowerToCPass",
    "Computation",
    "Tensor",
    "constants_of",
    "fuse_groups",
    "register_composite_lowering",
]
