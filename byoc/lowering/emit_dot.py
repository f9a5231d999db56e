from byoc.lowering.emit.dot import *  # noqa: F403  -- moved; removed after the merge
