"""The dialects byoc registers, by name, imported lazily (xDSL's own habit)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect

from byoc.utils import xdsl_lexer

xdsl_lexer.install()  # every parse of byoc IR lexes string literals in linear time


def _nn() -> Dialect:
    from byoc.dialects.nn import Nn

    return Nn


def _byoc() -> Dialect:
    from byoc.dialects.byoc import Byoc

    return Byoc


def _examplejson() -> Dialect:
    from byoc.dialects.examplejson import ExampleJson

    return ExampleJson


def _c() -> Dialect:
    from byoc.dialects.c import C

    return C


def _graph() -> Dialect:
    from byoc.dialects.graph import Graph

    return Graph


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin

    return Builtin


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


def _arith() -> Dialect:
    from xdsl.dialects.arith import Arith

    return Arith


# name -> factory. Dialects added by other modules (the C dialect, examplejson)
# register a line here.
ALL_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "builtin": _builtin,
    "func": _func,
    "arith": _arith,
    "nn": _nn,
    "byoc": _byoc,
    "c": _c,
    "examplejson": _examplejson,
    "graph": _graph,
}
