"""byoc: bring your own codegen for xDSL.

The public entry points are imported lazily so that `import byoc` (and the
`byoc-opt` start-up) stays light: the numpy reference, the runtimes and the
ONNX frontend are only loaded when first used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> "module:attribute"
_LAZY: dict[str, str] = {
    "parse_module": "byoc.context:parse_module",
    "make_context": "byoc.context:make_context",
    "run_reference": "byoc.interpreters:run_reference",
    "get_op": "byoc.op_registry:get_op",
    "list_op_names": "byoc.op_registry:list_op_names",
    "register_op_attr": "byoc.op_registry:register_op_attr",
    "get_op_attr": "byoc.op_registry:get_op_attr",
    "partition_for": "byoc.passes.byoc_pipeline:partition_for",
    "import_onnx": "byoc.frontend.onnx:import_model",
    "from_torch": "byoc.frontend.torch:from_torch",
    "build": "byoc.driver:build",
    "register_target": "byoc.driver:register_target",
    "TargetFallbackWarning": "byoc.driver:TargetFallbackWarning",
    "Target": "byoc.targets.base:Target",
    "load_module": "byoc.runtime.loaders:load_module",
    "check_target": "byoc.conformance:check_target",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'byoc' has no attribute {name!r}")
    module_name, attr = target.split(":")
    value = getattr(import_module(module_name), attr)
    globals()[name] = value
    return value
