"""The `torch.compile` backend "byoc":

    fast = torch.compile(model, backend="byoc", options={"targets": ["dnnl", "ccompiler"], "num_threads": 2})

PyTorch finds it through the `torch_dynamo_backends` entry point (pyproject.toml), so no
`import byoc` is needed first. Dynamo hands the backend each graph it captures (an FX
`GraphModule` in Torch IR) with example inputs; `byoc_backend` returns a callable that
takes and returns torch tensors:

- The graph's parameters and buffers (the inputs dynamo marks static) are bound in as
  constants; the rest are the inputs of the built model. A graph is exported with
  `torch.export`, imported with the PyTorch frontend (core ATen -> nn) and built with
  `byoc.build` once per distinct set of input shapes, dtypes and integer inputs (the
  specialisation cache); a parameter changed in place (its version counter moved) makes
  the next call rebuild.
- Tensors cross both ways through DLPack without a copy: torch inputs are read in place,
  the outputs are torch tensors over the numpy results.
- A graph that cannot be converted (an op without a converter, an output that is not a
  tensor) runs eagerly, with one `ByocFallbackWarning` naming the ops: the model still runs.
- Each build is tiered unless `options={"tiered": False}`: a new shape is compile latency
  inside the user's call, so its C partitions run at once on the first tier while the C
  compiles in the background (docs/torch.md).
- The backend is for inference: its outputs do not track gradients.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

OPTIONS = ("targets", "num_threads", "tiered")
"""The keys of `torch.compile(..., options={...})` the backend reads."""

DEFAULT_TARGETS = ("ccompiler",)


class ByocFallbackWarning(UserWarning):
    """A captured graph runs eagerly because byoc cannot convert it (the message says why)."""


def byoc_backend(
    gm: Any, example_inputs: Sequence[Any], *, options: Mapping[str, Any] | None = None, mode: str | None = None
) -> Callable[..., Any]:
    """The dynamo backend: a callable running `gm` through byoc (see the module doc)."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        raise TypeError(f"byoc backend: unknown option(s) {unknown}; the options are {list(OPTIONS)}")
    targets = opts.get("targets", DEFAULT_TARGETS)
    if isinstance(targets, str):
        targets = [t for t in targets.split(",") if t]
    num_threads = opts.get("num_threads")
    compiled = CompiledGraph(
        gm, example_inputs, list(targets), None if num_threads is None else int(num_threads),
        tiered=bool(opts.get("tiered", True)),
    )
    return compiled


def _is_static(value: Any) -> bool:
    import torch

    return isinstance(value, torch.nn.Parameter) or getattr(value, "_dynamo_static_input_type", None) is not None


