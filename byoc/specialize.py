"""Dynamic shapes: specialise a module with `?` dims to concrete input shapes, on first use.

    exe = byoc.build(module_with_dynamic_dims, targets=["ccompiler"])
    exe.run(x)            # first call with x.shape: re-infer, partition, lower, compile, run
    exe.run(x2)           # same shape: the cached build runs; a new shape builds once more
    exe.specializations() # one entry a shape: its key, build seconds, calls

The generated C and the ExampleJSON lines state every shape, so a partition is compiled
for one set of input shapes (the way `torch.compile` specialises). `specialize` sets the
inputs of `@main` to the given shapes and re-runs every op's type relation (`infer`,
strictly: a relation that fails is an `InputError` naming the op), then the ordinary
static build runs on the result. The builds are kept in a bounded LRU cache
(`cache_size`, default `DEFAULT_CACHE_SIZE` or env `BYOC_SPECIALIZE_CACHE`); until a
shape's build is done, nothing else is compiled for it twice (one lock a key).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.utils.exceptions import VerifyException

from byoc.dialects import nn
from byoc.runtime.executable import (
    Executable,
    InputError,
    PartitionInfo,
    Placement,
    TargetFallback,
    describe_executable,
    shape_repr,
)
from byoc.utils import env

DEFAULT_CACHE_SIZE = 8
"""Specialisations kept per executable (least recently used dropped first)."""

Shapes = tuple[tuple[int, ...], ...]


def main_function(module: ModuleOp) -> FuncOp:
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == "main":
            return op
    raise ValueError("the module has no func.func @main")


def has_dynamic_inputs(module: ModuleOp) -> bool:
    """Whether some input of `@main` has a `?` dim."""
    try:
        main = main_function(module)
    except ValueError:
        return False
    return any(nn.is_dynamic(t) for t in main.function_type.inputs.data)


def specialize(module: ModuleOp, shapes: Sequence[Sequence[int]]) -> ModuleOp:
    """A copy of `module` whose `@main` takes inputs of `shapes`, every type re-inferred.

    Raises InputError when a shape does not fit an input or an op's type relation
    rejects the concrete shapes (the op and the shapes are named)."""
    out = module.clone()
    main = main_function(out)
    block = main.body.block
    if len(shapes) != len(block.args):
        raise InputError(f"@main takes {len(block.args)} inputs, got {len(shapes)} shapes")
    for arg, shape in zip(block.args, shapes, strict=True):
        t = arg.type
        assert isinstance(t, TensorType)
        declared = t.get_shape()
        if len(declared) != len(shape) or any(
            d != nn.DYNAMIC and d != s for d, s in zip(declared, shape, strict=True)
        ):
            raise InputError(f"shape {tuple(shape)} does not fit the input type {t}")
        # xDSL has no public setter for a value's type; a fresh type per use is what
        # Rewriter.replace_value_with_new_type does, at the cost of rebuilding every user.
        arg._type = nn.tensor(shape, t.element_type)  # pyright: ignore[reportPrivateUsage]
    for op in block.ops:
        if isinstance(op, ReturnOp):
            continue
        if not isinstance(op, nn.NNOp):
            raise InputError(
                f"cannot specialise '{op.name}' in @main: only nn ops are re-typed "
                "(build the unpartitioned module)"
            )
        if isinstance(op, nn.ConstantOp):
            continue
        types = [v.type for v in op.operands]
        try:
            results = op.infer(types, op.attr_values())  # type: ignore[arg-type]
        except VerifyException as e:
            shown = ", ".join(shape_repr(s) for s in shapes)
            raise InputError(f"inputs of shapes {shown}: '{op.name}' rejects them: {e}") from None
        for r, t in zip(op.results, results, strict=True):
            r._type = t  # pyright: ignore[reportPrivateUsage]
    main.update_function_type()
    try:
        out.verify()
    except VerifyException as e:
        raise InputError(f"the module specialised to {list(map(tuple, shapes))} does not verify: {e}") from e
    return out


@dataclass
class Specialization:
    """One entry of the cache: the input shapes, the build, its cost and its use."""

    shapes: Shapes
    executable: Executable
    build_seconds: float
    calls: int = 0

    def describe(self) -> str:
        shapes = " ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        parts = len(self.executable.partitions)
        return f"{shapes}: built in {self.build_seconds * 1e3:.1f} ms, {parts} partition(s), {self.calls} call(s)"


class SpecializingExecutable(Executable):
    """An Executable of a module with `?` input dims: one static build per input shapes.

    The base Executable is the generic host plan (every op on the numpy kernels, any
    shape); it checks the inputs (dtype, rank, static dims). `run` builds (once) and runs
    the specialisation for the inputs' shapes."""

    def __init__(
        self,
        generic: Executable,
        module: ModuleOp,
        build_static: Callable[[ModuleOp], Executable],
        cache_size: int | None = None,
    ) -> None:
        self.module = module
        self._build_static = build_static
        if cache_size is None:
            cache_size = int(env.value("BYOC_SPECIALIZE_CACHE"))
        if cache_size < 1:
            raise ValueError(f"the specialisation cache needs room for one entry, got {cache_size}")
        self.cache_size = cache_size
        self._cache: OrderedDict[Shapes, Specialization] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[Shapes, threading.Lock] = {}
        self.evictions = 0
        self.misses = 0
        # the base's __init__ applies the thread setting, which reaches the cache above
        super().__init__(generic.plan, generic.constants, generic.components, generic.partitions)

    def set_num_threads(self, n: int) -> None:
        """The thread setting, for the generic plan, every cached specialisation and the
        ones built later."""
        super().set_num_threads(n)
        for entry in self.specializations():
            entry.executable.set_num_threads(n)

    def specialization_for(self, arrays: Sequence[np.ndarray[Any, Any]]) -> Specialization:
        key: Shapes = tuple(tuple(int(d) for d in a.shape) for a in arrays)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
                return entry
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                entry = self._cache.get(key)
                if entry is not None:
                    return entry
            start = time.perf_counter()
            exe = self._build_static(specialize(self.module, key))
            exe.set_num_threads(self.num_threads)
            entry = Specialization(key, exe, time.perf_counter() - start)
            with self._lock:
                self.misses += 1
                self._cache[key] = entry
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
                    self.evictions += 1
                self._key_locks.pop(key, None)
        return entry

    def run(self, *args: Any, **kwargs: Any) -> list[np.ndarray[Any, Any]]:
        arrays = self._coerce(args, kwargs)
        entry = self.specialization_for(arrays)
        entry.calls += 1
        return entry.executable._bound.run(arrays)  # noqa: SLF001 - inputs already checked

    __call__ = run

    def run_profiled(self, *args: Any, **kwargs: Any) -> tuple[list[np.ndarray[Any, Any]], dict[str, float]]:
        arrays = self._coerce(args, kwargs)
        entry = self.specialization_for(arrays)
        entry.calls += 1
        return entry.executable.run_profiled(*arrays)

    def specializations(self) -> list[Specialization]:
        """The cached specialisations, least recently used first."""
        with self._lock:
            return list(self._cache.values())

    @property
    def partitions(self) -> list[PartitionInfo]:
        """The partitions of the most recently used specialisation (none before a run)."""
        entries = self.specializations()
        return entries[-1].executable.partitions if entries else []

    @property
    def fallbacks(self) -> tuple[TargetFallback, ...]:
        """The targets left out of the most recently used specialisation (none before a run)."""
        entries = self.specializations()
        return entries[-1].executable.fallbacks if entries else ()

    def placement(self) -> Placement:
        """The placement of every specialisation built so far (`Placement.specializations`,
        least recently used first); its partitions and fallbacks are the most recently used
        one's. Empty before the first run."""
        per_shape = tuple((e.shapes, e.executable.placement()) for e in self.specializations())
        if not per_shape:
            return Placement(())
        latest = per_shape[-1][1]
        return Placement(latest.partitions, latest.fallbacks, per_shape)

    def __repr__(self) -> str:
        entries = self.specializations()
        cache = f"cache {len(entries)}/{self.cache_size}"
        if not entries:
            return (
                f"<SpecializingExecutable partitions built per input shape, none yet ({cache}); "
                f"threads: {self.num_threads}>"
            )
        latest = entries[-1]
        shapes = " ".join("x".join(map(str, s)) or "scalar" for s in latest.shapes)
        return (
            f"<SpecializingExecutable {describe_executable(latest.executable)}; "
            f"for input shapes {shapes} ({cache})>"
        )

    def export_library(self, path: str) -> None:
        raise InputError(
            "a module with dynamic (?) input dims cannot be exported: its partitions are "
            "compiled per input shape at run time; import or build it with static shapes "
            "(--input-shape NAME=DxDx... on the command line, "
            "byoc.import_onnx(path, input_shapes=...) in Python) to export it"
        )


def specialize_inputs(module: ModuleOp, shapes: Mapping[str, Sequence[int]]) -> ModuleOp:
    """`specialize` by input name (the names `Executable.input_names` lists)."""
    from byoc.runtime.host import input_name

    main = main_function(module)
    names = [input_name(main, a.index) for a in main.body.block.args]
    unknown = set(shapes) - set(names)
    if unknown:
        raise InputError(f"unknown input(s) {sorted(unknown)}; inputs are {', '.join(names)}")
    ordered = []
    for name, arg in zip(names, main.body.block.args, strict=True):
        t = arg.type
        assert isinstance(t, TensorType)
        ordered.append(tuple(shapes.get(name, t.get_shape())))
    return specialize(module, ordered)


__all__ = [
    "DEFAULT_CACHE_SIZE",
    "Specialization",
    "SpecializingExecutable",
    "has_dynamic_inputs",
    "specialize",
    "specialize_inputs",
]
