"""Types of the `c` dialect (`!c.ptr`, `!c.opaque`), C identifiers and property helpers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
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
    on every call, before the cache is consulted (a VerifyException, as `IntegerAttr`)."""
    if isinstance(type_, IntegerType):
        type_.verify_value(v)
    return _int_attr(v, type_)


@lru_cache(maxsize=8192)
def _int_attr(v: int, type_: Attribute) -> IntegerAttr[Any]:
    return IntegerAttr(v, type_)  # type: ignore[arg-type]


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
    builder, which normalises every argument (about 10 us an op); neither checks the op:
    `verify` does, as for a parsed op."""
    Operation.__init__(
        op, operands=operands, result_types=result_types, properties=properties or {}, regions=regions
    )


def float32_repr(v: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    return str(np.float32(v))


def global_array(value: DenseIntOrFPElementsAttr[Any]) -> np.ndarray[Any, Any]:
    """The payload of a dense attribute as a read-only numpy array (no copy)."""
    ty = value.type
    assert isinstance(ty, TensorType)
    dt = numpy_dtype(ty.element_type)
    return np.frombuffer(value.data.data, dtype=dt).reshape(tuple(ty.get_shape()))

