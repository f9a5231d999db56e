"""The numpy reference: numpy kernels for every nn op (`kernels`) and the xDSL
interpreter functions that run a module with them (`nn`, `byoc`, `reference`).

Importing the package fills the kernel table (`KERNELS`: every kernel family
registers itself on import); the interpreter side (`NnFunctions`,
`run_reference`, ...) is imported on first use, so that code needing only the
kernels does not load xDSL's interpreter.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from byoc.interpreters import (  # noqa: F401  (register first)
    kernels_detection,  # roi_align, rotary_embedding, deform_conv2d, tensor_scatter
    kernels_indexing,
    kernels_logic,
    kernels_math,
)
from byoc.interpreters.kernels import KERNELS
from byoc.interpreters.recurrent import RECURRENT_KERNELS

# public name -> module defining it, imported on first use
_LAZY: dict[str, str] = {
    "ByocFunctions": "byoc.interpreters.byoc",
    "NnFunctions": "byoc.interpreters.nn",
    "coerce_inputs": "byoc.interpreters.reference",
    "find_function": "byoc.interpreters.reference",
    "make_interpreter": "byoc.interpreters.reference",
    "run_reference": "byoc.interpreters.reference",
}

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


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'byoc.interpreters' has no attribute {name!r}")
    value = getattr(import_module(module_name), name)
    globals()[name] = value
    return value
