from byoc.lowering.nn_to_c import *  # noqa: F403  -- moved; removed after the merge
from byoc.lowering.nn_to_c.fusion import fuse_groups  # noqa: F401
from byoc.lowering.nn_to_c.graph import GraphBuilder  # noqa: F401
from byoc.lowering.nn_to_c.pass_ import LowerToCPass, constants_of  # noqa: F401
from byoc.targets.ccompiler import (  # noqa: F401
    SUPPORTED_OPS,
    is_supported,
    unsupported_reason,
)
