"""DLPack data types: the one table between numpy dtypes and DLPack's (type code, bits).

The C libraries (`DLTensor` arguments, `byoc_check_tensor`), the graph format and the
graph runtime all describe an element type this way (dlpack.h, `DLDataTypeCode`).
`tensor_cdef` and `header_cdef` give cffi the C declarations of the shipped headers.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

DL_INT, DL_UINT, DL_FLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 5, 6
"""DLPack's type codes."""

CODE_NAMES: dict[int, str] = {
    DL_INT: "kDLInt",
    DL_UINT: "kDLUInt",
    DL_FLOAT: "kDLFloat",
    DL_COMPLEX: "kDLComplex",
    DL_BOOL: "kDLBool",
}
"""Type code -> its name in dlpack.h, for generated C."""

_CODE_OF_KIND: dict[str, int] = {"i": DL_INT, "u": DL_UINT, "f": DL_FLOAT, "c": DL_COMPLEX, "b": DL_BOOL}


@cache
def tensor_cdef() -> str:
    """The cffi declarations of `DLDevice`, `DLDataType` and `DLTensor` (with their enums),
    read from dlpack.h: the structs Python fills are the ones the generated C is compiled
    against."""
    text = Path(__file__).with_name("dlpack.h").read_text()
    end = "} DLTensor;"
    return text[text.index("typedef enum {") : text.index(end) + len(end)]


@cache
def header_cdef(header: str, section: str) -> str:
    """The cffi declarations that the runtime header `header` (a file beside this module)
    marks with `/* BEGIN <section> */` and `/* END <section> */`: Python declares the C
    structs and functions from the text the C side is compiled with, so there is one
    copy of each layout. The marked text holds no preprocessor lines (cffi does not take
    them); its comments cffi ignores."""
    text = Path(__file__).with_name(header).read_text()
    begin, end = f"/* BEGIN {section} */", f"/* END {section} */"
    return text[text.index(begin) + len(begin) : text.index(end)]


def dl_dtype(dtype: np.dtype[Any]) -> tuple[int, int] | None:
    """(type code, bits) of a numpy dtype, or None if DLPack has no equivalent (objects,
    strings, a non-native byte order). A bool is 8 bits, as numpy stores it."""
    code = _CODE_OF_KIND.get(dtype.kind)
    if code is None or dtype.hasobject or not dtype.isnative:
        return None
    return code, 8 if code == DL_BOOL else dtype.itemsize * 8


def numpy_dtype(code: int, bits: int) -> np.dtype[Any]:
    """The numpy dtype of a DLPack (type code, bits); ValueError if numpy has none."""
    kind = next((k for k, c in _CODE_OF_KIND.items() if c == code), None)
    if kind == "b" and bits == 8:
        return np.dtype(np.bool_)
    if kind is None or kind == "b" or bits % 8:
        raise ValueError(f"no numpy dtype for DLPack type code {code} with {bits} bits")
    try:
        return np.dtype(f"{kind}{bits // 8}")
    except TypeError:
        raise ValueError(f"no numpy dtype for DLPack type code {code} with {bits} bits") from None


__all__ = ["CODE_NAMES", "DL_BOOL", "DL_COMPLEX", "DL_FLOAT", "DL_INT", "DL_UINT", "dl_dtype", "header_cdef", "numpy_dtype", "tensor_cdef"]
