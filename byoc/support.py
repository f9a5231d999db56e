from byoc.targets.predicates import *  # noqa: F403  -- moved; removed after the merge
from byoc.targets.predicates import attrs_match  # noqa: F401
