"""The compiled host plan: a whole run in one native call.

    native, why = compile_plan(plan, constants, bound, components)   # None, why: in Python
    outputs = native.run_args(arrays) or native.run(checked_arrays)  # one cffi call

`byoc_plan_runner.c` is generic C shipped with byoc: it interprets plan data, so no
model needs a compile of its own. It is compiled once per machine (the toolchain's
cache) and loaded once per process; an artifact carries a copy (`runner_library`), so
loading one needs no compiler. `NativePlan.build` turns a `HostPlan` into its data once
per Executable:

- every slot gets a dtype and a shape (propagated through the kernel steps' type
  relations); a plan with a `?` dim anywhere stays in Python;
- a partition call whose component has a C entry (`RuntimeComponent.c_entry`: a C
  library's packed entry, a graph component's `byoc_graph_run` with its module and
  graph index) is called from C directly; any other step (a host kernel, a partition of a component
  without a C entry such as ExampleJSON) calls back into Python, where it runs the
  very closure the Python executor runs (`BoundPlan.runners`);
- the intermediates live in one arena per run, placed by `plan_arena` (two values
  share bytes only when no step needs both); values that host kernels make and only
  host kernels read stay Python objects and take no arena space;
- a model output written by a step is written straight into the array the caller
  gets; an output that is an input or a constant passed through, or a value returned
  twice, is copied at the end.

Results agree bit for bit with the Python executor: the same kernels run on the same
values. A host step reads the Python objects the Python executor would hand it (the
caller's input arrays, the constant arrays, the previous host kernel's result) and,
for a value a C partition made, a view of its bytes.

Thread safety: the runner hands each concurrent run its own workspace (tensors,
argument vectors and arena, reused by later runs); the Python side of a host step keeps
its run's values in a thread-local.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.runtime.c_module import CFunctionError, check_shared_object
from byoc.runtime.dlpack import dl_dtype, header_cdef, tensor_cdef
from byoc.runtime.host import BoundPlan, HostPlan
from byoc.runtime.interface import CEntry, RuntimeComponent
from byoc.runtime.static_ffi import static_ffi
from byoc.runtime.tensor import TensorSpec
from byoc.runtime.toolchain import (
    DEFAULT_FLAGS,
    INCLUDE_DIR,
    CompileError,
    cache_dir,
    compile_source,
    kernel_cache_dir,
    private_copy,
)
from byoc.utils.aligned import aligned_array

Array = np.ndarray[Any, Any]

RUNNER_SOURCE = INCLUDE_DIR / "byoc_plan_runner.c"

_CDEF = tensor_cdef() + header_cdef("byoc_plan_runner.h", "byoc_plan cdef")
"""The runner's plan data and functions, as byoc_plan_runner.c is compiled with them."""

STEP_ENTRY, STEP_GRAPH, STEP_HOST = 0, 1, 2
SLOT_INPUT, SLOT_CONSTANT, SLOT_OUTPUT, SLOT_ARENA, SLOT_PYTHON = 0, 1, 2, 3, 4
ALIGN = 64
"""Every arena range starts at a multiple of this (the arena itself is so aligned)."""


class NativePlanError(RuntimeError):
    """The plan runner failed in a way no component reports (a broken runner library)."""


RUNNER_ABI = 1
"""`byoc_plan_abi()` of a runner whose plan data this module writes."""


@dataclass(frozen=True)
class Runner:
    """The loaded plan runner: its FFI, its library handle and the library's bytes (which
    `export_library` stores, so that loading the artifact needs no compiler)."""

    ffi: Any
    lib: Any
    library: bytes


_RUNNER: list[Runner] = []
_RUNNER_LOCK = threading.Lock()


