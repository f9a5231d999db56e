"""The `c` dialect: a C translation unit as IR, what `lower-to-c` produces and `-t c` prints.

Modelled on MLIR's EmitC (`emitc.include`, `emitc.func`, `emitc.global`,
`emitc.call`/`call_opaque`, `emitc.for`, the arithmetic and comparison ops,
`emitc.verbatim`), plus the few ops byoc's ABI needs (DLTensor checks, the
per-thread workspace). One `c.module` holds the whole translation unit:

    c.module {
      c.include "byoc_runtime.h"
      c.global @w = dense<[1.0, 2.0]> : tensor<2xf32>
      c.func static noalias @k(%in0: !c.ptr<f32, const>, %out0: !c.ptr<f32>) {
        c.for %i = 0 to 100 {
          %a = c.load %in0[%i] : !c.ptr<f32, const>
          %b = c.add %a, %a : f32
          c.store %b, %out0[%i] : !c.ptr<f32>
        }
        c.return
      }
    }

Types are builtin scalars (f32, f64, i1, i8, i32, i64, index = int64_t),
`!c.ptr<T>` / `!c.ptr<T, const>` and `!c.opaque<"DLTensor">`. As in EmitC,
the dialect accepts any builtin type; the emitter rejects the ones C cannot
spell (f16, ...) with the op's location. Signed integer `c.add`/`sub`/`mul`/
`neg` wrap modulo 2^N (the emitter computes them in unsigned arithmetic), so
the generated C has no signed-overflow UB.

Ops that can fail at run time (`c.check_*`, `c.workspace`) return -1 from
the enclosing function, which must therefore return i32; the message is
recorded for `byoc_last_error()`.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.constraints import VarConstraint
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from byoc.printer import elides_constant

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


def _check_symbol(name: str, what: str) -> None:
    if not is_c_identifier(name):
        raise VerifyException(f"{what} name '{name}' is not a valid C identifier")


# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _enclosing_func(op: Operation) -> FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, FuncOp):
        parent = parent.parent_op()
    return parent


def _check_fallible(op: Operation) -> None:
    """Ops that may fail return -1 from their function: it must return i32."""
    func = _enclosing_func(op)
    if func is None:
        raise VerifyException(f"'{op.name}' must be inside a c.func")
    outputs = func.function_type.outputs.data
    if tuple(outputs) != (i32,):
        raise VerifyException(
            f"can fail, so its function '@{func.sym_name.data}' must return i32"
        )


def _int_prop(op: IRDLOperation, name: str) -> int:
    attr = op.properties[name]
    assert isinstance(attr, IntegerAttr)
    return int(attr.value.data)


def _i64(v: int) -> IntegerAttr[Any]:
    return IntegerAttr(v, i64)


def float32_repr(v: float) -> str:
    """The shortest decimal that reads back as the same float32."""
    return str(np.float32(v))


def _print_scalar(printer: Printer, value: IntegerAttr[Any] | FloatAttr[Any]) -> None:
    """Print a literal exactly; non-finite floats as their bit pattern (as MLIR does)."""
    if isinstance(value, FloatAttr):
        v = float(value.value.data)
        if not math.isfinite(v):
            width = value.type.bitwidth  # type: ignore[union-attr]
            dt = np.float32 if width == 32 else np.float64
            bits = np.array([v], dtype=dt).view(np.uint32 if width == 32 else np.uint64)[0]
            printer.print_string(f"0x{int(bits):X}")
        elif value.type == f32:
            text = float32_repr(v)
            printer.print_string(text if ("." in text or "e" in text) else text + ".0")
        else:
            printer.print_string(repr(v))
    else:
        printer.print_string(str(int(value.value.data)))


# --------------------------------------------------------------------------
# Translation unit, includes, globals
# --------------------------------------------------------------------------


@irdl_op_definition
class ModuleOp(IRDLOperation):
    """One C translation unit: includes, globals and functions, in emission order."""

    name = "c.module"
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolTable(), IsolatedFromAbove())

    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, ops: Sequence[Operation] = ()):
        super().__init__(regions=[Region(Block(ops))])

    @property
    def ops(self):
        return self.body.block.ops


@irdl_op_definition
class IncludeOp(IRDLOperation):
    """`c.include "byoc_runtime.h"` (quoted) or `c.include <"math.h">` (system header)."""

    name = "c.include"
    include = prop_def(StringAttr)
    is_standard_include = opt_prop_def(UnitAttr)
    traits = traits_def(HasParent(ModuleOp))

    def __init__(self, include: str, standard: bool = False):
        super().__init__(
            properties={
                "include": StringAttr(include),
                "is_standard_include": UnitAttr() if standard else None,
            }
        )

    def verify_(self) -> None:
        if not self.include.data or any(c in self.include.data for c in '"<>\n'):
            raise VerifyException(f"invalid header name '{self.include.data}'")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.is_standard_include is not None:
            printer.print_string("<")
            printer.print_string_literal(self.include.data)
            printer.print_string(">")
        else:
            printer.print_string_literal(self.include.data)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> IncludeOp:
        standard = parser.parse_optional_punctuation("<") is not None
        name = parser.parse_str_literal("header name")
        if standard:
            parser.parse_punctuation(">")
        op = IncludeOp(name, standard)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


def _print_dense(printer: Printer, value: DenseIntOrFPElementsAttr[Any]) -> None:
    ty = value.type
    assert isinstance(ty, TensorType)
    n = math.prod(ty.get_shape())
    from byoc.dialects import nn

    if elides_constant(printer, n):
        printer.print_string("dense_resource<__elided__>")
    elif n > nn.HEX_CONSTANTS_LARGER_THAN:
        printer.print_string('dense<"0x' + value.data.data.hex().upper() + '">')
    else:
        arr = global_array(value)
        vals = arr.reshape(-1).tolist()
        if arr.dtype.kind == "f":
            body = ", ".join(
                float32_repr(v) if arr.dtype == np.float32 else repr(float(v)) for v in vals
            )
            if not all(math.isfinite(v) for v in vals):
                body = None
        else:
            body = ", ".join(str(int(v)) for v in vals)
        if body is None:
            printer.print_string('dense<"0x' + value.data.data.hex().upper() + '">')
        else:
            printer.print_string(f"dense<[{body}]>")
    printer.print_string(" : ")
    printer.print_attribute(ty)


def global_array(value: DenseIntOrFPElementsAttr[Any]) -> np.ndarray[Any, Any]:
    """The payload of a dense attribute as a read-only numpy array (no copy)."""
    from byoc.dialects import nn

    ty = value.type
    assert isinstance(ty, TensorType)
    dt = nn.numpy_dtype(ty.element_type)
    return np.frombuffer(value.data.data, dtype=dt).reshape(tuple(ty.get_shape()))


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """A constant array of the translation unit.

        c.global @w = dense<[1.0, 2.0]> : tensor<2xf32>            // static const float w[2] = {...};
        c.global @big init 0 = dense<"0x..."> : tensor<1024x1024xf32>

    With `init N` the data is not printed into the C text: the global is a
    `static const T*` that the library's init entry point binds to the N-th
    array it is handed at load time (the payload stays in the IR for the runtime).
    """

    name = "c.global"
    sym_name = prop_def(SymbolNameConstraint())
    value = prop_def(DenseIntOrFPElementsAttr)
    init_index = opt_prop_def(IntegerAttr)
    traits = traits_def(SymbolOpInterface(), HasParent(ModuleOp))

    def __init__(self, name: str, value: DenseIntOrFPElementsAttr[Any], init_index: int | None = None):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "value": value,
                "init_index": None if init_index is None else _i64(init_index),
            }
        )

    @property
    def tensor_type(self) -> TensorType[Any]:
        ty = self.value.type
        assert isinstance(ty, TensorType)
        return ty

    @property
    def element_type(self) -> Attribute:
        return self.tensor_type.element_type

    def array(self) -> np.ndarray[Any, Any]:
        return global_array(self.value)

    def verify_(self) -> None:
        _check_symbol(self.sym_name.data, "global")
        if self.init_index is not None and self.init_index.value.data < 0:
            raise VerifyException("init index must be non-negative")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.init_index is not None:
            printer.print_string(f" init {self.init_index.value.data}")
        printer.print_string(" = ")
        _print_dense(printer, self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> GlobalOp:
        name = parser.parse_symbol_name().data
        init = None
        if parser.parse_optional_keyword("init") is not None:
            init = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation("=")
        pos = parser.pos
        if parser.parse_optional_keyword("dense_resource") is not None:
            parser.raise_error(
                "an elided constant (dense_resource<__elided__>) cannot be read back",
                pos,
                parser.pos,
            )
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr) or not isinstance(value.type, TensorType):
            parser.raise_error("c.global expects a dense tensor attribute", pos, parser.pos)
        op = GlobalOp(name, value, init)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


# --------------------------------------------------------------------------
# Functions and calls
# --------------------------------------------------------------------------

SPECIFIERS = ("static", "inline", "noalias")
"""`static`/`inline` as in C; `noalias` declares every pointer parameter `restrict`
(the caller promises the buffers do not overlap where one is written)."""


@irdl_op_definition
class FuncOp(IRDLOperation):
    """A C function. Without `static` it is exported from the library.

        c.func static noalias @k(%in0: !c.ptr<f32, const>, %out0: !c.ptr<f32>) { ... }
        c.func @entry(%args: !c.ptr<!c.ptr<!c.opaque<"DLTensor">>>, %n: i32) -> i32 { ... }

    An empty body declares a function defined elsewhere (a prototype).
    """

    name = "c.func"
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    specifiers = opt_prop_def(ArrayAttr[StringAttr])
    body = region_def()
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface(), HasParent(ModuleOp))

    def __init__(
        self,
        name: str,
        inputs: Sequence[Attribute],
        outputs: Sequence[Attribute] = (),
        specifiers: Sequence[str] = (),
        region: Region | None = None,
        arg_names: Sequence[str] | None = None,
    ):
        if region is None:
            block = Block(arg_types=inputs)
            if arg_names is not None:
                for arg, hint in zip(block.args, arg_names, strict=True):
                    arg.name_hint = hint
            region = Region(block)
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(list(inputs), list(outputs)),
                "specifiers": ArrayAttr([StringAttr(s) for s in specifiers]) if specifiers else None,
            },
            regions=[region],
        )

    @property
    def spec(self) -> tuple[str, ...]:
        return tuple(s.data for s in self.specifiers.data) if self.specifiers else ()

    @property
    def is_static(self) -> bool:
        return "static" in self.spec

    @property
    def is_declaration(self) -> bool:
        return not self.body.blocks

    @property
    def args(self):
        return self.body.block.args

    def verify_(self) -> None:
        _check_symbol(self.sym_name.data, "function")
        for s in self.spec:
            if s not in SPECIFIERS:
                raise VerifyException(
                    f"unknown specifier '{s}' (expected one of {', '.join(SPECIFIERS)})"
                )
        outputs = self.function_type.outputs.data
        if len(outputs) > 1:
            raise VerifyException("a C function returns at most one value")
        if self.is_declaration:
            return
        if len(self.body.blocks) != 1:
            raise VerifyException("a c.func body has exactly one block")
        block = self.body.block
        if tuple(block.arg_types) != tuple(self.function_type.inputs.data):
            raise VerifyException("entry block argument types do not match the function type")
        last = block.last_op
        if not isinstance(last, ReturnOp):
            raise VerifyException("a c.func body must end with c.return")

    def print(self, printer: Printer) -> None:
        for s in self.spec:
            printer.print_string(" " + s)
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            reserved_attr_names=("sym_name", "function_type", "specifiers"),
        )

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        specifiers: list[str] = []
        while (kw := parser.parse_optional_keyword_in(SPECIFIERS)) is not None:
            specifiers.append(kw)
        name, inputs, outputs, region, extra, _arg_attrs, _res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "specifiers")
        )
        op = FuncOp(name, inputs, outputs, specifiers, region)
        if extra is not None:
            op.attributes.update(extra.data)
        return op


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`c.return` / `c.return %v : i32`."""

    name = "c.return"
    value = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(FuncOp))

    assembly_format = "attr-dict ($value^ `:` type($value))?"

    def __init__(self, *value: SSAValue):
        super().__init__(operands=[list(value)])

    def verify_(self) -> None:
        func = self.parent_op()
        assert isinstance(func, FuncOp)
        want = tuple(func.function_type.outputs.data)
        got = tuple(v.type for v in self.value)
        if want != got:
            raise VerifyException(
                f"returns ({', '.join(map(str, got))}) but '@{func.sym_name.data}' returns "
                f"({', '.join(map(str, want))})"
            )


