"""Per-kernel wall time of generated C partitions (docs/threads.md, "Where the time goes").

    from byoc.runtime import kernel_profile
    kernel_profile.enable()            # before building: loads the sink, sets BYOC_PROFILE_KERNELS=1
    exe = byoc.build(module, targets=["ccompiler"], num_threads=2)
    kernel_profile.reset(); exe.run(x)
    for row in kernel_profile.rows(): print(row.site, row.what, row.seconds, row.best, row.calls)

`enable` compiles byoc_profile.h with `-DBYOC_PROFILE_SINK` into a small library and loads
it with RTLD_GLOBAL, then sets `BYOC_PROFILE_KERNELS=1`, so every C library built from then
on (a different cache key) times each call of its kernel functions and of its partitions'
subgraph functions into the sink (`byoc_profile_record`, a weak symbol in the generated
code). Rows are keyed by the call site's C name (`byoc_p_<partition>_<k>` for kernel k,
`byoc_p_<partition>_` for the whole partition body), so two builds of one model at
different thread counts share their rows: reset between measurements. Time is wall time
of the calling thread around the call (the OpenMP team's work inside it included).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

from byoc.runtime.toolchain import DEFAULT_FLAGS, PROFILE_ENV, compile_source

_SINK: ctypes.CDLL | None = None


@dataclass(frozen=True)
class Row:
    site: str
    """The C function called: `byoc_p_<partition>_<k>` (a kernel) or `byoc_p_<partition>_`."""
    what: str
    """Its ops and output shape, and the kernel called with its sizes (or `partition ...`)."""
    seconds: float
    """Total wall time of its calls since the last `reset`."""
    best: float
    """Wall time of its fastest call since the last `reset` (on a shared machine the
    least disturbed one)."""
    calls: int

    @property
    def is_partition(self) -> bool:
        return self.what.startswith("partition ")


def enable() -> None:
    """Load the sink (once per process) and build every later library with the hook."""
    global _SINK
    if _SINK is None:
        source = '#include "byoc_profile.h"\n'
        flags = tuple(f for f in DEFAULT_FLAGS if f != "-fopenmp") + ("-DBYOC_PROFILE_SINK",)
        built = compile_source(source, flags)
        _SINK = ctypes.CDLL(str(Path(built.library_path)), mode=ctypes.RTLD_GLOBAL)
        _SINK.byoc_profile_count.restype = ctypes.c_int64
        _SINK.byoc_profile_row.argtypes = [
            ctypes.c_int64,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_double),
            ctypes.POINTER(ctypes.c_double),
            ctypes.POINTER(ctypes.c_int64),
        ]
    os.environ[PROFILE_ENV] = "1"


def _sink() -> ctypes.CDLL:
    if _SINK is None:
        raise RuntimeError("kernel_profile.enable() was not called")
    return _SINK


def reset() -> None:
    """Zero every row (the rows stay, in order of first call)."""
    _sink().byoc_profile_reset()


def rows() -> list[Row]:
    """Every call site recorded since `enable`, in order of first call."""
    sink = _sink()
    out: list[Row] = []
    site, what = ctypes.c_char_p(), ctypes.c_char_p()
    seconds, best, calls = ctypes.c_double(), ctypes.c_double(), ctypes.c_int64()
    for i in range(int(sink.byoc_profile_count())):
        sink.byoc_profile_row(
            i, ctypes.byref(site), ctypes.byref(what), ctypes.byref(seconds), ctypes.byref(best), ctypes.byref(calls)
        )
        out.append(
            Row(
                (site.value or b"").decode(),
                (what.value or b"").decode(),
                float(seconds.value),
                float(best.value),
                int(calls.value),
            )
        )
    return out


__all__ = ["Row", "enable", "reset", "rows"]
