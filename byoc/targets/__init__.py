"""The target registry: target name -> `Target` (byoc/targets/base.py).

In-tree targets are a line in `BUILTIN_TARGETS` (name -> lazy factory, so a
target's module is only imported when it is first used); out-of-tree targets
are registered with `register_target(Target(...))`. A `TargetFamily` serves
every name of its form (`test`, `test_a`, `test-npu+`). Registering a target
registers its support predicates in the op registry. An unknown name is an
error listing the known ones. Targets of installed distributions (entry-point
group `byoc.targets`) and of `BYOC_PLUGINS` are discovered on the first lookup
or listing (byoc/targets/plugins.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from byoc.targets import plugins
from byoc.targets.base import Target, TargetFamily
from byoc.utils.lazy import LazyValue

BUILTIN_TARGETS: dict[str, Callable[[], Target]] = {
    "ccompiler": LazyValue[Target]("byoc.targets.ccompiler", "CCOMPILER"),
    "examplejson": LazyValue[Target]("byoc.targets.examplejson", "EXAMPLEJSON"),
    "cblas": LazyValue[Target]("byoc.targets.cblas", "CBLAS"),
    "graphref": LazyValue[Target]("byoc.targets.graphref", "GRAPHREF"),
    "dnnl": LazyValue[Target]("byoc.targets.dnnl.target", "DNNL"),
}
"""name -> factory of an in-tree target; adding one is a module and a line here."""

BUILTIN_FAMILIES: dict[str, Callable[[], TargetFamily]] = {
    "test": LazyValue[TargetFamily]("byoc.targets.test", "TEST_FAMILY"),
}
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
    _discover_plugins()
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
    """The target called `name` (a built-in one is loaded, and its support registered, once).

    The first lookup discovers the plugin targets; a name two sources declare, or whose
    plugin failed to load, is a `plugins.PluginError` saying so."""
    target = _targets.get(name) or _members.get(name)
    if target is not None and name not in plugins.clashes():
        return target
    with _lock:
        _discover_plugins()
        broken = plugins.plugin_error(name)
        if broken is not None:
            raise broken
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
            failed = plugins.failures_text()
            raise UnknownTargetError(
                f"unknown target '{name}'; known targets: {known_targets_text()}"
                + (f" (and {failed})" if failed else "")
            )
        target = family.make(name)
        _register_support(target)
        _members[name] = target
        return target


def _discover_plugins() -> None:
    """Load the installed and `BYOC_PLUGINS` targets, once (byoc/targets/plugins.py)."""
    plugins.discover(_add_plugin_target)


def _add_plugin_target(target: Target | TargetFamily, origin: plugins.Origin) -> None:
    """Register a plugin's target; a name some other source declares is a PluginError
    naming both."""
    name = target.prefix if isinstance(target, TargetFamily) else target.name
    with _lock:
        if name in BUILTIN_TARGETS or name in BUILTIN_FAMILIES or name in _targets or (
            name in _families
        ):
            other = target_origin(name)
        elif not isinstance(target, TargetFamily) and _family_of(name) is not None:
            other = f"the target family of {plugins.origin_of(_family_of(name).prefix).describe()}"  # type: ignore[union-attr]
        else:
            register_target(target)
            return
    raise plugins.PluginError(
        f"target '{name}' is declared twice: by {other} and by {origin.describe()}; "
        "uninstall one or rename its target"
    )


def load_plugin(spec: str) -> list[str]:
    """`--load-plugin SPEC`: load a module or `.py` file's targets now (a PluginError says
    which and why); their names."""
    _discover_plugins()
    return plugins.load_plugin(spec, _add_plugin_target)


def target_origin(name: str) -> str:
    """Where target `name` comes from: `built in (byoc 0.1.0)`, `<dist> <version> (entry
    point ...)`, a module or file, or `registered at run time`."""
    origin = plugins.origins().get(name)
    if origin is None and (name in _targets or name in _families) and not (
        name in BUILTIN_TARGETS or name in BUILTIN_FAMILIES
    ):
        origin = plugins.Origin("registered")
    return (origin or plugins.origin_of(name)).describe()


def list_targets() -> list[tuple[str, str, str]]:
    """(name, origin, status) of every target and every failed plugin, sorted by name; the
    status is `ok`, or the error its lookup raises (what `byoc-opt --list-targets` shows)."""
    rows: list[tuple[str, str, str]] = []
    for name in known_target_names():
        shown = name
        if name.endswith("_<suffix>"):
            name = name.removesuffix("_<suffix>")
        try:
            if name in BUILTIN_FAMILIES or name in _families:
                _family_of(name)
            else:
                get_target(name)
            status = "ok"
        except ValueError as e:
            status = f"error: {e}"
        rows.append((shown, target_origin(name), status))
    for name in sorted({*plugins.failures(), *plugins.clashes()} - set(known_target_names())):
        failure = plugins.failures().get(name)
        origin = failure.origin.describe() if failure is not None else ""
        error = plugins.plugin_error(name)
        rows.append((name, origin, f"error: {error}"))
    return rows


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
    "list_targets",
    "load_plugin",
    "register_target",
    "target_origin",
]
