"""`Executable`: a built model — the host plan, its constants and the targets' runtime components.

`export_library(path)` writes it as one artifact (`artifact.py`, the container);
`load_executable(path)` reads it back, each component through the loader of its
kind (`component.py`), with no recompilation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from byoc.runtime.artifact import ArtifactError, ArtifactWriter, read_artifact
from byoc.runtime.component import RuntimeComponent, kind_of_blobs, load_component
from byoc.runtime.host import BoundPlan, HostPlan

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class PartitionInfo:
    symbol: str
    target: str
    ops: tuple[str, ...]
    """The op names inside the partition, in order."""

    @property
    def num_ops(self) -> int:
        return len(self.ops)


class InputError(ValueError):
    """An input does not match the model's signature; the message names the input."""


def as_array(value: Any, name: str) -> Array:
    """A numpy view of an input: ndarray, any `__dlpack__` exporter, or array-like.

    An ndarray subclass (`np.matrix`, a masked array) is viewed as a plain ndarray of its
    data, as `np.asarray` does: its operators (`*` is a matrix product on `np.matrix`)
    must not reach the kernels."""
    if isinstance(value, np.ndarray):
        return value if type(value) is np.ndarray else value.view(np.ndarray)
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, BufferError) as exc:
            raise InputError(f"input '{name}': cannot import it through DLPack ({exc})") from exc
    try:
        return np.asarray(value)
    except Exception as exc:  # noqa: BLE001 - report what numpy says, naming the input
        raise InputError(f"input '{name}': not an array ({exc})") from exc


class Executable:
    """Run a built model: `run(*args, **kwargs)` / `__call__` return a list of numpy arrays.

    Thread-safe: each call has its own value slots; partitions are re-entrant.
    """

    def __init__(
        self,
        plan: HostPlan,
        constants: Sequence[Array],
        components: Mapping[str, RuntimeComponent],
        partitions: Sequence[PartitionInfo],
    ):
        self.plan = plan
        self.constants = list(constants)
        self.components = dict(components)
        self._partitions = list(partitions)

        def function(target: str, symbol: str) -> Callable[..., Any]:
            component = self.components.get(target)
            if component is None:
                raise KeyError(f"no runtime module for target '{target}' (partition @{symbol})")
            return component.get_function(symbol)

        self._bound = BoundPlan.bind(plan, self.constants, function)
        self._checks = [
            (name, spec.dtype, spec.shape)
            for name, spec in zip(plan.input_names, plan.input_specs, strict=True)
        ]

    # ---- inputs -----------------------------------------------------------------
    @property
    def input_names(self) -> list[str]:
        return list(self.plan.input_names)

    def _coerce(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Array]:
        checks = self._checks
        if not kwargs and len(args) == len(checks):
            values: Sequence[Any] = args
        else:
            values = self._gather(args, kwargs)
        out: list[Array] = []
        for (name, dtype, shape), value in zip(checks, values, strict=True):
            arr = value if type(value) is np.ndarray else as_array(value, name)
            if arr.dtype != dtype or arr.shape != shape:
                self._reject(name, dtype, shape, arr)
            flags = arr.flags
            if not (flags.c_contiguous and flags.aligned):
                if not flags.c_contiguous:
                    self._reject(name, dtype, shape, arr)
                # valid but misaligned (a view at an odd byte offset): every executor
                # gets an aligned copy; the C partitions would reject it
                arr = arr.copy()
            out.append(arr)
        return out

    def _gather(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        names = self.plan.input_names
        if len(args) > len(names):
            raise InputError(f"the model takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
        values: dict[str, Any] = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in names:
                raise InputError(f"unknown input '{key}'; inputs are {', '.join(names)}")
            if key in values:
                raise InputError(f"input '{key}' given twice (by position and by name)")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise InputError(f"missing input(s): {', '.join(missing)}")
        return [values[n] for n in names]

    @staticmethod
    def _reject(name: str, dtype: np.dtype[Any], shape: tuple[int, ...], arr: Array) -> None:
        if arr.dtype != dtype:
            raise InputError(f"input '{name}' has dtype {arr.dtype}, expected {dtype}")
        if arr.shape != shape:
            raise InputError(f"input '{name}' has shape {arr.shape}, expected {shape}")
        raise InputError(f"input '{name}' is not C-contiguous; pass np.ascontiguousarray(...)")

    # ---- running ----------------------------------------------------------------
    def run(self, *args: Any, **kwargs: Any) -> list[Array]:
        return self._bound.run(self._coerce(args, kwargs))

    __call__ = run

    def run_profiled(self, *args: Any, **kwargs: Any) -> tuple[list[Array], dict[str, float]]:
        """Run once and return the outputs and seconds per partition symbol, plus 'host'."""
        outputs, times = self._bound.run_profiled(self._coerce(args, kwargs))
        table: dict[str, float] = {"host": 0.0}
        for step, t in zip(self.plan.steps, times, strict=True):
            key = step.name if step.kind == "call" else "host"
            table[key] = table.get(key, 0.0) + t
        return outputs, table

    def partitions(self) -> list[PartitionInfo]:
        """Each partition: its symbol, target and the ops inside it."""
        return list(self._partitions)

    def export_library(self, path: str) -> None:
        """Write one artifact file: library, ExampleJSON subgraphs, host graph, constants."""
        export_executable(self, path)


def export_executable(exe: Executable, path: str | Path) -> None:
    writer = ArtifactWriter()
    constants = []
    for arr in exe.constants:
        a = np.ascontiguousarray(arr)
        constants.append(
            {"section": writer.add(a.tobytes()), "dtype": a.dtype.str, "shape": list(a.shape)}
        )
    components: dict[str, dict[str, Any]] = {}
    for target, component in sorted(exe.components.items()):
        blobs = {name: writer.add(blob) for name, blob in sorted(component.export().items())}
        components[target] = {"kind": component.kind, "blobs": blobs}
    header = {
        "plan": exe.plan.to_json(),
        "constants": constants,
        "components": components,
        "partitions": [
            {"symbol": p.symbol, "target": p.target, "ops": list(p.ops)} for p in exe.partitions()
        ],
    }
    writer.write(path, header)


def load_executable(path: str | Path) -> Executable:
    """The executable `export_library` wrote to `path`; nothing is recompiled."""
    header, sections = read_artifact(path)
    plan = HostPlan.from_json(header["plan"])
    constants = []
    for c in header["constants"]:
        arr = np.frombuffer(sections[c["section"]], dtype=np.dtype(c["dtype"]))
        constants.append(arr.reshape(c["shape"]))
    components: dict[str, RuntimeComponent] = {}
    for target, entry in header["components"].items():
        if header.get("version", 1) >= 2:
            kind, indices = entry["kind"], entry["blobs"]
            blobs = {name: sections[index] for name, index in indices.items()}
        else:  # format 1 did not record the kind: tell it by the blob names
            blobs = {name: sections[index] for name, index in entry.items()}
            kind = kind_of_blobs(blobs)
            if kind is None:
                raise ArtifactError(f"{path}: cannot tell the kind of the '{target}' component")
        components[target] = load_component(kind, blobs)
    partitions = [
        PartitionInfo(p["symbol"], p["target"], tuple(p["ops"])) for p in header["partitions"]
    ]
    return Executable(plan, constants, components, partitions)


__all__ = [
    "Executable",
    "InputError",
    "PartitionInfo",
    "RuntimeComponent",
    "as_array",
    "export_executable",
    "load_executable",
]
