from byoc.lowering.emit.c import *  # noqa: F403  -- moved; removed after the merge
