"""The `byoc` dialect: the structure partitioning builds.

    %r:2 = byoc.region "ccompiler" -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = nn.abs %x : tensor<4xf32>
      %1 = nn.relu %0 : tensor<4xf32>
      byoc.yield %0, %1 : tensor<4xf32>, tensor<4xf32>
    }

A region is *not* isolated from above: its body uses outside values directly;
its results are the body values used outside (what `byoc.yield` returns).

    %c = byoc.composite "cblas.dense_bias"(%x, %w, %b) : (...) -> tensor<1x8xf32> {
    ^bb0(%a: ..., %bw: ..., %bb: ...):
      ...
      byoc.yield %y : tensor<1x8xf32>
    }

A composite is isolated from above, like a Relay composite function: every
value it reads is a block argument. Its name is `<target>.<pattern>`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from byoc.printer import print_named_operands

TARGET_ATTR = "byoc.target"
"""Discardable attribute set by annotate-target on supported ops and composites."""
COMPILER_ATTR = "byoc.compiler"
"""Function attribute set by partition on outlined functions."""


def partition_target(func: FuncOp | None) -> str | None:
    """The target a partition function was outlined for (its `byoc.compiler`), else None."""
    attr = func.attributes.get(COMPILER_ATTR) if func is not None else None
    return attr.data if isinstance(attr, StringAttr) else None


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `byoc.region` and `byoc.composite`: the values they return."""

    name = "byoc.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(RegionOp, CompositeOp)))

    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None:  # detached; HasParent checks the rest
            return
        expected = list(parent.result_types)
        got = [v.type for v in self.values]
        if expected != got:
            raise VerifyException(
                f"yields {len(got)} values of types ({', '.join(map(str, got))}) but the parent "
                f"'{parent.name}' returns ({', '.join(map(str, expected))})"
            )


@irdl_op_definition
class RegionOp(IRDLOperation):
    """A group of ops tagged for one target; results are the values used outside."""

    name = "byoc.region"
    target = prop_def(StringAttr)
    res = var_result_def()
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp))

    def __init__(self, target: str, result_types: list[Attribute], body: Region):
        super().__init__(
            properties={"target": StringAttr(target)}, result_types=[result_types], regions=[body]
        )

    def verify_(self) -> None:
        if self.body.block.args:
            raise VerifyException("'byoc.region' body takes no arguments; it uses outside values")
        if not self.target.data:
            raise VerifyException("'byoc.region' target must not be empty")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.target.data)
        printer.print_string(" -> (")
        printer.print_list(self.result_types, printer.print_attribute)
        printer.print_string(")")
        if self.attributes:
            printer.print_string(" attributes ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> RegionOp:
        target = parser.parse_str_literal("target name")
        parser.parse_punctuation("->")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region()
        op = RegionOp(target, types, body)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op


@irdl_op_definition
class CompositeOp(IRDLOperation):
    """A pattern match of a target's table, isolated from above."""

    name = "byoc.composite"
    composite = prop_def(StringAttr)
    args = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SingleBlockImplicitTerminator(YieldOp))

    def __init__(
        self, composite: str, args: list[SSAValue], result_types: list[Attribute], body: Region
    ):
        super().__init__(
            properties={"composite": StringAttr(composite)},
            operands=[args],
            result_types=[result_types],
            regions=[body],
        )

    @property
    def target_name(self) -> str:
        """The target prefix of the composite name (`cblas` for `cblas.dense_bias`)."""
        return self.composite.data.split(".", 1)[0]

    def verify_(self) -> None:
        name = self.composite.data
        prefix, dot, rest = name.partition(".")
        if not dot or not prefix or not rest:
            raise VerifyException(
                f"composite name '{name}' must have the form '<target>.<name>'"
            )
        arg_types = [a.type for a in self.body.block.args]
        operand_types = [o.type for o in self.args]
        if arg_types != operand_types:
            raise VerifyException(
                "block argument types ("
                + ", ".join(map(str, arg_types))
                + ") do not match operand types ("
                + ", ".join(map(str, operand_types))
                + ")"
            )

    def print(self, printer: Printer) -> None:
        print_named_operands(printer, self.composite.data, self.args)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)
        printer.print_string(" : (")
        printer.print_list([a.type for a in self.args], printer.print_attribute)
        printer.print_string(") -> ")
        if len(self.res) == 1:
            printer.print_attribute(self.res[0].type)
        else:
            printer.print_string("(")
            printer.print_list(self.result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser) -> CompositeOp:
        name = parser.parse_str_literal("composite name")
        pos = parser.pos
        unresolved = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        in_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        if parser.parse_optional_punctuation("(") is not None:
            out_types = parser.parse_optional_undelimited_comma_separated_list(
                parser.parse_optional_type, parser.parse_type
            ) or []
            parser.parse_punctuation(")")
        else:
            out_types = [parser.parse_type()]
        if len(in_types) != len(unresolved):
            parser.raise_error(
                f"'byoc.composite' has {len(unresolved)} operands but {len(in_types)} types",
                pos,
                parser.pos,
            )
        args = parser.resolve_operands(unresolved, in_types, pos)
        body = parser.parse_region()
        op = CompositeOp(name, list(args), out_types, body)
        op.attributes.update(attrs)
        return op


Byoc = Dialect("byoc", [RegionOp, CompositeOp, YieldOp], [])

__all__ = [
    "Byoc",
    "CompositeOp",
    "RegionOp",
    "YieldOp",
    "TARGET_ATTR",
    "COMPILER_ATTR",
    "partition_target",
]
