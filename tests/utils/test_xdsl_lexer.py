"""xDSL 0.75 lexes an unterminated string literal in time exponential in its length (issue 14,
item 6); byoc swaps in an equivalent linear pattern. The time bounds here are generous (tens of
seconds, for a loaded 2-core machine) and far below the blow-up: xDSL's own pattern needs about a
minute for 30 characters and four times more per 2 characters, so hours for the 40 used here.
The timed parses run in a subprocess, so a regression fails on the timeout instead of hanging."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap

from xdsl.utils.mlir_lexer import MLIRLexer

import byoc.dialects  # noqa: F401 - importing byoc's dialects installs the guard
from byoc.utils import xdsl_lexer

TIME_LIMIT = 60.0
"""Seconds for a subprocess that parses a few adversarial inputs (it takes about one)."""


def test_the_guard_is_installed_by_importing_the_dialects() -> None:
    pattern = MLIRLexer._unescaped_characters_regex.pattern  # pyright: ignore[reportPrivateUsage]
    assert pattern != xdsl_lexer.UPSTREAM_PATTERN
    xdsl_lexer.install()  # idempotent
    assert MLIRLexer._unescaped_characters_regex.pattern == pattern  # pyright: ignore[reportPrivateUsage]


def test_linear_pattern_accepts_exactly_what_xdsl_accepts() -> None:
    upstream = re.compile(xdsl_lexer.UPSTREAM_PATTERN)  # safe on these short strings
    linear = re.compile(xdsl_lexer.LINEAR_PATTERN)
    pieces = ["a", " ", "é", "\\n", "\\t", "\\\\", '\\"', "\\4F", "\\4", "\\q", "\\", '"', "\n", "\t"]
    rng = random.Random(14)
    for _ in range(20_000):
        text = '"' + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        text += rng.choice(['"', "", 'b"', "\n"])
        a, b = upstream.match(text), linear.match(text)
        assert (a and a.end()) == (b and b.end()), repr(text)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
    )


def test_unterminated_string_literals_parse_in_linear_time() -> None:
    """Through `byoc.parse_module` and through a bare xDSL `Parser` (as the ExampleJSON
    reader uses one): both fail at once, for 40 characters as for a million."""
    result = _run_python(
        """
        import time
        from xdsl.context import Context
        from xdsl.parser import Parser
        from xdsl.utils.exceptions import ParseError
        import byoc

        inputs = []
        for n in (40, 100_000, 1_000_000):
            inputs += ['"' + "a" * n, '@"' + "a" * n, "%0 = " + '"' + "ab\\\\n" * n,
                       'module attributes {x = "' + "a" * n + "\\n}"]
        worst = 0.0
        for text in inputs:
            for parse in (byoc.parse_module, lambda t: Parser(Context(), t).parse_attribute()):
                start = time.perf_counter()
                try:
                    parse(text)
                except ParseError:
                    pass
                else:
                    raise AssertionError("parsed: " + text[:40])
                worst = max(worst, time.perf_counter() - start)
        print(f"worst {worst:.3f}s")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("worst ")


def test_byoc_opt_reports_an_unterminated_string_at_once(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "string.mlir"
    path.write_text("func.func @f() {\n  %0 = " + '"' + "a" * 40 + "\n}\n")
    result = subprocess.run(
        [sys.executable, "-m", "byoc.tools.byoc_opt", str(path)],
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"{path}:2:8: error: string literal is not closed before the end of the line"
    ), result.stderr
