"""The xDSL context with every byoc dialect registered, and `parse_module`."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from byoc.dialects import ALL_DIALECTS


def make_context(allow_unregistered: bool = False) -> Context:
    """A fresh context where every byoc dialect is registered (loaded lazily)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for name, factory in ALL_DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module(text: str, name: str = "<string>") -> ModuleOp:
    """Parse IR text into a verified `builtin.module`.

    Raises xDSL's `ParseError` / `VerifyException` on bad input; both carry the
    location of the offending op.
    """
    from xdsl.parser import Parser

    from byoc.dialects.nn.types import check_value_types

    module = Parser(make_context(), text, name).parse_module()
    module.verify()
    check_value_types(module)
    return module
