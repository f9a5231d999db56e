"""oneDNN from the `onednn-cpu-gomp` and `onednn-devel-cpu-gomp` wheels (the `byoc[dnnl]` extra).

The wheels put `libdnnl.so.3` under `<prefix>/lib` and the headers under `<prefix>/include`
(their data directories). They are found through the installed distributions' file lists
(`importlib.metadata`), never by a hard-coded path, so a venv anywhere works.

    find()            # OneDNN(include_dir, lib_dir, version) or raises OneDnnMissing
    missing_reason()  # None when both wheels are usable, else why not (tests skip with it)
    unavailable_reason()  # also None only if the library loads (the target's availability)
"""

from __future__ import annotations

import importlib.metadata as metadata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

RUNTIME_DIST = "onednn-cpu-gomp"
DEVEL_DIST = "onednn-devel-cpu-gomp"
VERSION = "2023.2.0"
"""The wheel release the extra pins: oneDNN 3.2 with GNU OpenMP (the newer `onednn` wheels
need the SYCL runtime)."""
INSTALL_HINT = "pip install 'byoc[dnnl]'"


class OneDnnMissing(RuntimeError):
    """The oneDNN wheels (library or headers) are not installed."""


@dataclass(frozen=True)
class OneDNN:
    include_dir: Path
    """Holds `oneapi/dnnl/dnnl.h`."""
    lib_dir: Path
    """Holds `libdnnl.so.3` (also the run path of libraries linking it)."""
    version: str
    """The wheels' version."""


def _file_in(dist_name: str, suffix: str) -> Path:
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise OneDnnMissing(
            f"the dnnl target needs the '{dist_name}' wheel ({INSTALL_HINT})"
        ) from None
    name = suffix.rsplit("/", 1)[-1]
    for f in dist.files or ():
        if f.name != name:
            continue
        path = Path(str(dist.locate_file(f))).resolve()  # recorded relative to site-packages
        if path.as_posix().endswith(suffix) and path.is_file():
            return path
    raise OneDnnMissing(
        f"the '{dist_name}' wheel is installed but has no '{suffix}' ({INSTALL_HINT})"
    )


@lru_cache(maxsize=1)
def find() -> OneDNN:
    """Where the wheels put oneDNN's header and library; OneDnnMissing if they are absent."""
    header = _file_in(DEVEL_DIST, "include/oneapi/dnnl/dnnl.h")
    library = _file_in(RUNTIME_DIST, "lib/libdnnl.so.3")
    return OneDNN(
        include_dir=header.parent.parent.parent,
        lib_dir=library.parent,
        version=metadata.version(RUNTIME_DIST),
    )


def missing_reason() -> str | None:
    """None when oneDNN is usable, else a sentence saying what is missing."""
    try:
        find()
    except OneDnnMissing as e:
        return str(e)
    return None


def unavailable_reason() -> str | None:
    """None when the dnnl target can run here: both wheels are installed, oneDNN's library
    loads in this process (not a wheel of another architecture, no missing OpenMP runtime)
    and finds an ISA it has kernels for on this CPU (SSE4.1 at least); else why not. The
    dnnl target's `availability`."""
    reason = missing_reason()
    if reason is not None:
        return reason
    return _load_reason(str(find().lib_dir / "libdnnl.so.3"))


def load_library(path: str | None = None) -> Any:
    """oneDNN's library (`path`, else the wheel's `libdnnl.so.3`) as a `ctypes.CDLL`, loaded
    after gcc's OpenMP runtime (`pin_openmp_runtime`): libdnnl links libgomp, which reads its
    spin count (GOMP_SPINCOUNT) once, when it is loaded; loaded by libdnnl first, libgomp
    would keep its own default spin, whose idle workers and barrier waits take the cores a
    loaded machine has left (docs/threads.md, "oneDNN's threads"). Raises OneDnnMissing or
    OSError."""
    import ctypes

    from byoc.runtime.c_module import pin_openmp_runtime

    pin_openmp_runtime()
    return ctypes.CDLL(path or str(find().lib_dir / "libdnnl.so.3"))


@lru_cache(maxsize=4)
def _load_reason(path: str) -> str | None:
    import ctypes

    try:
        library = load_library(path)
    except OSError as e:
        return f"oneDNN's library does not load here: {e}"
    effective_isa = library.dnnl_get_effective_cpu_isa
    effective_isa.restype = ctypes.c_int
    effective_isa.argtypes = []
    if effective_isa() == 0:  # dnnl_cpu_isa_default: no ISA oneDNN has x64 kernels for
        return "oneDNN has no kernels for this CPU (it needs SSE4.1 at least)"
    return None


def build_options() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(compiler flags, linker arguments) of a library linking oneDNN: its headers, the
    library with its directory as run path (a fresh process and an artifact find it), and
    GNU OpenMP (the wheel is the gomp build; threads are set with omp_set_num_threads)."""
    found = find()
    flags = ("-fopenmp", f"-I{found.include_dir}")
    libs = (
        f"-L{found.lib_dir}",
        "-l:libdnnl.so.3",
        f"-Wl,-rpath,{found.lib_dir}",
        "-fopenmp",
    )
    return flags, libs


__all__ = [
    "DEVEL_DIST",
    "INSTALL_HINT",
    "RUNTIME_DIST",
    "VERSION",
    "OneDNN",
    "OneDnnMissing",
    "build_options",
    "find",
    "missing_reason",
    "unavailable_reason",
]
