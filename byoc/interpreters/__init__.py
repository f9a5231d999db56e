"""The numpy reference: numpy kernels for every nn op (`kernels`) and the xDSL
interpreter functions that run a module with them (`nn`, `byoc`, `reference`)."""

from __future__ import annotations

from byoc.interpreters import kernels_indexing  # noqa: F401  (registers part B's kernels first)
from byoc.interpreters.byoc import ByocFunctions
from byoc.interpreters.kernels import KERNELS
from byoc.interpreters.nn import NnFunctions
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
    "coerce_inputs",
    "find_function",
    "make_interpreter",
    "run_reference",
]
