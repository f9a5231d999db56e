from byoc.interpreters.byoc import ByocFunctions  # noqa: F401  -- moved; removed after the merge
from byoc.interpreters.nn import NnFunctions  # noqa: F401
from byoc.interpreters.reference import *  # noqa: F403
