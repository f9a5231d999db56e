from byoc.op_registry import *  # noqa: F403  -- moved; removed after the merge
from byoc.op_registry import _LEVELS as _LEVELS  # noqa: F401
