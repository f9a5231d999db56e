"""The C toolchain: compile a translation unit into a shared library, cached by content hash.

    built = compile_source(source)          # BuildResult(library_path, source_path, cache_hit)

The source is compiled with the system compiler (`$CC`, default `cc`) and
`DEFAULT_FLAGS` (plus `-I` the runtime headers). `-fopenmp` is one of them:
the kernels split loops across an OpenMP team (gcc's libgomp) sized by the
thread setting (`byoc_runtime.h`, docs/threads.md); a compiler that cannot build
OpenMP code (clang without libomp) gets the flags without it, and every loop runs
on the calling thread (`NO_OPENMP`: a compile whose errors are about OpenMP is
retried once without the flag, and that compiler builds without it from then on). Libraries are cached under
`$BYOC_CACHE_DIR`, else `$XDG_CACHE_HOME/byoc`, else `~/.cache/byoc`, keyed by
a hash of the source, the flags, the link arguments, the runtime headers and
the compiler's `--version`; the source is kept next to the library and a failed
compile raises `CompileError` with the compiler's output and that path.

The cache is not trusted by file name. The key names a small index file
(`byoc_<key>.lib`) that names the library by the sha256 of its content
(`byoc_lib_<sha256>.so`, where artifacts' libraries go too); a hit reads the
library and checks it against that hash, and a truncated or replaced library
is rebuilt. The checked bytes are what is loaded: `private_copy` writes them
into a fresh directory only this process can write, to be dlopened and
removed at once, so each load is its own instance of the library. Every
write is atomic (a temporary file, then a rename), and the temporaries of a
killed process (`.build_<pid>_*`, `.src_<pid>_*`, `.load_<pid>_*`) are removed
by the next compile once that process is gone (`sweep_orphans`).

The kernels are compiled once per machine (`kernel_library`): the runtime and every
kernel of the headers go into one object, `byoc_kernels_<key>.lib` naming it
(`byoc_obj_<sha256>.o`) and its list of kernels (`byoc_api_<sha256>.json`), keyed like a
library by the headers, the compiler and the flags (dispatch level, sanitizers included).
A model's source is then compiled as a glue unit that calls those kernels and linked with
the object (`byoc.runtime.kernel_library`, docs/c-codegen.md "The kernel library");
`BYOC_KERNEL_LIBRARY=0` compiles every model as one unit, kernels included, as before.

The hashes catch a damaged cache, not an attacker: whoever can write the cache
directory can write a library and an index that agree, and that library's code
runs when it is loaded. The cache directory is created readable and writable by
its owner only.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from byoc.runtime import kernel_library as kl
from byoc.runtime.cpu import c_dispatch_flags
from byoc.utils import env

INCLUDE_DIR = Path(__file__).resolve().parent
"""Where dlpack.h, byoc_runtime.h and byoc_kernels.h live (`-I` for the generated C)."""
RUNTIME_HEADERS = tuple(sorted(p.name for p in INCLUDE_DIR.glob("*.h")))
"""Every header next to byoc_runtime.h (byoc_kernels.h and the family headers it includes,
byoc_qkernels.h and its parts, ...): their contents are part of every library's cache key."""

DEFAULT_FLAGS: tuple[str, ...] = (
    "-std=c11",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-fopenmp",
)
LIBS: tuple[str, ...] = ("-lm", "-pthread")

SANITIZE_ENV = "BYOC_SANITIZE"
"""`BYOC_SANITIZE=address,undefined` builds every library with those sanitizers (the
process that loads them must have the sanitizer runtimes preloaded: see docs/testing.md)."""


def sanitize_flags() -> tuple[str, ...]:
    """The `-fsanitize` flags `BYOC_SANITIZE` asks for (part of the cache key), or ()."""
    wanted = env.value(SANITIZE_ENV)
    if not wanted:
        return ()
    return (
        f"-fsanitize={','.join(sorted(set(wanted)))}",
        "-fno-sanitize-recover=all",
        "-fno-omit-frame-pointer",
        "-g",
    )

