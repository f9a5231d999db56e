"""The C runtime module: load a library of C partitions and call them with numpy arrays.

    lib = CModule.from_source(source, signatures, constants)   # compiled or found in the cache
    f = lib.get_function("ccompiler_main_0")
    out = f(a, b, c, d)                          # allocates the output
    f(a, b, c, d, out)                           # or writes into yours (destination passing)

The source and the signatures are data: the C lowering produces them
(`byoc.lowering.c_build`), the toolchain (`byoc.runtime.toolchain`) compiles.

Calls. The library is loaded with cffi (ABI mode, `dlopen`). A call builds
DLPack `DLTensor`s around the numpy arrays (no copy) and calls the partition's
packed entry `int32_t <sym>(DLTensor** args, int32_t num_args)`; a non-zero
return raises `CFunctionError` with the library's `byoc_last_error()` message,
which names the offending argument. The C side checks every argument (count,
dtype, rank, shape, contiguity, alignment, overlap of outputs); Python only
converts. To keep the per-call cost near a bare cffi call, each thread keeps
its own DLTensor structs per function, and an argument that is the same array
(same object, shape and dtype) as in that thread's previous call reuses its
pointer without touching the struct. (An array resized in place with
`ndarray.resize` between two calls must not be passed again; numpy forbids
that resize while other references exist.)

Constants too large for the source are handed to `byoc_init` once, at load;
the CModule keeps them alive. Concurrent calls from several threads are safe:
the generated code keeps intermediates in a per-thread workspace.

Unloading. When the CModule is garbage (with its CFunctions), the library's
`byoc_release()` frees every thread's workspace and removes its thread-exit
hook, then the library is closed: freeing a model leaks nothing, and threads
that outlive it exit cleanly.

`metadata()` (JSON-able) plus `constants` is all `load(path, ...)` needs to
reopen an exported library without recompiling; `export()` / `from_blobs()`
are the artifact round trip.

Loading. A CModule never dlopens the cached file itself: it loads a private copy
of bytes it has read (and, from the cache or an artifact, checked against their
hash), so each CModule is its own instance of the library — two models with the
same code and different constants bound by `byoc_init` do not share them.
`from_blobs` checks everything an artifact says before using it
(`parse_metadata`, `check_shared_object`, each constant's .npy header and its
dtype and shape against the spec the metadata records).
"""

from __future__ import annotations

import math
import re
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cffi
import numpy as np

from byoc.runtime.cpu import native_load
from byoc.runtime.dlpack import dl_dtype, tensor_cdef
from byoc.runtime.interface import CEntry, RuntimeComponent
from byoc.runtime.tensor import TensorSpec, checked_dtype, checked_shape
from byoc.runtime.toolchain import DEFAULT_FLAGS, cache_library, compile_source, private_copy
from byoc.utils.aligned import aligned_array

_CDEF = tensor_cdef()
"""The DLPack structs every library's entry points take (graph_module declares its own
library with them too)."""
_LIBRARY_CDEF = """
const char* byoc_last_error(void);
int32_t byoc_init(const void* const* consts, int32_t n);
int32_t byoc_retain(void);
int32_t byoc_release(void);
int32_t byoc_set_num_threads(int32_t n);
int32_t byoc_get_num_threads(void);
int32_t byoc_set_call_threads(int32_t n);
void byoc_thread_release(void);
void byoc_team_hold(int32_t on);
int32_t byoc_set_team_mode(int32_t mode);
void byoc_team_counters(int64_t* out);
"""

_OPENMP_RUNTIMES: list[Any] = []
"""The OpenMP runtime (libgomp), loaded once and never unloaded (`pin_openmp_runtime`)."""


