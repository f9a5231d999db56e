"""Arrays whose data starts at a 64-byte boundary, for the C code that reads them.

numpy's allocator and the `bytes` an ONNX tensor or an IR attribute holds give 16-byte
alignment at best, at an offset that differs from process to process. The C kernels
load weights with full-width vector loads (64 bytes with AVX-512, one cache line): a
weight matrix at an offset that is not a multiple of 64 makes every such load touch two
cache lines, and the same library then runs at a speed that depends on where the process
happened to put its constants (docs/runtime.md, "Alignment").
"""

from __future__ import annotations

from typing import Any

import numpy as np

ALIGN = 64
"""The alignment of every array the runtime hands to C: a cache line, and the width of
an AVX-512 register."""

Array = np.ndarray[Any, Any]


def address(arr: Array) -> int:
    """The address of the first byte of `arr`'s data."""
    return int(arr.__array_interface__["data"][0])


def is_aligned(arr: Array, align: int = ALIGN) -> bool:
    """Whether `arr`'s data starts at a multiple of `align` bytes (an array of no bytes,
    whose address numpy leaves arbitrary and nothing reads, counts as aligned)."""
    return arr.nbytes == 0 or address(arr) % align == 0


def aligned_empty(shape: tuple[int, ...], dtype: Any, align: int = ALIGN) -> Array:
    """A new C-contiguous array of `shape` and `dtype` whose data starts at a multiple of
    `align` bytes (a view into a buffer `align - 1` bytes larger than the data)."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(nbytes + align - 1, np.uint8)
    start = -address(raw) % align
    return raw[start : start + nbytes].view(dt).reshape(shape)


def aligned_array(arr: Array, align: int = ALIGN) -> Array:
    """`arr` itself when it is C-contiguous and starts at a multiple of `align` bytes,
    else a C-contiguous copy that does (made once: the caller keeps it). A read-only
    array gives a read-only copy, so a constant stays one."""
    if arr.flags.c_contiguous and is_aligned(arr, align):
        return arr
    out = aligned_empty(arr.shape, arr.dtype, align)
    out[...] = arr
    if not arr.flags.writeable:
        out.flags.writeable = False
    return out


__all__ = ["ALIGN", "address", "aligned_array", "aligned_empty", "is_aligned"]
