"""Every `BYOC_*` environment variable byoc reads, parsed and checked in one place.

    threads = env.value("BYOC_NUM_THREADS")        # an int in 1..1024, or None when unset
    env.check_native()                              # the variables the C libraries read

Each variable is an `EnvVar`: its name, what it accepts (said in every error), a parser
and the value an unset or empty variable means. A value that does not parse is an
`EnvError` naming the variable and what it accepts (`BYOC_SPECIALIZE_CACHE='abc': expected
an integer from 1 to 1000000`), never a bare `int()` error or an overflow further down.
The variables the generated C and the engines read themselves (`getenv`) are checked by
`check_native` before a library is loaded, so a value C would silently ignore is an
error too. docs/runtime.md lists them all.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_THREADS = 1024
"""The most threads a count may ask for (byoc.runtime.threads.MAX_THREADS, the C clamp)."""


class EnvError(ValueError):
    """A `BYOC_*` variable whose value byoc does not accept."""


@dataclass(frozen=True)
class EnvVar:
    name: str
    accepts: str
    """What the variable accepts, as an error message says it."""
    parse: Callable[[str], Any]
    """The value of a non-empty text (stripped); raises ValueError when it does not parse."""
    default: Any = None
    """The value of an unset or empty variable."""
    read_by_c: bool = False
    """Read by C code (`getenv`) too: `check_native` checks it before a library loads."""

    def value(self, environ: Any = None) -> Any:
        text = (os.environ if environ is None else environ).get(self.name)
        if text is None or not text.strip():
            return self.default
        try:
            return self.parse(text.strip())
        except (ValueError, OverflowError):
            raise EnvError(f"{self.name}={text!r}: expected {self.accepts}") from None


def _int_in(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        n = int(text, 10)  # ValueError for '2.5', 'abc', '1e3'
        if not lo <= n <= hi:
            raise ValueError(text)
        return n

    return parse


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError(text)
        return text.lower()

    return parse


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(text)
    return text == "1"


def _sanitizers(text: str) -> tuple[str, ...]:
    names = tuple(sorted({s.strip() for s in text.split(",") if s.strip()}))
    if not set(names) <= {"address", "undefined"}:
        raise ValueError(text)
    return names


def _words(text: str) -> tuple[str, ...]:
    return tuple(shlex.split(text))


VARIABLES: dict[str, EnvVar] = {
    v.name: v
    for v in (
        EnvVar(
            "BYOC_NUM_THREADS",
            f"an integer from 1 to {MAX_THREADS} (threads per run)",
            _int_in(1, MAX_THREADS),
            read_by_c=True,
        ),
        EnvVar(
            "BYOC_SPECIALIZE_CACHE",
            "an integer from 1 to 1000000 (specialisations kept per dynamic-shape model)",
            _int_in(1, 1_000_000),
            default=8,
        ),
        EnvVar("BYOC_CACHE_DIR", "a directory path", str),
        EnvVar("BYOC_CPU_DISPATCH", "'auto', 'avx2' or 'baseline'", _one_of("auto", "avx2", "baseline"), "auto", True),
        EnvVar("BYOC_SANITIZE", "a comma-separated list of 'address' and 'undefined'", _sanitizers, ()),
        EnvVar("BYOC_PROFILE_KERNELS", "0 or 1", _flag, False),
        EnvVar("BYOC_CFLAGS", "compiler flags a shell can split", _words, ()),
        EnvVar(
            "BYOC_CBLAS_THREADS",
            f"an integer from 1 to {MAX_THREADS} (OpenBLAS's own threads)",
            _int_in(1, MAX_THREADS),
            1,
            True,
        ),
        EnvVar("BYOC_DNNL_VERBOSE", "0 or 1", _flag, False, True),
        EnvVar("BYOC_TIERED", "0 or 1 (build C partitions tiered)", _flag, False),
    )
}
"""Name -> variable: every `BYOC_*` variable byoc reads."""


def value(name: str) -> Any:
    """The parsed value of `name` (a key of VARIABLES), or its default when unset or empty;
    an `EnvError` naming it when its value is not accepted."""
    return VARIABLES[name].value()


def is_set(name: str) -> bool:
    """Whether `name` (a key of VARIABLES) is set to a non-empty value."""
    return bool(os.environ.get(VARIABLES[name].name, "").strip())


def check_native() -> None:
    """Check the variables C code reads itself (an `EnvError` for the first bad one)."""
    for var in VARIABLES.values():
        if var.read_by_c:
            var.value()


__all__ = ["MAX_THREADS", "VARIABLES", "EnvError", "EnvVar", "check_native", "is_set", "value"]
