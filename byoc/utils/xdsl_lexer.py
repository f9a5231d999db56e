"""A guard for xDSL 0.75's MLIR lexer: string literals are lexed in time linear in their length.

xDSL's `MLIRLexer._lex_string_literal` matches a literal with

    "(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"

where a `+` run sits inside a `*` loop. When the closing quote is missing, Python's
backtracking `re` tries every way of cutting the characters into runs before it gives up:
2^n steps for n characters (`"` and 30 letters took about a minute). `install()` replaces the
pattern with the same language written with possessive quantifiers (Python >= 3.11), which
never backtrack; the alternatives start with different characters, so nothing that matched
before is lost. The reproducer for xDSL's maintainers is in docs/cli.md.

The pattern is replaced only while it is exactly the one above: a later xDSL with a different
pattern is left alone (tests/utils/test_xdsl_lexer.py then times the new one).
"""

from __future__ import annotations

import re

UPSTREAM_PATTERN = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
"""xDSL 0.75's `MLIRLexer._unescaped_characters_regex`: exponential on an unclosed literal."""

LINEAR_PATTERN = r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
"""The same literals, matched without backtracking."""


def install() -> None:
    """Make xDSL's MLIR lexer match string literals in linear time (idempotent)."""
    from xdsl.utils.mlir_lexer import MLIRLexer

    current = getattr(MLIRLexer, "_unescaped_characters_regex", None)
    if isinstance(current, re.Pattern) and current.pattern == UPSTREAM_PATTERN:
        MLIRLexer._unescaped_characters_regex = re.compile(LINEAR_PATTERN)  # pyright: ignore[reportPrivateUsage]
