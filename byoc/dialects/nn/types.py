"""Element types, tensor types and property values of the tensor dialects.

`ELEMENT_TYPES` is the one table of element types byoc knows: the builtin
type, the numpy dtype and the short name (`f32`) that the ExampleJSON text and
`nn.cast` use. Every dtype conversion goes through it.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException


@dataclass(frozen=True)
class DType:
    """One element type: its builtin type, numpy dtype and short name."""

    name: str
    element_type: Attribute
    numpy: np.dtype[Any]


ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16 = IntegerType(16, Signedness.UNSIGNED)
ui32 = IntegerType(32, Signedness.UNSIGNED)
ui64 = IntegerType(64, Signedness.UNSIGNED)

ELEMENT_TYPES: tuple[DType, ...] = (
    DType("f32", f32, np.dtype(np.float32)),
    DType("f64", f64, np.dtype(np.float64)),
    DType("f16", f16, np.dtype(np.float16)),
    DType("i32", i32, np.dtype(np.int32)),
    DType("i64", i64, np.dtype(np.int64)),
    DType("i8", i8, np.dtype(np.int8)),
    DType("i16", i16, np.dtype(np.int16)),
    DType("ui8", ui8, np.dtype(np.uint8)),
    DType("ui16", ui16, np.dtype(np.uint16)),
    DType("ui32", ui32, np.dtype(np.uint32)),
    DType("ui64", ui64, np.dtype(np.uint64)),
    DType("i1", IntegerType(1), np.dtype(np.bool_)),
)
"""Every element type a tensor of the nn, examplejson and c dialects may hold.

Signless `iN` is signed (ONNX INTn), `uiN` unsigned (ONNX UINTn), `i1` bool. Which
ops accept which types is each op's `DTYPES`; the table only names them."""

_BY_TYPE: dict[Attribute, DType] = {d.element_type: d for d in ELEMENT_TYPES}
_BY_NAME: dict[str, DType] = {d.name: d for d in ELEMENT_TYPES}

DTYPE_NAMES: dict[Attribute, str] = {d.element_type: d.name for d in ELEMENT_TYPES}
"""Element type -> short name (f32, f64, i32, i64, i1)."""

FLOAT: tuple[Attribute, ...] = (f32,)
"""Element types of ops defined on floats only."""
NUMERIC: tuple[Attribute, ...] = (f32, i32, i64)
"""Element types of ops that also make sense on integers."""
ALL_TYPES: tuple[Attribute, ...] = tuple(d.element_type for d in ELEMENT_TYPES)
"""Every element type of the table: data-movement ops (reshape, gather, pad...) take them all."""


def is_known_element_type(element_type: Attribute) -> bool:
    """Whether `element_type` is in the table (has a numpy dtype)."""
    return element_type in _BY_TYPE


def numpy_dtype(element_type: Attribute) -> np.dtype[Any]:
    """The numpy dtype of a builtin element type (f32, f64, i32, i64, i1)."""
    entry = _BY_TYPE.get(element_type)
    if entry is None:
        raise VerifyException(f"unsupported element type {element_type}")
    return entry.numpy


def element_type_of(dtype: Any) -> Attribute:
    """The builtin element type of a numpy dtype."""
    dt = np.dtype(dtype)
    for entry in ELEMENT_TYPES:
        if entry.numpy == dt:
            return entry.element_type
    raise ValueError(f"unsupported numpy dtype {dt}")


def element_type_named(name: str) -> Attribute | None:
    """The builtin element type of a short name (`f32`), or None if there is none."""
    entry = _BY_NAME.get(name)
    return None if entry is None else entry.element_type


def dense_value(
    payload: bytes | list[float], ty: Attribute, op_name: str
) -> DenseIntOrFPElementsAttr:
    """The value of constant op `op_name` from its `parse_dense` payload and its type: raw
    bytes as given, or the values (one value splats); ValueError if the two disagree."""
    if not isinstance(ty, TensorType):
        raise ValueError(f"{op_name} needs a tensor type, got {ty}")
    try:
        dt = numpy_dtype(ty.element_type)
    except VerifyException as e:
        raise ValueError(str(e)) from None
    if isinstance(payload, bytes):
        return DenseIntOrFPElementsAttr(ty, BytesAttr(payload))
    n = math.prod(shape_of(ty))
    values = payload * n if len(payload) == 1 and n != 1 else payload
    if len(values) != n:
        raise ValueError(f"{len(values)} values given, {ty} needs {n}")
    return DenseIntOrFPElementsAttr(ty, BytesAttr(np.asarray(values, dtype=dt).tobytes()))


def dense_of(array: Any) -> DenseIntOrFPElementsAttr:
    """A constant's value holding `array` (its raw little-endian bytes, C order)."""
    arr = np.ascontiguousarray(np.asarray(array))
    return array_dense(arr, tensor(arr.shape, element_type_of(arr.dtype)))