def pin_openmp_runtime() -> None:
    """Load gcc's OpenMP runtime for good before the first library that links it.

    libgomp's worker threads outlive the parallel regions that started them,
    parked inside libgomp; if unloading the last library that linked it unmapped
    libgomp, those threads would wake into unmapped code. Holding one handle for
    the life of the process keeps it mapped (its pool stays sized by the thread
    setting: a region's team never exceeds the count the kernel asked for).

    Idle team threads spin `OPENMP_SPINCOUNT` rounds before they sleep, unless the
    user chose (`OMP_WAIT_POLICY` or `GOMP_SPINCOUNT` set): libgomp's default spins
    about 100 times longer, which on a machine shared with other work takes the core
    the other team member needs. libgomp reads it once, when it is first loaded."""
    if _OPENMP_RUNTIMES:
        return
    import ctypes
    import ctypes.util
    import os

    chosen = "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ
    if not chosen:
        os.environ["GOMP_SPINCOUNT"] = str(OPENMP_SPINCOUNT)
    try:
        # the soname first: find_library runs `ldconfig -p` (10 ms), only needed where it fails
        for find in (lambda: "libgomp.so.1", lambda: ctypes.util.find_library("gomp")):
            name = find()
            if not name:
                continue
            try:
                _OPENMP_RUNTIMES.append(ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL))
                return
            except OSError:
                continue
    finally:
        if not chosen:
            os.environ.pop("GOMP_SPINCOUNT", None)


OPENMP_SPINCOUNT = 10000
"""Rounds an idle OpenMP thread spins before it sleeps (libgomp's GOMP_SPINCOUNT), by default."""


def _unload(ffi: Any, lib: Any, more: list[tuple[Any, Any]]) -> None:
    """Release the library's per-thread workspaces, then unload it.

    Runs when its CModule is garbage (no CFunction of it is left, so no call
    is in flight). `more` are further handles on the same library (`CModule._resolve`)."""
    lib.byoc_release()
    for other_ffi, other in more:
        other_ffi.dlclose(other)
    ffi.dlclose(lib)


PARTITION_PREFIX = "byoc_p_"
"""The C names of a partition's functions and globals start with this; `byoc_runtime.h`
defines no name under it, so no partition name can collide with the runtime or libc."""


ENCODED_PREFIX = "byoc_x_"
"""The C names of a partition whose name is not a C identifier (`@f.0`, `@conv-1`):
`byoc_x_` and the hex of the name's UTF-8 bytes, which has no `_` of its own."""
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def c_entry_symbol(partition: str) -> str:
    """The exported C name of partition `partition`'s packed entry: `byoc_p_<name>`, or
    `byoc_x_<hex of the name>` for a name that is not a C identifier. Either way the map
    is one-to-one and no two partitions' entries can be equal."""
    if _IDENTIFIER.fullmatch(partition):
        return PARTITION_PREFIX + partition
    return ENCODED_PREFIX + partition.encode().hex()


KDL_CPU = 1


class CFunctionError(RuntimeError):
    """A partition returned an error code; the message is the library's byoc_last_error()."""

    def __init__(self, function: str, code: int, message: str):
        self.function = function
        self.code = code
        super().__init__(message or f"{function} returned {code}")


