"""byoc: the partitioning pipeline a user runs first, and `byoc.partition_for`.

    byoc{targets=ccompiler}
      = split-dequantize                    (a no-op unless an nn.dequantize is shared)
        merge-composite{targets=ccompiler}
        annotate-target{targets=ccompiler}
        merge-compiler-regions
        partition

With `placement=measured` (or `cost-model`), the ops' targets are chosen by timing
instead of by list order (docs/placement.md): the chosen targets are set as `byoc.target`
on each op, then merge-compiler-regions and partition run as usual.

    byoc{targets=dnnl,ccompiler placement=measured cache=/tmp/placement.json}

Contract: the contracts of the four passes, in that order. The options are
passed on: `targets` to the first two, `patterns` to merge-composite, `ops`
to annotate-target, `min-ops` to merge-compiler-regions, `bind-constants` to
partition. Running it twice changes nothing: a second run finds only
`func.call`s and partitions (functions with `byoc.compiler`), which no pass
touches.

From Python:

    module = byoc.parse_module(text)
    byoc.partition_for(module, targets=["ccompiler"])      # in place; also returned
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from byoc.passes.annotate_target import AnnotateTargetPass
from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
from byoc.passes.merge_composite import MergeCompositePass
from byoc.passes.options import as_names
from byoc.passes.partition import PartitionPass
from byoc.passes.split_dequantize import SplitDequantizePass
from byoc.utils.gc import paused_gc


@dataclass(frozen=True)
class ByocPass(ModulePass):
    """merge-composite, annotate-target, merge-compiler-regions and partition, in order."""

    name: ClassVar[str] = "byoc"

    targets: tuple[str, ...]
    """Targets to offload to, highest priority first."""

    ops: tuple[str, ...] = ()
    """For test targets: the ops they support (annotate-target's `ops`)."""

    patterns: tuple[str, ...] = ()
    """Pattern-table entries to apply, in order (merge-composite's `patterns`); default: all."""

    min_ops: int = 0
    """Regions with fewer non-trivial ops go back to the host (merge-compiler-regions)."""

    bind_constants: bool = True
    """Copy constants into partitions instead of passing them (partition)."""

    placement: str = "priority"
    """Which target takes each op: `priority` (the order of `targets`), `measured` (timed
    on seeded random inputs, docs/placement.md) or `cost-model` (cached figures only)."""

    cache: str = ""
    """The measurement cache file of `placement=measured|cost-model` (default: in byoc's
    cache directory)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", as_names(self.targets))
        object.__setattr__(self, "ops", as_names(self.ops))
        object.__setattr__(self, "patterns", as_names(self.patterns))
        self.pipeline()  # every option is checked before any IR is touched
        if self.placement != "priority":
            from byoc.placement import normalise_mode

            normalise_mode(self.placement)
            if self.ops or self.patterns or self.min_ops or not self.bind_constants:
                raise ValueError(
                    f"byoc: placement={self.placement} takes no ops, patterns, min-ops or "
                    "bind-constants option (it partitions by its own choice of targets)"
                )

    def pipeline(self) -> PassPipeline:
        return PassPipeline(
            (
                SplitDequantizePass(),  # a QDQ composite owns its dequantize
                MergeCompositePass(targets=self.targets, patterns=self.patterns),
                AnnotateTargetPass(targets=self.targets, ops=self.ops),
                MergeCompilerRegionsPass(min_ops=self.min_ops),
                PartitionPass(bind_constants=self.bind_constants),
            )
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.placement != "priority":
            from byoc.placement import place

            place(op, self.targets, mode=self.placement, cache=self.cache or None)
            return
        with paused_gc():
            self.pipeline().apply(ctx, op)


def partition_for(
    module: ModuleOp,
    targets: Sequence[str] | str,
    *,
    ops: Sequence[str] = (),
    patterns: Sequence[str] = (),
    min_ops: int = 0,
    bind_constants: bool = True,
    ctx: Context | None = None,
) -> ModuleOp:
    """Run the `byoc` pipeline on `module` in place and return it.

    `targets` is a list in priority order (or one comma-separated string); the
    keyword options are those of the `byoc` pass.
    """
    from byoc.context import make_context

    pipeline = ByocPass(
        targets=as_names(targets),
        ops=as_names(ops),
        patterns=as_names(patterns),
        min_ops=min_ops,
        bind_constants=bind_constants,
    )
    pipeline.apply(ctx if ctx is not None else make_context(), module)
    return module
