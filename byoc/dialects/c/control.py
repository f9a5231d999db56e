"""Control flow (`c.for`) and the escape hatch (`c.verbatim`)."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import (
    Block,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    NoTerminator,
)
from xdsl.utils.exceptions import VerifyException

from byoc.dialects.c.types import i64_attr, index, init_op, int_prop


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
        init_op(
            self,
            properties={"lower": i64_attr(lower), "upper": i64_attr(upper), "step": i64_attr(step)},
            regions=[body],
        )

    @property
    def induction_variable(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        if int_prop(self, "step") <= 0:
            raise VerifyException("step must be positive")
        args = self.body.block.args
        if len(args) != 1 or args[0].type != index:
            raise VerifyException("the body takes one index argument, the induction variable")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_block_argument(self.induction_variable, print_type=False)
        printer.print_string(f" = {int_prop(self, 'lower')} to {int_prop(self, 'upper')}")
        if int_prop(self, "step") != 1:
            printer.print_string(f" step {int_prop(self, 'step')}")
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
        init_op(self, properties={"value": StringAttr(text)})

