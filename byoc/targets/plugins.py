"""Targets from outside byoc: installed distributions, modules and files.

Three ways a target reaches the registry (`byoc.targets`) without the user importing it:

| source | how | when |
|---|---|---|
| an installed distribution | entry point in group `byoc.targets` | first lookup or listing |
| `BYOC_PLUGINS=mod,path/file.py` | comma-separated modules or `.py` files | first lookup or listing |
| `--load-plugin MOD_OR_FILE` | byoc-opt / byoc-run option, repeatable | when the tool starts |

Every one names a *plugin object* the same way: an entry point's value (`pkg.mod:attr`)
names it directly; a module or file given to `BYOC_PLUGINS` or `--load-plugin` names it with
a `:attr` suffix (`my_targets.py:make_targets`), else it is the module's `byoc_targets`
attribute. The object is a `Target` (or a `TargetFamily`), a list of them, or a
zero-argument callable returning one of those (as pytest finds `pytest11` plugins and
PyTorch its `torch_dynamo_backends`).

Discovery is lazy and fault-isolated: the first time a target name is looked up or the
targets are listed, every entry point and `BYOC_PLUGINS` entry is loaded once. A plugin
that fails to import, raises, or returns something else is recorded, not raised: the
error (distribution, version, cause; no traceback) is raised when its target is asked for
-- the target named like its entry point -- and shown by `byoc-opt --list-targets`, while
every other target keeps working. Two sources declaring one target name (a built-in and a
plugin, or two plugins) make that name an error naming both.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from byoc.targets.base import Target, TargetFamily

ENTRY_POINT_GROUP = "byoc.targets"
"""The entry-point group an installed distribution declares its targets in."""

PLUGINS_ENV = "BYOC_PLUGINS"
"""Comma-separated modules or `.py` files (each optionally `:attr`) loaded on discovery."""

DEFAULT_ATTRIBUTE = "byoc_targets"
"""The attribute of a plugin module that names its targets when no `:attr` is given."""


class PluginError(ValueError):
    """A plugin could not provide its targets, or two sources declare one name."""

    def __init__(self, message: str, failure: PluginFailure | None = None):
        super().__init__(message)
        self.failure = failure


@dataclass(frozen=True)
class Origin:
    """Where a target comes from, as `byoc-opt --list-targets` shows it."""

    kind: str
    """`built-in`, `entry-point`, `module`, `file` or `registered`."""
    source: str = ""
    """The distribution (entry points), module name or file path."""
    version: str = ""
    detail: str = ""
    """The entry point (`name = value`), or how the module was named (`--load-plugin`)."""

    def describe(self) -> str:
        if self.kind == "built-in":
            return f"built in (byoc {self.version})" if self.version else "built in"
        if self.kind == "registered":
            return "registered at run time (byoc.register_target)"
        who = f"{self.source} {self.version}".strip()
        return f"{who} ({self.detail})" if self.detail else who


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that provided no targets: what it was and why."""

    name: str
    """The target name it was expected to provide (an entry point's name), or the spec."""
    origin: Origin
    cause: str

    def message(self) -> str:
        return f"target plugin {self.origin.describe()} failed: {self.cause}"


def _byoc_version() -> str:
    from byoc import __version__

    return __version__


# --------------------------------------------------------------------------
# Turning a plugin object into targets
# --------------------------------------------------------------------------

Provided = list[Target | TargetFamily]


def _as_targets(obj: Any) -> Provided | None:
    """`obj` as a list of targets if it is a target or a non-empty list or tuple of them."""
    if isinstance(obj, Target | TargetFamily):
        return [obj]
    if isinstance(obj, list | tuple):
        items: list[Any] = list(obj)  # pyright: ignore[reportUnknownArgumentType]
        if items and all(isinstance(t, Target | TargetFamily) for t in items):
            return items
    return None


