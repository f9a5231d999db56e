"""CLI pass name -> lazy import of its `ModulePass` class (one pass a file).

Greppable list of every pass `byoc-opt` knows; the module is only imported
when the pass is used, so start-up stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def factory() -> type[ModulePass]:
        return getattr(import_module(module), cls)

    return factory


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "merge-composite": _lazy("byoc.passes.merge_composite", "MergeCompositePass"),
    "annotate-target": _lazy("byoc.passes.annotate_target", "AnnotateTargetPass"),
    "merge-compiler-regions": _lazy(
        "byoc.passes.merge_compiler_regions", "MergeCompilerRegionsPass"
    ),
    "partition": _lazy("byoc.passes.partition", "PartitionPass"),
    "byoc": _lazy("byoc.passes.byoc_pipeline", "ByocPass"),
    "lower-to-c": _lazy("byoc.lowering.lower_to_c", "LowerToCPass"),
    "lower-to-examplejson": _lazy("byoc.lowering.lower_to_examplejson", "LowerToExampleJsonPass"),
}