def runner_library(shipped: bytes | None = None) -> Runner:
    """The plan runner, loaded on first use and kept for the life of the process: `shipped`
    (a runner an artifact carries) if given and usable here, else compiled (or found in the
    cache). The runner is the same for every model, so it is cached beside the kernel
    library (`kernel_cache_dir`: built once per machine, not once per model's library
    cache), checked against its content hash like every cached library. Raises the
    toolchain's CompileError or an OSError when neither works."""
    if _RUNNER:
        return _RUNNER[0]
    with _RUNNER_LOCK:
        if not _RUNNER:
            runner = _open(shipped) if shipped is not None else None
            if runner is None:
                flags = tuple(f for f in DEFAULT_FLAGS if f != "-fopenmp")
                directory = kernel_cache_dir(cache_dir())
                runner = _open(compile_source(RUNNER_SOURCE.read_text(), flags, directory=directory).library)
            if runner is None:
                raise OSError("the plan runner built from byoc_plan_runner.c reports another ABI")
            _RUNNER.append(runner)
    return _RUNNER[0]


def _open(library: bytes) -> Runner | None:
    """The runner in `library`, or None if it is not a loadable runner of this ABI."""
    if check_shared_object(library) is not None:
        return None
    ffi = static_ffi(_CDEF)  # parsed once per machine
    try:
        with private_copy(library) as copy:
            lib = ffi.dlopen(str(copy))
            try:
                abi = int(lib.byoc_plan_abi())
            except AttributeError:
                abi = -1
            if abi != RUNNER_ABI:
                ffi.dlclose(lib)
                return None
            # The runner stays loaded for the life of the process: a second handle that is
            # never closed keeps it mapped when interpreter shutdown frees the `lib` object
            # before the plans whose destructor (`byoc_plan_free`) lives in it.
            ctypes.CDLL(str(copy))
    except OSError:
        return None
    return Runner(ffi, lib, library)


# ---------------------------------------------------------------------------
# Planning the data
# ---------------------------------------------------------------------------


def slot_specs(plan: HostPlan, constants: Sequence[Array]) -> list[TensorSpec] | None:
    """The dtype and shape of every slot, or None when one is not static (a `?` dim) or a
    slot is never written."""
    specs: list[TensorSpec | None] = [None] * plan.num_slots
    for slot, spec in zip(plan.input_slots, plan.input_specs, strict=True):
        specs[slot] = spec
    for slot, cid in plan.constant_slots.items():
        specs[slot] = TensorSpec(constants[cid].shape, constants[cid].dtype)
    for step in plan.steps:
        if step.kind == "kernel":
            operands = [specs[i] for i in step.inputs]
            if any(s is None for s in operands):
                return None
            types = [
                nn.tensor(s.shape, nn.element_type_of(s.dtype)) for s in operands if s is not None
            ]
            results = [TensorSpec.of(t) for t in nn.NN_OPS[step.name].check_call(types, step.attrs)]
        else:
            results = list(step.out_specs)
        for slot, spec in zip(step.outputs, results, strict=True):
            specs[slot] = spec
    if any(s is None or nn.DYNAMIC in s.shape for s in specs):
        return None
    return [s for s in specs if s is not None]