PROFILE_ENV = "BYOC_PROFILE_KERNELS"
"""`BYOC_PROFILE_KERNELS=1` builds every library with `-DBYOC_PROFILE_KERNELS`: each kernel
call of a generated partition is timed into the sink of `byoc.runtime.kernel_profile`
(byoc_profile.h; `benchmarks/kernel_profile.py`). Part of the cache key, like every flag."""


def profile_flags() -> tuple[str, ...]:
    """`-DBYOC_PROFILE_KERNELS` when `BYOC_PROFILE_KERNELS` asks for it, else ()."""
    return ("-DBYOC_PROFILE_KERNELS",) if env.value(PROFILE_ENV) else ()


CFLAGS_ENV = "BYOC_CFLAGS"
"""`BYOC_CFLAGS="-DBYOC_STEAL=0"`: more compiler flags for every library built from then on
(split as a shell would), after the default ones; part of the cache key. For experiments with
the runtime headers' switches (docs/threads.md), as `benchmarks/steal.py` uses it."""


def extra_flags() -> tuple[str, ...]:
    """The flags `BYOC_CFLAGS` adds, or (). A value a shell could not split is a ValueError."""
    return tuple(env.value(CFLAGS_ENV))


KERNEL_LIBRARY_ENV = "BYOC_KERNEL_LIBRARY"
"""`BYOC_KERNEL_LIBRARY=0` compiles each model's C as one unit with every kernel it calls
(the build before the kernel library; for comparisons). Part of the cache key."""


