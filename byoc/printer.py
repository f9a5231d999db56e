"""xDSL's printer with byoc's display options, which the dialects' custom printers read.

    ByocPrinter(stream, elide_constants_larger_than=16).print_op(module)

An option travels with the printer object, so two printers in one process can
differ; a plain `Printer` (and `str(op)`) prints everything in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

from xdsl.ir import SSAValue
from xdsl.printer import Printer


class ByocPrinter(Printer):
    """A `Printer` carrying byoc's display options."""

    elide_constants_larger_than: int | None
    """Print constants of more elements as `dense_resource<__elided__>` (such text does not
    parse back); None prints every payload."""

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        elide_constants_larger_than: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(stream, **options)
        self.elide_constants_larger_than = elide_constants_larger_than


def elides_constant(printer: Printer, num_elements: int) -> bool:
    """Whether `printer` shows a constant of `num_elements` as `dense_resource<__elided__>`."""
    if not isinstance(printer, ByocPrinter):
        return False
    limit = printer.elide_constants_larger_than
    return limit is not None and num_elements > limit


def print_named_operands(printer: Printer, name: str, operands: Sequence[SSAValue]) -> None:
    """` "<name>"(%a, %b)`: how byoc.composite, graph.node and graph.composite begin."""
    printer.print_string(" ")
    printer.print_string_literal(name)
    printer.print_string("(")
    printer.print_list(operands, printer.print_operand)
    printer.print_string(")")
