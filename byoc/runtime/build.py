from byoc.build import *  # noqa: F403  -- moved; removed after the merge
from byoc.build import BuildError, bind_params, build  # noqa: F401
