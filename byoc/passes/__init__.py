"""The passes `byoc-opt` knows, and the partitioning pass classes for Python pipelines.

`ALL_PASSES` maps each CLI name to a lazy import of its `ModulePass` class (one
pass a file); the pass classes are importable from here too, and a module is
only imported when its pass is first used, so start-up stays fast:

    from xdsl.passes import PassPipeline
    from byoc.passes import AnnotateTargetPass, MergeCompilerRegionsPass, PartitionPass

    PassPipeline(
        (AnnotateTargetPass(targets=("ccompiler",)), MergeCompilerRegionsPass(), PartitionPass())
    ).apply(byoc.make_context(), module)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from xdsl.passes import ModulePass

if TYPE_CHECKING:
    from byoc.passes.annotate_target import AnnotateTargetPass
    from byoc.passes.byoc_pipeline import ByocPass, partition_for
    from byoc.passes.convert_layout import ConvertLayoutPass
    from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
    from byoc.passes.merge_composite import MergeCompositePass
    from byoc.passes.partition import PartitionPass


@dataclass(frozen=True)
class _LazyPass:
    """Imports `module` and returns its pass class `cls` when called."""

    module: str
    cls: str

    def __call__(self) -> type[ModulePass]:
        return getattr(import_module(self.module), self.cls)


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return _LazyPass(module, cls)


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "merge-composite": _lazy("byoc.passes.merge_composite", "MergeCompositePass"),
    "annotate-target": _lazy("byoc.passes.annotate_target", "AnnotateTargetPass"),
    "merge-compiler-regions": _lazy(
        "byoc.passes.merge_compiler_regions", "MergeCompilerRegionsPass"
    ),
    "partition": _lazy("byoc.passes.partition", "PartitionPass"),
    "byoc": _lazy("byoc.passes.byoc_pipeline", "ByocPass"),
    "convert-layout": _lazy("byoc.passes.convert_layout", "ConvertLayoutPass"),
    "lower-to-c": _lazy("byoc.lowering.nn_to_c.lower_to_c", "LowerToCPass"),
    "lower-to-examplejson": _lazy("byoc.lowering.nn_to_examplejson", "LowerToExampleJsonPass"),
    "lower-to-graph": _lazy("byoc.lowering.nn_to_graph", "LowerToGraphPass"),
    "split-dequantize": _lazy("byoc.passes.split_dequantize", "SplitDequantizePass"),  # issue #13
    "fold-batch-norm": _lazy("byoc.passes.fold_batch_norm", "FoldBatchNormPass"),  # issue #12
}

# public name -> the module defining it, imported on first access
_EXPORTS: dict[str, str] = {
    lazy.cls: lazy.module
    for lazy in ALL_PASSES.values()
    if isinstance(lazy, _LazyPass) and lazy.module.startswith(f"{__name__}.")
}
_EXPORTS["partition_for"] = "byoc.passes.byoc_pipeline"

__all__ = [
    "ALL_PASSES",
    "AnnotateTargetPass",
    "ByocPass",
    "ConvertLayoutPass",
    "MergeCompilerRegionsPass",
    "MergeCompositePass",
    "PartitionPass",
    "partition_for",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'byoc.passes' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
