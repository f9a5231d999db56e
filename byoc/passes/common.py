from byoc.passes.options import *  # noqa: F403  -- moved; removed after the merge
from byoc.passes.options import as_names, check_targets  # noqa: F401
from byoc.passes.scope import graph_blocks, host_functions, target_of  # noqa: F401
from byoc.utils.gc import paused_gc  # noqa: F401
