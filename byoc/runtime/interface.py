"""The runtime component protocol, apart from the loaders (`byoc.runtime.component`) so
that the components themselves can subclass it without importing the loader table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class RuntimeComponent(Protocol):
    """What a target's codegen hook returns: the compiled partitions of that target.

    `kind`, `get_function` and `export` are what every component provides. The thread
    hooks below are optional: a component subclasses `RuntimeComponent` and inherits their
    no-op defaults, overriding those its engine has a use for (the C library has all).
    """

    kind: str
    """The key of its loader in `COMPONENT_LOADERS` ("c", "examplejson", ...)."""

    holds_threads: bool = False
    """Whether `hold_threads` keeps a thread team of its own awake. A run holds the team
    only when exactly one component of the Executable has one (docs/threads.md)."""

    def get_function(self, symbol: str) -> Callable[..., Any]:
        """A callable `f(*inputs, *outputs)` writing the outputs (destination passing)."""
        ...

    def export(self) -> dict[str, bytes]:
        """Named blobs an artifact stores; the loader of `kind` reads them back."""
        ...

    def set_num_threads(self, n: int) -> None:
        """Use at most `n` threads per call from now on (the Executable's setting)."""

    def set_call_threads(self, n: int) -> None:
        """For calls from the calling thread only: at most `n` threads (0: the setting)."""

    def hold_threads(self, on: bool) -> None:
        """A run starts (True) or ends (False); see `holds_threads`."""

    def thread_release(self) -> None:
        """The calling thread will make no more calls: free what it holds now."""


__all__ = ["RuntimeComponent"]