def kernel_library_enabled() -> bool:
    return os.environ.get(KERNEL_LIBRARY_ENV, "1").strip() not in ("0", "off", "no", "false")


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
    explicit = env.value("BYOC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "byoc"


KERNEL_CACHE_ENV = "BYOC_KERNEL_CACHE_DIR"
"""Where the kernel library is cached, when not in the library cache of each build: a
fresh `BYOC_CACHE_DIR` per test or benchmark run then still finds the kernel library."""


def kernel_cache_dir(directory: Path) -> Path:
    """`$BYOC_KERNEL_CACHE_DIR`, else `directory` (the library cache of the build)."""
    explicit = os.environ.get(KERNEL_CACHE_ENV)
    return Path(explicit) if explicit else directory


def compiler() -> str:
    return os.environ.get("CC", "cc")


@lru_cache(maxsize=8)
def compiler_version(cc: str) -> str:
    """`cc --version` (part of the cache key: a compiler upgrade rebuilds).

    Kept in the kernel cache under the identity of the compiler's executable (its resolved
    path, size and modification time: an upgrade replaces the file), so that a process
    finds it there instead of running the compiler (a fork of the process, ~3 ms)."""
    record = _compiler_record(cc)
    if record is not None:
        try:
            return record.read_text()
        except (OSError, UnicodeDecodeError):
            pass
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    except OSError as e:
        raise CompileError([cc, "--version"], f"cannot run the C compiler: {e}", Path("-")) from None
    version = done.stdout + done.stderr
    if record is not None and done.returncode == 0:
        with suppress(OSError):
            _make_cache_dir(record.parent)
            write_atomic(record, version.encode())
    return version


def _compiler_record(cc: str) -> Path | None:
    """Where `compiler_version` keeps the version of `cc`, or None if its executable is not
    found (the version is then asked every time)."""
    found = shutil.which(cc)
    if found is None:
        return None
    try:
        real = os.path.realpath(found)
        st = os.stat(real)
    except OSError:
        return None
    identity = f"{cc}\0{real}\0{st.st_size}\0{st.st_mtime_ns}".encode()
    name = f"byoc_cc_{hashlib.sha256(identity).hexdigest()[:32]}.txt"
    return kernel_cache_dir(cache_dir()) / name


NO_OPENMP: set[str] = set()
"""Compilers seen failing on OpenMP code in this process: they build without -fopenmp."""

_OPENMP_FAILURE = re.compile(r"omp\.h|fopenmp|-l(?:g|i)?omp\b|lib(?:g|i)?omp", re.IGNORECASE)


def openmp_failure(output: str) -> bool:
    """Whether a compiler's error output is about OpenMP (no omp.h, no libomp, no -fopenmp)."""
    return _OPENMP_FAILURE.search(output) is not None


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
    """The library in the cache, named by the sha256 of its content."""
    source_path: Path
    cache_hit: bool
    library: bytes = b""
    """The library's content, checked against its name: load this (`private_copy`), not
    the file, which another process could change after the check."""


def compile_source(
    source: str,
    flags: Sequence[str] = DEFAULT_FLAGS,
    *,
    directory: Path | None = None,
    cc: str | None = None,
    libs: Sequence[str] = (),
) -> BuildResult:
    """Compile `source` into a shared library, or find it in the cache. `libs` (linker
    arguments such as `-L<dir> -lfoo -Wl,-rpath,<dir>`) go after the source.

    The cache maps the build key to the content hash of the library (`byoc_<key>.lib`,
    a text file) and stores the library under its content hash (`byoc_lib_<sha256>.so`).
    A hit reads the library and checks it against that hash; a missing, truncated or
    replaced library is rebuilt."""
    cc = cc or compiler()
    directory = directory or cache_dir()
    _make_cache_dir(directory)
    flags = _effective_flags(flags, cc)
    try:
        return _compile_cached(source, flags, directory, cc, libs)
    except CompileError as e:
        if "-fopenmp" not in flags or not openmp_failure(e.output):
            raise
        # e.g. clang without libomp: serial code, the same results
        built = _compile_cached(source, tuple(f for f in flags if f != "-fopenmp"), directory, cc, libs)
        NO_OPENMP.add(cc)
        return built


def _effective_flags(flags: Sequence[str], cc: str) -> tuple[str, ...]:
    """`flags` plus those the environment asks for (dispatch level, sanitizers, profiling,
    `BYOC_CFLAGS`), without -fopenmp for a compiler that cannot build OpenMP code."""
    flags = (*flags, *c_dispatch_flags(), *sanitize_flags(), *profile_flags(), *extra_flags())
    if "-fopenmp" in flags and cc in NO_OPENMP:
        flags = tuple(f for f in flags if f != "-fopenmp")
    return flags


_SPLIT_MARK = f"--byoc-kernel-library={kl.GLUE_FORMAT}"
"""Added to the flags of a key (never to a command): the source is built as a glue unit, the
way `GLUE_FORMAT` names."""


@lru_cache(maxsize=1)
def _kernel_names() -> tuple[frozenset[str], frozenset[str]]:
    return kl.kernel_header_names(INCLUDE_DIR)


def _splittable(source: str, flags: Sequence[str]) -> bool:
    """Whether `source` may be built against the kernel library: a shared library of a
    source including a kernel umbrella header and no other header of its own
    (`kernel_library.may_split`), not a profiling build (whose timing macros wrap the
    kernels' calls in the source's own unit)."""
    return (
        kernel_library_enabled()
        and "-shared" in flags
        and "-DBYOC_PROFILE_KERNELS" not in flags
        and kl.may_split(source)
    )


def _compile_cached(
    source: str, flags: Sequence[str], directory: Path, cc: str, libs: Sequence[str]
) -> BuildResult:
    directory = directory.resolve()  # the compiler runs there (`_run_compiler`)
    split = _splittable(source, flags)
    key = library_key(source, (*flags, _SPLIT_MARK) if split else flags, cc, libs)
    src = directory / f"byoc_{key}.c"
    index = directory / f"byoc_{key}.lib"
    cached = _cached_build(directory, index)
    if cached is not None:
        return BuildResult(cached[0], src, True, cached[1])
    sweep_orphans(directory)
    unit, objects = source, b""
    if split:
        kernels = _kernel_library(flags, directory, cc)
        glue = kl.glue_source(source, kernels.entries, *_kernel_names())
        if glue is not None:
            unit, objects = glue, kernels.object
    units = kl.split_units(unit, compile_jobs()) if objects else [unit]
    sources = [src, *(directory / f"byoc_{key}.{n}.c" for n in range(1, len(units)))]
    for path, text in zip(sources, units, strict=True):
        write_atomic(path, text.encode())
    tmp = _temp_path(directory, ".build_", ".so")
    temps = [tmp]
    try:
        inputs = [str(src)]
        if objects:  # the checked bytes, in a file of this process's own
            obj = _temp_path(directory, ".build_", ".o")
            temps.append(obj)
            obj.write_bytes(objects)
            if len(units) > 1:
                parts = [_temp_path(directory, ".build_", ".o") for _ in units]
                temps.extend(parts)
                _compile_objects(cc, flags, sources, parts)
                inputs = [str(p) for p in parts]
            inputs += [str(obj), "-Wl,--gc-sections"]
        command = [cc, *flags, f"-I{INCLUDE_DIR}", "-o", str(tmp), *inputs, *LIBS, *libs]
        _run_compiler(command, src)
        data = tmp.read_bytes()
    finally:
        for path in temps:
            path.unlink(missing_ok=True)
    library = cache_library(data, directory)
    write_atomic(index, library.name.encode())
    return BuildResult(library, src, False, data)


# ---------------------------------------------------------------------------
# The kernel library
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelLibraryBuild:
    """The kernel library of one compiler and set of flags (`byoc.runtime.kernel_library`)."""

    object_path: Path
    """The object in the cache, named by the sha256 of its content (`byoc_obj_<sha256>.o`)."""
    object: bytes
    """Its content, checked against its name: what a model library is linked with."""
    entries: list[kl.KernelEntry]
    """The kernels it wraps."""
    cache_hit: bool
    seconds: float
    """How long finding or building it took."""


_OBJECT_NAME = re.compile(r"byoc_obj_([0-9a-f]{64})\.o")
_API_NAME = re.compile(r"byoc_api_([0-9a-f]{64})\.json")


def object_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The kernel library's flags for a model library's `flags`: an object (`-c`), each
    function in its own section so that a model library keeps only the kernels it calls."""
    return (*(f for f in flags if f != "-shared"), "-c", "-ffunction-sections", "-fdata-sections")


def kernel_library(
    flags: Sequence[str] = DEFAULT_FLAGS, *, directory: Path | None = None, cc: str | None = None
) -> KernelLibraryBuild:
    """The kernel library that models built with `flags` (and the environment's dispatch
    level, sanitizers and `BYOC_CFLAGS`) link with: found in the cache, or built there."""
    cc = cc or compiler()
    return _kernel_library(_effective_flags(flags, cc), directory or cache_dir(), cc)


def _kernel_library(flags: Sequence[str], directory: Path, cc: str) -> KernelLibraryBuild:
    start = time.perf_counter()
    directory = kernel_cache_dir(directory).resolve()
    _make_cache_dir(directory)
    oflags = object_flags(flags)
    key = library_key(kl.probe_source(), oflags, cc)
    index = directory / f"byoc_kernels_{key}.lib"
    cached = _cached_kernels(directory, index)
    if cached is not None:
        path, data, entries = cached
        return KernelLibraryBuild(path, data, entries, True, time.perf_counter() - start)
    sweep_orphans(directory)
    src = directory / f"byoc_kernels_{key}.c"
    aux = _temp_path(directory, ".build_", ".aux")
    tmp = _temp_path(directory, ".build_", ".o")
    try:
        write_atomic(src, kl.probe_source().encode())
        syntax = [f for f in oflags if f != "-c"]
        _run_compiler([cc, *syntax, "-fsyntax-only", "-aux-info", str(aux), f"-I{INCLUDE_DIR}", str(src)], src)
        entries = kl.parse_aux_info(aux.read_text(errors="replace"))
        write_atomic(src, kl.library_source(entries).encode())
        _run_compiler([cc, *oflags, f"-I{INCLUDE_DIR}", "-o", str(tmp), str(src)], src)
        data = tmp.read_bytes()
    finally:
        aux.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    api = kl.entries_to_json(entries)
    obj_path = _cache_blob(directory, f"byoc_obj_{hashlib.sha256(data).hexdigest()}.o", data)
    api_path = _cache_blob(directory, f"byoc_api_{hashlib.sha256(api).hexdigest()}.json", api)
    write_atomic(index, f"{obj_path.name}\n{api_path.name}\n".encode())
    return KernelLibraryBuild(obj_path, data, entries, False, time.perf_counter() - start)


COMPILE_JOBS_ENV = "BYOC_COMPILE_JOBS"
"""How many gcc processes compile one model's units at once (default: the cores this process
may use, at most 8); 1 compiles each model as one unit."""


def compile_jobs() -> int:
    value = os.environ.get(COMPILE_JOBS_ENV, "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"{COMPILE_JOBS_ENV}={value!r} is not a number") from None
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _compile_objects(cc: str, flags: Sequence[str], sources: Sequence[Path], outputs: Sequence[Path]) -> None:
    """Compile each source into its object, every compiler process at once."""
    oflags = [f for f in flags if f != "-shared"]
    commands = [[cc, *oflags, "-c", f"-I{INCLUDE_DIR}", "-o", str(o), str(s)] for s, o in zip(sources, outputs, strict=True)]
    procs: list[tuple[list[str], Path, subprocess.Popen[str]]] = []
    try:
        for command, source in zip(commands, sources, strict=True):
            try:
                procs.append((command, source, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=source.parent)))
            except OSError as e:
                raise CompileError(command, f"cannot run the C compiler: {e}", source) from None
        failed: CompileError | None = None
        for command, source, proc in procs:
            output, _ = proc.communicate()
            if proc.returncode != 0 and failed is None:
                failed = CompileError(command, output, source)
        if failed is not None:
            raise failed
    finally:
        for _, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _run_compiler(command: list[str], src: Path) -> None:
    """Run the compiler from the directory of `src` (the cache): every path in the command is
    absolute, and a relative `#line` file name cannot pick up a same-named file of the
    caller's cwd. A failure is a CompileError with the compiler's output."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=src.parent)
    except OSError as e:
        raise CompileError(command, f"cannot run the C compiler: {e}", src) from None
    if done.returncode != 0:
        raise CompileError(command, done.stdout + done.stderr, src)