def array_dense(arr: np.ndarray[Any, Any], ty: TensorType[Any]) -> DenseIntOrFPElementsAttr:
    """The dense value of a C-contiguous array `arr` whose type is `ty`, built without
    xDSL's verification of its parameters, which costs two thirds of making an
    `nn.constant`: `ty` is a tensor type of a table element type (`tensor`,
    `element_type_of`) and the payload is the array's own bytes, so the checks (the
    parameters' kinds; a 0-d value holds one element) hold by construction. The value
    equals, and hashes as, one built by `DenseIntOrFPElementsAttr(ty, BytesAttr(...))`
    (tests/dialects/test_nn_types.py)."""
    attr = DenseIntOrFPElementsAttr.__new__(DenseIntOrFPElementsAttr)
    object.__setattr__(attr, "type", ty)
    object.__setattr__(attr, "data", BytesAttr(payload_of(arr)))
    return attr


def payload_of(arr: np.ndarray[Any, Any]) -> bytes:
    """The bytes of `arr` in C order: the `bytes` object it views when it spans all of one
    (`np.frombuffer` over an ONNX tensor's raw data, reshaped: no copy; bytes are
    immutable), else `arr.tobytes()`. A copy of a model's weights costs about a
    millisecond per megabyte, most of it faulting in fresh pages."""
    base = arr.base
    while isinstance(base, np.ndarray):
        base = base.base
    if (
        type(base) is bytes
        and len(base) == arr.nbytes
        and arr.flags.c_contiguous
        and arr.dtype.isnative
    ):  # a view lies inside its base: one as long as the bytes, contiguous, starts at them
        return base
    return arr.tobytes()


def array_of(value: DenseIntOrFPElementsAttr) -> np.ndarray[Any, Any]:
    """A constant's value as a read-only numpy array (a view of its bytes)."""
    ty = value.type
    assert isinstance(ty, TensorType)
    return np.frombuffer(value.data.data, dtype=numpy_dtype(ty.element_type)).reshape(shape_of(ty))


# ---- tensor types --------------------------------------------------------------


DYNAMIC = -(2**63)
"""A dynamic dim (`?` in `tensor<?x4xf32>`): xDSL's DYNAMIC_INDEX. Only this negative value
is a legal dim; shape helpers compare against it, never against -1."""


def tensor(shape: Sequence[int], element_type: Attribute = f32) -> TensorType[Any]:
    """The tensor type; one shared instance per shape and element type (types are immutable,
    and building one costs some 30 us, mostly xDSL verifying its parameters)."""
    return _tensor(tuple([int(d) for d in shape]), element_type)


@functools.lru_cache(maxsize=8192)
def _tensor(shape: tuple[int, ...], element_type: Attribute) -> TensorType[Any]:
    return TensorType(element_type, [_dim(d) for d in shape])


@functools.lru_cache(maxsize=4096)
def _dim(d: int) -> IntAttr:
    """One shared `IntAttr` per dim value (attributes are immutable): building and verifying
    the dims' `IntAttr`s is about a third of the CPU time of a new tensor type."""
    return IntAttr(d)


def is_dynamic(t: Attribute) -> bool:
    """Whether `t` is a tensor type with at least one `?` dim."""
    return isinstance(t, TensorType) and any(d == DYNAMIC for d in t.get_shape())


def shape_text(shape: Sequence[int]) -> str:
    """`?x3x4`: a shape as a tensor type spells it (`?` for a dynamic dim)."""
    return "x".join("?" if d == DYNAMIC else str(d) for d in shape)


MAX_TENSOR_BYTES = 2**63 - 1
"""The largest byte size of a tensor: every dim, element count and byte offset fits int64."""


FOLD_LIMIT_BYTES = 1 << 30
"""The largest value (1 GiB) a stage computes ahead of run time: the ONNX importer's
folding and lower-to-c's folding of ops over constants. A larger value stays an op."""


def nbytes_of(t: TensorType[Any]) -> int:
    """The byte size of a tensor type, as an exact Python int."""
    n = numpy_dtype(t.element_type).itemsize
    for d in t.get_shape():
        n *= d
    return n


def check_static_shape(t: TensorType[Any], *, allow_dynamic: bool = False) -> None:
    """Raise VerifyException unless `t` has a static shape whose byte size fits int64.

    Every dim is a non-negative integer (no negative dim; `?` only with
    `allow_dynamic`) and the element count times the element size is at most
    2**63 - 1 bytes (counted over the static dims), so the C code (int64 loop
    bounds and offsets), numpy and the runtime can all represent the tensor.
    """
    shape = t.get_shape()
    if allow_dynamic and DYNAMIC in shape:
        shape = tuple(d for d in shape if d != DYNAMIC)
    for d in shape:
        if d < 0:
            dims = "x".join("?" if d in (-1, -(2**63)) else str(d) for d in shape)
            raise VerifyException(
                f"tensor<{dims}x{t.element_type}> must have a static, non-negative shape"
            )
        if d > MAX_TENSOR_BYTES:
            raise VerifyException(f"dimension {d} of {t} does not fit int64")
    entry = _BY_TYPE.get(t.element_type)
    size = entry.numpy.itemsize if entry is not None else 8
    count = 1
    for d in shape:
        count *= d
    if count * size > MAX_TENSOR_BYTES:
        raise VerifyException(
            f"{t} has {count} elements of {size} bytes: its byte size does not fit int64"
        )


