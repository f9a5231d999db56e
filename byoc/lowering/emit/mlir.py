"""`-t mlir`: xDSL's MLIR printer, with byoc's display options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.syntax_printer import SyntaxPrinter
from xdsl.targets.mlir import MLIRTarget as XdslMLIRTarget

from byoc.printer import ByocPrinter


@dataclass(frozen=True)
class MLIREmitter(XdslMLIRTarget):
    """xDSL's `mlir` output; `elide-constants=N` abbreviates large constants."""

    elide_constants: int | None = None
    """Print constants of more than N elements as `dense_resource<__elided__>` (for reading
    only: such text does not parse back)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        printer = make_printer(
            output,
            syntax_highlight=self.syntax_highlight,
            elide_constants_larger_than=self.elide_constants,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        print("\n", file=output)


def make_printer(
    stream: IO[str],
    *,
    syntax_highlight: bool = False,
    elide_constants_larger_than: int | None = None,
    print_generic_format: bool = False,
    print_properties_as_attributes: bool = False,
    print_debuginfo: bool = False,
) -> ByocPrinter:
    """A printer with these options (colours for a terminal if `syntax_highlight`)."""
    cls = SyntaxByocPrinter if syntax_highlight else ByocPrinter
    return cls(
        stream,
        elide_constants_larger_than=elide_constants_larger_than,
        print_generic_format=print_generic_format,
        print_properties_as_attributes=print_properties_as_attributes,
        print_debuginfo=print_debuginfo,
    )


class SyntaxByocPrinter(ByocPrinter, SyntaxPrinter):
    """`ByocPrinter` with terminal colours (`--syntax-highlight`)."""
