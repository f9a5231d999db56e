"""cffi FFIs of fixed declarations, parsed once per machine instead of once per process.

    ffi = static_ffi(_CDEF)          # as cffi.FFI() + ffi.cdef(_CDEF), without the parse
    lib = ffi.dlopen(path)

`ffi.cdef` parses its text with pycparser: importing pycparser and building its
lexer costs about 70 ms in a fresh process, the first time any library is loaded, and
so is paid by every first inference. The declarations of the first tier and of the
plan runner never change with a model, so they are parsed once per machine and
kept as cffi's out-of-line ABI module (`FFI.set_source(name, None)`, a Python file
that builds the same types with no parser) in the kernel cache, named by the hash of
the declarations and cffi's version; later processes import that file. The FFI it
gives is cffi's compiled `FFI` class, with the same `dlopen`, `dlclose`, `new`, `cast`,
`from_buffer`, `callback`, `gc` and `addressof` as a parsed one, shared by every
library opened with it in the process (each `dlopen` is its own handle).

When the cache cannot be written or its file does not load, the declarations are
parsed as before.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import cffi

from byoc.runtime.toolchain import cache_dir, kernel_cache_dir

_FFIS: dict[str, Any] = {}
_LOCK = threading.Lock()


def static_ffi(cdef: str) -> Any:
    """An FFI holding the declarations `cdef` (module doc); one per text in the process."""
    key = hashlib.sha256(f"{cffi.__version__}\0{cdef}".encode()).hexdigest()[:24]
    found = _FFIS.get(key)
    if found is not None:
        return found
    with _LOCK:
        if key not in _FFIS:
            _FFIS[key] = _cached(f"byoc_ffi_{key}", cdef)
    return _FFIS[key]


def _parsed(cdef: str) -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    return ffi


def _cached(name: str, cdef: str) -> Any:
    """The FFI of the module `name` in the kernel cache, written first when it is not there."""
    path = kernel_cache_dir(cache_dir()) / f"{name}.py"
    if not path.exists():
        try:
            _write(path, name, cdef)
        except OSError:
            return _parsed(cdef)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.ffi
    except Exception:  # noqa: BLE001 - a damaged cache file: parse, and write it again
        try:
            _write(path, name, cdef)
        except OSError:
            pass
        return _parsed(cdef)


def _write(path: Path, name: str, cdef: str) -> None:
    """Write the out-of-line ABI module of `cdef` to `path` (atomically: a concurrent
    process reads the old file or the new one, never half of one)."""
    builder = cffi.FFI()
    builder.cdef(cdef)
    builder.set_source(name, None, compiler_verbose=0)  # no "generating <file>" line
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        builder.emit_python_code(str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


__all__ = ["static_ffi"]
