"""The C toolchain: compile a translation unit into a shared library, cached by content hash.

    built = compile_source(source)          # BuildResult(library_path, source_path, cache_hit)

The source is compiled with the system compiler (`$CC`, default `cc`) and
`DEFAULT_FLAGS` (plus `-I` the runtime headers). Libraries are cached under
`$BYOC_CACHE_DIR`, else `$XDG_CACHE_HOME/byoc`, else `~/.cache/byoc`, keyed by
a hash of the source, the flags, the link arguments, the runtime headers and
the compiler's `--version`: a second build of the same source is a file
lookup. The source is kept next to the library; a failed compile raises
`CompileError` with the compiler's output and that path.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from byoc.runtime.cpu import c_dispatch_flags

INCLUDE_DIR = Path(__file__).resolve().parent
"""Where dlpack.h, byoc_runtime.h and byoc_kernels.h live (`-I` for the generated C)."""
RUNTIME_HEADERS = ("dlpack.h", "byoc_runtime.h", "byoc_kernels.h", "byoc_cblas.h")

DEFAULT_FLAGS: tuple[str, ...] = (
    "-std=c11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
)
LIBS: tuple[str, ...] = ("-lm", "-pthread")

class CompileError(RuntimeError):
    """The C compiler rejected the generated source."""

    def __init__(self, command: Sequence[str], output: str, source_path: Path):
        self.command = list(command)
        self.output = output
        self.source_path = source_path
        super().__init__(
            f"C compilation failed (source kept at {source_path}):\n"
            f"$ {shlex.join(self.command)}\n{output.rstrip()}"
        )


# ---------------------------------------------------------------------------
# Compiling and caching
# ---------------------------------------------------------------------------


def cache_dir() -> Path:
    """`$BYOC_CACHE_DIR`, else `$XDG_CACHE_HOME/byoc`, else `~/.cache/byoc`."""
    explicit = os.environ.get("BYOC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "byoc"


def compiler() -> str:
    return os.environ.get("CC", "cc")


@lru_cache(maxsize=8)
def compiler_version(cc: str) -> str:
    """`cc --version` (part of the cache key: a compiler upgrade rebuilds)."""
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    except OSError as e:
        raise CompileError([cc, "--version"], f"cannot run the C compiler: {e}", Path("-")) from None
    return done.stdout + done.stderr


@lru_cache(maxsize=1)
def _headers_digest() -> str:
    h = hashlib.sha256()
    for name in RUNTIME_HEADERS:
        h.update(name.encode())
        h.update((INCLUDE_DIR / name).read_bytes())
    return h.hexdigest()


def library_key(
    source: str, flags: Sequence[str], cc: str | None = None, libs: Sequence[str] = ()
) -> str:
    cc = cc or compiler()
    h = hashlib.sha256()
    link = "\0".join((*LIBS, *libs))
    for part in (compiler_version(cc), cc, "\0".join(flags), link, _headers_digest(), source):
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()[:40]


@dataclass(frozen=True)
class BuildResult:
    library_path: Path
    source_path: Path
    cache_hit: bool


def compile_source(
    source: str,
    flags: Sequence[str] = DEFAULT_FLAGS,
    *,
    directory: Path | None = None,
    cc: str | None = None,
    libs: Sequence[str] = (),
) -> BuildResult:
    """Compile `source` into a shared library, or find it in the cache. `libs` (linker
    arguments such as `-L<dir> -lfoo -Wl,-rpath,<dir>`) go after the source."""
    cc = cc or compiler()
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    flags = (*flags, *c_dispatch_flags())
    key = library_key(source, flags, cc, libs)
    library = directory / f"byoc_{key}.so"
    src = directory / f"byoc_{key}.c"
    if library.exists():
        return BuildResult(library, src, True)
    write_atomic(src, source.encode())
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".build_", suffix=".so")
    os.close(fd)
    command = [cc, *flags, f"-I{INCLUDE_DIR}", "-o", tmp, str(src), *LIBS, *libs]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as e:
        os.unlink(tmp)
        raise CompileError(command, f"cannot run the C compiler: {e}", src) from None
    if done.returncode != 0:
        os.unlink(tmp)
        raise CompileError(command, done.stdout + done.stderr, src)
    os.replace(tmp, library)
    return BuildResult(library, src, False)


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".src_")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def cache_library(data: bytes, directory: Path | None = None) -> Path:
    """Store an already built library (from an artifact) in the cache, named by its content hash."""
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"byoc_lib_{hashlib.sha256(data).hexdigest()[:40]}.so"
    if not path.exists():
        write_atomic(path, data)
    return path
