"""numpy kernels of the ops in `byoc.dialects.nn.logic_ops` (comparisons, logic, where)."""

from __future__ import annotations

import numpy as np

from byoc.interpreters.kernels import kernel

kernel("nn.equal")(lambda a, b: np.equal(a, b))
kernel("nn.less")(lambda a, b: np.less(a, b))
kernel("nn.greater")(lambda a, b: np.greater(a, b))
kernel("nn.less_equal")(lambda a, b: np.less_equal(a, b))
kernel("nn.greater_equal")(lambda a, b: np.greater_equal(a, b))
kernel("nn.logical_and")(lambda a, b: np.logical_and(a, b))
kernel("nn.logical_or")(lambda a, b: np.logical_or(a, b))
kernel("nn.logical_xor")(lambda a, b: np.logical_xor(a, b))
kernel("nn.logical_not")(lambda x: np.logical_not(x))
kernel("nn.where")(lambda c, x, y: np.array(np.where(c, x, y), order="C"))
