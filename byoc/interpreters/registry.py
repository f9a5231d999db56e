"""The table of numpy kernels, op name -> kernel, and the decorator that fills it. Every
kernel module (kernels.py, qkernels.py, kernels_*.py) registers into this one table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
Kernel = Callable[..., Any]

KERNELS: dict[str, Kernel] = {}
"""op name -> kernel (`byoc.interpreters.kernels` documents the calling convention)."""


def kernel(name: str) -> Callable[[Kernel], Kernel]:
    """Register the decorated function as the kernel of op `name`."""

    def register(fn: Kernel) -> Kernel:
        KERNELS[name] = fn
        return fn

    return register


__all__ = ["KERNELS", "Array", "Kernel", "kernel"]
