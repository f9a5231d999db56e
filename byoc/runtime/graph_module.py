"""The graph runtime component (kind "graph"): partitions run by a native engine.

    engine = GraphEngine("reference", (ENGINES_DIR / "reference_engine.c",))
    mod = GraphModule.from_ir(lowered_module, engine)   # compiled or found in the cache
    y = mod.get_function("graphref_main_0")(x)
    mod.set_num_threads(2)

A target that runs on the native graph runtime (docs/graph.md) gives only its
`GraphEngine`: C sources implementing `byoc_graph_engine.h`, with include
directories, compiler flags and linker arguments (or a callable that finds them
when the library is first built, e.g. in an installed wheel). The base
(`byoc_graph_runtime.c`) and the engine sources become ONE translation unit,
compiled by the toolchain (`byoc.runtime.toolchain`, cached by content hash) into
a library loaded with cffi.

The component holds one serialised blob (`byoc.runtime.graph_format`) with every
graph of the target and every constant, once. Loading checks what every node means
(`byoc.runtime.graph_check`: arity, properties, the nn type relation of every node,
composite bodies included), then parses it in C, where every field and the
structure are checked, binds the constants by name and lets the engine plan each
graph, so an engine only ever sees a verified graph; calls then go through the same DLTensor ABI, argument checks and
error messages as the generated C (`CFunction`). The signatures come from the C
side's parse of the blob, so nothing an artifact says about them can disagree.

Unloading. A module is freed when it is garbage: the engine's states, the library's
workspaces and its own thread team go (`byoc_release`), then its private copy of the
library is closed. The libraries it links (oneDNN, libgomp, a vendor's runtime) are never
unloaded: they may own threads that outlive every module — libgomp's workers stay parked,
spinning for a while after each parallel region, inside libgomp — and unmapping their
code under them crashes the process. So the first load of a library marks every library
it links (its ELF `DT_NEEDED` entries, `keep_dependencies_loaded`) never to be unloaded,
and loads gcc's OpenMP runtime once for the process before it, as C modules do
(`pin_openmp_runtime`).

Artifact blobs: `library` (the shared object), `graph` (the blob) and
`metadata` (JSON: the engine's name and the format version). `from_blobs`
checks each before use; a malformed graph blob is a ValueError with the C
reader's message (the artifact loader reports it as an ArtifactError).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import struct
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cffi

from byoc.runtime.c_module import (
    _CDEF,
    CSignature,
    PackedLibrary,
    check_shared_object,
    pin_openmp_runtime,
)
from byoc.runtime.cpu import native_load
from byoc.runtime.dlpack import header_cdef
from byoc.runtime.dlpack import numpy_dtype as dl_numpy_dtype
from byoc.runtime.graph_check import check_blob
from byoc.runtime.graph_format import VERSION, check_header
from byoc.runtime.interface import CEntry
from byoc.runtime.tensor import TensorSpec
from byoc.runtime.threads import check_num_threads
from byoc.runtime.toolchain import (
    DEFAULT_FLAGS,
    INCLUDE_DIR,
    cache_library,
    compile_source,
    private_copy,
)
from byoc.utils import env

KIND = "graph"
ENGINES_DIR = INCLUDE_DIR / "engines"
BASE_SOURCE = INCLUDE_DIR / "byoc_graph_runtime.c"

_GRAPH_CDEF = """
const char* byoc_last_error(void);
int32_t byoc_retain(void);
int32_t byoc_release(void);
""" + header_cdef("byoc_graph_runtime.h", "byoc_graph cdef")
"""What a graph library exports: byoc_runtime.h's error and lifetime functions, and the
module functions as byoc_graph_runtime.h declares them."""

NUM_THREADS_ENV = "BYOC_NUM_THREADS"


def default_num_threads() -> int:
    """`$BYOC_NUM_THREADS` if set (1 to 1024, else an `EnvError` naming it), else the cores
    this process may use."""
    n = env.value(NUM_THREADS_ENV)
    if n is not None:
        return int(n)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


BuildOptions = Callable[[], tuple[tuple[str, ...], tuple[str, ...]]]
"""() -> (extra compiler flags, linker arguments), asked when the library is built."""


@dataclass(frozen=True)
class GraphEngine:
    """What a graph-runtime target supplies: its engine's C sources and how to build them."""

    name: str
    """The engine's name (its `byoc_graph_engine.name`; checked when an artifact is loaded)."""
    sources: tuple[Path, ...]
    """C sources implementing byoc_graph_engine.h, appended to the base in this order."""
    include_dirs: tuple[Path, ...] = ()
    """Third-party header directories, passed as `-isystem`. The engine sources' own
    directories are searched too (`-I`), and their `*.h` files are part of the cache key."""
    cflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    """Linker arguments (`-L<dir>`, `-lfoo`, `-Wl,-rpath,<dir>`)."""
    build_options: BuildOptions | None = None
    """Found at build time (a library in an installed wheel); added to cflags and libs."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(Path(s) for s in self.sources))
        object.__setattr__(self, "include_dirs", tuple(Path(d) for d in self.include_dirs))
        if not self.sources:
            raise ValueError(f"graph engine '{self.name}' needs at least one C source")

    def source(self) -> str:
        """The translation unit: the base, then each engine source (with #line markers),
        and a digest of the headers next to the engine sources (the library cache is keyed
        by this text, so editing such a header rebuilds)."""
        parts = []
        for path in (BASE_SOURCE, *self.sources):
            try:
                text = path.read_text()
            except OSError as e:
                raise OSError(f"graph engine '{self.name}': cannot read {path}: {e}") from None
            # the full path: compiler messages name the engine's own file, and the
            # compiler shows its lines, not those of a same-named file elsewhere
            parts.append(f'#line 1 "{path.resolve()}"\n{text}')
        digest = hashlib.sha256()
        for header in sorted({h for d in self._source_dirs() for h in d.glob("*.h")}):
            digest.update(header.name.encode() + b"\0" + header.read_bytes())
        parts.append(f"/* engine headers: {digest.hexdigest()} */\n")
        return "\n".join(parts)

    def _source_dirs(self) -> list[Path]:
        return sorted({p.resolve().parent for p in self.sources} - {INCLUDE_DIR})

    def flags_and_libs(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The toolchain's flags, the engine's, `-I` each engine source's directory (its own
        headers) and `-isystem` each include dir (a vendor's headers, whose warnings must not
        fail the -Werror build); linker arguments."""
        flags = [
            *DEFAULT_FLAGS,
            *self.cflags,
            *(f"-I{d}" for d in self._source_dirs()),
            *(f"-isystem{d}" for d in self.include_dirs),
        ]
        libs = list(self.libs)
        if self.build_options is not None:
            more_flags, more_libs = self.build_options()
            flags += more_flags
            libs += more_libs
        return tuple(flags), tuple(libs)


REFERENCE_ENGINE = GraphEngine("reference", (ENGINES_DIR / "reference_engine.c",))
"""The reference engine (f32 add/subtract/multiply/maximum/minimum/relu/bias_add/dense)."""


class GraphRuntimeError(RuntimeError):
    """The graph library could not load a blob (its message is the C reader's)."""


def needed_libraries(library: bytes) -> list[str]:
    """The `DT_NEEDED` names of the ELF shared object `library` (what the dynamic loader
    loads with it), in order; [] when it has none or is not a well-formed 64-bit ELF file."""
    if library[:4] != b"\x7fELF" or len(library) < 64 or library[4] != 2:
        return []
    end = "<" if library[5] == 1 else ">"
    try:
        phoff = struct.unpack_from(end + "Q", library, 32)[0]
        phentsize, phnum = struct.unpack_from(end + "HH", library, 54)
        if phentsize < 56:  # not the 64-bit program header
            return []
        loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz) of each PT_LOAD
        dynamic: tuple[int, int] | None = None
        for i in range(phnum):
            at = phoff + i * phentsize
            p_type, _, offset, vaddr, _, filesz = struct.unpack_from(end + "IIQQQQ", library, at)
            if p_type == 1:
                loads.append((vaddr, offset, filesz))
            elif p_type == 2:
                dynamic = (offset, filesz)
        if dynamic is None:
            return []
        needed: list[int] = []
        strtab: int | None = None
        for at in range(dynamic[0], dynamic[0] + dynamic[1] - 15, 16):
            tag, value = struct.unpack_from(end + "qQ", library, at)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED: an offset into the string table
                needed.append(value)
            elif tag == 5:  # DT_STRTAB: the table's address
                strtab = value
        if strtab is None:
            return []
        base = next((o + strtab - v for v, o, n in loads if v <= strtab < v + n), None)
        if base is None:
            return []
        names = []
        for offset in needed:
            stop = library.find(b"\0", base + offset)
            if stop < 0:
                return []
            names.append(library[base + offset : stop].decode("utf-8", "replace"))
        return names
    except struct.error:
        return []


