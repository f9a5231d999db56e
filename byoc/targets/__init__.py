"""The target registry: target name -> the module under byoc/targets/ that defines it.

A target module defines:

    NAME: str                      # "ccompiler"
    def register() -> None         # register_op_attr(op, "target.<NAME>", predicate) per supported op
    def pattern_table() -> list    # [(name, pattern, check?), ...] for merge-composite; may be empty

and, for targets that generate code, the codegen hook used by `byoc.build`
(see byoc/runtime/build.py). `register()` runs once, when the target is first
loaded with `get_target`. An unknown target name is an error listing the known ones.
"""

from __future__ import annotations

import threading
from importlib import import_module
from types import ModuleType

# name -> module path. Adding a target is adding one module and one line here.
KNOWN_TARGETS: dict[str, str] = {
    "ccompiler": "byoc.targets.ccompiler",
    "examplejson": "byoc.targets.examplejson",
    "cblas": "byoc.targets.cblas",
    "test": "byoc.targets.test",
}

# name prefix -> the module that serves every target `<prefix>_<suffix>` / `<prefix>-<suffix>`
# (its `serves(name)` decides); `test_a`, `test_b`, ... are the test targets.
TARGET_FAMILIES: dict[str, str] = {
    "test": "byoc.targets.test",
}

_loaded: dict[str, ModuleType] = {}
_lock = threading.RLock()


class UnknownTargetError(ValueError):
    pass


def _family_module(name: str) -> str | None:
    for prefix, path in TARGET_FAMILIES.items():
        if name.startswith(prefix) and import_module(path).serves(name):
            return path
    return None


def register_target(name: str, module: str | ModuleType) -> None:
    """Make an out-of-tree target known: `module` is a module or its import path.

    In-tree targets are a line in KNOWN_TARGETS; this is the same for a target
    that lives in the user's own package. Registering a known name is an error.
    """
    with _lock:
        if name in KNOWN_TARGETS or name in _loaded:
            raise ValueError(f"target '{name}' is already registered")
        if isinstance(module, ModuleType):
            module.register()
            _loaded[name] = module
            KNOWN_TARGETS[name] = module.__name__
        else:
            KNOWN_TARGETS[name] = module


def get_target(name: str) -> ModuleType:
    """Load (once) and return the module of target `name`."""
    module = _loaded.get(name)
    if module is not None:
        return module
    with _lock:
        module = _loaded.get(name)
        if module is not None:
            return module
        path = KNOWN_TARGETS.get(name) or _family_module(name)
        if path is None:
            raise UnknownTargetError(
                f"unknown target '{name}'; known targets: {', '.join(sorted(KNOWN_TARGETS))}"
                + "".join(f", {p}_<suffix>" for p in TARGET_FAMILIES)
            )
        module = import_module(path)
        module.register()
        _loaded[name] = module
        return module