class CompiledGraph:
    """One captured graph: its specialisations by input signature, or its eager fallback."""

    def __init__(
        self,
        gm: Any,
        example_inputs: Sequence[Any],
        targets: list[str],
        num_threads: int | None,
        *,
        tiered: bool = True,
    ) -> None:
        import torch

        self.gm = gm
        self.targets = targets
        self.num_threads = num_threads
        self.tiered = tiered
        """Whether each specialisation is built tiered (`byoc.build(..., tiered=)`)."""
        self.static = [i for i, v in enumerate(example_inputs) if isinstance(v, torch.Tensor) and _is_static(v)]
        self.cache: dict[tuple[Any, ...], Any] = {}
        self.fallback: str | None = None
        """Why the graph runs eagerly, once it does."""
        self.builds = 0
        """Specialisations built so far (a test and a benchmark read it)."""
        if not any(isinstance(v, torch.SymInt) for v in example_inputs):
            self._build(list(example_inputs))  # an unconvertible graph warns at compile time

    # ---- specialisations ---------------------------------------------------------------
    def _key(self, args: Sequence[Any]) -> tuple[Any, ...]:
        import torch

        key: list[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                key.append((tuple(a.shape), a.dtype, a._version if i in self.static else None))
            else:
                key.append(a)
        return tuple(key)

    def _build(self, args: Sequence[Any]) -> Any:
        """The executable for `args`' signature (built on first use); None after a fallback."""
        if self.fallback is not None:
            return None
        key = self._key(args)
        entry = self.cache.get(key)
        if entry is not None:
            return entry
        try:
            entry = self._specialise(args)
        except Exception as e:  # noqa: BLE001 - any failure means: run this graph eagerly
            self._fall_back(e)
            return None
        self.cache[key] = entry
        self.builds += 1
        return entry

    def _specialise(self, args: Sequence[Any]) -> tuple[Any, list[int], Any]:
        import torch
        from torch.export.graph_signature import TensorArgument

        import byoc  # byoc.build, wherever the driver module lives
        from byoc.frontend.torch.importer import import_exported_program

        static = {i: args[i] for i in self.static}
        dynamic = [i for i in range(len(args)) if i not in static]
        tensors = [i for i in dynamic if isinstance(args[i], torch.Tensor)]
        wrapper = _Bound(self.gm, static, dynamic, tensors, args)
        with torch.no_grad():
            ep = torch.export.export(wrapper, tuple(args[i].detach() for i in tensors))
        if not all(isinstance(s.arg, TensorArgument) for s in ep.graph_signature.output_specs):
            raise _Unconvertible("the graph returns values that are not tensors")
        module = import_exported_program(ep, relocate=_user_lines(self.gm))
        exe = byoc.build(module, targets=self.targets or None, num_threads=self.num_threads, tiered=self.tiered)
        return exe, tensors, ep.call_spec.out_spec

    def _fall_back(self, error: Exception) -> None:
        from byoc.frontend.torch.errors import TorchImportError

        if isinstance(error, TorchImportError) and error.problems:
            ops = ", ".join(error.unconverted_ops)
            reason = f"byoc cannot convert {ops}"
            where = "; ".join(str(p) for p in error.problems[:5])
            detail = f" ({where}{'; ...' if len(error.problems) > 5 else ''})"
        else:
            reason = f"byoc cannot build it: {type(error).__name__}: {error}"
            detail = ""
        self.fallback = reason
        warnings.warn(ByocFallbackWarning(f"a captured graph runs eagerly: {reason}{detail}"), stacklevel=3)

    # ---- calls ------------------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        import torch

        entry = self._build(args)
        if entry is None:
            return self.gm(*args)
        exe, tensors, out_spec = entry
        inputs = [_contiguous(args[i]) for i in tensors]
        outputs = exe.run(*inputs)
        leaves = [_to_torch(o) for o in outputs]
        return torch.utils._pytree.tree_unflatten(leaves, out_spec)


class _Unconvertible(Exception):
    pass


def _Bound(gm: Any, static: Mapping[int, Any], dynamic: list[int], tensors: list[int], args: Sequence[Any]) -> Any:
    """`gm` as a module of its non-static tensor inputs: parameters and buffers are its
    buffers (constants to the importer), integer inputs fixed to their current values."""
    import torch

    class Bound(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gm = gm
            for i, t in static.items():
                self.register_buffer(f"static_{i}", t.detach())
            self.fixed = {i: args[i] for i in dynamic if i not in tensors}

        def forward(self, *inputs: Any) -> Any:
            values: list[Any] = [None] * len(args)
            for i in static:
                values[i] = getattr(self, f"static_{i}")
            for i, v in self.fixed.items():
                values[i] = v
            for i, v in zip(tensors, inputs, strict=True):
                values[i] = v
            return self.gm(*values)

    return Bound()


def _user_lines(gm: Any) -> Callable[[Any], Any]:
    """Map a line of `gm`'s generated code (`<eval_with_key>.N`) to the user's line that
    the node defined there came from (dynamo keeps it in the node's stack trace)."""
    import os

    import torch

    from byoc.frontend.torch.errors import location_of

    nodes = {n.name: n for n in gm.graph.nodes}
    lines = gm.code.splitlines()
    library = (os.path.dirname(torch.__file__) + os.sep,)

    def relocate(loc: Any) -> Any:
        if not loc.file.startswith("<eval_with_key>") or not 0 < loc.line <= len(lines):
            return None
        name = lines[loc.line - 1].strip().split(" = ", 1)[0].split(",")[0].strip()
        node = nodes.get(name)
        return None if node is None else location_of(node.meta.get("stack_trace"), library)

    return relocate


def _contiguous(t: Any) -> Any:
    """A tensor numpy can view through DLPack: detached (no copy), contiguous (a copy only
    when it is not)."""
    t = t.detach()
    return t if t.is_contiguous() else t.contiguous()


def _to_torch(a: Any) -> Any:
    import torch

    try:
        return torch.from_dlpack(a)
    except (BufferError, RuntimeError, TypeError):  # a read-only or 0-d result numpy cannot export
        return torch.from_numpy(a.copy())