@dataclass(frozen=True)
class CSignature:
    """Arguments of a partition's packed entry: inputs, then outputs."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


# ---------------------------------------------------------------------------
# The module
# ---------------------------------------------------------------------------


class PackedLibrary(RuntimeComponent):
    """A loaded library whose functions take packed `DLTensor` arguments (`CFunction`s): a
    C module or a graph module. Subclasses set `ffi`, `lib` and `functions` and provide
    `_entry`; the lookup of functions is shared."""

    ffi: Any
    lib: Any
    functions: dict[str, CSignature]
    """Function name -> the arguments of its packed entry."""

    def __init__(self) -> None:
        self._functions: dict[str, CFunction] = {}
        self._lock = threading.Lock()

    def _entry(self, sym: str) -> Any:
        """The packed entry point of function `sym`."""
        raise NotImplementedError

    def _unknown_function(self, sym: str, known: str) -> str:
        """The message of the KeyError for a function the library does not have."""
        return f"no function '{sym}' (functions: {known})"

    def last_error(self) -> str:
        return self.ffi.string(self.lib.byoc_last_error()).decode("utf-8", "replace")

    def get_function(self, sym: str) -> CFunction:
        fn = self._functions.get(sym)
        if fn is not None:
            return fn
        if sym not in self.functions:
            raise KeyError(self._unknown_function(sym, ", ".join(sorted(self.functions)) or "none"))
        with self._lock:
            fn = self._functions.get(sym)
            if fn is None:
                fn = self._functions[sym] = CFunction(self, sym, self.functions[sym])
        return fn

    def __getitem__(self, sym: str) -> CFunction:
        return self.get_function(sym)


class CModule(PackedLibrary):
    """A loaded library of C partitions."""

    holds_threads = True

    def __init__(
        self,
        library_path: Path | str,
        functions: Mapping[str, CSignature],
        constants: Sequence[np.ndarray[Any, Any]] = (),
        *,
        source_path: Path | None = None,
        source: str | None = None,
        cache_hit: bool = False,
        library: bytes | None = None,
        directory: Path | None = None,
    ):
        """`library` is the content of `library_path` when the caller has read (and checked)
        it already. What is loaded is a private copy of that content (in `directory`, by
        default the cache), never the file itself: each CModule is its own instance of the
        library, and nothing can swap the file between a check and the load."""
        self.library_path = Path(library_path)
        if library is None:
            try:
                library = self.library_path.read_bytes()
            except OSError as e:
                raise OSError(f"cannot load the C library {self.library_path}: {e}") from None
        self._library = library
        self.source_path = source_path
        self.source = source
        self.cache_hit = cache_hit
        self.functions = dict(functions)
        self.constants = [aligned_array(np.asarray(a)) for a in constants]
        """What `byoc_init` binds: each at a 64-byte boundary (`byoc.utils.aligned`)."""
        self.ffi = cffi.FFI()  # one per library: its functions, and the DLPack structs
        self.ffi.cdef(
            _CDEF
            + _LIBRARY_CDEF
            + "\n".join(
                f"int32_t {c_entry_symbol(sym)}(DLTensor** args, int32_t num_args);"
                for sym in self.functions
            )
        )
        self._bare_handles: list[tuple[Any, Any]] = []
        try:
            pin_openmp_runtime()
            with native_load(), private_copy(library, directory) as copy:
                self.lib: Any = self.ffi.dlopen(str(copy))
                # entries resolved while the private copy exists: a bare-named entry is
                # looked up through the same file, so it shares the library's globals
                self._entries = {sym: self._resolve(sym, copy) for sym in self.functions}
        except OSError as e:
            raise OSError(f"cannot load the C library {self.library_path}: {e}") from None
        self.lib.byoc_retain()
        unload = weakref.finalize(self, _unload, self.ffi, self.lib, self._bare_handles)
        unload.atexit = False  # at exit, daemon threads may still be in a call
        missing = [sym for sym, entry in self._entries.items() if entry is None]
        if missing:
            raise ValueError(f"the C library {self.library_path} has no function {', '.join(missing)}")
        self._init_constants()
        try:  # only gcc builds with OpenMP have a thread team of their own (byoc_runtime.h)
            self._team_hold: Any = self.lib.byoc_team_hold
            self._team_counters: Any = self.lib.byoc_team_counters
        except AttributeError:
            self._team_hold = self._team_counters = None
        super().__init__()

    kind = "c"
    """The component kind artifacts record (`byoc.runtime.component`)."""

    # ---- construction ----------------------------------------------------------
    @classmethod
    def from_source(
        cls,
        source: str,
        functions: Mapping[str, CSignature],
        constants: Sequence[np.ndarray[Any, Any]] = (),
        *,
        flags: Sequence[str] = DEFAULT_FLAGS,
        directory: Path | None = None,
        libs: Sequence[str] = (),
    ) -> CModule:
        built = compile_source(source, flags, directory=directory, libs=libs)
        return cls(
            built.library_path,
            functions,
            constants,
            source_path=built.source_path,
            source=source,
            cache_hit=built.cache_hit,
            library=built.library,
            directory=directory,
        )

    @classmethod
    def load(
        cls,
        library_path: Path | str,
        metadata: Mapping[str, Any],
        constants: Sequence[np.ndarray[Any, Any]] = (),
        *,
        library: bytes | None = None,
        directory: Path | None = None,
    ) -> CModule:
        """Open an already built library (e.g. from an exported artifact). `metadata` is
        checked first (a ValueError says what is wrong): the signatures, and each constant
        against the dtype and shape the library binds it as, when the metadata records them."""
        functions, specs = parse_metadata(metadata)
        if len(constants) != len(specs):
            raise ValueError(f"the library expects {len(specs)} constants, got {len(constants)}")
        for i, (arr, spec) in enumerate(zip(constants, specs, strict=True)):
            if spec is not None and (arr.dtype != spec.dtype or arr.shape != spec.shape):
                raise ValueError(
                    f"constant {i} is {arr.dtype}{list(arr.shape)}, the library binds "
                    f"{spec.dtype}{list(spec.shape)}"
                )
        return cls(library_path, functions, constants, library=library, directory=directory)

    def metadata(self) -> dict[str, Any]:
        """JSON-able description for `load`: signatures and the number of constants."""
        return {
            "functions": {
                sym: {
                    "inputs": [s.to_json() for s in sig.inputs],
                    "outputs": [s.to_json() for s in sig.outputs],
                }
                for sym, sig in self.functions.items()
            },
            "num_constants": len(self.constants),
            "constants": [TensorSpec(a.shape, a.dtype).to_json() for a in self.constants],
        }

    # ---- artifacts ---------------------------------------------------------------------
    def export(self) -> dict[str, bytes]:
        """Named blobs for an artifact (`RuntimeComponent.export`): the library, its
        metadata and each constant byoc_init binds (as .npy, no pickle)."""
        import io
        import json

        blobs = {
            "library": self._library,
            "metadata": json.dumps(self.metadata(), sort_keys=True).encode(),
        }
        for i, arr in enumerate(self.constants):
            buf = io.BytesIO()
            np.save(buf, arr, allow_pickle=False)
            blobs[f"constant{i}"] = buf.getvalue()
        return blobs

    @classmethod
    def from_blobs(cls, blobs: Mapping[str, bytes], *, directory: Path | None = None) -> CModule:
        """The module `export()` described: the library is stored in the cache (named by its
        content hash) and a private copy of it is loaded; nothing is recompiled. Every blob
        is checked before it is used (a ValueError says what is wrong): the library is a
        complete shared object for this machine, the metadata is well formed, and each
        constant has the dtype and shape the library binds it as."""
        import json

        library = blobs.get("library")
        meta = blobs.get("metadata")
        if not isinstance(library, bytes) or not isinstance(meta, bytes):
            raise ValueError("not a C module export: it needs a 'library' and a 'metadata' blob")
        try:
            metadata = json.loads(meta.decode(), parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            raise ValueError(f"C module metadata is not JSON: {e}") from None
        _, specs = parse_metadata(metadata)
        problem = check_shared_object(library)
        if problem is not None:
            raise ValueError(f"the C library is not loadable: {problem}")
        constants = []
        for i in range(len(specs)):
            data = blobs.get(f"constant{i}")
            if not isinstance(data, bytes):
                raise ValueError(f"C module export lacks constant {i} of {len(specs)}")
            constants.append(_load_npy(data, f"constant {i}"))
        path = cache_library(library, directory)
        return cls.load(path, metadata, constants, library=library, directory=directory)

    def _init_constants(self) -> None:
        ffi = self.ffi
        self._const_buffers = [ffi.from_buffer(a) for a in self.constants]
        ptrs = ffi.new("const void*[]", max(len(self._const_buffers), 1))
        for i, buf in enumerate(self._const_buffers):
            ptrs[i] = buf
        rc = self.lib.byoc_init(ptrs, len(self._const_buffers))
        if rc != 0:
            raise CFunctionError("byoc_init", rc, self.last_error())

    # ---- threads -------------------------------------------------------------------
    def set_num_threads(self, n: int) -> None:
        """Threads this library's kernels may use from now on (its OpenMP teams, and the
        GEMMs of cblas kernels); 1 starts none. The runtime component protocol: the
        Executable calls it at build and load, and on `Executable.set_num_threads`."""
        self.lib.byoc_set_num_threads(int(n))

    def get_num_threads(self) -> int:
        """The library's thread setting."""
        return int(self.lib.byoc_get_num_threads())

    def set_call_threads(self, n: int) -> None:
        """For calls from the calling thread only: use at most `n` threads (0: the setting).
        The host executor gives each branch it runs at once its share this way."""
        self.lib.byoc_set_call_threads(int(n))

    def hold_threads(self, on: bool) -> None:
        """A run starts (True) or ends (False): while a run holds it, the library's team
        spins between regions instead of falling asleep (`byoc_team_hold`; holds count, so
        concurrent runs each hold and release once). A library without its own team (a
        build without gcc's OpenMP) ignores it."""
        if self._team_hold is not None:
            self._team_hold(1 if on else 0)

    def set_team_mode(self, mode: str) -> None:
        """'own' (the default: the library's own team runs its regions) or 'libgomp'
        (libgomp's team runs them): a developer knob, to compare the two (docs/runtime.md,
        "Developer knobs"). Only with no call in flight."""
        if mode not in ("own", "libgomp"):
            raise ValueError(f"team mode must be 'own' or 'libgomp', got {mode!r}")
        try:
            rc = self.lib.byoc_set_team_mode(0 if mode == "own" else 1)
        except AttributeError:
            if mode == "own":
                raise ValueError(f"the C library {self.library_path} has no team of its own") from None
            return  # its regions already go to libgomp
        if rc < 0:
            raise OSError("libgomp's entry points are not loaded in this process")

    def team_counters(self) -> dict[str, int]:
        """Since load: `regions` run by the team, `worker_shares` run by its workers,
        `taken_back` (shares the calling thread ran because no worker had started them),
        `alone` (regions run on the calling thread only: nested, or the team was busy),
        `sleeps` (times a worker went to sleep); and `asleep`, the workers asleep now.
        Empty for a library without its own team."""
        if self._team_counters is None:
            return {}
        out = self.ffi.new("int64_t[6]")
        self._team_counters(out)
        names = ("regions", "worker_shares", "taken_back", "alone", "sleeps", "asleep")
        return dict(zip(names, map(int, out), strict=True))

    def thread_release(self) -> None:
        """The calling thread will make no more calls: free its workspace now, so that its
        exit runs no code of this library (worker threads of the host pool call it)."""
        self.lib.byoc_thread_release()

    # ---- calling -------------------------------------------------------------------
    def _resolve(self, sym: str, path: Path) -> Any:
        """The packed entry of partition `sym`: `c_entry_symbol(sym)`, or `sym` itself in a
        library of hand-written C (looked up through a second
        declaration of the same file, since `sym` may be any C name, even one of this
        FFI's); None if the library has neither."""
        try:
            return getattr(self.lib, c_entry_symbol(sym))
        except AttributeError:
            pass
        bare = cffi.FFI()
        bare.cdef(f"int32_t {sym}(void** args, int32_t num_args);")
        lib = bare.dlopen(str(path))
        self._bare_handles.append((bare, lib))  # closed with the module (see _unload)
        try:
            address = int(bare.cast("intptr_t", getattr(lib, sym)))
        except AttributeError:
            return None
        return self.ffi.cast("int32_t(*)(DLTensor**, int32_t)", address)

    def _entry(self, sym: str) -> Any:
        entry = self._entries.get(sym)
        if entry is None:
            raise KeyError(f"{self.library_path.name} has no C function for partition '{sym}'")
        return entry

    def _unknown_function(self, sym: str, known: str) -> str:
        return f"no C function '{sym}' in {self.library_path.name} (functions: {known})"

    def c_entry(self, symbol: str) -> CEntry:
        """The packed entry of partition `symbol`, for C callers (`RuntimeComponent.c_entry`)."""
        return CEntry(int(self.ffi.cast("intptr_t", self._entry(symbol))), self.last_error)

    def __repr__(self) -> str:
        return f"CModule({self.library_path.name}, functions={sorted(self.functions)})"