def targets_of(obj: Any, what: str) -> Provided:
    """The targets a plugin object provides (calling it if it is a factory); a TypeError
    saying what `what` gave instead."""
    found = _as_targets(obj)
    if found is not None:
        return found
    if callable(obj) and not isinstance(obj, type):
        result = obj()
        found = _as_targets(result)
        if found is None:
            raise TypeError(
                f"{what} returned {_describe(result)}, expected a byoc.targets.Target or a "
                "non-empty list of them"
            )
        return found
    raise TypeError(
        f"{what} is {_describe(obj)}, expected a byoc.targets.Target, a non-empty list of "
        "them, or a function of no arguments returning one"
    )


def _describe(obj: Any) -> str:
    if obj is None:
        return "None"
    if isinstance(obj, list | tuple):
        return f"a {type(obj).__name__} of {len(obj)} items"  # pyright: ignore[reportUnknownArgumentType]
    return f"an object of type {type(obj).__name__}"


def _cause(e: BaseException) -> str:
    """One line: the exception's type and message (a plugin's traceback is its author's)."""
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    if isinstance(e, ModuleNotFoundError | ImportError) and first:
        return f"cannot import it: {first}"
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def split_spec(spec: str) -> tuple[str, str | None]:
    """`mod.sub:attr` or `path/file.py:attr` -> (module or path, attr or None)."""
    head, sep, attr = spec.rpartition(":")
    if sep and attr.isidentifier() and head and not (len(head) == 1 and head.isalpha()):
        return head, attr
    return spec, None


def import_spec(module_or_file: str) -> ModuleType:
    """Import a module by dotted name, or execute a `.py` file as a module of its stem."""
    looks_like_file = module_or_file.endswith(".py") or os.sep in module_or_file
    if not looks_like_file:
        return importlib.import_module(module_or_file)
    path = Path(module_or_file).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {module_or_file}")
    name = f"byoc_plugin_{path.stem}"
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_or_file} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_spec(spec: str, how: str) -> tuple[Provided, Origin]:
    """The targets of a `--load-plugin` / `BYOC_PLUGINS` entry; raises a PluginError saying
    which entry and why."""
    source, attr = split_spec(spec)
    kind = "file" if source.endswith(".py") or os.sep in source else "module"
    origin = Origin(kind, source, detail=how)
    try:
        module = import_spec(source)
        name = attr or DEFAULT_ATTRIBUTE
        if not hasattr(module, name):
            raise AttributeError(
                f"it defines no '{name}' (a Target, a list of them, or a function returning "
                "them)" + ("" if attr else f"; name another with {spec}:ATTRIBUTE")
            )
        provided = targets_of(getattr(module, name), f"{source}:{name}")
    except Exception as e:
        failure = PluginFailure(spec, origin, _cause(e))
        raise PluginError(failure.message(), failure) from None
    return provided, origin


# --------------------------------------------------------------------------
# Discovery state (owned here; the registry in byoc.targets asks it)
# --------------------------------------------------------------------------


@dataclass
class _State:
    discovered: bool = False
    origins: dict[str, Origin] = field(default_factory=dict[str, Origin])
    """Target (or family prefix) name -> where it came from, for every plugin target."""
    failures: dict[str, PluginFailure] = field(default_factory=dict[str, PluginFailure])
    """Target (entry point) name or `BYOC_PLUGINS` entry -> why it provides nothing."""
    clashes: dict[str, str] = field(default_factory=dict[str, str])
    """Target name -> the error naming both sources that declare it."""


_state = _State()
_lock = threading.RLock()


def origins() -> dict[str, Origin]:
    return _state.origins


def failures() -> dict[str, PluginFailure]:
    return _state.failures


def clashes() -> dict[str, str]:
    return _state.clashes


def origin_of(name: str) -> Origin:
    """Where the target `name` comes from (built in unless a plugin or the user added it)."""
    found = origins().get(name)
    if found is not None:
        return found
    return Origin("built-in", "byoc", _byoc_version())


def plugin_error(name: str) -> PluginError | None:
    """The error to raise when `name` is asked for: a clash, or its plugin's failure."""
    clash = clashes().get(name)
    if clash is not None:
        return PluginError(clash)
    failure = failures().get(name)
    if failure is not None:
        return PluginError(failure.message())
    return None