@irdl_op_definition
class CallOp(IRDLOperation):
    """A call of a `c.func` of the same translation unit."""

    name = "c.call"
    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    res = var_result_def()

    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(self, callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute] = ()):
        super().__init__(
            properties={"callee": SymbolRefAttr(callee)},
            operands=[list(args)],
            result_types=[list(result_types)],
        )

    def verify_(self) -> None:
        module = self.parent_op()
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op()
        if module is None:
            raise VerifyException("'c.call' must be inside a c.module")
        target = _lookup(module, self.callee)
        if not isinstance(target, FuncOp):
            raise VerifyException(f"'@{self.callee.root_reference.data}' is not a c.func")
        ft = target.function_type
        if tuple(ft.inputs.data) != tuple(self.args.types) or tuple(ft.outputs.data) != tuple(
            self.res.types
        ):
            raise VerifyException(
                f"call types {FunctionType.from_lists(list(self.args.types), list(self.res.types))} "
                f"do not match '@{target.sym_name.data}' of type {ft}"
            )


@irdl_op_definition
class CallOpaqueOp(IRDLOperation):
    """A call of a function C knows but the IR does not (libm, byoc_kernels.h).

        %e = c.call_opaque "expf"(%x) : (f32) -> f32
        c.call_opaque "byoc_dense_f32"(%x, %w, %y) {args = [0 : index, 1 : index, 2 : index, 1 : i64, 4 : i64, 8 : i64]} : (...) -> ()

    As in EmitC, `args` (optional) lists the C arguments: an `index` integer
    refers to an operand, any other integer, float or string is a literal, and
    `array<i64: ...>` is a `(const int64_t[]){...}` literal.
    """

    name = "c.call_opaque"
    callee = prop_def(StringAttr)
    args = opt_prop_def(ArrayAttr)
    call_args = var_operand_def()
    res = var_result_def()

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` $call_args `)` attr-dict `:` functional-type($call_args, $res)"

    PURE: ClassVar[frozenset[str]] = frozenset(
        "expf logf sqrtf tanhf erff powf fabsf fminf fmaxf exp log sqrt tanh erf pow fabs".split()
    )
    """Callees without side effects: their calls may be folded into expressions."""

    def __init__(
        self,
        callee: str,
        call_args: Sequence[SSAValue],
        result_types: Sequence[Attribute] = (),
        args: Sequence[Attribute] | None = None,
    ):
        super().__init__(
            properties={
                "callee": StringAttr(callee),
                "args": None if args is None else ArrayAttr(list(args)),
            },
            operands=[list(call_args)],
            result_types=[list(result_types)],
        )

    def verify_(self) -> None:
        if not is_c_identifier(self.callee.data):
            raise VerifyException(f"callee '{self.callee.data}' is not a valid C identifier")
        if len(self.res) > 1:
            raise VerifyException("a C call returns at most one value")
        if self.args is None:
            return
        for arg in self.args.data:
            if isinstance(arg, IntegerAttr) and isinstance(arg.type, IndexType):
                if not 0 <= arg.value.data < len(self.call_args):
                    raise VerifyException(f"argument refers to operand #{arg.value.data}, out of range")
            elif not isinstance(arg, IntegerAttr | FloatAttr | StringAttr | DenseArrayBase):
                raise VerifyException(f"cannot pass {arg} as a C argument")


# --------------------------------------------------------------------------
# Scalar expressions
# --------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A literal: `%0 = c.constant 1.5 : f32`, `%1 = c.constant 100 : index`."""

    name = "c.constant"
    value = prop_def(Attribute)
    result = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: IntegerAttr[Any] | FloatAttr[Any]):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def of(v: float | int, type_: Attribute) -> ConstantOp:
        if isinstance(type_, IntegerType | IndexType):
            return ConstantOp(IntegerAttr(int(v), type_))
        return ConstantOp(FloatAttr(float(v), type_))  # type: ignore[arg-type]

    def verify_(self) -> None:
        if not isinstance(self.value, IntegerAttr | FloatAttr):
            raise VerifyException("c.constant holds an integer or float literal")
        if self.value.type != self.result.type:
            raise VerifyException(f"literal type {self.value.type} differs from the result type {self.result.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        assert isinstance(self.value, IntegerAttr | FloatAttr)
        _print_scalar(printer, self.value)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        number = parser.parse_number(allow_boolean=True)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        if isinstance(type_, IntegerType | IndexType):
            if not isinstance(number, int):
                parser.raise_error(f"{type_} literal must be an integer", pos, parser.pos)
            value: Any = IntegerAttr(number, type_)
        else:
            width = getattr(type_, "bitwidth", None)
            if isinstance(number, int) and width in (32, 64):
                bits = np.array([number], dtype=np.uint64).astype(np.uint32 if width == 32 else np.uint64)
                number = float(bits.view(np.float32 if width == 32 else np.float64)[0])
            try:
                value = FloatAttr(float(number), type_)  # type: ignore[arg-type]
            except Exception as e:
                parser.raise_error(f"invalid literal of type {type_}: {e}", pos, parser.pos)
        op = ConstantOp(value)
        op.attributes.update(attrs)
        return op


class _BinaryOp(IRDLOperation):
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"
    C_OP: ClassVar[str] = ""

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        if not self.lhs.type == self.rhs.type == self.result.type:
            raise VerifyException(
                f"operands and result must have one type, got {self.lhs.type}, {self.rhs.type} "
                f"-> {self.result.type}"
            )
        if isinstance(self.result.type, PtrType | OpaqueType):
            raise VerifyException(f"'{self.name}' takes scalars, got {self.result.type}")


@irdl_op_definition
class AddOp(_BinaryOp):
    """`a + b` (integers wrap)."""

    name = "c.add"
    C_OP: ClassVar[str] = "+"


@irdl_op_definition
class SubOp(_BinaryOp):
    """`a - b` (integers wrap)."""

    name = "c.sub"
    C_OP: ClassVar[str] = "-"


@irdl_op_definition
class MulOp(_BinaryOp):
    """`a * b` (integers wrap)."""

    name = "c.mul"
    C_OP: ClassVar[str] = "*"


@irdl_op_definition
class DivOp(_BinaryOp):
    """`a / b`."""

    name = "c.div"
    C_OP: ClassVar[str] = "/"


@irdl_op_definition
class RemOp(_BinaryOp):
    """`a % b` (integers only)."""

    name = "c.rem"
    C_OP: ClassVar[str] = "%"

    def verify_(self) -> None:
        super().verify_()
        if not isinstance(self.result.type, IntegerType | IndexType):
            raise VerifyException("'c.rem' takes integers")


@irdl_op_definition
class LogicalAndOp(_BinaryOp):
    """`a && b` on i1."""

    name = "c.logical_and"
    C_OP: ClassVar[str] = "&&"

    def verify_(self) -> None:
        super().verify_()
        if self.result.type != i1:
            raise VerifyException(f"'{self.name}' takes i1 operands")


@irdl_op_definition
class LogicalOrOp(_BinaryOp):
    """`a || b` on i1."""

    name = "c.logical_or"
    C_OP: ClassVar[str] = "||"

    def verify_(self) -> None:
        super().verify_()
        if self.result.type != i1:
            raise VerifyException(f"'{self.name}' takes i1 operands")


@irdl_op_definition
class NegOp(IRDLOperation):
    """`-a` (integers wrap)."""

    name = "c.neg"
    T: ClassVar = VarConstraint("T", AnyAttr())
    operand = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[operand.type])

    def verify_(self) -> None:
        if self.operand.type != self.result.type:
            raise VerifyException("operand and result must have one type")


CMP_PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@irdl_op_definition
class CmpOp(IRDLOperation):
    """`%c = c.cmp lt, %a, %b : f32` is `a < b` (an i1). NaN compares false except `ne`."""

    name = "c.cmp"
    predicate = prop_def(StringAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def(i1)
    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            properties={"predicate": StringAttr(predicate)}, operands=[lhs, rhs], result_types=[i1]
        )

    def verify_(self) -> None:
        if self.predicate.data not in CMP_PREDICATES:
            raise VerifyException(
                f"unknown predicate '{self.predicate.data}' (expected one of {', '.join(CMP_PREDICATES)})"
            )
        if self.lhs.type != self.rhs.type:
            raise VerifyException("compared values must have one type")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate.data}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    @classmethod
    def parse(cls, parser: Parser) -> CmpOp:
        pred = parser.parse_keyword_in(tuple(CMP_PREDICATES), " as a comparison predicate")
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        op = CmpOp(pred, parser.resolve_operand(lhs, type_), parser.resolve_operand(rhs, type_))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`cond ? a : b` (EmitC's conditional)."""

    name = "c.select"
    condition = operand_def(i1)
    T: ClassVar = VarConstraint("T", AnyAttr())
    true_value = operand_def(T)
    false_value = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$condition `,` $true_value `,` $false_value attr-dict `:` type($result)"

    def __init__(self, condition: SSAValue, true_value: SSAValue, false_value: SSAValue):
        super().__init__(
            operands=[condition, true_value, false_value], result_types=[true_value.type]
        )

    def verify_(self) -> None:
        if not self.true_value.type == self.false_value.type == self.result.type:
            raise VerifyException("both alternatives and the result must have one type")


@irdl_op_definition
class CastOp(IRDLOperation):
    """`(T)x`: `%y = c.cast %x : f32 to i32`. Float to integer must be in range."""

    name = "c.cast"
    operand = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$operand attr-dict `:` type($operand) `to` type($result)"

    def __init__(self, operand: SSAValue, type_: Attribute):
        super().__init__(operands=[operand], result_types=[type_])

    def verify_(self) -> None:
        a, b = self.operand.type, self.result.type
        if isinstance(a, PtrType) != isinstance(b, PtrType):
            raise VerifyException(f"cannot cast between pointer and scalar ({a} to {b})")


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------


def _pointee(op: Operation, t: Attribute) -> Attribute:
    if not isinstance(t, PtrType):
        raise VerifyException(f"'{op.name}' needs a !c.ptr, got {t}")
    return t.pointee


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`p[i]`: `%v = c.load %p[%i] : !c.ptr<f32, const>`."""

    name = "c.load"
    ptr = operand_def()
    index = operand_def(index)
    result = result_def()

    def __init__(self, ptr_: SSAValue, idx: SSAValue):
        t = ptr_.type
        assert isinstance(t, PtrType)
        super().__init__(operands=[ptr_, idx], result_types=[t.pointee])

    def verify_(self) -> None:
        if _pointee(self, self.ptr.type) != self.result.type:
            raise VerifyException(f"loads {self.result.type} from {self.ptr.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.ptr)
        printer.print_string("[")
        printer.print_operand(self.index)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        p = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        i = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, PtrType):
            parser.raise_error(f"c.load needs a !c.ptr type, got {t}", pos, parser.pos)
        op = LoadOp(parser.resolve_operand(p, t), parser.resolve_operand(i, index))
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`p[i] = v;`: `c.store %v, %p[%i] : !c.ptr<f32>`."""

    name = "c.store"
    value = operand_def()
    ptr = operand_def()
    index = operand_def(index)

    def __init__(self, value: SSAValue, ptr_: SSAValue, idx: SSAValue):
        super().__init__(operands=[value, ptr_, idx])

    def verify_(self) -> None:
        t = self.ptr.type
        if _pointee(self, t) != self.value.type:
            raise VerifyException(f"stores {self.value.type} through {t}")
        assert isinstance(t, PtrType)
        if t.const:
            raise VerifyException(f"cannot store through a const pointer {t}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.ptr)
        printer.print_string("[")
        printer.print_operand(self.index)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        v = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        p = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        i = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, PtrType):
            parser.raise_error(f"c.store needs a !c.ptr type, got {t}", pos, parser.pos)
        op = StoreOp(
            parser.resolve_operand(v, t.pointee),
            parser.resolve_operand(p, t),
            parser.resolve_operand(i, index),
        )
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class PtrOffsetOp(IRDLOperation):
    """`p + i`: `%q = c.ptr_offset %p, %i : !c.ptr<f32>`."""

    name = "c.ptr_offset"
    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(T)
    offset = operand_def(index)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$ptr `,` $offset attr-dict `:` type($result)"

    def __init__(self, ptr_: SSAValue, offset: SSAValue):
        super().__init__(operands=[ptr_, offset], result_types=[ptr_.type])

    def verify_(self) -> None:
        if self.ptr.type != self.result.type:
            raise VerifyException("result must have the pointer's type")


@irdl_op_definition
class GetGlobalOp(IRDLOperation):
    """The address of a `c.global`: `%w = c.get_global @w : !c.ptr<f32, const>`."""

    name = "c.get_global"
    global_name = prop_def(SymbolRefAttr)
    result = result_def(PtrType)
    traits = traits_def(Pure())
    assembly_format = "$global_name attr-dict `:` type($result)"

    def __init__(self, name: str, type_: PtrType):
        super().__init__(properties={"global_name": SymbolRefAttr(name)}, result_types=[type_])

    def verify_(self) -> None:
        g = _lookup_global(self, self.global_name)
        t = self.result.type
        assert isinstance(t, PtrType)
        if not t.const or t.pointee != g.element_type:
            raise VerifyException(
                f"'@{g.sym_name.data}' holds {g.element_type}; its address is "
                f"!c.ptr<{g.element_type}, const>, not {t}"
            )


_SYMBOLS: weakref.WeakKeyDictionary[ModuleOp, dict[str, Operation]] = weakref.WeakKeyDictionary()


def _lookup(module: ModuleOp, name: SymbolRefAttr) -> Operation | None:
    """The c.func or c.global `name` of the translation unit.

    Verifying every call of a big unit with a scan would be quadratic, so the
    unit's symbols are indexed once; an entry is trusted only if the op is
    still in the unit under that name, and a miss or a stale entry re-indexes.
    """
    wanted = name.root_reference.data
    block = module.body.block
    index = _SYMBOLS.get(module)
    op = None if index is None else index.get(wanted)
    if op is not None and op.parent is block and op.sym_name.data == wanted:  # type: ignore[attr-defined]
        return op
    index = {
        o.sym_name.data: o for o in block.ops if isinstance(o, FuncOp | GlobalOp)
    }
    _SYMBOLS[module] = index
    return index.get(wanted)


def _lookup_global(op: Operation, name: SymbolRefAttr) -> GlobalOp:
    module = op.parent_op()
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    target = None if module is None else _lookup(module, name)
    if not isinstance(target, GlobalOp):
        raise VerifyException(f"'@{name.root_reference.data}' is not a c.global")
    return target


@irdl_op_definition
class BindGlobalOp(IRDLOperation):
    """Point an `init` global at its data (only in the init entry point).

        c.bind_global @big, %p : !c.ptr<f32, const>
    """

    name = "c.bind_global"
    global_name = prop_def(SymbolRefAttr)
    value = operand_def(PtrType)
    assembly_format = "$global_name `,` $value attr-dict `:` type($value)"

    def __init__(self, name: str, value: SSAValue):
        super().__init__(properties={"global_name": SymbolRefAttr(name)}, operands=[value])

    def verify_(self) -> None:
        g = _lookup_global(self, self.global_name)
        if g.init_index is None:
            raise VerifyException(f"'@{g.sym_name.data}' has its data in the source; only `init` globals are bound")
        t = self.value.type
        assert isinstance(t, PtrType)
        if t.pointee != g.element_type:
            raise VerifyException(f"'@{g.sym_name.data}' holds {g.element_type}, got {t}")


@irdl_op_definition
class WorkspaceOp(IRDLOperation):
    """The calling thread's scratch area of `size` bytes, 64-byte aligned.

        %ws = c.workspace 800 : !c.ptr<i8>

    Allocated on the thread's first call only; fails (returns -1) when out of memory.
    """

    name = "c.workspace"
    size = prop_def(IntegerAttr)
    result = result_def(PtrType)

    def __init__(self, size: int):
        super().__init__(properties={"size": _i64(size)}, result_types=[PtrType(IntegerType(8))])

    def verify_(self) -> None:
        _check_fallible(self)
        if _int_prop(self, "size") <= 0:
            raise VerifyException("workspace size must be positive")
        if self.result.type != PtrType(IntegerType(8)):
            raise VerifyException("a workspace is a !c.ptr<i8>")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {_int_prop(self, 'size')}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> WorkspaceOp:
        size = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_type()
        op = WorkspaceOp(size)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class BufferOp(IRDLOperation):
    """A buffer carved out of a workspace: bytes [offset, offset + size).

        %buf_0 = c.buffer %ws[0, 400] : !c.ptr<f32>
    """

    name = "c.buffer"
    workspace = operand_def(PtrType)
    offset = prop_def(IntegerAttr)
    size = prop_def(IntegerAttr)
    result = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, workspace: SSAValue, offset: int, size: int, type_: PtrType):
        super().__init__(
            operands=[workspace],
            properties={"offset": _i64(offset), "size": _i64(size)},
            result_types=[type_],
        )

    def verify_(self) -> None:
        t = self.result.type
        assert isinstance(t, PtrType)
        if t.const:
            raise VerifyException("a buffer is writable: its type has no const")
        off, size = _int_prop(self, "offset"), _int_prop(self, "size")
        if off < 0 or size <= 0:
            raise VerifyException("a buffer needs offset >= 0 and size > 0")
        width = getattr(t.pointee, "bitwidth", None)
        if isinstance(width, int) and width >= 8 and off % (width // 8):
            raise VerifyException(f"offset {off} is not aligned to {t.pointee}")
        source = self.workspace.owner
        if isinstance(source, WorkspaceOp) and off + size > _int_prop(source, "size"):
            raise VerifyException(
                f"buffer [{off}, {off + size}) exceeds the workspace of {_int_prop(source, 'size')} bytes"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.workspace)
        printer.print_string(f"[{_int_prop(self, 'offset')}, {_int_prop(self, 'size')}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        ws = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        off = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation(",")
        size = parser.parse_integer(allow_boolean=False)
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        t = parser.parse_type()
        if not isinstance(t, PtrType):
            parser.raise_error(f"c.buffer has a !c.ptr type, got {t}", pos, parser.pos)
        op = BufferOp(parser.resolve_operand(ws, PtrType(IntegerType(8))), off, size, t)
        op.attributes.update(attrs)
        return op


# --------------------------------------------------------------------------
# Control flow and escape hatch
# --------------------------------------------------------------------------


@irdl_op_definition
class ForOp(IRDLOperation):
    """`for (int64_t i = lb; i < ub; i += step) { body }` with static bounds.

        c.for %i = 0 to 100 { ... }
        c.for %i = 0 to 100 step 4 { ... }
    """

    name = "c.for"
    lower = prop_def(IntegerAttr)
    upper = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, lower: int, upper: int, step: int = 1, body: Region | None = None, iv_name: str | None = None):
        if body is None:
            block = Block(arg_types=[index])
            if iv_name is not None:
                block.args[0].name_hint = iv_name
            body = Region(block)
        super().__init__(
            properties={"lower": _i64(lower), "upper": _i64(upper), "step": _i64(step)},
            regions=[body],
        )

    @property
    def induction_variable(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        if _int_prop(self, "step") <= 0:
            raise VerifyException("step must be positive")
        args = self.body.block.args
        if len(args) != 1 or args[0].type != index:
            raise VerifyException("the body takes one index argument, the induction variable")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_block_argument(self.induction_variable, print_type=False)
        printer.print_string(f" = {_int_prop(self, 'lower')} to {_int_prop(self, 'upper')}")
        if _int_prop(self, "step") != 1:
            printer.print_string(f" step {_int_prop(self, 'step')}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=True)

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        arg = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lower = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("to")
        upper = parser.parse_integer(allow_boolean=False)
        step = 1
        if parser.parse_optional_keyword("step") is not None:
            step = parser.parse_integer(allow_boolean=False)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region((arg.resolve(index),))
        op = ForOp(lower, upper, step, body)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


@irdl_op_definition
class VerbatimOp(IRDLOperation):
    """Text emitted as is, on its own line (EmitC's escape hatch; byoc uses it for comments)."""

    name = "c.verbatim"
    value = prop_def(StringAttr)
    assembly_format = "$value attr-dict"

    def __init__(self, text: str):
        super().__init__(properties={"value": StringAttr(text)})


# --------------------------------------------------------------------------
# The DLTensor ABI
# --------------------------------------------------------------------------


@irdl_op_definition
class CheckArgCountOp(IRDLOperation):
    """Fail unless `%n` equals inputs + outputs: `c.check_arg_count %n, 4 inputs, 1 outputs`."""

    name = "c.check_arg_count"
    count = operand_def(i32)
    num_inputs = prop_def(IntegerAttr)
    num_outputs = prop_def(IntegerAttr)

    def __init__(self, count: SSAValue, num_inputs: int, num_outputs: int):
        super().__init__(
            operands=[count],
            properties={"num_inputs": _i64(num_inputs), "num_outputs": _i64(num_outputs)},
        )

    def verify_(self) -> None:
        _check_fallible(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.count)
        printer.print_string(
            f", {_int_prop(self, 'num_inputs')} inputs, {_int_prop(self, 'num_outputs')} outputs"
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> CheckArgCountOp:
        n = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        ins = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("inputs")
        parser.parse_punctuation(",")
        outs = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("outputs")
        op = CheckArgCountOp(parser.resolve_operand(n, i32), ins, outs)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op


ARG_ROLES = ("input", "output")


@irdl_op_definition
class CheckTensorOp(IRDLOperation):
    """Fail unless the DLTensor is a CPU, compact, aligned tensor of the given type.

        c.check_tensor %a, input 0 "a" : tensor<10x10xf32>
    """

    name = "c.check_tensor"
    tensor = operand_def(PtrType)
    role = prop_def(StringAttr)
    position = prop_def(IntegerAttr)
    arg_name = prop_def(StringAttr)
    expected = prop_def(TensorType)

    def __init__(self, tensor: SSAValue, role: str, position: int, arg_name: str, expected: TensorType[Any]):
        super().__init__(
            operands=[tensor],
            properties={
                "role": StringAttr(role),
                "position": _i64(position),
                "arg_name": StringAttr(arg_name),
                "expected": expected,
            },
        )

    @property
    def description(self) -> str:
        """How messages name the argument: `input 'a' (#0)`."""
        return f"{self.role.data} '{self.arg_name.data}' (#{_int_prop(self, 'position')})"

    def verify_(self) -> None:
        _check_fallible(self)
        if self.tensor.type != DLTENSOR_PTR:
            raise VerifyException(f"checks a {DLTENSOR_PTR}, got {self.tensor.type}")
        if self.role.data not in ARG_ROLES:
            raise VerifyException(f"role must be input or output, got '{self.role.data}'")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        printer.print_string(f", {self.role.data} {_int_prop(self, 'position')} ")
        printer.print_string_literal(self.arg_name.data)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.expected)

    @classmethod
    def parse(cls, parser: Parser) -> CheckTensorOp:
        t = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        role = parser.parse_keyword_in(ARG_ROLES)
        position = parser.parse_integer(allow_boolean=False, allow_negative=False)
        name = parser.parse_str_literal("argument name")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        expected = parser.parse_type()
        if not isinstance(expected, TensorType):
            parser.raise_error(f"expected a tensor type, got {expected}", pos, parser.pos)
        op = CheckTensorOp(parser.resolve_operand(t, DLTENSOR_PTR), role, position, name, expected)
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class CheckDisjointOp(IRDLOperation):
    """Fail if an output's bytes overlap any other argument's.

        c.check_disjoint(%a, %b, %out) {names = ["a", "b", "out0"], nbytes = array<i64: 400, 400, 400>, num_outputs = 1 : i64}

    Operands are all arguments, inputs first; the last `num_outputs` are outputs.
    """

    name = "c.check_disjoint"
    tensors = var_operand_def(DLTENSOR_PTR)
    names = prop_def(ArrayAttr[StringAttr])
    nbytes = prop_def(DenseArrayBase)
    num_outputs = prop_def(IntegerAttr)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`(` $tensors `)` attr-dict"

    def __init__(self, tensors: Sequence[SSAValue], names: Sequence[str], nbytes: Sequence[int], num_outputs: int):
        super().__init__(
            operands=[list(tensors)],
            properties={
                "names": ArrayAttr([StringAttr(n) for n in names]),
                "nbytes": DenseArrayBase.from_list(i64, list(nbytes)),
                "num_outputs": _i64(num_outputs),
            },
        )

    def verify_(self) -> None:
        _check_fallible(self)
        n = len(self.tensors)
        if len(self.names.data) != n or len(self.nbytes.get_values()) != n:
            raise VerifyException("one name and one size per tensor")
        if not 0 < _int_prop(self, "num_outputs") <= n:
            raise VerifyException("num_outputs must be between 1 and the number of tensors")
        for v in self.tensors:
            if v.type != DLTENSOR_PTR:
                raise VerifyException(f"checks {DLTENSOR_PTR} values, got {v.type}")