def _cache_blob(directory: Path, name: str, data: bytes) -> Path:
    """Store `data` under `name` (which holds its sha256) unless a file with that content is there."""
    path = directory / name
    if _verified(path, _OBJECT_NAME if name.endswith(".o") else _API_NAME) is None:
        write_atomic(path, data)
    return path


def _cached_kernels(directory: Path, index: Path) -> tuple[Path, bytes, list[kl.KernelEntry]] | None:
    """The object and kernel list the index names, if both are there and match their names."""
    try:
        names = index.read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(names) != 2:
        return None
    data = _verified(directory / names[0], _OBJECT_NAME)
    api = _verified(directory / names[1], _API_NAME)
    if data is None or api is None:
        return None
    try:
        entries = kl.entries_from_json(api)
    except ValueError:
        return None
    return directory / names[0], data, entries


def _verified(path: Path, pattern: re.Pattern[str]) -> bytes | None:
    """The content of the cached file at `path` if its sha256 is the one in its name."""
    match = pattern.fullmatch(path.name)
    if match is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == match.group(1) else None


def _cached_build(directory: Path, index: Path) -> tuple[Path, bytes] | None:
    """The library the index names, if it is there and its content matches its name."""
    raw = read_regular_file(index)
    try:
        name = raw.decode("ascii").strip() if raw is not None else ""
    except UnicodeDecodeError:
        return None
    if _LIBRARY_NAME.fullmatch(name) is None:
        return None
    path = directory / name
    data = verified_library(path)
    return None if data is None else (path, data)


