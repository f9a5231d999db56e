"""`TensorSpec`: the shape and dtype of a tensor a runtime function takes or returns."""

from __future__ import annotations

import math
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    name: str = ""
    """The argument's name where one is known (C partitions check arguments by name)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @staticmethod
    def of(ty: Any, name: str = "") -> TensorSpec:
        """The spec of a builtin `tensor<...>` type."""
        from xdsl.dialects.builtin import TensorType

        from byoc.dialects.nn import numpy_dtype

        assert isinstance(ty, TensorType)
        return TensorSpec(tuple(ty.get_shape()), numpy_dtype(ty.element_type), name)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    def to_json(self) -> list[Any]:
        return [self.name, list(self.shape), self.dtype.str]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @staticmethod
    def from_json(data: Any) -> TensorSpec:
        """From `to_json()`; also reads the `[shape, dtype]` pairs of format-1 artifacts.
        Anything else (a wrong type, a negative dim, a dtype the runtimes cannot pass, a
        size beyond `MAX_BYTES`) is a ValueError saying what."""
        if not isinstance(data, list) or len(data) not in (2, 3):
            raise ValueError(f"a tensor spec is [name, shape, dtype], got {_short(data)}")
        name = data[0] if len(data) == 3 else ""
        if not isinstance(name, str):
            raise ValueError(f"a tensor name must be a string, got {_short(name)}")
        dtype = checked_dtype(data[-1])
        return TensorSpec(checked_shape(data[-2], dtype.itemsize), dtype, name)


MAX_BYTES = 1 << 62
"""The largest tensor (in bytes) a spec, a constant or a shape in an artifact may describe."""
MAX_RANK = 32


def checked_dtype(value: Any) -> np.dtype[Any]:
    """The numpy dtype `value` names if the runtimes can hold it (bool, integer, float or
    complex scalars in native byte order); otherwise a ValueError."""
    try:
        dt = np.dtype(value) if isinstance(value, str) else None
    except (TypeError, ValueError):
        dt = None
    if dt is None or dt.kind not in "biufc" or not dt.isnative or dt.shape or dt.names:
        raise ValueError(f"not a supported element type: {_short(value)}")
    return dt


def checked_shape(value: Any, itemsize: int = 1) -> tuple[int, ...]:
    """`value` as a shape: a list of at most MAX_RANK non-negative integers whose element
    count times `itemsize` is at most MAX_BYTES; otherwise a ValueError."""
    if not isinstance(value, list) or len(value) > MAX_RANK:
        raise ValueError(f"a shape is a list of at most {MAX_RANK} dims, got {_short(value)}")
    if not all(type(d) is int and d >= 0 for d in value):
        raise ValueError(f"a shape's dims are non-negative integers, got {_short(value)}")
    if math.prod(value) * max(itemsize, 1) > MAX_BYTES:
        raise ValueError(f"shape {value} is too large")
    return tuple(value)


def _short(value: Any) -> str:
    """A short description for a message (no repr of a deeply nested structure)."""
    if isinstance(value, list) and all(v is None or isinstance(v, bool | int | float | str) for v in value[:8]):
        text = repr(value[:8])[:-1] + (", ...]" if len(value) > 8 else "]")
    elif value is None or isinstance(value, bool | int | float | str):
        text = repr(value)
    else:
        text = f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def fresh_outputs(
    values: Sequence[Any], inputs: Sequence[Any], constants: AbstractSet[int] = frozenset()
) -> list[np.ndarray[Any, Any]]:
    """The outputs of a call as arrays the caller owns: C-contiguous, writable, each its own memory.

    A value is returned as it is only when it owns its (writable, C-ordered) data and is
    none of `inputs`, of the arrays whose ids are in `constants`, or of the earlier
    outputs; anything else (a view such as a reshape of an input, an input or a constant
    passed through, a read-only or broadcast array, one array returned twice) is copied.
    An array that owns its data shares it with nothing that existed before the call, so
    no comparison of memory ranges is needed.
    """
    taken = {id(v) for v in inputs}
    outs: list[np.ndarray[Any, Any]] = []
    for v in values:
        r = v if type(v) is np.ndarray else np.asarray(v)
        flags = r.flags
        if (
            not (flags.owndata and flags.writeable and flags.c_contiguous)
            or id(r) in taken
            or id(r) in constants
        ):
            r = np.array(r, order="C", copy=True)
        taken.add(id(r))
        outs.append(r)
    return outs