_COPIED = object()
"""Marks, in what `CFunction._describe` keeps alive, an argument it had to copy."""


class _ThreadState:
    """One thread's DLTensor structs for one function, and the arrays they point into."""

    __slots__ = ("tensors", "argv", "ids", "keep")

    def __init__(self, ffi: Any, n: int):
        self.tensors = ffi.new("DLTensor[]", n)
        self.argv = ffi.new("DLTensor*[]", n)
        for i in range(n):
            self.argv[i] = self.tensors + i
        self.ids: tuple[int, ...] | None = None
        """ids of the arrays the structs describe (kept alive by `keep`), None if stale."""
        self.keep: list[Any] = [None] * n


class CFunction:
    """A partition of a CModule, callable with numpy arrays: `f(*inputs)` or `f(*inputs, *outputs)`.

    Returns the outputs (one array, or a tuple when there are several).
    Raises CFunctionError when the C code rejects an argument, TypeError when
    a value has no DLPack equivalent, ValueError for a read-only output.

    Each thread keeps the DLTensor structs of its last call, and a reference to
    the arrays they point into (which also keeps those arrays from being
    resized in place). A call whose arguments are the very same array objects
    as that thread's previous call reuses the structs as they are: an array
    whose `.shape` or `.dtype` was reassigned in place in between is described
    as it was (its memory is the same size, so this is safe, but pass a new
    view instead).
    """

    def __init__(self, module: PackedLibrary, sym: str, signature: CSignature):
        self.module = module
        self.name = sym
        self.signature = signature
        self._fn = module._entry(sym)
        self._ffi = module.ffi
        specs = [*signature.inputs, *signature.outputs]
        self._names = [s.name for s in specs]
        self._shapes = [s.shape for s in specs]
        self._dtypes = [s.dtype for s in specs]
        self._n_in = len(signature.inputs)
        self._n = len(specs)
        self._single = len(signature.outputs) == 1
        self._tls = threading.local()
        # one shape array per argument, shared by all threads (C only reads it)
        self._shape_arrays = [self._ffi.new("int64_t[]", list(s) or [0]) for s in self._shapes]

    def __call__(self, *arrays: Any) -> Any:
        st = self._tls.__dict__.get("state")
        if st is not None and len(arrays) == self._n and tuple(map(id, arrays)) == st.ids:
            # the same arrays as this thread's last call: the structs are ready
            if self._fn(st.argv, self._n):
                raise CFunctionError(self.name, -1, self.module.last_error())
            return arrays[self._n_in] if self._single else arrays[self._n_in :]
        return self._call(arrays, st)

    def _call(self, arrays: tuple[Any, ...], st: _ThreadState | None) -> Any:
        n = len(arrays)
        if n == self._n_in:
            outs = tuple(np.empty(s.shape, s.dtype) for s in self.signature.outputs)
            arrays = arrays + outs
        elif n == self._n:
            outs = arrays[self._n_in :]
        else:
            return self._call_mismatched(arrays)
        if st is None:
            st = self._tls.state = _ThreadState(self._ffi, max(self._n, 1))
        ids = tuple(map(id, arrays))
        if ids != st.ids:
            self._rebind(st, arrays, ids)
        rc = self._fn(st.argv, self._n)
        if rc != 0:
            raise CFunctionError(self.name, rc, self.module.last_error())
        return outs[0] if self._single else outs

    def _rebind(self, st: _ThreadState, arrays: tuple[Any, ...], ids: tuple[int, ...]) -> None:
        old = st.ids
        st.ids = None
        copied = False
        for i, a in enumerate(arrays):
            if old is None or old[i] != ids[i]:
                prev = st.keep[i]
                st.keep[i] = None
                if (
                    prev is not None
                    and type(a) is np.ndarray
                    and self._same_layout(prev[1], a, i)
                ):
                    # a new array laid out like the one the struct describes (a fresh
                    # output of the same shape, typically): only the data pointer moves
                    buf = self._ffi.from_buffer(a, require_writable=False)
                    st.tensors[i].data = buf
                    st.keep[i] = [a, a, buf]
                else:
                    keep = st.keep[i] = self._describe(st.tensors[i], a, i)
                    copied = copied or keep[0] is _COPIED
        # a struct that points into a copy (a list, a misaligned array) must not be reused
        # by the next call with the same object: the caller may have changed it meanwhile
        st.ids = None if copied else ids

    def _same_layout(self, described: Any, a: Any, i: int) -> bool:
        """`a` can reuse the struct that describes `described` (same dtype, shape; compact)."""
        return (
            type(described) is np.ndarray
            and a.dtype == described.dtype
            and a.shape == described.shape
            and a.size > 0
            and a.flags.c_contiguous
            and a.flags.aligned
            and described.flags.c_contiguous
            and (a.flags.writeable or not self._n_in <= i < self._n)
        )

    def _call_mismatched(self, arrays: tuple[Any, ...]) -> Any:
        """A wrong argument count: let the C entry report it (with the count it expects)."""
        n = len(arrays)
        tensors = self._ffi.new("DLTensor[]", max(n, 1))
        argv = self._ffi.new("DLTensor*[]", max(n, 1))
        keep: list[Any] = []
        for i, a in enumerate(arrays):
            argv[i] = tensors + i
            keep.append(self._describe(tensors[i], a, i))
        rc = self._fn(argv, n)
        if rc != 0:
            raise CFunctionError(self.name, rc, self.module.last_error())
        raise AssertionError("unreachable: the C entry accepted a wrong argument count")

    def _label(self, i: int) -> str:
        if i >= self._n:
            return f"{self.name}: argument #{i}"
        role = "input" if i < self._n_in else "output"
        pos = i if i < self._n_in else i - self._n_in
        return f"{self.name}: {role} '{self._names[i]}' (#{pos})"

    def _describe(self, t: Any, value: Any, i: int) -> Any:
        """Fill DLTensor `t` for argument `i` from an array, zero-copy; returns what must stay alive."""
        ffi = self._ffi
        writable = self._n_in <= i < self._n
        copied = False
        if isinstance(value, np.ndarray):
            a = value
        elif writable:
            raise TypeError(
                f"{self._label(i)} must be a numpy array (outputs are written in place), "
                f"got {type(value).__name__}"
            )
        elif hasattr(value, "__dlpack__"):
            a = np.from_dlpack(value)
        else:  # a list or scalar has no dtype of its own: take the expected one
            a = np.asarray(value, dtype=self._dtypes[i] if i < self._n else None)
            copied = True
        if not writable and not a.flags.aligned and a.flags.c_contiguous:
            # a valid input at an address that is not a multiple of its item size (a view
            # at an odd byte offset): the C code reads an aligned copy, as host kernels would
            a = a.copy()
            copied = True
        dt = a.dtype
        code_bits = dl_dtype(dt)
        if code_bits is None:
            raise TypeError(f"{self._label(i)} has dtype {dt}, which has no DLPack equivalent")
        if writable and not a.flags.writeable:
            raise ValueError(f"{self._label(i)} is read-only")
        t.device.device_type = KDL_CPU
        t.device.device_id = 0
        t.ndim = a.ndim
        t.dtype.code, t.dtype.bits = code_bits
        t.dtype.lanes = 1
        t.byte_offset = 0
        # keep[0] is _COPIED when `a` is a copy: the struct must not outlive this call
        keep: list[Any] = [_COPIED if copied else value, a]
        if i < self._n and a.shape == self._shapes[i]:
            t.shape = self._shape_arrays[i]
        else:
            shape = ffi.new("int64_t[]", list(a.shape) or [0])
            keep.append(shape)
            t.shape = shape
        if a.flags.c_contiguous:
            t.strides = ffi.NULL
            if a.size:
                buf = ffi.from_buffer(a, require_writable=False)
                keep.append(buf)
                t.data = buf
            else:
                t.data = ffi.NULL
        else:
            if any(s % dt.itemsize for s in a.strides):
                raise ValueError(
                    f"{self._label(i)} has strides {a.strides} that are not a multiple of its item size"
                )
            strides = ffi.new("int64_t[]", [s // dt.itemsize for s in a.strides] or [0])
            keep.append(strides)
            t.strides = strides
            t.data = ffi.cast("void*", a.__array_interface__["data"][0])
        return keep


# ---------------------------------------------------------------------------
# Checking what an artifact says before it is used
# ---------------------------------------------------------------------------

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_RESERVED = {"byoc_init", "byoc_last_error"}


def parse_metadata(
    metadata: Any,
) -> tuple[dict[str, CSignature], list[TensorSpec | None]]:
    """The signatures and constant specs `metadata()` described; a ValueError if any field
    is missing, of the wrong type, or out of range (a symbol that is not a C identifier, a
    spec the runtime cannot pass, a constant count that disagrees with the specs). The
    constants' specs are None for exports made before they were recorded."""
    if not isinstance(metadata, dict) or not isinstance(metadata.get("functions"), dict):
        raise ValueError("C module metadata must be an object with a 'functions' object")
    functions: dict[str, CSignature] = {}
    for sym, spec in metadata["functions"].items():
        if _SYMBOL.fullmatch(sym) is None or sym in _RESERVED:
            raise ValueError(f"C module metadata: {sym[:60]!r} is not a partition symbol")
        if not isinstance(spec, dict) or not all(
            isinstance(spec.get(k), list) for k in ("inputs", "outputs")
        ):
            raise ValueError(f"C module metadata: function '{sym}' needs 'inputs' and 'outputs' lists")
        try:
            functions[sym] = CSignature(
                tuple(TensorSpec.from_json(s) for s in spec["inputs"]),
                tuple(TensorSpec.from_json(s) for s in spec["outputs"]),
            )
        except ValueError as e:
            raise ValueError(f"C module metadata: function '{sym}': {e}") from None
    count = metadata.get("num_constants", 0)
    if type(count) is not int or not 0 <= count <= 1 << 20:
        raise ValueError(
            f"C module metadata: num_constants is {count if type(count) is int else type(count).__name__}"
        )
    recorded = metadata.get("constants")
    if recorded is None:
        return functions, [None] * count
    if not isinstance(recorded, list) or len(recorded) != count:
        raise ValueError("C module metadata: 'constants' must list num_constants specs")
    try:
        specs: list[TensorSpec | None] = [TensorSpec.from_json(s) for s in recorded]
    except ValueError as e:
        raise ValueError(f"C module metadata: a constant: {e}") from None
    return functions, specs


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a valid JSON value here")


def _load_npy(data: bytes, what: str) -> np.ndarray[Any, Any]:
    """An .npy blob as an array, after checking its header against its size (np.load
    would allocate what a header claims before reading)."""
    import io

    buf = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(buf)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = read_header(buf)
        dtype = checked_dtype(dtype.str)
        checked_shape(list(shape), dtype.itemsize)
        if len(data) - buf.tell() != math.prod(shape) * dtype.itemsize:
            raise ValueError(
                f"{len(data) - buf.tell()} bytes of data for {list(shape)} x {dtype}"
            )
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, TypeError, SyntaxError, EOFError, OSError) as e:
        raise ValueError(f"C module export: {what} is not a valid .npy array ({e})") from None


_ELF_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21, "riscv64": 243}


