from byoc.frontend.examplejson import *  # noqa: F403  -- moved; removed after the merge
