"""The base of every nn op (`NNOp`: verification through `infer`, builders, the custom
format) and `nn.constant`.

Every op is an IRDL operation over builtin `tensor<...>` types. Its type
relation lives in one class method, `infer(operand_types, attrs)`, which the
verifier re-runs and compares with the declared result types, and which
builders and importers call so that nobody computes result types by hand:

    y = nn.Conv2DOp.build(x, w, padding=(1, 1, 1, 1))

An op declares only its name and what is its own; the rest comes from the bases here:

    @irdl_op_definition
    class BiasAddOp(OneResultOp):            # one tensor result, `result`
        name = "nn.bias_add"
        data, bias = tensor_operands(2)      # the operands, in order
        axis = int_prop(1)                   # props.py: a property and its default
        KIND: ClassVar[str] = "broadcast"

`OneResultOp` declares the result, `DataOp` also a `data` operand, `AxisOp` also the
relation of an op whose result has the data's type. The element-type mixins
(`FloatTypes`, `NumberTypes`, `IntegerTypes`, `BoolTypes`, `AnyTypes`) set `DTYPES`
and come first: `class ReluOp(NumberTypes, UnaryOp)`.
xDSL merges the fields of the bases after the class's own, so a base may declare
operands only for subclasses that declare none. The verifier helpers (`norm_axis`,
`check_rank`, `check_len`, `check_one_of`, `check_indices`) raise the messages every
op shares.

The text format is in `format.py`, element types and property values in `types.py`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    Operand,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.nn.format import parse_constant, parse_nn_op, print_constant, print_nn_op
from byoc.dialects.nn.types import (
    ANY,
    BOOL,
    DYNAMIC,
    FLOAT,
    FLOATS,
    INDEX_TYPES,
    INTEGERS,
    NUMBERS,
    array_dense,
    check_shape,
    check_static_shape,
    element_type_of,
    from_python,
    numpy_dtype,
    shape_of,
    tensor,
    to_python,
)


def _fail(msg: str) -> VerifyException:
    return VerifyException(msg)


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of static shapes; raises VerifyException if incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise _fail(
                "operand shapes "
                + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes)
                + " are not broadcast-compatible"
            )
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def tensor_operands(n: int) -> tuple[Operand, ...]:
    """`n` tensor operand definitions, unpacked into an op's named operands in order:
    `data, weight, bias = tensor_operands(3)` (MLIR's `ins` list, in one line)."""
    return tuple(operand_def(TensorType) for _ in range(n))


def _compatible(expected: Sequence[Attribute], actual: Sequence[Attribute]) -> bool:
    """Same count, element types and ranks; dims equal wherever both are static."""
    if len(expected) != len(actual):
        return False
    for e, a in zip(expected, actual, strict=True):
        if not (isinstance(e, TensorType) and isinstance(a, TensorType)):
            return False
        if e.element_type != a.element_type or e.get_num_dims() != a.get_num_dims():
            return False
        if any(x != y and DYNAMIC not in (x, y) for x, y in zip(e.get_shape(), a.get_shape(), strict=True)):
            return False
    return True


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """`axis` counted from 0 (a negative one counts from the end); it must be in range."""
    if not -rank <= axis < max(rank, 1):
        raise _fail(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def check_rank(t: TensorType[Any], rank: int, what: str) -> tuple[int, ...]:
    """The shape of operand `t` (named `what`), which must have rank `rank`."""
    s = shape_of(t)
    if len(s) != rank:
        raise _fail(f"{what} must have rank {rank}, got {len(s)}")
    return s


def check_len(attrs: Mapping[str, Any], name: str, n: int) -> tuple[int, ...]:
    """The array property `name`, which must have `n` values."""
    v = attrs[name]
    if len(v) != n:
        raise _fail(f"'{name}' must have {n} values, got {len(v)}")
    return v


def check_one_of(attrs: Mapping[str, Any], key: str, allowed: Sequence[str]) -> str:
    """The string property `key`, which must be one of `allowed`."""
    value = attrs[key]
    if value not in allowed:
        raise _fail(f"{key} '{value}' is not one of {', '.join(allowed)}")
    return value


def check_indices(t: TensorType[Any], what: str = "indices") -> tuple[int, ...]:
    """The shape of the index operand `t`, whose element type must be i32 or i64."""
    if t.element_type not in INDEX_TYPES:
        raise _fail(f"{what} must be i32 or i64, got {t.element_type}")
    return shape_of(t)


# --------------------------------------------------------------------------
# The shared base: verification through `infer`, builders
# --------------------------------------------------------------------------


class NNOp(IRDLOperation):
    """Base of every nn op. Subclasses set `DTYPES`, `KIND` and `infer`; every nn op is pure
    (xDSL merges the traits of the base classes into each op's)."""

    traits = traits_def(Pure())

    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOAT
    """Element types the op accepts on its data operands."""
    KIND: ClassVar[str] = "opaque"
    """Pattern kind: elementwise, broadcast, injective, reduce, out-elementwise-fusable, opaque."""
    SAME_DTYPE: ClassVar[bool] = True
    """All operands and results share one element type."""

    # ---- type relation ---------------------------------------------------
    @classmethod
    def infer(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        raise NotImplementedError(f"{cls.__name__} must define infer")

    PROBES: ClassVar[tuple[int, int]] = (1031, 2053)
    """The sizes `infer_types` gives `?` dims: a result dim equal under both is static."""

    @classmethod
    def infer_types(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        """`infer`, also for operands with `?` dims (every op's `infer` assumes static shapes).

        With `?` dims, the relation runs twice, the `?` dims taken as two different sizes
        (`PROBES`); a result dim that comes out the same both times is static, one that
        differs is `?`. A relation that fails on the probe sizes (a reshape to a static
        shape, a broadcast of `?` against 5) is an error naming the dynamic dims.
        """
        if not any(DYNAMIC in t.get_shape() for t in types):
            return cls.infer(types, attrs)
        runs: list[list[TensorType[Any]]] = []
        for probe in cls.PROBES:
            probed = [
                tensor([probe if d == DYNAMIC else d for d in t.get_shape()], t.element_type)
                for t in types
            ]
            try:
                runs.append(cls.infer(probed, attrs))
            except VerifyException as e:
                shown = ", ".join(str(t) for t in types)
                raise _fail(
                    f"'{cls.name}' cannot type operands with dynamic dims ({shown}): {e} "
                    f"(with each ? taken as {probe}); give the dims static sizes"
                ) from None
        out: list[TensorType[Any]] = []
        for a, b in zip(*runs, strict=True):
            dims = [da if da == db else DYNAMIC for da, db in zip(a.get_shape(), b.get_shape(), strict=True)]
            out.append(tensor(dims, a.element_type))
        return out

    # ---- attributes -----------------------------------------------------------
    @classmethod
    def prop_defaults(cls) -> dict[str, Attribute | None]:
        cached = cls.__dict__.get("_prop_defaults_cache")
        if cached is None:
            cached = {
                name: pdef.default_value
                for name, pdef in cls.get_irdl_definition().properties.items()
            }
            cls._prop_defaults_cache = cached  # type: ignore[attr-defined]
        return cached

    @classmethod
    def python_attrs(cls, props: Mapping[str, Attribute]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, default in cls.prop_defaults().items():
            attr = props.get(name, default)
            if attr is None:
                raise _fail(f"'{cls.name}' requires the property '{name}'")
            out[name] = to_python(attr)
        return out

    @classmethod
    def properties_of(cls, attrs: Mapping[str, Any]) -> dict[str, Attribute]:
        """The properties for the Python values `attrs` (a None value: the default).

        Raises TypeError for a key that is not a property of the op."""
        defaults = cls.prop_defaults()
        props: dict[str, Attribute] = {}
        for key, value in attrs.items():
            if key not in defaults:
                raise TypeError(f"'{cls.name}' has no property '{key}'")
            if value is not None:
                props[key] = from_python(value, defaults[key])
        return props

    def attr_values(self) -> dict[str, Any]:
        """The op's properties (defaults filled in) as Python values: the kernel's kwargs."""
        return self.python_attrs(self.properties)

    # ---- building ---------------------------------------------------------------
    @classmethod
    def build(
        cls,
        *operands: SSAValue | Operation,
        attributes: Mapping[str, Attribute] | None = None,
        **attrs: Any,
    ) -> NNOp:
        """Create the op, computing its result types with `infer`."""
        values = [SSAValue.get(o) for o in operands]
        props = cls.properties_of(attrs)
        types = [v.type for v in values]
        for t in types:
            if not isinstance(t, TensorType):
                raise TypeError(f"'{cls.name}' operands must be tensors, got {t}")
        result_types = cls.infer_types(types, cls.python_attrs(props))  # type: ignore[arg-type]
        return cls.create(
            operands=values,
            result_types=result_types,
            properties=props,
            attributes=dict(attributes or {}),
        )

    # ---- verification -----------------------------------------------------------
    def verify_(self) -> None:
        types: list[TensorType[Any]] = []
        for i, operand in enumerate(self.operands):
            t = operand.type
            if not isinstance(t, TensorType):
                raise _fail(f"operand #{i} must be a ranked tensor, got {t}")
            check_shape(t)
            types.append(t)
        for t in self.result_types:
            if not isinstance(t, TensorType):
                raise _fail(f"results must be ranked tensors, got {t}")
            check_shape(t)
        self.check_dtypes(types)
        actual = list(self.result_types)
        if any(DYNAMIC in t.get_shape() for t in types):
            # `?` operands: only compatibility (rank, element type, the dims both know)
            # is checked; build() re-infers every type strictly once the shapes are known.
            try:
                expected = self.infer_types(types, self.attr_values())
            except VerifyException:
                return
            if not _compatible(expected, actual):
                exp = ", ".join(str(t) for t in expected)
                got = ", ".join(str(t) for t in actual)
                raise _fail(f"result type {got} is not compatible with the inferred type {exp}")
            return
        expected = self.infer(types, self.attr_values())
        if expected != actual:
            exp = ", ".join(str(t) for t in expected)
            got = ", ".join(str(t) for t in actual)
            raise _fail(f"result type {got} does not match the inferred type {exp}")

    @classmethod
    def check_dtypes(cls, types: Sequence[TensorType[Any]]) -> None:
        if not types:
            return
        first = types[0].element_type
        if first not in cls.DTYPES:
            allowed = ", ".join(str(d) for d in cls.DTYPES)
            raise _fail(f"element type {first} is not supported (expected one of {allowed})")
        if cls.SAME_DTYPE:
            for t in types[1:]:
                if t.element_type != first:
                    raise _fail(
                        f"all operands must have the same element type, got {first} and {t.element_type}"
                    )

    @classmethod
    def check_call(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        """What `verify_` checks, for operands of `types` and Python attribute values
        `attrs` (a host-plan step read from an artifact): each value has its property's
        kind, the element types are accepted and the type relation holds. Returns the
        result types; raises VerifyException otherwise."""
        defaults = cls.prop_defaults()
        props: dict[str, Attribute] = {}
        for key, value in attrs.items():
            if key not in defaults:
                raise _fail(f"'{cls.name}' has no property '{key}'")
            like = defaults[key]
            try:
                attr = from_python(value, like)
            except (TypeError, ValueError, OverflowError):
                raise _fail(f"'{cls.name}': property '{key}' cannot be {value!r}") from None
            if like is not None and (
                type(attr) is not type(like)
                or (isinstance(like, IntegerAttr) and isinstance(attr, IntegerAttr) and attr.type != like.type)
            ):
                raise _fail(f"'{cls.name}': property '{key}' must be like {like}, got {value!r}")
            props[key] = attr
        cls.check_dtypes(types)
        return cls.infer(types, cls.python_attrs(props))

    # ---- custom format (format.py) ----------------------------------------------
    def print(self, printer: Printer) -> None:
        print_nn_op(self, self.prop_defaults(), printer)

    @classmethod
    def parse(cls, parser: Parser) -> NNOp:
        return parse_nn_op(cls, cls.prop_defaults(), parser)


# ---- element types, mixed in ahead of an op's base: class ReluOp(NumberTypes, UnaryOp) ----


class FloatTypes(NNOp):
    """The op takes float tensors (f32, f64, f16)."""

    DTYPES: ClassVar[tuple[Attribute, ...]] = FLOATS


class NumberTypes(NNOp):
    """The op takes tensors of any number type (floats and integers, not bool)."""

    DTYPES: ClassVar[tuple[Attribute, ...]] = NUMBERS


class IntegerTypes(NNOp):
    """The op takes integer tensors."""

    DTYPES: ClassVar[tuple[Attribute, ...]] = INTEGERS


class BoolTypes(NNOp):
    """The op takes i1 (bool) tensors."""

    DTYPES: ClassVar[tuple[Attribute, ...]] = BOOL


class AnyTypes(NNOp):
    """The op takes tensors of every element type (nn.ANY)."""

    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY


# ---- shared fields and type relations ------------------------------------------------


class OneResultOp(NNOp):
    """An op with one tensor result, `result`; subclasses add operands and properties."""

    result = result_def(TensorType)


class DataOp(OneResultOp):
    """An op of one tensor operand, `data`, and one result; subclasses add properties."""

    data = operand_def(TensorType)


class AxisOp(DataOp):
    """A data op whose result has the data's type and whose `axis` property (declared by
    each subclass, with its own default) must be in range."""

    @classmethod
    def infer(
        cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]
    ) -> list[TensorType[Any]]:
        norm_axis(attrs["axis"], len(shape_of(types[0])))
        return [types[0]]


# --------------------------------------------------------------------------
# Constants: payload kept as bytes (numpy views it without copying)
# --------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(NNOp):
    """A dense tensor constant.

        %w = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
        %w = nn.constant dense<"0x0000803F..."> : tensor<64x3x3x3xf32>

    The payload is held as raw bytes; `ndarray()` views it with numpy (no copy,
    no re-parsing of text). More than HEX_CONSTANTS_LARGER_THAN elements print as hex.
    """

    name = "nn.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(ConstantLike(), Pure())
    KIND: ClassVar[str] = "opaque"
    DTYPES: ClassVar[tuple[Attribute, ...]] = ANY

    @classmethod
    def infer(cls, types: Sequence[TensorType[Any]], attrs: Mapping[str, Any]):
        raise AssertionError("nn.constant has no operands; use from_array")

    @staticmethod
    def from_array(array: Any, attributes: Mapping[str, Attribute] | None = None) -> ConstantOp:
        arr = np.asarray(array, order="C")  # ascontiguousarray would make 0-d arrays 1-d
        elt = element_type_of(arr.dtype)
        ty = tensor(arr.shape, elt)
        dense = array_dense(arr, ty)
        return ConstantOp.create(
            properties={"value": dense}, result_types=[ty], attributes=dict(attributes or {})
        )

    def ndarray(self) -> np.ndarray[Any, Any]:
        """The payload as a read-only numpy array (a view of the stored bytes)."""
        ty = self.result.type
        assert isinstance(ty, TensorType)
        dt = numpy_dtype(ty.element_type)
        return np.frombuffer(self.value.data.data, dtype=dt).reshape(shape_of(ty))

    def attr_values(self) -> dict[str, Any]:
        return {"value": self.ndarray()}

    def verify_(self) -> None:
        ty = self.result.type
        if not isinstance(ty, TensorType):
            raise _fail("result must be a ranked tensor")
        if ty.element_type not in self.DTYPES:
            raise _fail(f"element type {ty.element_type} is not supported")
        check_static_shape(ty)
        if self.value.type != ty:
            raise _fail(f"value type {self.value.type} does not match result type {ty}")
        n = math.prod(shape_of(ty))
        if len(self.value.data.data) != n * numpy_dtype(ty.element_type).itemsize:
            raise _fail(f"payload holds {len(self.value.data.data)} bytes, expected {n} elements")

    def print(self, printer: Printer) -> None:
        print_constant(self, self.ndarray(), self.value.data.data, printer)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        array, attributes = parse_constant(parser)
        return cls.from_array(array, attributes)


OPS: tuple[type[NNOp], ...] = (
    ConstantOp,
)
"""The ops of this module, registered in the nn dialect."""
