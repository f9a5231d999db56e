"""The dialects byoc registers, by name, imported lazily (xDSL's own habit)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect

from byoc.utils import xdsl_lexer
from byoc.utils.lazy import LazyValue

xdsl_lexer.install()  # every parse of byoc IR lexes string literals in linear time


# name -> factory. Dialects added by other modules (the C dialect, examplejson)
# register a line here.
ALL_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "builtin": LazyValue[Dialect]("xdsl.dialects.builtin", "Builtin"),
    "func": LazyValue[Dialect]("xdsl.dialects.func", "Func"),
    "arith": LazyValue[Dialect]("xdsl.dialects.arith", "Arith"),
    "nn": LazyValue[Dialect]("byoc.dialects.nn", "Nn"),
    "byoc": LazyValue[Dialect]("byoc.dialects.byoc", "Byoc"),
    "c": LazyValue[Dialect]("byoc.dialects.c", "C"),
    "examplejson": LazyValue[Dialect]("byoc.dialects.examplejson", "ExampleJson"),
    "graph": LazyValue[Dialect]("byoc.dialects.graph", "Graph"),
}
