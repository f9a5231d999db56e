"""`TensorSpec`: the shape and dtype of a tensor a runtime function takes or returns."""

from __future__ import annotations

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

    @staticmethod
    def from_json(data: Sequence[Any]) -> TensorSpec:
        """From `to_json()`; also reads the `[shape, dtype]` pairs of format-1 artifacts."""
        if len(data) == 2:
            return TensorSpec(tuple(data[0]), np.dtype(data[1]))
        return TensorSpec(tuple(data[1]), np.dtype(data[2]), str(data[0]))


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
