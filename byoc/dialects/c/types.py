"""Types of the `c` dialect (`!c.ptr`, `!c.opaque`), C identifiers and property helpers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    UNKNOWN_LOC,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    OpResult,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
    Use,
)
from xdsl.ir.core import SSAValues
from xdsl.irdl import (
    IRDLOperation,
    OptionalDef,
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.nn.types import numpy_dtype

index = IndexType()

C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex
    _Generic _Imaginary _Noreturn _Static_assert _Thread_local bool true false NULL""".split()
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_c_identifier(name: str) -> bool:
    """A name C accepts for a function, global or variable (not a keyword)."""
    return bool(_IDENT.match(name)) and name not in C_KEYWORDS


def check_symbol(name: str, what: str) -> None:
    if not is_c_identifier(name):
        raise VerifyException(f"{what} name '{name}' is not a valid C identifier")


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """`!c.ptr<T>` is `T*`; `!c.ptr<T, const>` is `const T*`."""

    name = "c.ptr"
    pointee: Attribute
    is_const: IntAttr

    def __init__(self, pointee: Attribute, is_const: bool = False):
        super().__init__(pointee, IntAttr(int(is_const)))

    @property
    def const(self) -> bool:
        return bool(self.is_const.data)

    def verify(self) -> None:
        if not isinstance(self.pointee, TypeAttribute):
            raise VerifyException(f"!c.ptr must point to a type, got {self.pointee}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pointee = parser.parse_type()
            is_const = 0
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("const")
                is_const = 1
        return (pointee, IntAttr(is_const))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.pointee)
            if self.const:
                printer.print_string(", const")


@irdl_attr_definition
class OpaqueType(ParametrizedAttribute, TypeAttribute):
    """A C type spelled verbatim: `!c.opaque<"DLTensor">`."""

    name = "c.opaque"
    spelling: StringAttr

    def __init__(self, spelling: str):
        super().__init__(StringAttr(spelling))

    def verify(self) -> None:
        if not self.spelling.data or self.spelling.data.endswith("*"):
            raise VerifyException(
                "!c.opaque needs a non-empty type name without '*' (use !c.ptr for pointers)"
            )


DLTENSOR = OpaqueType("DLTensor")
DLTENSOR_PTR = PtrType(DLTENSOR)
VOID = OpaqueType("void")


def ptr(element: Attribute, const: bool = False) -> PtrType:
    return PtrType(element, const)


def int_prop(op: IRDLOperation, name: str) -> int:
    attr = op.properties[name]
    assert isinstance(attr, IntegerAttr)
    return int(attr.value.data)


def int_attr(v: int, type_: Attribute) -> IntegerAttr[Any]:
    """`IntegerAttr(v, type_)`, made once per value and type: attributes are immutable, and
    a lowering writes the same sizes and indices thousands of times. The range is checked
    on every call, before the cache is consulted (a VerifyException, as `IntegerAttr`), so
    what the cache holds never decides whether a value is accepted."""
    if isinstance(type_, IntegerType):
        type_.verify_value(v)
    return _int_attr(v, type_)


@lru_cache(maxsize=8192)
def _int_attr(v: int, type_: Attribute) -> IntegerAttr[Any]:
    return IntegerAttr(v, type_)  # type: ignore[arg-type]


@lru_cache(maxsize=8192)
def symbol_ref(name: str) -> SymbolRefAttr:
    """`SymbolRefAttr(name)`, made once per name: a global's address, its bind and its check
    name it three times."""
    return SymbolRefAttr(name)


def i64_attr(v: int) -> IntegerAttr[Any]:
    return int_attr(v, i64)


def init_op(
    op: IRDLOperation,
    *,
    operands: Sequence[SSAValue] = (),
    result_types: Sequence[Attribute] = (),
    properties: dict[str, Attribute] | None = None,
    regions: Sequence[Region] = (),
) -> None:
    """Initialise `op` as `Operation.create` does, from its fields in their final form: one
    SSA value per operand (a variadic operand's values in order), one type per result, no
    `None` property. The constructors of the `c` ops use it instead of IRDL's generic
    builder, which normalises every argument (about 10 us an op), and instead of
    `Operation.__init__`, whose setters re-check what is final here: the fields are set as
    `Operation.__init__` sets them (tests/dialects/test_c_builders.py compares the two),
    in half its time. Neither checks the op: `verify` does, as for a parsed op."""
    if operands:
        values = SSAValues(operands)
        uses = tuple([Use(op, i) for i in range(len(values))])
        for value, use in zip(values, uses, strict=True):
            value.add_use(use)
        op._operands = values  # pyright: ignore[reportPrivateUsage]
        op._operand_uses = uses  # pyright: ignore[reportPrivateUsage]
    else:
        op._operands = _NO_VALUES  # pyright: ignore[reportPrivateUsage]
        op._operand_uses = ()  # pyright: ignore[reportPrivateUsage]
    op.results = (
        SSAValues([OpResult(t, op, i) for i, t in enumerate(result_types)]) if result_types else _NO_VALUES
    )
    op.properties = dict(properties) if properties else {}
    op.attributes = {}
    op.location = UNKNOWN_LOC
    op._successors = ()  # pyright: ignore[reportPrivateUsage]
    op._successor_uses = ()  # pyright: ignore[reportPrivateUsage]
    op.regions = ()
    for region in regions:
        op.add_region(region)
    props, attrs = _defaults(type(op))
    for name, value in props:
        op.properties.setdefault(name, value)
    for name, value in attrs:
        op.attributes.setdefault(name, value)


_NO_VALUES: SSAValues[Any] = SSAValues()
"""No operands, no results (immutable: shared, as `Operation`'s field default is)."""


@cache
def _defaults(
    cls: type[IRDLOperation],
) -> tuple[tuple[tuple[str, Attribute], ...], tuple[tuple[str, Attribute], ...]]:
    """The default properties and attributes `IRDLOperation.__post_init__` fills in for `cls`."""
    op_def = cls.get_irdl_definition()

    def of(defs: Any) -> tuple[tuple[str, Attribute], ...]:
        return tuple(
            (name, d.default_value)
            for name, d in defs.items()
            if not isinstance(d, OptionalDef) and d.default_value is not None
        )

    return of(op_def.properties), of(op_def.attributes)


def float32_repr(v: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    return str(np.float32(v))


def global_array(value: DenseIntOrFPElementsAttr[Any]) -> np.ndarray[Any, Any]:
    """The payload of a dense attribute as a read-only numpy array (no copy)."""
    ty = value.type
    assert isinstance(ty, TensorType)
    dt = numpy_dtype(ty.element_type)
    return np.frombuffer(value.data.data, dtype=dt).reshape(tuple(ty.get_shape()))