def plan_arena(
    sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]], align: int = ALIGN
) -> tuple[list[int], int]:
    """Offsets for buffers of `sizes` (bytes) live over the inclusive step ranges `lifetimes`,
    and the arena size: largest first, each at the lowest `align`ed offset that overlaps no
    placed buffer whose lifetime meets its own (greedy by size, as TFLite's planner does)."""
    order = sorted(range(len(sizes)), key=lambda b: (-sizes[b], b))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets = [0] * len(sizes)
    total = 0
    for b in order:
        size = -(-sizes[b] // align) * align
        first, last = lifetimes[b]
        busy = sorted((o, e) for o, e, f, la in placed if f <= last and first <= la)
        at = 0
        for o, e in busy:
            if at + size <= o:
                break
            at = max(at, e)
        offsets[b] = at
        placed.append((at, at + size, first, last))
        total = max(total, at + size)
    return offsets, total


@dataclass
class _Layout:
    kinds: list[int]
    index: list[int]
    offsets: list[int]
    arena_size: int
    copies: list[tuple[int, int]]


def _layout(plan: HostPlan, native: Sequence[bool], specs: Sequence[TensorSpec]) -> _Layout:
    """Where each slot lives (module doc), and which outputs are copied at the end."""
    n = plan.num_slots
    kinds = [SLOT_ARENA] * n
    index = [0] * n
    for i, slot in enumerate(plan.input_slots):
        kinds[slot], index[slot] = SLOT_INPUT, i
    for slot in plan.constant_slots:
        kinds[slot] = SLOT_CONSTANT
    copies: list[tuple[int, int]] = []
    for j, slot in enumerate(plan.output_slots):
        if kinds[slot] == SLOT_ARENA:
            kinds[slot], index[slot] = SLOT_OUTPUT, j
        else:  # an input, a constant, or a value returned a second time
            copies.append((slot, j))
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    read_natively: set[int] = set()
    for k, step in enumerate(plan.steps):
        for slot in step.outputs:
            first[slot] = last[slot] = k
            if not native[k] and kinds[slot] == SLOT_ARENA:
                kinds[slot] = SLOT_PYTHON  # until a native step reads it
        for slot in step.inputs:
            last[slot] = k
            if native[k]:
                read_natively.add(slot)
    for slot in read_natively:
        if kinds[slot] == SLOT_PYTHON:
            kinds[slot] = SLOT_ARENA
    arena = [s for s in range(n) if kinds[s] == SLOT_ARENA]
    offsets_of, size = plan_arena(
        [specs[s].nbytes for s in arena], [(first[s], last[s]) for s in arena]
    )
    offsets = [0] * n
    for s, o in zip(arena, offsets_of, strict=True):
        offsets[s] = o
    return _Layout(kinds, index, offsets, size, copies)


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


class _HostSteps:
    """The steps a native run calls back into Python for: `__call__(ctx, k, argv)` runs step
    `k` with the closure the Python executor runs (`BoundPlan.runners`), over this thread's
    run's values (`tls.slots`), reading a partition's result as a view of its bytes, and
    writing each result the runner needs into its bytes. Holds no reference to the
    NativePlan (the cffi callback that wraps it would make a cycle)."""

    def __init__(
        self,
        ffi: Any,
        bound: BoundPlan,
        specs: Sequence[TensorSpec],
        io: list[tuple[list[tuple[int, int]], list[tuple[int, int]]]],
    ):
        self.ffi = ffi
        self.runners = bound.runners
        self.specs = list(specs)
        self.io = io
        self.tls = threading.local()

    def view(self, tensor: Any, slot: int) -> Array:
        spec = self.specs[slot]
        if spec.nbytes == 0:
            return np.empty(spec.shape, spec.dtype)
        buf = self.ffi.buffer(tensor.data, spec.nbytes)
        return np.frombuffer(buf, spec.dtype).reshape(spec.shape)

    def __call__(self, _ctx: Any, k: int, argv: Any) -> int:
        try:
            slots = self.tls.slots
            reads, writes = self.io[k]
            for j, s in reads:
                if slots[s] is None:
                    slots[s] = self.view(argv[j], s)
            self.runners[k](slots)
            for j, s in writes:
                if self.specs[s].nbytes:
                    np.copyto(self.view(argv[j], s), slots[s])
        except BaseException as exc:  # noqa: BLE001 - raised again by the run, on this thread
            self.tls.error = exc
            return -1
        return 0


class NativePlan:
    """A host plan as data for the native runner; `run(arrays)` is one cffi call."""

    def __init__(
        self,
        plan: HostPlan,
        specs: Sequence[TensorSpec],
        constants: Sequence[Array],
        bound: BoundPlan,
        entries: Sequence[CEntry | None],
    ):
        runner = runner_library()
        ffi, lib = runner.ffi, runner.lib
        self.plan = plan
        self._ffi = ffi
        self._lib = lib
        self._bound = bound
        self._entries = list(entries)
        native = [e is not None for e in entries]
        self.host_steps = native.count(False)
        """How many steps call back into Python (host kernels, components without C)."""
        layout = _layout(plan, native, specs)
        self.arena_size = layout.arena_size
        self.layout = layout
        keep: list[Any] = []
        self._keep = keep
        slots = ffi.new("byoc_plan_slot[]", max(plan.num_slots, 1))
        for s, spec in enumerate(specs):
            sl = slots[s]
            sl.kind = layout.kinds[s]
            sl.index = layout.index[s]
            sl.offset = layout.offsets[s]
            sl.nbytes = spec.nbytes
            code_bits = dl_dtype(spec.dtype)
            assert code_bits is not None  # checked by build()
            sl.dtype.code, sl.dtype.bits = code_bits
            sl.dtype.lanes = 1
            sl.ndim = len(spec.shape)
            shape = ffi.new("int64_t[]", list(spec.shape) or [0])
            keep.append(shape)
            sl.shape = shape
        for slot, cid in plan.constant_slots.items():
            arr = aligned_array(np.asarray(constants[cid]))
            if arr.size:
                buf = ffi.from_buffer(arr, require_writable=False)
                keep.append((arr, buf))
                slots[slot].data = buf
        args: list[int] = []
        steps = ffi.new("byoc_plan_step[]", max(len(plan.steps), 1))
        for k, step in enumerate(plan.steps):
            st = steps[k]
            st.first_arg = len(args)
            st.num_args = len(step.inputs) + len(step.outputs)
            args += [*step.inputs, *step.outputs]
            entry = entries[k]
            if entry is None:
                st.kind = STEP_HOST
            elif entry.module:
                st.kind = STEP_GRAPH
                st.fn = ffi.cast("void*", entry.fn)
                st.module = ffi.cast("void*", entry.module)
                st.graph = entry.graph
            else:
                st.kind = STEP_ENTRY
                st.fn = ffi.cast("void*", entry.fn)
        arg_slots = ffi.new("int32_t[]", args or [0])
        copies = ffi.new("byoc_plan_copy[]", max(len(layout.copies), 1))
        for c, (slot, j) in enumerate(layout.copies):
            copies[c].slot = slot
            copies[c].index = j
        data = ffi.new("byoc_plan_data*")
        data.num_slots = plan.num_slots
        data.num_steps = len(plan.steps)
        data.num_args = len(args)
        data.num_copies = len(layout.copies)
        data.slots = slots
        data.steps = steps
        data.arg_slots = arg_slots
        data.copies = copies
        data.arena_size = layout.arena_size
        io = [
            (
                list(enumerate(step.inputs)),
                [
                    (len(step.inputs) + j, s)
                    for j, s in enumerate(step.outputs)
                    if layout.kinds[s] != SLOT_PYTHON
                ],
            )
            for step in plan.steps
        ]
        self._host = _HostSteps(ffi, bound, specs, io)
        self._tls = self._host.tls
        if self.host_steps:
            self._callback = ffi.callback("byoc_plan_host_fn", self._host)
            data.host = self._callback
        handle = lib.byoc_plan_new(data)
        if handle == ffi.NULL:
            raise MemoryError("the native plan runner rejected the plan or ran out of memory")
        self._handle = ffi.gc(handle, lib.byoc_plan_free)
        self._run = lib.byoc_plan_run
        self._from_buffer = ffi.from_buffer
        self._n_in = len(plan.input_slots)
        self._in = [(s.shape, np.dtype(s.dtype.str)) for s in plan.input_specs]
        self._out = [(s.shape, s.dtype) for s in plan.output_specs]
        self._simple = self._out[0] if len(self._out) == 1 and not self.host_steps else None

    @staticmethod
    def build(
        plan: HostPlan,
        constants: Sequence[Array],
        bound: BoundPlan,
        entry: Callable[[str, str], CEntry | None],
    ) -> NativePlan | None:
        """The native form of `plan`, or None when it must run in Python (a `?` dim).
        `entry(target, symbol)` is the C entry of a partition, or None (called back)."""
        specs = slot_specs(plan, constants)
        if specs is None:
            return None
        if any(dl_dtype(s.dtype) is None for s in specs):
            return None
        entries = [entry(s.target, s.name) if s.kind == "call" else None for s in plan.steps]
        return NativePlan(plan, specs, constants, bound, entries)

    def run_args(self, args: Sequence[Any]) -> list[Array] | None:
        """Run over `args` if each is a plain C-contiguous ndarray of the plan's dtype and
        shape (the fast path: checked and passed in one loop); None if one is not."""
        if len(args) != self._n_in:
            return None
        fb = self._from_buffer
        bufs = []
        try:
            for a, (shape, dtype) in zip(args, self._in, strict=False):  # lengths checked
                if type(a) is not np.ndarray or a.dtype is not dtype or a.shape != shape:
                    return None
                bufs.append(fb(a))  # a ValueError when `a` is not C-contiguous
        except ValueError:
            return None
        if self._simple is not None:  # one output, no host step: nothing else to set up
            out = np.empty(*self._simple)
            rc = self._run(self._handle, bufs, [fb(out)])
            if rc == 0:
                return [out]
            return self._failed(rc, args)
        return self._go(args, bufs)

    def run(self, inputs: Sequence[Array]) -> list[Array]:
        """Run over `inputs` (checked arrays: the plan's dtypes and shapes, C-contiguous)."""
        fb = self._from_buffer
        return self._go(inputs, [fb(a) for a in inputs])

    def _go(self, inputs: Sequence[Array], bufs: list[Any]) -> list[Array]:
        fb = self._from_buffer
        outs = [np.empty(shape, dtype) for shape, dtype in self._out]
        obufs = [fb(o) for o in outs]
        if not self.host_steps:
            rc = self._run(self._handle, bufs, obufs)
        else:
            tls = self._tls
            tls.slots = self._bound.start(inputs)
            try:
                rc = self._run(self._handle, bufs, obufs)
            finally:
                tls.slots = None
        return outs if rc == 0 else self._failed(rc, inputs)

    def _failed(self, rc: int, inputs: Sequence[Array]) -> list[Array]:
        """After a run returned `rc`: raise its error, or run again over aligned copies."""
        self._raise(rc, inputs)
        return self.run([np.array(a, copy=True) for a in inputs])

    def _raise(self, rc: int, inputs: Sequence[Array]) -> None:
        """Raise the error of a failed run; return when an input only needs an aligned copy."""
        if rc == -2:
            if all(a.flags.aligned for a in inputs):
                raise NativePlanError("the plan runner rejected an aligned input")
            return
        if rc < 0:
            raise MemoryError("the native plan runner could not allocate a workspace")
        k = rc - 1
        entry = self._entries[k]
        step = self.plan.steps[k]
        if entry is None:
            exc = getattr(self._tls, "error", None)
            self._tls.error = None
            if exc is None:
                raise NativePlanError(f"host step {k} ('{step.name}') failed")
            raise exc
        raise CFunctionError(step.name, int(self._lib.byoc_plan_last_code()), entry.last_error())


def compile_plan(
    plan: HostPlan,
    constants: Sequence[Array],
    bound: BoundPlan,
    components: Mapping[str, RuntimeComponent],
) -> tuple[NativePlan | None, str]:
    """The native form of a bound plan and "", or None and why it runs in Python: no step
    has a C entry (nothing to gain: every step would call back), or a dim is dynamic."""
    entry = c_entries(components)
    if not any(s.kind == "call" and entry(s.target, s.name) is not None for s in plan.steps):
        return None, "no step calls a C entry"
    try:
        native = NativePlan.build(plan, constants, bound, entry)
    except (VerifyException, TypeError, ValueError, KeyError) as exc:
        return None, f"the slots' types cannot be propagated ({exc})"
    except (CompileError, OSError) as exc:
        return None, f"the plan runner cannot be built or loaded here ({exc})"
    if native is None:
        return None, "a dim is dynamic (?) or a dtype has no DLPack equivalent"
    return native, ""


def c_entries(components: Mapping[str, RuntimeComponent]) -> Callable[[str, str], CEntry | None]:
    """`entry(target, symbol)`: the component's `c_entry`, None where it has none."""

    def entry(target: str, symbol: str) -> CEntry | None:
        component = components.get(target)
        return component.c_entry(symbol) if component is not None else None

    return entry


__all__ = [
    "CEntry",
    "compile_plan",
    "NativePlan",
    "NativePlanError",
    "plan_arena",
    "Runner",
    "runner_library",
    "slot_specs",
]
