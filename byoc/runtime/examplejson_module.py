"""`ExampleJsonModule`: the seed's custom runtime module for ExampleJSON graphs, re-entrant.

    mod = ExampleJsonModule(text)                 # or .from_ir(module), .load_file(path)
    f = mod.get_function("subgraph_0")
    f(a, b, out)                                  # inputs, then the output: written and returned
    out = f(a, b)                                 # inputs only: the output is allocated
    blob = mod.save_to_binary()                   # ExampleJsonModule.load_from_binary(blob)

Each subgraph is planned once, when the module is built: a flat list of steps
(the node's numpy kernel, its attributes bound as keyword
arguments, the slots it reads and the slot it writes). A call gets its own list
of slots, so functions fetched in any order run the subgraph they name, and
concurrent calls from threads never share a tensor (TVM's module keeps a
current subgraph, `curr_subgraph_`, and one tensor pool, `data_entry_`, for
all calls: neither exists here). Arguments are matched to the `input` lines in
their order, whatever their ids. Inputs are numpy arrays or anything with `__dlpack__`;
their shape and dtype must match the `input` lines exactly.

The binary form (`save_to_binary`) is a 24-byte header — magic `BYOC-EJS`,
format version (u16), flags (u16, 0), CRC-32 of the payload (u32), payload
length (u64), little-endian — followed by the ExampleJSON text in UTF-8.
Constants are `const` lines of that text, so the text is the whole module.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import ParseError, VerifyException

from byoc.dialects import examplejson as ej
from byoc.dialects.examplejson.text import parse_examplejson, to_text
from byoc.dialects.nn import numpy_dtype, shape_of
from byoc.interpreters.kernels import KERNELS
from byoc.runtime.interface import RuntimeComponent
from byoc.runtime.tensor import TensorSpec, fresh_outputs

Array = np.ndarray[Any, Any]

MAGIC = b"BYOC-EJS"
VERSION = 1
_HEADER = struct.Struct("<8sHHIQ")


class ExampleJsonError(ValueError):
    """A problem with an ExampleJSON module: its text, its binary form, or a call."""


class BinaryFormatError(ExampleJsonError):
    """`load_from_binary` was given something that is not an intact saved module."""


class UnknownSubgraphError(ExampleJsonError, KeyError):
    """`get_function` of a name the module does not hold; the message lists those it does."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class Step:
    """One node: `slots[out] = kernel(*slots[args], **kwargs)`, then drop `frees`."""

    kernel: Callable[..., Any]
    args: tuple[int, ...]
    out: int
    kwargs: Mapping[str, Any]
    frees: tuple[int, ...]
    line: str
    """The node's op and id (`add 4`), for error messages."""


@dataclass(frozen=True)
class SubgraphPlan:
    """A subgraph, ready to run: everything a call needs, immutable."""

    name: str
    num_slots: int
    inputs: tuple[int, ...]
    """Slots of the `input` lines, in line order (the argument order)."""
    input_specs: tuple[TensorSpec, ...]
    consts: tuple[tuple[int, Array], ...]
    """(slot, read-only array) of each `const` line."""
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    output_specs: tuple[TensorSpec, ...]

    def run(self, inputs: Sequence[Any]) -> list[Any]:
        """Run on checked inputs; the output values (may alias inputs or constants)."""
        slots: list[Any] = [None] * self.num_slots
        for slot, value in self.consts:
            slots[slot] = value
        for slot, value in zip(self.inputs, inputs, strict=True):
            slots[slot] = value
        step = None
        try:
            for step in self.steps:
                slots[step.out] = step.kernel(*[slots[i] for i in step.args], **step.kwargs)
                for i in step.frees:
                    slots[i] = None
        except Exception as e:
            where = f" at line '{step.line}'" if step is not None else ""
            raise ExampleJsonError(f"subgraph '{self.name}' failed{where}: {e}") from e
        return [slots[i] for i in self.outputs]


def _spec(t: Any) -> TensorSpec:
    return TensorSpec(shape_of(t), numpy_dtype(t.element_type))


