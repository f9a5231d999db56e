from byoc.interpreters.kernels import *  # noqa: F403  -- moved; removed after the merge
