from byoc.lowering.nn_to_c.cblas import *  # noqa: F403  -- moved; removed after the merge
from byoc.lowering.nn_to_c.cblas import MIN_TILE, TILE_BYTES, lower_composite  # noqa: F401
