"""Tiered C partitions: run at once on the first tier, switch to the compiled library.

    module = TieredCModule.start(unit, functions, programs)   # returns at once
    module.get_function(sym)        # the current tier's partition
    module.wait_compiled()          # block until the compiled library is in use

`byoc.build(..., tiered=True)` (or `BYOC_TIERED=1`) builds a ccompiler component this way
(docs/runtime.md, "Tiered execution"): the partitions the first tier can run
(`byoc.runtime.first_tier`) run on it from the first call, while a background thread emits
the C and compiles it (today's path, cached as ever). When the library is loaded, the
module's owners (the Executable) are told and build their run state over it; a run reads
that state once, so a run in flight finishes on the tier it started on.

A partition the first tier cannot hold has no first-tier entry: its calls wait for the
compiled library (`get_function` returns a function that waits; `c_entry` is None, so a
native plan calls back into Python for it, where it waits).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from byoc.runtime.c_module import CModule, CSignature
from byoc.runtime.first_tier import FirstTierModule, Program
from byoc.runtime.interface import CEntry, RuntimeComponent

TIERED_ENV = "BYOC_TIERED"
"""`1`: `byoc.build` builds C partitions tiered unless told otherwise (`tiered=`)."""

COMPILE_DELAY = 0.1
"""Seconds the background compile waits once an owner listens, unless told to start first
(`start_compile`: the owner's first run ended, a call needs the compiled library, or
someone waits for it). The compile's own Python (the C text, the cache lookup) would share
the interpreter with the build's last steps and the first run, and delay the first answer."""


