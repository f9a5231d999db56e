"""The translation unit: `c.module`, includes, globals, functions and calls."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i32,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    Operation,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    OpTrait,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.c.format import print_dense
from byoc.dialects.c.types import (
    check_symbol,
    global_array,
    i64_attr,
    init_op,
    is_c_identifier,
    symbol_ref,
)

# --------------------------------------------------------------------------
# Traits
# --------------------------------------------------------------------------


class CanFail(OpTrait):
    """The op may fail at run time: it returns -1 from its enclosing c.func, which
    must therefore return i32. Ops with this trait also have `HasAncestor(FuncOp)`."""

    def verify(self, op: Operation) -> None:
        func = HasAncestor(FuncOp).get_ancestor(op)
        if not isinstance(func, FuncOp):
            return  # HasAncestor(FuncOp) reports it
        if tuple(func.function_type.outputs.data) != (i32,):
            raise VerifyException(
                f"can fail, so its function '@{func.sym_name.data}' must return i32"
            )

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
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name), "value": value}
        if init_index is not None:
            properties["init_index"] = i64_attr(init_index)
        init_op(self, properties=properties)

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
        check_symbol(self.sym_name.data, "global")
        if self.init_index is not None and self.init_index.value.data < 0:
            raise VerifyException("init index must be non-negative")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.init_index is not None:
            printer.print_string(f" init {self.init_index.value.data}")
        printer.print_string(" = ")
        print_dense(printer, self.value)
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


@lru_cache(maxsize=1024)
def _function_type(inputs: tuple[Attribute, ...], outputs: tuple[Attribute, ...]) -> FunctionType:
    """The type of a function, made once per signature (a partition's kernels share a few)."""
    return FunctionType.from_lists(list(inputs), list(outputs))


@lru_cache(maxsize=64)
def _specifiers(specifiers: tuple[str, ...]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(s) for s in specifiers])


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
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "function_type": _function_type(tuple(inputs), tuple(outputs)),
        }
        if specifiers:
            properties["specifiers"] = _specifiers(tuple(specifiers))
        init_op(self, properties=properties, regions=[region])

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
        check_symbol(self.sym_name.data, "function")
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
        init_op(self, operands=value)

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
    traits = traits_def(HasAncestor(ModuleOp))

    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(self, callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute] = ()):
        init_op(self, properties={"callee": symbol_ref(callee)}, operands=args, result_types=result_types)

    def verify_(self) -> None:
        module = HasAncestor(ModuleOp).get_ancestor(self)
        assert isinstance(module, ModuleOp)  # the HasAncestor(ModuleOp) trait
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
        "expf logf sqrtf tanhf erff powf fabsf fminf fmaxf exp log sqrt tanh erf pow fabs byoc_tanhf byoc_sigmoidf".split()
    )
    """Callees without side effects: their calls may be folded into expressions."""

    def __init__(
        self,
        callee: str,
        call_args: Sequence[SSAValue],
        result_types: Sequence[Attribute] = (),
        args: Sequence[Attribute] | None = None,
    ):
        properties: dict[str, Attribute] = {"callee": StringAttr(callee)}
        if args is not None:
            properties["args"] = ArrayAttr(list(args))
        init_op(self, properties=properties, operands=call_args, result_types=result_types)

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


def lookup_global(op: Operation, name: SymbolRefAttr) -> GlobalOp:
    """The `c.global` `name` of the translation unit of `op`; raises VerifyException if none."""
    module = HasAncestor(ModuleOp).get_ancestor(op)
    target = _lookup(module, name) if isinstance(module, ModuleOp) else None
    if not isinstance(target, GlobalOp):
        raise VerifyException(f"'@{name.root_reference.data}' is not a c.global")
    return target