def plan_subgraph(subgraph: ej.SubgraphOp) -> SubgraphPlan:
    """Plan a (verified) subgraph: a slot per line, kernels and attributes bound once."""
    lines = subgraph.lines
    slot: dict[SSAValue, int] = {op.result: k for k, op in enumerate(lines)}
    ids = subgraph.value_ids()
    output_values = list(subgraph.output.outputs)
    outputs = tuple(slot[v] for v in output_values)
    nodes = [op for op in lines if isinstance(op, ej.NodeOp)]
    last_use: dict[int, int] = {}
    for n, node in enumerate(nodes):
        for v in node.inputs:
            last_use[slot[v]] = n
    frees: list[list[int]] = [[] for _ in nodes]
    for s, n in last_use.items():
        if s not in outputs:
            frees[n].append(s)
    steps = tuple(
        Step(
            kernel=KERNELS[node.nn_class.name],
            args=tuple(slot[v] for v in node.inputs),
            out=slot[node.result],
            kwargs=node.kernel_attrs(),
            frees=tuple(sorted(frees[n])),
            line=f"{node.op.data} {ids[node.result]}",
        )
        for n, node in enumerate(nodes)
    )
    consts: list[tuple[int, Array]] = []
    for op in lines:
        if isinstance(op, ej.ConstOp):
            arr = op.ndarray().copy()
            arr.flags.writeable = False
            consts.append((slot[op.result], arr))
    return SubgraphPlan(
        name=subgraph.sym_name.data,
        num_slots=len(lines),
        inputs=tuple(slot[op.result] for op in subgraph.inputs),
        input_specs=tuple(_spec(op.tensor_type) for op in subgraph.inputs),
        consts=tuple(consts),
        steps=steps,
        outputs=outputs,
        output_specs=tuple(_spec(v.type) for v in output_values),
    )


def _as_array(value: Any) -> Array:
    if isinstance(value, np.ndarray):
        # a subclass (np.matrix: `*` is a matrix product) as a plain ndarray, as np.asarray does
        return value if type(value) is np.ndarray else value.view(np.ndarray)
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    return np.asarray(value)


class ExampleJsonFunction:
    """One subgraph as a callable: `f(*inputs[, *outputs])`. Holds no per-call state."""

    __slots__ = ("plan",)

    def __init__(self, plan: SubgraphPlan):
        self.plan = plan

    @property
    def name(self) -> str:
        return self.plan.name

    def __repr__(self) -> str:
        p = self.plan
        ins = ", ".join(map(str, p.input_specs))
        outs = ", ".join(map(str, p.output_specs))
        return f"<ExampleJsonFunction {p.name}({ins}) -> ({outs})>"

    def _check(self, value: Any, spec: TensorSpec, kind: str, k: int) -> Array:
        if type(value) is np.ndarray and value.dtype == spec.dtype and value.shape == spec.shape:
            return value  # the common case
        what = f"{kind} #{k}"
        try:
            arr = _as_array(value)
        except Exception as e:  # noqa: BLE001 - say which argument numpy could not take
            raise TypeError(f"{self.name}: {what} is not an array ({e})") from None
        if arr.dtype != spec.dtype:
            raise TypeError(f"{self.name}: {what} has dtype {arr.dtype}, expected {spec.dtype}")
        if arr.shape != spec.shape:
            raise ValueError(f"{self.name}: {what} has shape {arr.shape}, expected {spec.shape}")
        return arr

    def __call__(self, *args: Any) -> Any:
        plan = self.plan
        n_in, n_out = len(plan.inputs), len(plan.outputs)
        if len(args) != n_in and len(args) != n_in + n_out:
            raise TypeError(
                f"{self.name} takes {n_in} input(s), optionally followed by {n_out} output "
                f"array(s) to write; got {len(args)} argument(s)"
            )
        check = self._check
        inputs = [check(args[k], s, "input", k) for k, s in enumerate(plan.input_specs)]
        dests: list[Array] | None = None
        if len(args) > n_in:
            dests = [check(args[n_in + k], s, "output", k) for k, s in enumerate(plan.output_specs)]
            for k, d in enumerate(dests):
                if not d.flags.writeable:
                    raise ValueError(f"{self.name}: output #{k} is read-only")
        results = [np.asarray(r) for r in plan.run(inputs)]
        for k, (r, s) in enumerate(zip(results, plan.output_specs, strict=True)):
            if r.dtype != s.dtype or r.shape != s.shape:
                raise ExampleJsonError(
                    f"{self.name}: output #{k} came out as {r.dtype}{list(r.shape)}, "
                    f"the graph declares {s}"
                )
        if dests is not None:
            for d, r in zip(dests, results, strict=True):
                np.copyto(d, r)
            return dests[0] if n_out == 1 else tuple(dests)
        # fresh arrays for the caller: never an input, a view of one, or a (read-only) constant
        outs = fresh_outputs(results, inputs)
        return outs[0] if n_out == 1 else tuple(outs)


