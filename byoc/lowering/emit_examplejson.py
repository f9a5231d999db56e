from byoc.lowering.emit.examplejson import *  # noqa: F403  -- moved; removed after the merge
from byoc.lowering.emit.examplejson import emit_examplejson, to_text  # noqa: F401
