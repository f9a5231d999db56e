"""What the importer and the converters share: the node being converted and the converter table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from xdsl.ir import SSAValue

from byoc.dialects import nn
from byoc.frontend.onnx.errors import STATIC_SHAPE_HINT, OnnxImportError, UnsupportedOnnxError

Array = np.ndarray[Any, Any]
Value = Array | SSAValue
"""An ONNX value during import: a numpy array when known at import time, else an SSA value."""

NN_DTYPES = tuple(d.numpy for d in nn.ELEMENT_TYPES)
"""The numpy dtypes of the nn element types ONNX values may take (every entry of
`nn.ELEMENT_TYPES`: f32 f64 f16, signed and unsigned 8 to 64-bit integers, bool); which
ops accept which of them is each op's `DTYPES`."""

VALUE_DTYPES = (*NN_DTYPES, *(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16)))
"""The numpy dtypes a graph input, output or run-time constant may have: NN_DTYPES and the
quantized types (int8, uint8, int16, uint16), which only the quantization ops take."""

FOLD_LIMIT_BYTES = nn.FOLD_LIMIT_BYTES
"""The largest tensor (in bytes) the importer computes at import time (1 GiB).

A value known at import time but larger than this (`ConstantOfShape([60000, 60000])`,
`Range(0, 3e9)`, an op over constants with a huge result) is not folded: the op is
kept in the graph and computes it at run time. `import_model(fold_limit_bytes=...)`
changes it for one import."""


class DynamicDim(int):
    """A `?` dim in `Importer.shape(v)`: an int (nn.DYNAMIC) that converters may pass on
    into types and ops, but whose size they may not use: arithmetic, ordering, equality
    and truth raise UnsupportedOnnxError naming the dim as dynamic."""

    def __new__(cls) -> DynamicDim:
        return super().__new__(cls, nn.DYNAMIC)

    def _refuse(self, *_: Any) -> Any:
        raise UnsupportedOnnxError(
            "this node needs the size of a dynamic (?) dim, which is known only at run time; "
            + STATIC_SHAPE_HINT
        )

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse  # type: ignore[assignment]
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _refuse  # type: ignore[assignment]
    __neg__ = __bool__ = _refuse  # type: ignore[assignment]

    def __hash__(self) -> int:
        return hash(nn.DYNAMIC)

    def __repr__(self) -> str:
        return "?"


DYNAMIC_DIM = DynamicDim()


def has_dynamic(shape: Sequence[int]) -> bool:
    """Whether a shape from `Importer.shape` has a `?` dim."""
    return any(type(d) is DynamicDim for d in shape)


def nbytes(shape: Sequence[int], dtype: Any) -> int:
    """The byte size of a tensor of `shape` and `dtype`, as an exact Python int."""
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= int(d)
    return n


@dataclass
class Node:
    """One ONNX node while it is converted: its inputs resolved, its attributes decoded."""

    proto: Any
    version: int
    """The since_version of the op's schema in effect at the model's opset."""
    inputs: list[Value | None]
    attrs: dict[str, Any]
    input_names: list[str] = field(default_factory=list)

    @property
    def op_type(self) -> str:
        return str(self.proto.op_type)

    @property
    def num_outputs(self) -> int:
        return len(self.proto.output)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def required_attr(self, name: str) -> Any:
        """An attribute the op's schema requires; a model without it is malformed."""
        value = self.attrs.get(name)
        if value is None:
            raise OnnxImportError(f"{self.op_type} needs attribute '{name}'")
        return value

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def required(self, i: int) -> Value:
        v = self.input(i)
        if v is None:
            raise OnnxImportError(f"{self.op_type} needs input #{i}")
        return v


class Importer(Protocol):
    """What converters use of the importer (`importer.Importer` is the one implementation)."""

    def static(self, node: Node, i: int, what: str) -> Array | None:
        """Input #i as a numpy array (None when absent); it must be known at import time."""
        ...

    def required_static(self, node: Node, i: int, what: str, needs: str) -> Array:
        """`static`, for an input the op cannot do without: absent, the node is malformed
        (`<op type> needs <needs>`)."""
        ...

    def shape(self, v: Value, /) -> tuple[int, ...]: ...

    def dtype(self, v: Value, /) -> np.dtype[Any]: ...

    def emit_all(self, cls: type[nn.NNOp], *operands: Value, **attrs: Any) -> list[Value]:
        """Apply an nn op: folded with its kernel when every operand is known, else emitted."""
        ...

    def emit(self, cls: type[nn.NNOp], *operands: Value, **attrs: Any) -> Value: ...

    def reshape(self, v: Value, shape: Sequence[int]) -> Value: ...

    def scalar_like(self, value: float, like: Value) -> Array: ...

    def constant(self, array: Any, /) -> SSAValue:
        """An nn.constant for a known value (a folded value that an emitted op needs)."""
        ...

    @property
    def fold_limit_bytes(self) -> int:
        """The largest value this import computes at import time (FOLD_LIMIT_BYTES by default)."""
        ...


Converter = Callable[[Importer, Node], Sequence[Value | None]]
CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of `op_types`; one op type has one
    converter (a second registration is an error, not a silent override)."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            if CONVERTERS.setdefault(op_type, fn) is not fn:
                raise ValueError(f"ONNX op type '{op_type}' already has a converter")
        return fn

    return register



def ints(v: Any) -> list[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


def string(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axis") -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise OnnxImportError(f"{what} {a} is out of range for rank {rank}")
        out.append(a % rank)
    return out


T = TypeVar("T")


def spread_over_axes(axes: Sequence[int], values: Sequence[T], fill: Sequence[T]) -> list[T]:
    """`fill` with `values[i]` put at `axes[i]`: an op's per-axis input (Resize's `scales` or
    `sizes` with an `axes` attribute) made per dimension."""
    full = list(fill)
    for a, v in zip(axes, values, strict=True):
        full[a] = v
    return full

