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

from importlib import import_module
from typing import TYPE_CHECKING, Any

from xdsl.passes import ModulePass

from byoc.utils.lazy import LazyClass

if TYPE_CHECKING:
    from byoc.passes.annotate_target import AnnotateTargetPass
    from byoc.passes.byoc_pipeline import ByocPass, partition_for
    from byoc.passes.convert_layout import ConvertLayoutPass
    from byoc.passes.merge_compiler_regions import MergeCompilerRegionsPass
    from byoc.passes.merge_composite import MergeCompositePass
    from byoc.passes.partition import PartitionPass


ALL_PASSES: dict[str, LazyClass[ModulePass]] = {
    "merge-composite": LazyClass("byoc.passes.merge_composite", "MergeCompositePass", ModulePass),
    "annotate-target": LazyClass("byoc.passes.annotate_target", "AnnotateTargetPass", ModulePass),
    "merge-compiler-regions": LazyClass(
        "byoc.passes.merge_compiler_regions", "MergeCompilerRegionsPass", ModulePass
    ),
    "partition": LazyClass("byoc.passes.partition", "PartitionPass", ModulePass),
    "byoc": LazyClass("byoc.passes.byoc_pipeline", "ByocPass", ModulePass),
    "convert-layout": LazyClass("byoc.passes.convert_layout", "ConvertLayoutPass", ModulePass),
    "lower-to-c": LazyClass("byoc.lowering.nn_to_c.lower_to_c", "LowerToCPass", ModulePass),
    "lower-to-examplejson": LazyClass(
        "byoc.lowering.nn_to_examplejson", "LowerToExampleJsonPass", ModulePass
    ),
    "lower-to-graph": LazyClass("byoc.lowering.nn_to_graph", "LowerToGraphPass", ModulePass),
    "split-dequantize": LazyClass(
        "byoc.passes.split_dequantize", "SplitDequantizePass", ModulePass
    ),
    "fold-batch-norm": LazyClass("byoc.passes.fold_batch_norm", "FoldBatchNormPass", ModulePass),
    "batch-take-dense": LazyClass(
        "byoc.passes.batch_take_dense", "BatchTakeDensePass", ModulePass
    ),
}

# public name -> the module defining it, imported on first access
_EXPORTS: dict[str, str] = {
    lazy.name: lazy.module for lazy in ALL_PASSES.values() if lazy.module.startswith(f"{__name__}.")
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
