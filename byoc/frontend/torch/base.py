"""What the importer and the converters share: values, the call being converted, the table.

A value during import is an SSA value (computed at run time), a numpy array (known at
import time: a parameter, a buffer, a folded result), a Python scalar, a `SymDim` (a size
known only at run time) or a list of those. The converter table `CONVERTERS` is keyed by
the ATen overload's name (`"aten.convolution.default"`); a converter takes the importer
and the `Call` and returns the node's value (a tuple for ops with several results).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import nn
from byoc.frontend.torch.errors import UnsupportedTorchError

Array = np.ndarray[Any, Any]
Tensor = Array | SSAValue
"""A tensor value: known at import time (numpy) or computed at run time (SSA)."""


class SymDim:
    """A size known only at run time (a `torch.export.Dim`): it may pass into a reshape or
    a result type as a `?` dim, but a converter that needs its value fails naming it."""

    def __init__(self, expr: str, sym: Any = None) -> None:
        self.expr = expr
        self.sym = sym
        """The size as a sympy expression (from the exported program), when known."""

    def __repr__(self) -> str:
        return self.expr

    def _combine(self, other: Any, op: str) -> SymDim:
        return SymDim(f"({self.expr} {op} {other!r})")

    def __add__(self, other: Any) -> SymDim:
        return self._combine(other, "+")

    def __mul__(self, other: Any) -> SymDim:
        return self._combine(other, "*")

    def __sub__(self, other: Any) -> SymDim:
        return self._combine(other, "-")

    def __floordiv__(self, other: Any) -> SymDim:
        return self._combine(other, "//")

    __radd__ = __add__
    __rmul__ = __mul__


def is_sym(v: Any) -> bool:
    return isinstance(v, SymDim)


def dim_of(d: Any) -> int:
    """A size as an int: nn.DYNAMIC for a `SymDim`."""
    return nn.DYNAMIC if is_sym(d) else int(d)


def static(d: Any, what: str) -> int:
    """A size that must be known at import time."""
    if is_sym(d):
        raise UnsupportedTorchError(
            f"the {what} is the dynamic size {d!r}, known only at run time; export with a "
            "static size for it (drop it from dynamic_shapes)"
        )
    return int(d)


@dataclass
class Call:
    """One FX `call_function` node while it is converted: its arguments by schema name."""

    op: str
    """The overload's name, `aten.convolution.default`."""
    args: dict[str, Any]
    """Every schema argument by name (defaults filled in), values resolved."""
    out_dtypes: list[np.dtype[Any] | None] = field(default_factory=list)
    """The element type of each tensor result, from the exported program's metadata."""
    out_shapes: list[tuple[Any, ...] | None] = field(default_factory=list)
    """The shape of each tensor result (ints and `SymDim`s), from the metadata."""

    def __getitem__(self, name: str) -> Any:
        return self.args[name]

    def get(self, name: str, default: Any = None) -> Any:
        v = self.args.get(name, default)
        return default if v is None else v

    @property
    def out_dtype(self) -> np.dtype[Any]:
        dt = self.out_dtypes[0] if self.out_dtypes else None
        if dt is None:
            raise UnsupportedTorchError("the exported program records no result type for this node")
        return dt

    @property
    def out_shape(self) -> tuple[Any, ...]:
        s = self.out_shapes[0] if self.out_shapes else None
        if s is None:
            raise UnsupportedTorchError("the exported program records no result shape for this node")
        return s


class Importer(Protocol):
    """What converters use of the importer (`importer.Importer` is the implementation)."""

    unflattened: dict[SSAValue, SSAValue]
    """A value whose `?` dims merge a dynamic size with other dims -> the same elements with
    those dims apart (`views`: the value is a reshape of it)."""
    sym_shapes: dict[SSAValue, tuple[Any, ...]]
    """A value with `?` dims -> its shape as ints and SymDims (with their expressions)."""

    def emit_all(self, cls: type[nn.NNOp], *operands: Tensor, **attrs: Any) -> list[Tensor]: ...

    def emit(self, cls: type[nn.NNOp], *operands: Tensor, **attrs: Any) -> Tensor: ...

    def shape(self, v: Tensor, /) -> tuple[int, ...]:
        """The shape; a `?` dim is nn.DYNAMIC."""
        ...

    def dtype(self, v: Tensor, /) -> np.dtype[Any]: ...

    def rank(self, v: Tensor, /) -> int: ...

    def reshape(self, v: Tensor, shape: Sequence[Any]) -> Tensor: ...

    def carrier(self, d: SymDim, rank: int, axis: int) -> SSAValue | None:
        """An all-true bool tensor with the dynamic size `d` on `axis`, 1 elsewhere."""
        ...

    def cast(self, v: Tensor, dtype: Any) -> Tensor: ...

    def tensor(self, v: Any, dtype: Any) -> Tensor:
        """A tensor operand from a tensor or a Python scalar (as a 0-d array of `dtype`)."""
        ...


Converter = Callable[[Importer, Call], Any]
CONVERTERS: dict[str, Converter] = {}
"""ATen overload name -> converter."""


def converts(*ops: str) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for op in ops:
            if op in CONVERTERS:
                raise ValueError(f"two converters for {op}")
            CONVERTERS[op] = fn
        return fn

    return register


def norm_dim(dim: int, rank: int) -> int:
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise UnsupportedTorchError(f"dim {dim} is out of range for rank {rank}")
    return dim % rank if rank else 0


def int_list(v: Any) -> list[int]:
    if v is None:
        return []
    if isinstance(v, int | np.integer):
        return [int(v)]
    return [int(x) for x in v]


class Deferred:
    """A secondary result computed only when the graph reads it (a pool's indices, a norm's
    saved statistics): `fn()` emits it, or raises UnsupportedTorchError."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn


def unsupported_result(what: str) -> Deferred:
    """A result that no converter computes: reading it is an error naming it."""

    def fail() -> Any:
        raise UnsupportedTorchError(f"{what} is not supported")

    return Deferred(fail)