def failures_text() -> str:
    """What the unknown-target error adds when plugins failed ("" if none did)."""
    items = [f.message() for f in failures().values()]
    return "; ".join(items)


def entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    if not _may_declare_entry_points():
        return ()
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def _may_declare_entry_points() -> bool:
    """Whether some distribution on `sys.path` may declare a `byoc.targets` entry point:
    an `entry_points.txt` of a `.dist-info` or `.egg-info` folder that names the group,
    or a path entry that is not a folder (a zip, which only `importlib.metadata` reads).
    Reading those files is a fourth of what `importlib.metadata.entry_points` costs
    (which parses every distribution's), and with none the answer is the same: none."""
    group = ENTRY_POINT_GROUP.encode()
    for entry in sys.path:
        folder = entry or "."
        try:
            found = os.scandir(folder)
        except NotADirectoryError:
            return True
        except OSError:  # missing, or a path hook's name
            continue
        with found:
            for item in found:
                if not item.name.endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(folder, item.name, "entry_points.txt"), "rb") as f:
                        if group in f.read():
                            return True
                except OSError:
                    continue
    return False


def _entry_point_origin(ep: importlib.metadata.EntryPoint) -> Origin:
    dist = ep.dist
    name = dist.metadata["Name"] if dist is not None else "an unknown distribution"
    version = dist.version if dist is not None else ""
    return Origin("entry-point", name, version, f"entry point {ep.name} = {ep.value}")


def plugins_from_env() -> list[str]:
    return [s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(",") if s.strip()]


Register = Callable[[Target | TargetFamily, Origin], None]
"""The registry's insertion (`byoc.targets._add_plugin_target`), which knows built-in names
and raises a PluginError naming both sources on a clash."""


def discover(register: Register) -> None:
    """Load every entry point of `byoc.targets` and every `BYOC_PLUGINS` entry, once.

    Each source is loaded on its own: a failure is recorded under the entry point's name
    (or the `BYOC_PLUGINS` entry) and raised only when that name is looked up."""
    with _lock:
        if _state.discovered:
            return
        _state.discovered = True
        seen: set[tuple[str, str]] = set()
        for ep in sorted(entry_points(), key=lambda e: (e.name, e.value)):
            if (ep.name, ep.value) in seen:  # the same dist found twice on sys.path
                continue
            seen.add((ep.name, ep.value))
            origin = _entry_point_origin(ep)
            try:
                provided = targets_of(ep.load(), f"entry point '{ep.name} = {ep.value}'")
            except Exception as e:
                failures()[ep.name] = PluginFailure(ep.name, origin, _cause(e))
                continue
            add_all(provided, origin, register)
        for spec in plugins_from_env():
            try:
                provided, origin = load_spec(spec, PLUGINS_ENV)
            except PluginError as e:
                assert e.failure is not None
                failures()[spec] = e.failure
                continue
            add_all(provided, origin, register)


def add_all(provided: Provided, origin: Origin, register: Register) -> list[str]:
    """Register each target; a clash is recorded against its name (not raised). The names."""
    names: list[str] = []
    for target in provided:
        name = target.prefix if isinstance(target, TargetFamily) else target.name
        try:
            register(target, origin)
        except PluginError as e:
            clashes()[name] = str(e)
            continue
        origins()[name] = origin
        names.append(name)
    return names


def load_plugin(spec: str, register: Register, how: str = "--load-plugin") -> list[str]:
    """Load a `--load-plugin` entry now; its target names. A failure or a clash is a
    PluginError (the user asked for this plugin by name)."""
    provided, origin = load_spec(spec, how)
    names: list[str] = []
    for target in provided:
        register(target, origin)
        name = target.prefix if isinstance(target, TargetFamily) else target.name
        origins()[name] = origin
        names.append(name)
    return names


__all__ = [
    "DEFAULT_ATTRIBUTE",
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "Origin",
    "PluginError",
    "PluginFailure",
    "discover",
    "load_plugin",
    "load_spec",
    "origin_of",
    "targets_of",
]