class TieredCModule(RuntimeComponent):
    """A ccompiler component on two tiers (module doc). Kind "c": what an artifact stores is
    the compiled library's (`export` waits for it)."""

    kind = "c"
    holds_threads = True
    tiered = True

    def __init__(
        self,
        first: FirstTierModule | None,
        functions: Mapping[str, CSignature],
        compile_library: Callable[[], CModule],
        reasons: Mapping[str, str] | None = None,
    ):
        """`first` runs the partitions it has programs for; `compile_library` makes the
        compiled module (called on a background thread by `start`); `reasons`: why each
        partition without a program has none."""
        self.first = first
        self.functions = dict(functions)
        self.waiting = {
            s: (reasons or {}).get(s, "no first-tier program")
            for s in sorted(self.functions)
            if first is None or s not in first.functions
        }
        """The partitions whose calls wait for the compiled library, and why."""
        self.compiled: CModule | None = None
        self.error: BaseException | None = None
        """Why the compiled library could not be built (its partitions stay on the first tier)."""
        self._compile = compile_library
        self._done = threading.Event()
        self._go = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self._threads = 0
        self._held = threading.local()
        self._started = False

    @classmethod
    def start(
        cls,
        programs: Mapping[str, Program],
        functions: Mapping[str, CSignature],
        compile_library: Callable[[], CModule],
        reasons: Mapping[str, str] | None = None,
    ) -> TieredCModule:
        """The module on the first tier. The compile runs on a daemon thread: it starts when
        the owner's first run ended, a call needs the compiled library or someone waits
        for it (`start_compile`), else `COMPILE_DELAY` seconds after an owner listens
        (`on_compiled`: the Executable, once it is built)."""
        first = FirstTierModule(programs, functions) if programs else None
        return cls(first, functions, compile_library, reasons)

    def start_compile(self) -> None:
        """Start the background compile now (once)."""
        self._go.set()
        self._launch()

    def _launch(self) -> None:
        """Start the compiling thread (once); it compiles when told to (`start_compile`) or
        `COMPILE_DELAY` seconds after it started."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._background, name="byoc-compile", daemon=True).start()

    def _background(self) -> None:
        self._go.wait(COMPILE_DELAY)
        _lower_priority()
        try:
            compiled = self._compile()
        except BaseException as exc:  # noqa: BLE001 - kept, raised by wait_compiled and waiting calls
            with self._lock:
                self.error = exc
            self._done.set()
            return
        with self._lock:
            if self._threads:
                compiled.set_num_threads(self._threads)
            self.compiled = compiled
            listeners = list(self._listeners)
        for notify in listeners:
            try:
                notify()
            except Exception:  # noqa: BLE001 - an owner's failure must not hide the library
                pass
        self._done.set()

    # ---- tiers ---------------------------------------------------------------------
    def on_compiled(self, notify: Callable[[], None]) -> bool:
        """Call `notify()` (on the compiling thread) once the compiled library is in use;
        False (and no call) when it already is or cannot be built. The compile starts at
        the latest `COMPILE_DELAY` seconds later."""
        with self._lock:
            if self.compiled is not None or self.error is not None:
                return False
            self._listeners.append(notify)
        self._launch()
        return True

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Block until the compile ended (True), or `timeout` seconds passed (False). Raises
        the compile's error if it failed."""
        self.start_compile()
        if not self._done.wait(timeout):
            return False
        if self.error is not None:
            raise self.error
        return True

    @property
    def tier(self) -> str:
        """"compiled" once the library is in use, else "first"."""
        return "compiled" if self.compiled is not None else "first"

    def _current(self, sym: str) -> RuntimeComponent | None:
        compiled = self.compiled
        if compiled is not None:
            return compiled
        if self.first is not None and sym in self.first.functions:
            return self.first
        return None

    # ---- the component protocol ----------------------------------------------------
    def get_function(self, symbol: str) -> Callable[..., Any]:
        if symbol not in self.functions:
            raise KeyError(f"no C function '{symbol}' (functions: {', '.join(sorted(self.functions))})")
        current = self._current(symbol)
        if current is not None:
            return current.get_function(symbol)

        self.start_compile()

        def waiting(*arrays: Any) -> Any:
            self.wait_compiled()
            assert self.compiled is not None
            return self.compiled.get_function(symbol)(*arrays)

        return waiting

    def c_entry(self, symbol: str) -> CEntry | None:
        current = self._current(symbol)
        return current.c_entry(symbol) if current is not None else None

    def export(self) -> dict[str, bytes]:
        """The compiled library's blobs (waits for it): the first tier is never exported."""
        self.wait_compiled()
        assert self.compiled is not None
        return self.compiled.export()

    def _modules(self) -> list[Any]:
        return [m for m in (self.first, self.compiled) if m is not None]

    def set_num_threads(self, n: int) -> None:
        with self._lock:
            self._threads = n
            for m in self._modules():
                m.set_num_threads(n)

    def set_call_threads(self, n: int) -> None:
        for m in self._modules():
            m.set_call_threads(n)

    def hold_threads(self, on: bool) -> None:
        """Hold the team of the tier in use; the release goes to the team this thread held
        (the tier may change during a run)."""
        stack: list[Any] = self._held.__dict__.setdefault("stack", [])
        if on:
            module = self.compiled or self.first
            stack.append(module)
            if module is not None:
                module.hold_threads(True)
        elif stack:
            module = stack.pop()
            if module is not None:
                module.hold_threads(False)

    def thread_release(self) -> None:
        for m in self._modules():
            m.thread_release()

    def __getattr__(self, name: str) -> Any:
        """What only the compiled library has (`source`, `library_path`, `team_counters`,
        ...): waits for it."""
        if name.startswith("_") or name in ("first", "compiled", "functions", "waiting", "error"):
            raise AttributeError(name)
        self.wait_compiled()
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"TieredCModule(tier={self.tier}, functions={sorted(self.functions)}, waiting={sorted(self.waiting)})"


COMPILE_NICE = 10
"""How much the background compile thread lowers its own priority (and so its compilers',
which inherit it): on a machine with no spare core the first tier's runs come first."""


def _lower_priority() -> None:
    """Lower the calling thread's scheduling priority by COMPILE_NICE (Linux: nice is per
    thread, and the compilers it starts inherit it); nothing where that is not possible."""
    import os

    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + COMPILE_NICE))
    except (AttributeError, OSError):
        pass


def tiered_default() -> bool:
    """Whether `byoc.build` tiers C partitions when not told (`BYOC_TIERED`, default off)."""
    from byoc.utils import env

    return bool(env.value(TIERED_ENV))


__all__ = ["TIERED_ENV", "TieredCModule", "tiered_default"]