_KEPT: dict[str, Any] = {}
"""The libraries `keep_dependencies_loaded` marked, by name, with a handle on each."""
_KEPT_LOCK = threading.Lock()


def keep_dependencies_loaded(library: bytes) -> None:
    """Mark every library that `library` links, loaded with it just before, never to be
    unloaded (`RTLD_NOLOAD | RTLD_NODELETE`): see "Unloading" above. A name the loader did
    not load (or a system without these flags) is left alone."""
    if not sys.platform.startswith("linux"):
        return
    mode = os.RTLD_NOW | os.RTLD_NOLOAD | os.RTLD_NODELETE
    with _KEPT_LOCK:
        for name in needed_libraries(library):
            if name in _KEPT:
                continue
            try:
                _KEPT[name] = ctypes.CDLL(name, mode=mode)
            except OSError:
                continue


def _unload(ffi: Any, lib: Any, handle: Any) -> None:
    """Free the module and the engines' states, release the workspaces, unload."""
    if handle is not None:
        lib.byoc_graph_module_free(handle)
    lib.byoc_release()
    ffi.dlclose(lib)


class GraphModule(PackedLibrary):
    """A loaded graph library holding the graphs of one target (component kind "graph")."""

    kind = KIND

    def __init__(
        self,
        blob: bytes,
        library: bytes,
        *,
        engine: str,
        library_path: Path | None = None,
        source_path: Path | None = None,
        cache_hit: bool = False,
        num_threads: int | None = None,
        directory: Path | None = None,
    ):
        check_blob(blob)
        self.blob = blob
        self._library = library
        self.library_path = library_path
        self.source_path = source_path
        self.cache_hit = cache_hit
        self.engine = engine
        self.ffi = cffi.FFI()
        self.ffi.cdef(_CDEF + _GRAPH_CDEF)
        try:
            pin_openmp_runtime()
            with native_load(), private_copy(library, directory) as copy:
                self.lib: Any = self.ffi.dlopen(str(copy))
        except OSError as e:
            raise OSError(f"cannot load the graph library: {e}") from None
        keep_dependencies_loaded(library)
        self.lib.byoc_retain()
        self._finalizer = weakref.finalize(self, _unload, self.ffi, self.lib, None)
        self._finalizer.atexit = False
        got = self.ffi.string(self.lib.byoc_graph_engine_name()).decode()
        if got != engine:
            raise ValueError(f"the graph library's engine is '{got}', expected '{engine}'")
        if self.lib.byoc_graph_format_version() != VERSION:
            raise ValueError("the graph library reads another graph format version")
        n = default_num_threads() if num_threads is None else check_num_threads(num_threads)
        self._num_threads = n
        self._blob_buffer = self.ffi.from_buffer(blob)
        handle = self.lib.byoc_graph_module_load(self._blob_buffer, len(blob), n)
        if handle == self.ffi.NULL:
            raise GraphRuntimeError(f"graph blob rejected: {self.last_error()}")
        self._handle = handle
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _unload, self.ffi, self.lib, handle)
        self._finalizer.atexit = False
        self.functions: dict[str, CSignature] = {}
        self._index: dict[str, int] = {}
        for g in range(self.lib.byoc_graph_module_num_graphs(handle)):
            name = self.ffi.string(self.lib.byoc_graph_module_graph_name(handle, g)).decode()
            self._index[name] = g
            self.functions[name] = self._signature(g)
        super().__init__()

    def _signature(self, g: int) -> CSignature:
        ffi, lib = self.ffi, self.lib
        n_in, n_out = ffi.new("int32_t*"), ffi.new("int32_t*")
        if lib.byoc_graph_module_num_args(self._handle, g, n_in, n_out):
            raise GraphRuntimeError(self.last_error())
        code, bits, ndim = ffi.new("uint8_t*"), ffi.new("uint8_t*"), ffi.new("int32_t*")
        shape, name = ffi.new("int64_t[8]"), ffi.new("const char**")
        specs = []
        for a in range(n_in[0] + n_out[0]):
            if lib.byoc_graph_module_arg(self._handle, g, a, code, bits, ndim, shape, name):
                raise GraphRuntimeError(self.last_error())
            specs.append(
                TensorSpec(
                    tuple(shape[i] for i in range(ndim[0])),
                    dl_numpy_dtype(code[0], bits[0]),
                    ffi.string(name[0]).decode(),
                )
            )
        return CSignature(tuple(specs[: n_in[0]]), tuple(specs[n_in[0] :]))

    # ---- construction ----------------------------------------------------------------
    @classmethod
    def build(
        cls,
        blob: bytes,
        engine: GraphEngine,
        *,
        directory: Path | None = None,
        num_threads: int | None = None,
    ) -> GraphModule:
        """Compile the base with `engine` (or find it in the cache) and load `blob`."""
        flags, libs = engine.flags_and_libs()
        built = compile_source(engine.source(), flags, directory=directory, libs=libs)
        return cls(
            blob,
            built.library,
            engine=engine.name,
            library_path=built.library_path,
            source_path=built.source_path,
            cache_hit=built.cache_hit,
            num_threads=num_threads,
            directory=directory,
        )

    @classmethod
    def from_ir(cls, unit: Any, engine: GraphEngine, **kw: Any) -> GraphModule:
        """From a module holding one `graph.module` (what lower-to-graph made)."""
        from byoc.dialects.graph import GraphModuleOp
        from byoc.runtime.graph_format import describe, encode

        found = [op for op in unit.walk() if isinstance(op, GraphModuleOp)]
        if len(found) != 1:
            raise ValueError(f"expected one graph.module, found {len(found)}")
        return cls.build(encode(describe(found[0])), engine, **kw)

    # ---- artifacts ---------------------------------------------------------------------
    def export(self) -> dict[str, bytes]:
        meta = {"engine": self.engine, "format": VERSION}
        return {
            "library": self._library,
            "graph": self.blob,
            "metadata": json.dumps(meta, sort_keys=True).encode(),
        }

    @classmethod
    def from_blobs(cls, blobs: Mapping[str, bytes], *, directory: Path | None = None) -> GraphModule:
        """The module `export()` wrote; every blob checked before use (a ValueError says what)."""
        library, blob, meta = blobs.get("library"), blobs.get("graph"), blobs.get("metadata")
        if not all(isinstance(b, bytes) for b in (library, blob, meta)):
            raise ValueError("not a graph module export: it needs 'library', 'graph' and 'metadata'")
        assert isinstance(library, bytes) and isinstance(blob, bytes) and isinstance(meta, bytes)
        try:
            metadata = json.loads(meta.decode())
        except (ValueError, RecursionError) as e:
            raise ValueError(f"graph module metadata is not JSON: {e}") from None
        if (
            not isinstance(metadata, dict)
            or not isinstance(metadata.get("engine"), str)
            or not metadata["engine"]
            or len(metadata["engine"]) > 100
        ):
            raise ValueError("graph module metadata needs an 'engine' name")
        if metadata.get("format") != VERSION:
            raise ValueError(
                f"graph module metadata: format {metadata.get('format')!r}, this byoc reads {VERSION}"
            )
        check_header(blob)
        problem = check_shared_object(library)
        if problem is not None:
            raise ValueError(f"the graph library is not loadable: {problem}")
        path = cache_library(library, directory)
        try:
            return cls(blob, library, engine=metadata["engine"], library_path=path, directory=directory)
        except GraphRuntimeError as e:
            raise ValueError(str(e)) from None

    # ---- calling -------------------------------------------------------------------------
    def _entry(self, sym: str) -> Any:
        return functools.partial(self.lib.byoc_graph_run, self._handle, self._index[sym])

    def c_entry(self, symbol: str) -> CEntry:
        """`byoc_graph_run` with this module and graph `symbol`'s index, for C callers
        (`RuntimeComponent.c_entry`)."""
        ffi = self.ffi
        return CEntry(
            int(ffi.cast("intptr_t", self.lib.byoc_graph_run)),
            self.last_error,
            int(ffi.cast("intptr_t", self._handle)),
            self._index[symbol],
        )

    def _unknown_function(self, sym: str, known: str) -> str:
        return f"no graph '{sym}' in the {self.engine} graph module (graphs: {known})"

    # ---- threads ---------------------------------------------------------------------------
    def set_num_threads(self, n: int) -> None:
        """How many threads each run of the engine may use (waits for runs in flight)."""
        check_num_threads(n, "the number of threads")
        if self.lib.byoc_graph_module_set_num_threads(self._handle, n):
            raise GraphRuntimeError(self.last_error())
        self._num_threads = n

    @property
    def num_threads(self) -> int:
        return self._num_threads

    def __repr__(self) -> str:
        return f"GraphModule(engine={self.engine}, graphs={sorted(self.functions)})"



def load_graph_component(blobs: Mapping[str, bytes]) -> GraphModule:
    """The loader of component kind "graph" (`register_component_loader`)."""
    return GraphModule.from_blobs(blobs)


__all__ = [
    "ENGINES_DIR",
    "KIND",
    "REFERENCE_ENGINE",
    "GraphEngine",
    "GraphModule",
    "GraphRuntimeError",
    "default_num_threads",
    "load_graph_component",
]
