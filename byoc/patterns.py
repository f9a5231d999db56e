from byoc.targets.patterns import *  # noqa: F403  -- moved; removed after the merge