class ExampleJsonModule(RuntimeComponent):
    """A runtime module holding many ExampleJSON subgraphs (the seed's ExampleJsonModule).

    Build it from ExampleJSON text, from IR holding `examplejson.subgraph` ops
    (`from_ir`), from a file (`load_file`, the seed's `Create`) or from
    `save_to_binary()` bytes (`load_from_binary`). Immutable once built:
    `get_function` can be called from any thread, and so can what it returns.
    """

    kind = "examplejson"
    """The component kind artifacts record (`byoc.runtime.component`)."""

    def __init__(self, graph: str | Operation, name: str = "<examplejson>"):
        if isinstance(graph, str):
            ir: Operation = parse_examplejson(graph, name)
            self._source = graph
        else:
            graph.verify()
            ir = graph
            self._source = to_text(graph)
        self.name = name
        self._plans: dict[str, SubgraphPlan] = {}
        for sub in ej.subgraphs_of(ir):
            if sub.sym_name.data in self._plans:
                raise ExampleJsonError(f"{name}: subgraph '{sub.sym_name.data}' is defined twice")
            self._plans[sub.sym_name.data] = plan_subgraph(sub)

    @classmethod
    def from_ir(cls, op: Operation, name: str = "<examplejson>") -> ExampleJsonModule:
        """From a module (or examplejson.module, or subgraph) holding `examplejson.subgraph` ops."""
        return cls(op, name)

    @classmethod
    def load_file(cls, path: str | Path) -> ExampleJsonModule:
        """From an ExampleJSON text file, or a file `save_to_binary` wrote (the seed's `Create`)."""
        data = Path(path).read_bytes()
        if data.startswith(MAGIC):
            return cls.load_from_binary(data, str(path))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ExampleJsonError(
                f"{path}: neither ExampleJSON text (not UTF-8 at byte {e.start}) nor a saved module"
            ) from None
        return cls(text, str(path))

    # ---- functions -----------------------------------------------------------------
    @property
    def subgraph_names(self) -> list[str]:
        return list(self._plans)

    def __contains__(self, name: object) -> bool:
        return name in self._plans

    def get_function(self, name: str) -> ExampleJsonFunction:
        """The callable for subgraph `name`: `f(*inputs)` or `f(*inputs, *outputs)`."""
        plan = self._plans.get(name)
        if plan is None:
            available = ", ".join(self._plans) or "none"
            raise UnknownSubgraphError(
                f"unknown subgraph '{name}' in ExampleJSON module {self.name} (available: {available})"
            )
        return ExampleJsonFunction(plan)

    def get_source(self, fmt: str = "") -> str:
        """The ExampleJSON text the module was built from (`fmt` is accepted for TVM's signature)."""
        return self._source

    def __repr__(self) -> str:
        return f"<ExampleJsonModule {self.name}: {', '.join(self._plans) or 'no subgraphs'}>"

    # ---- persistence ------------------------------------------------------------------
    def save_to_binary(self) -> bytes:
        """Header (magic, version, CRC-32, length) + the text; `load_from_binary` reads it."""
        payload = self._source.encode("utf-8")
        return _HEADER.pack(MAGIC, VERSION, 0, zlib.crc32(payload), len(payload)) + payload

    @classmethod
    def load_from_binary(
        cls, data: bytes | bytearray | memoryview, name: str = "<binary>"
    ) -> ExampleJsonModule:
        """Rebuild a module from `save_to_binary()`; a foreign, truncated or corrupted blob is an error."""
        data = bytes(data)
        size = _HEADER.size
        if data[: len(MAGIC)] != MAGIC[: len(data)]:
            raise BinaryFormatError(
                f"{name}: not a saved ExampleJSON module (expected magic {MAGIC!r}, "
                f"found {data[: len(MAGIC)]!r})"
            )
        if len(data) < size:
            raise BinaryFormatError(
                f"{name}: truncated: {len(data)} bytes, the header alone is {size}"
            )
        _, version, flags, crc, length = _HEADER.unpack_from(data)
        if version != VERSION:
            raise BinaryFormatError(
                f"{name}: format version {version}, this build reads version {VERSION}"
            )
        if flags != 0:
            raise BinaryFormatError(f"{name}: unknown flags {flags:#x} in the header")
        payload = data[size:]
        if len(payload) < length:
            raise BinaryFormatError(
                f"{name}: truncated: the header announces {length} bytes of graph, found {len(payload)}"
            )
        if len(payload) > length:
            raise BinaryFormatError(
                f"{name}: {len(payload) - length} unexpected bytes after the graph"
            )
        if zlib.crc32(payload) != crc:
            raise BinaryFormatError(f"{name}: corrupted: the checksum of the graph does not match")
        # an intact checksum does not make the text a graph: whatever it is, it is this error
        try:
            return cls(payload.decode("utf-8"), name)
        except ExampleJsonError:
            raise
        except (UnicodeDecodeError, ParseError, VerifyException, RecursionError) as e:
            raise BinaryFormatError(f"{name}: the saved graph is not valid ExampleJSON: {e}") from None

    @classmethod
    def from_blobs(cls, blobs: Mapping[str, bytes]) -> ExampleJsonModule:
        """The module `export()` described."""
        blob = blobs.get("examplejson")
        if not isinstance(blob, bytes):
            raise BinaryFormatError("<artifact>: no 'examplejson' blob")
        return cls.load_from_binary(blob, "<artifact>")

    def export(self) -> dict[str, bytes]:
        """Blobs for an artifact (`byoc.runtime.executable.RuntimeComponent`)."""
        return {"examplejson": self.save_to_binary()}