_LIBRARY_NAME = re.compile(r"byoc_lib_([0-9a-f]{64})\.so")


def verified_library(path: Path) -> bytes | None:
    """The content of the cached library at `path` if its sha256 is the one in its name."""
    match = _LIBRARY_NAME.fullmatch(path.name)
    if match is None:
        return None
    data = read_regular_file(path)
    if data is None:
        return None
    return data if hashlib.sha256(data).hexdigest() == match.group(1) else None


def read_regular_file(path: Path) -> bytes | None:
    """The content of `path` if it is a regular file itself; None for a symlink, a FIFO, a
    device or a directory placed in the cache (opening a FIFO would block, reading a device
    might never end) and for a file that cannot be read. Such an entry is rebuilt and
    replaced (`write_atomic` replaces the name, never what it points to)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def cache_library(data: bytes, directory: Path | None = None) -> Path:
    """Store a built library in the cache, named by its content hash (`byoc_lib_<sha256>.so`).
    A file already under that name is kept only if its content matches."""
    directory = directory or cache_dir()
    _make_cache_dir(directory)
    path = directory / f"byoc_lib_{hashlib.sha256(data).hexdigest()}.so"
    if verified_library(path) is None:
        write_atomic(path, data)
    return path


# ---------------------------------------------------------------------------
# Files: atomic writes, private copies to load, and what killed processes left
# ---------------------------------------------------------------------------

_TEMP_PREFIXES = (".build_", ".src_", ".load_")
ORPHAN_AGE = 600.0
"""Seconds after which a temporary file of a process that no longer exists is removed."""


def _make_cache_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)


def _temp_path(directory: Path, prefix: str, suffix: str = "") -> Path:
    """A new empty file in `directory` whose name records this process (`sweep_orphans`)."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{prefix}{os.getpid()}_", suffix=suffix)
    os.close(fd)
    return Path(tmp)


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `path` as a whole: readers see the old file or the new one, never a part; a
    failed write leaves nothing behind. Concurrent writers each use their own temporary."""
    tmp = _temp_path(path.parent, ".src_")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:  # an empty directory planted under the name goes
            try:
                path.rmdir()
            except OSError:
                raise OSError(f"{path} is a directory, not a file byoc can replace") from None
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def private_copy(data: bytes, directory: Path | None = None) -> Iterator[Path]:
    """A file holding `data` that only this process can write, removed on exit: dlopen it
    inside the block. Each load gets its own copy, hence its own instance of the library
    (its globals, such as the constants byoc_init binds, are not shared)."""
    directory = directory or cache_dir()
    _make_cache_dir(directory)
    private = Path(tempfile.mkdtemp(dir=directory, prefix=f".load_{os.getpid()}_"))
    path = private / "lib.so"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield path
    finally:
        path.unlink(missing_ok=True)
        private.rmdir()


def sweep_orphans(directory: Path, age: float | None = None) -> list[Path]:
    """Remove the temporaries (`.build_*`, `.src_*`, `.load_*`) of processes that were killed:
    those whose process no longer runs and which are older than `age` seconds (default
    `ORPHAN_AGE`: a cache shared between machines sees other machines' pids). Returns them."""
    age = ORPHAN_AGE if age is None else age
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        prefix = next((p for p in _TEMP_PREFIXES if entry.name.startswith(p)), None)
        if prefix is None:
            continue
        pid_text = entry.name[len(prefix) :].split("_", 1)[0]
        try:
            if not pid_text.isdigit() or _alive(int(pid_text)):
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime < age:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
