"""OpenBLAS from the scipy-openblas32 wheel: how a cblas library links it, and its threads."""

from __future__ import annotations

import os
from typing import Any

THREADS_ENV = "BYOC_CBLAS_THREADS"
"""OpenBLAS threads for cblas kernels, read when a cblas library is loaded (default 1)."""


def build_options() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Compiler flags and linker arguments for a library holding cblas kernels: the
    wheel's header and library, found through its helpers; the library directory is
    also the run path, so the library loads from a fresh process and from an artifact."""
    from byoc.runtime.cpu import native_load

    try:
        with native_load():  # importing the wheel loads OpenBLAS, which reads its core type
            import scipy_openblas32 as openblas
    except ImportError as e:  # pragma: no cover - a dependency of the cblas extra
        raise RuntimeError(
            "the cblas target needs OpenBLAS from the scipy-openblas32 wheel: "
            "pip install 'byoc[cblas]'"
        ) from e
    from byoc.runtime.toolchain import DEFAULT_FLAGS

    libdir = openblas.get_lib_dir()
    flags = (*DEFAULT_FLAGS, "-D_GNU_SOURCE", f"-I{openblas.get_include_dir()}")
    libs = (f"-L{libdir}", f"-l{openblas.get_library()}", f"-Wl,-rpath,{libdir}")
    return flags, libs


def unavailable_reason() -> str | None:
    """None when the scipy-openblas32 wheel is installed, else why not (the cblas target's
    `availability`)."""
    import importlib.util

    if importlib.util.find_spec("scipy_openblas32") is None:
        return "the cblas target needs OpenBLAS from the scipy-openblas32 wheel: pip install 'byoc[cblas]'"
    return None


def set_num_threads(n: int) -> None:
    """OpenBLAS threads for cblas kernels from now on, in this process (and in libraries
    loaded later, through $BYOC_CBLAS_THREADS)."""
    if n < 1:
        raise ValueError(f"set_num_threads: need at least 1 thread, got {n}")
    _openblas().scipy_openblas_set_num_threads(int(n))
    os.environ[THREADS_ENV] = str(int(n))


def get_num_threads() -> int:
    """The number of threads OpenBLAS uses now."""
    return int(_openblas().scipy_openblas_get_num_threads())


def _openblas() -> Any:
    import ctypes

    from byoc.runtime.cpu import native_load

    with native_load():  # the import loads OpenBLAS
        import scipy_openblas32 as openblas

    path = os.path.join(openblas.get_lib_dir(), openblas.get_library(fullname=True))
    return ctypes.CDLL(path)


__all__ = [
    "THREADS_ENV",
    "build_options",
    "get_num_threads",
    "set_num_threads",
    "unavailable_reason",
]