def check_value_types(root: Operation) -> None:
    """`check_shape` on the type of every value under `root` (results, block arguments,
    function signatures): a VerifyException naming the op whose type does not fit int64.
    The nn ops check their own; this covers the rest (a `func.func` argument)."""
    for op in root.walk():
        types: list[Attribute] = [r.type for r in op.results]
        types += [a.type for region in op.regions for block in region.blocks for a in block.args]
        fn = op.properties.get("function_type")
        if isinstance(fn, FunctionType):
            types += [*fn.inputs.data, *fn.outputs.data]
        for t in types:
            if isinstance(t, TensorType):
                try:
                    check_shape(t)
                except VerifyException as e:
                    name = op.properties.get("sym_name")
                    what = f"'{op.name}' @{name.data}" if isinstance(name, StringAttr) else f"'{op.name}'"
                    raise VerifyException(f"{what}: {e}") from None


def machine_memory_bytes() -> int:
    """The most bytes one value can take here: the machine's physical memory, or the
    process's address-space limit (RLIMIT_AS) when that is smaller."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not POSIX: only the int64 bound
        total = MAX_TENSOR_BYTES
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            total = min(total, soft)
    except (ImportError, OSError, ValueError):
        pass
    return max(1, total)


def check_shape(t: TensorType[Any]) -> None:
    """`check_static_shape` that also allows `?` dims: what the nn verifier checks."""
    check_static_shape(t, allow_dynamic=True)


def shape_of(t: Attribute) -> tuple[int, ...]:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


# ---- property values <-> Python values ------------------------------------------


def ints(*values: int) -> DenseArrayBase[Any]:
    """An array<i64: ...> property value; one shared instance per tuple of Python ints
    (attributes are immutable, and building one costs some 10 us, mostly xDSL verifying
    it: an importer converts the same strides and pads for op after op)."""
    if all(type(v) is int for v in values):
        return _ints(values)
    return DenseArrayBase.from_list(i64, list(values))


@functools.lru_cache(maxsize=4096)
def _ints(values: tuple[int, ...]) -> DenseArrayBase[Any]:
    return DenseArrayBase.from_list(i64, list(values))


def floats(*values: float) -> DenseArrayBase[Any]:
    """An array<f64: ...> property value."""
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def int_attr(v: int) -> IntegerAttr[Any]:
    """An i64 property value; one shared instance per Python int (as `ints`)."""
    return _int_attr(v) if type(v) is int else IntegerAttr(v, i64)


@functools.lru_cache(maxsize=4096)
def _int_attr(v: int) -> IntegerAttr[Any]:
    return IntegerAttr(v, i64)


def float_attr(v: float) -> FloatAttr[Any]:
    """An f64 property value."""
    return FloatAttr(v, f64)


_I1 = IntegerType(1)


def to_python(attr: Attribute) -> Any:
    """Convert a property value to the Python value kernels receive."""
    if isinstance(attr, DenseArrayBase):
        if not isinstance(attr.elt_type, IntegerType):  # an f64 array (nn.resize scales)
            return tuple(float(v) for v in attr.get_values())
        return tuple(int(v) for v in attr.get_values())
    if isinstance(attr, IntegerAttr):
        if attr.type == _I1:
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def from_python(value: Any, like: Attribute | None) -> Attribute:
    """Convert a Python value to a property value shaped like `like` (its default)."""
    if isinstance(value, Attribute):
        return value
    if isinstance(like, DenseArrayBase) and like.elt_type in (f32, f64):
        return floats(*[float(v) for v in value])
    if isinstance(like, DenseArrayBase) or isinstance(value, tuple | list):
        return ints(*[int(v) for v in value])
    if isinstance(value, bool) or (isinstance(like, IntegerAttr) and like.type == IntegerType(1)):
        return BoolAttr.from_bool(bool(value))
    if isinstance(like, FloatAttr) or isinstance(value, float):
        return float_attr(float(value))
    if isinstance(value, int):
        return int_attr(value)
    if isinstance(value, str):
        return StringAttr(value)
    raise TypeError(f"cannot convert {value!r} to an attribute")


# ---- wider element-type groups ------------------
FLOATS: tuple[Attribute, ...] = (f32, f64, f16)
"""Every float element type."""
SIGNED_INTS: tuple[Attribute, ...] = (i8, i16, i32, i64)
UNSIGNED_INTS: tuple[Attribute, ...] = (ui8, ui16, ui32, ui64)
INTEGERS: tuple[Attribute, ...] = SIGNED_INTS + UNSIGNED_INTS
"""Every integer element type but bool."""
BOOL: tuple[Attribute, ...] = (IntegerType(1),)
INDEX_TYPES: tuple[Attribute, ...] = (i32, i64)
"""Element types of index operands (indices, batch indices, sequence lengths)."""
NUMBERS: tuple[Attribute, ...] = FLOATS + INTEGERS
"""Every element type but bool."""
ANY: tuple[Attribute, ...] = NUMBERS + BOOL
"""Every element type of ELEMENT_TYPES: ops that only move data."""
