"""The target registry: target name -> `Target` (byoc/targets/base.py).

In-tree targets are a line in `BUILTIN_TARGETS` (name -> lazy factory, so a
target's module is only imported when it is first used); out-of-tree targets
are registered with `register_target(Target(...))`. A `TargetFamily` serves
every name of its form (`test`, `test_a`, `test-npu+`). Registering a target
registers its support predicates in the op registry. An unknown name is an
error listing the known ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from byoc.targets.base import Target, TargetFamily


def _ccompiler() -> Target:
    from byoc.targets.ccompiler import CCOMPILER

    return CCOMPILER


def _examplejson() -> Target:
    from byoc.targets.examplejson import EXAMPLEJSON

    return EXAMPLEJSON


def _cblas() -> Target:
    from byoc.targets.cblas import CBLAS

    return CBLAS


def _graphref() -> Target:
    from byoc.targets.graphref import GRAPHREF

    return GRAPHREF


def _dnnl() -> Target:
    from byoc.targets.dnnl.target import DNNL

    return DNNL


def _test_family() -> TargetFamily:
    from byoc.targets.test import TEST_FAMILY

    return TEST_FAMILY


BUILTIN_TARGETS: dict[str, Callable[[], Target]] = {
    "ccompiler": _ccompiler,
    "examplejson": _examplejson,
    "cblas": _cblas,
    "graphref": _graphref,
    "dnnl": _dnnl,
}
"""name -> factory of an in-tree target; adding one is a module and a line here."""

BUILTIN_FAMILIES: dict[str, Callable[[], TargetFamily]] = {"test": _test_family}
"""prefix -> factory of an in-tree family of targets."""

_targets: dict[str, Target] = {}
"""Registered (or loaded built-in) targets, by name."""
_families: dict[str, TargetFamily] = {}
_members: dict[str, Target] = {}
"""Targets made by a family, by name."""
_lock = threading.RLock()


class UnknownTargetError(ValueError):
    pass


def _register_support(target: Target) -> None:
    from byoc.targets.predicates import register_support

    register_support(target.name, target.support)


def known_target_names() -> list[str]:
    """Every target name a user can write; a family stands for `<prefix>_<suffix>`."""
    with _lock:
        names = sorted({*BUILTIN_TARGETS, *_targets, *BUILTIN_FAMILIES, *_families})
        prefixes = sorted({*BUILTIN_FAMILIES, *_families})
    return [*names, *(f"{p}_<suffix>" for p in prefixes)]


def known_targets_text() -> str:
    """`cblas, ccompiler, ..., test_<suffix>`: the list error messages show."""
    return ", ".join(known_target_names())


def _family_of(name: str) -> TargetFamily | None:
    for prefix in sorted({*BUILTIN_FAMILIES, *_families}):
        if not name.startswith(prefix):
            continue
        family = _families.get(prefix)
        if family is None:
            family = _families[prefix] = BUILTIN_FAMILIES[prefix]()
        if name in family:
            return family
    return None


def register_target(target: Target | TargetFamily) -> Target | TargetFamily:
    """Make a target (or a family of targets) known; registering a known name is an error.

    The target's support table goes into the op registry as `target.<name>`.
    `byoc.register_target` also checks the names of its lowering and component.
    """
    with _lock:
        if isinstance(target, TargetFamily):
            if target.prefix in BUILTIN_FAMILIES or target.prefix in _families:
                raise ValueError(f"target family '{target.prefix}' is already registered")
            _families[target.prefix] = target
            return target
        if not isinstance(target, Target):
            raise TypeError(
                f"register_target takes a byoc.targets.Target, got {type(target).__name__}"
            )
        name = target.name
        if name in BUILTIN_TARGETS or name in _targets or _family_of(name) is not None:
            raise ValueError(f"target '{name}' is already registered")
        _register_support(target)
        _targets[name] = target
        return target


def get_target(name: str) -> Target:
    """The target called `name` (a built-in one is loaded, and its support registered, once)."""
    target = _targets.get(name) or _members.get(name)
    if target is not None:
        return target
    with _lock:
        target = _targets.get(name) or _members.get(name)
        if target is not None:
            return target
        factory = BUILTIN_TARGETS.get(name)
        if factory is not None:
            target = factory()
            _register_support(target)
            _targets[name] = target
            return target
        family = _family_of(name)
        if family is None:
            raise UnknownTargetError(
                f"unknown target '{name}'; known targets: {known_targets_text()}"
            )
        target = family.make(name)
        _register_support(target)
        _members[name] = target
        return target


def is_known_target(name: str) -> bool:
    try:
        get_target(name)
    except UnknownTargetError:
        return False
    return True


__all__ = [
    "BUILTIN_FAMILIES",
    "BUILTIN_TARGETS",
    "Target",
    "TargetFamily",
    "UnknownTargetError",
    "get_target",
    "is_known_target",
    "known_target_names",
    "known_targets_text",
    "register_target",
]
