"""`Target`: everything byoc knows about one offload target, in one frozen object.

    MYACCEL = Target(
        name="myaccel",
        support={"nn.add": dtypes(f32), "nn.relu": dtypes(f32)},   # annotate-target
        patterns=[("scale_shift", is_op("nn.add")(...))],          # merge-composite
        lowering="lower-to-c",                                     # its partitions -> C
        component="c",                                             # built into a C library
    )
    byoc.register_target(MYACCEL)

The passes and the build driver read these fields; none of them probes a
module for hooks. `support` is registered in the op registry as
`target.<name>` when the target is registered, so
`register_op_attr("nn.conv2d", "target.myaccel", predicate, level=11)` still
overrides one entry. `lowering`, `component` and `composite_lowering` are names
of things registered in higher layers (passes, runtime kinds, lower-to-c
hooks); `byoc.register_target` and `byoc.build` check them, an unknown name
is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from byoc.targets.patterns import table_entries

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.dialects.func import FuncOp
    from xdsl.ir import Operation

    from byoc.runtime.executable import RuntimeComponent
    from byoc.runtime.graph_module import GraphEngine

SupportFn = Callable[["Operation"], bool]
"""A support predicate: the typed op -> whether the target takes it."""

Codegen = Callable[["ModuleOp", "Sequence[FuncOp]"], "RuntimeComponent"]
"""Every partition function of a target at once -> its runtime component."""

SupportFromOps = Callable[[Sequence[str], Sequence[str]], dict[str, dict[str, SupportFn]]]
"""(targets of the run, `ops` option entries) -> per target of this kind, op name -> predicate."""


@dataclass(frozen=True, eq=False)
class Target:
    """An offload target: what it supports, how its partitions are lowered, built and loaded."""

    name: str
    """The name in `annotate-target{targets=...}`, `byoc.target`, `byoc.compiler` and
    composite names `<name>.<pattern>`."""

    support: Mapping[str, SupportFn] = field(default_factory=dict[str, SupportFn])
    """nn op name -> predicate (`byoc.targets.predicates`); registered as `target.<name>`."""

    patterns: Sequence[Any] = ()
    """merge-composite's table: `(name, pattern[, check])` entries, earlier entries win.
    Normalised to `TableEntry`s (and checked) on construction."""

    lowering: str | None = None
    """CLI name of the pass that lowers its partitions (`lower-to-c`); None with `codegen`."""

    component: str | None = None
    """Kind of runtime component its lowered partitions are built into (`c`, `examplejson`);
    artifacts load it back by kind (`byoc.runtime.component.COMPONENT_LOADERS`)."""

    codegen: Codegen | None = None
    """Instead of `lowering` + `component`: build the component from the partitions directly
    (a vendor SDK)."""

    c_includes: tuple[str, ...] = ()
    """Headers (byoc/runtime) lower-to-c includes for this target's kernels."""

    c_build_options: Callable[[], tuple[tuple[str, ...], tuple[str, ...]]] | None = None
    """(compiler flags, linker arguments) of the C library; None: the defaults."""

    composite_lowering: str | None = None
    """lower-to-c hook (`byoc.lowering.nn_to_c.COMPOSITE_LOWERINGS`) turning each of its
    composites into kernel nodes; None: composite bodies are inlined and fused."""

    support_from_ops: SupportFromOps | None = None
    """Support chosen per run by annotate-target's `ops` option (the test targets); the
    op registry is then not consulted and partition does not re-check predicates."""

    graph_engine: GraphEngine | None = None
    """With `lowering="lower-to-graph"` and `component="graph"`: the engine the native graph
    runtime runs its partitions with (C sources, include dirs, flags, libraries;
    `byoc.runtime.graph_module.GraphEngine`, docs/graph.md). Only a graph component has one."""
    layouts: tuple[str, ...] = ("NCHW", "OIHW")
    """The layouts (`data_layout`, `kernel_layout` values) its executor implements. An op in
    any other layout is never tagged for it (annotate-target checks it for every target,
    composites included), so a layout is rejected, never computed as another."""

    preferred_layouts: Mapping[str, str] = field(
        default_factory=lambda: {"data_layout": "NCHW", "kernel_layout": "OIHW"}
    )
    """What `convert-layout{targets=<name>}` rewrites conv2d, the pools and batch_norm to."""

    prepare: tuple[str, ...] = ()
    """CLI names of nn -> nn passes `byoc.build` runs on the whole module before partitioning
    when this target is among its targets (`fold-batch-norm` for dnnl); each pass once, in
    target order. `byoc-opt` users put them in front of `byoc{...}` themselves."""

    description: str = ""

    availability: Callable[[], str | None] | None = None
    """Whether it can run on this machine: a function of no arguments returning None when it
    can, else why not (its optional dependency is not installed, the CPU lacks the ISA its
    kernels need). None: it always can. `byoc.build(..., fallback=True)` asks it before
    partitioning and places an unavailable target's ops on the other targets
    (docs/targets.md, "When a target cannot run here")."""

    def unavailable_reason(self) -> str | None:
        """None when the target can run here, else why not (its `availability` hook's answer;
        a hook that raises gives that error as the reason)."""
        if self.availability is None:
            return None
        try:
            reason = self.availability()
        except Exception as e:  # noqa: BLE001 - the error is the reason, reported by the caller
            return f"its availability check raised {type(e).__name__}: {e}"
        if reason is not None and not isinstance(reason, str):
            return f"its availability check returned {type(reason).__name__}, not None or a reason"
        return reason

    def available(self) -> bool:
        """Whether the target can run on this machine (`unavailable_reason()` is None)."""
        return self.unavailable_reason() is None

    def implements_layouts(self, op: Operation) -> bool:
        """Whether every layout property of `op` (and of the ops inside it) is in `layouts`."""
        from byoc.dialects.nn.layers import layout_of  # noqa: PLC0415 (dialects load lazily here)

        for o in op.walk() if op.regions else (op,):  # most ops: no generator
            if any(v not in self.layouts for v in layout_of(o).values()):
                return False
        return True

    def __post_init__(self) -> None:
        if not self.name or "." in self.name or "," in self.name:
            raise ValueError(f"target name '{self.name}' must be non-empty, without '.' or ','")
        object.__setattr__(self, "support", dict(self.support))
        object.__setattr__(self, "preferred_layouts", dict(self.preferred_layouts))
        for key, value in self.preferred_layouts.items():
            if value not in self.layouts:
                raise ValueError(
                    f"target '{self.name}': preferred {key} '{value}' is not in its layouts"
                )
        object.__setattr__(self, "patterns", tuple(table_entries(self.patterns, self.name)))
        if self.codegen is not None and self.lowering is not None:
            raise ValueError(f"target '{self.name}': give a codegen or a lowering, not both")
        if self.lowering is not None and self.component is None:
            raise ValueError(f"target '{self.name}': a lowering needs a component kind")
        if (self.component == "graph") != (self.graph_engine is not None):
            raise ValueError(
                f"target '{self.name}': a graph component needs a graph_engine, and only a "
                "graph component has one"
            )

    @property
    def builds(self) -> bool:
        """Whether `byoc.build` can compile its partitions (else it only annotates and partitions)."""
        return self.codegen is not None or self.lowering is not None


@dataclass(frozen=True)
class TargetFamily:
    """Targets named `<prefix>`, `<prefix>_<suffix>` or `<prefix>-<suffix>`, made on first use.

    `make(name)` builds the member; the test targets (`test`, `test_a`, ...) are one.
    """

    prefix: str
    make: Callable[[str], Target]
    separators: tuple[str, ...] = ("_", "-")

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or not name.startswith(self.prefix):
            return False
        if name == self.prefix:
            return True
        rest = name[len(self.prefix) :]
        return len(rest) > 1 and rest[0] in self.separators and "." not in rest


__all__ = ["Codegen", "SupportFn", "SupportFromOps", "Target", "TargetFamily"]
