"""The runtime component protocol, apart from the loaders (`byoc.runtime.component`) so
that the components themselves can subclass it without importing the loader table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class CEntry:
    """How C calls one partition directly (the compiled host plan, `byoc.runtime.native_plan`):
    `fn` is the address of a packed entry `int32_t f(DLTensor** args, int32_t n)` (`module`
    0), or of a graph runtime's `int32_t f(void* module, int32_t graph, DLTensor** args,
    int32_t n)` with its `module` handle and `graph` index. `last_error()` is the message
    of the component's last failure on the calling thread."""

    fn: int
    last_error: Callable[[], str]
    module: int = 0
    graph: int = -1


class RuntimeComponent(Protocol):
    """What a target's codegen hook returns: the compiled partitions of that target.

    `kind`, `get_function` and `export` are what every component provides. The thread
    hooks, the tier hooks and `c_entry` below are optional: a component subclasses `RuntimeComponent` and inherits their
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

    def c_entry(self, symbol: str) -> CEntry | None:
        """How C calls partition `symbol` without Python, or None (the default): a compiled
        host plan then calls back into Python for it, through `get_function`."""
        return None

    # ---- tiers (a component that starts on a first tier: `byoc.runtime.tiered`) ----------
    tiered: bool = False
    """Whether the component may start on a first tier and switch (the hooks below)."""

    tier: str = "compiled"
    """"first" while the component runs its first tier, else "compiled" (the default)."""

    def on_compiled(self, notify: Callable[[], None]) -> bool:
        """Call `notify()` once the component switched to its compiled code; False (and no
        call) when there is no switch to come (the default)."""
        return False

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Block until the component runs its compiled code (True) or `timeout` seconds
        passed (False); raises a compile's error. At once True by default."""
        return True

    def start_compile(self) -> None:
        """Start compiling now, not after the delay `on_compiled` leaves (the owner calls it
        when its first run ended); a no-op by default and once started."""


__all__ = ["CEntry", "RuntimeComponent"]