def check_shared_object(data: bytes) -> str | None:
    """Why `data` cannot be a shared library of this machine (None if it can): not ELF,
    another class, byte order or machine, or a table or segment that runs past its end
    (dlopen of a truncated library dies with SIGBUS, it does not fail)."""
    import platform
    import struct

    if not sys.platform.startswith("linux"):
        return None  # other systems' formats are not checked here
    if data[:4] != b"\x7fELF":
        return "not an ELF file"
    if len(data) < 64 or data[4] != 2 or data[5] != (1 if sys.byteorder == "little" else 2):
        return "not a 64-bit ELF file in this machine's byte order"
    end = "<" if data[5] == 1 else ">"
    e_type, e_machine = struct.unpack_from(end + "HH", data, 16)
    phoff, shoff = struct.unpack_from(end + "QQ", data, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", data, 54)
    if e_type != 3:
        return f"not a shared object (ELF type {e_type})"
    machine = _ELF_MACHINES.get(platform.machine().lower())
    if machine is not None and e_machine != machine:
        return f"built for another machine (ELF machine {e_machine}, this is {platform.machine()})"
    size = len(data)
    if phentsize < 56 or phoff + phnum * phentsize > size:
        return "truncated (its program headers run past the end)"
    for i in range(phnum):
        p_type, _, p_offset = struct.unpack_from(end + "IIQ", data, phoff + i * phentsize)
        p_filesz = struct.unpack_from(end + "Q", data, phoff + i * phentsize + 32)[0]
        if p_offset + p_filesz > size:
            return f"truncated (segment {i} runs past the end)"
    if shnum and (shentsize < 64 or shoff + shnum * shentsize > size):
        return "truncated (its section headers run past the end)"
    for i in range(shnum):
        sh_type = struct.unpack_from(end + "I", data, shoff + i * shentsize + 4)[0]
        sh_offset, sh_size = struct.unpack_from(end + "QQ", data, shoff + i * shentsize + 24)
        if sh_type != 8 and sh_offset + sh_size > size:  # 8: SHT_NOBITS (.bss) has no bytes
            return f"truncated (section {i} runs past the end)"
    return None


__all__ = [
    "CModule",
    "CFunction",
    "CSignature",
    "CFunctionError",
]
