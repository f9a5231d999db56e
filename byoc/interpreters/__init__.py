"""The numpy reference: numpy kernels for every nn op (`kernels`) and the xDSL
interpreter functions that run a module with them (`nn`, `byoc`, `reference`)."""

from __future__ import annotations

from byoc.interpreters import (  # noqa: F401  (register first)
    kernels_detection,  # roi_align, rotary_embedding, deform_conv2d, tensor_scatter
    kernels_indexing,
    kernels_logic,
    kernels_math,
)
from byoc.interpreters.byoc import ByocFunctions
from byoc.interpreters.kernels import KERNELS
from byoc.interpreters.nn import NnFunctions
from byoc.interpreters.recurrent import RECURRENT_KERNELS
from byoc.interpreters.reference import (
    coerce_inputs,
    find_function,
    make_interpreter,
    run_reference,
)

__all__ = [
    "KERNELS",
    "ByocFunctions",
    "NnFunctions",
    "RECURRENT_KERNELS",
    "coerce_inputs",
    "find_function",
    "make_interpreter",
    "run_reference",
]