@irdl_op_definition
class CheckBoundOp(IRDLOperation):
    """Fail unless an `init` global has been bound (the library's init entry point ran).

        c.check_bound @big
    """

    name = "c.check_bound"
    global_name = prop_def(SymbolRefAttr)
    assembly_format = "$global_name attr-dict"

    def __init__(self, name: str):
        super().__init__(properties={"global_name": SymbolRefAttr(name)})

    def verify_(self) -> None:
        _check_fallible(self)
        g = _lookup_global(self, self.global_name)
        if g.init_index is None:
            raise VerifyException(f"'@{g.sym_name.data}' is not an `init` global")


@irdl_op_definition
class TensorDataOp(IRDLOperation):
    """The first element of a (checked) DLTensor: `%p = c.tensor_data %a : !c.ptr<f32>`."""

    name = "c.tensor_data"
    tensor = operand_def(PtrType)
    result = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, tensor: SSAValue, type_: PtrType):
        super().__init__(operands=[tensor], result_types=[type_])

    def verify_(self) -> None:
        if self.tensor.type != DLTENSOR_PTR:
            raise VerifyException(f"reads a {DLTENSOR_PTR}, got {self.tensor.type}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> TensorDataOp:
        t = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        type_ = parser.parse_type()
        if not isinstance(type_, PtrType):
            parser.raise_error(f"expected a !c.ptr type, got {type_}", pos, parser.pos)
        op = TensorDataOp(parser.resolve_operand(t, DLTENSOR_PTR), type_)
        op.attributes.update(attrs)
        return op


C = Dialect(
    "c",
    [
        ModuleOp,
        IncludeOp,
        GlobalOp,
        FuncOp,
        ReturnOp,
        CallOp,
        CallOpaqueOp,
        ConstantOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        RemOp,
        LogicalAndOp,
        LogicalOrOp,
        NegOp,
        CmpOp,
        SelectOp,
        CastOp,
        LoadOp,
        StoreOp,
        PtrOffsetOp,
        GetGlobalOp,
        BindGlobalOp,
        WorkspaceOp,
        BufferOp,
        ForOp,
        VerbatimOp,
        CheckArgCountOp,
        CheckTensorOp,
        CheckDisjointOp,
        CheckBoundOp,
        TensorDataOp,
    ],
    [PtrType, OpaqueType],
)

__all__ = ["C", "DLTENSOR", "DLTENSOR_PTR", "PtrType", "OpaqueType", "ptr", "is_c_identifier"]
