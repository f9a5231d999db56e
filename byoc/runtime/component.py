"""Runtime components: what a target's codegen builds, named by kind.

A component holds the compiled partitions of one target (a C library, an
ExampleJSON module, ...). It says which `kind` it is; an artifact records that
kind next to the blobs `export()` wrote, and loading looks the kind up in
`COMPONENT_LOADERS`, never in the targets: the runtime knows nothing of them.
A target whose component is of a new kind registers its loader with
`register_component_loader`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from byoc.runtime.interface import RuntimeComponent

ComponentLoader = Callable[[Mapping[str, bytes]], RuntimeComponent]


def _load_c(blobs: Mapping[str, bytes]) -> RuntimeComponent:
    from byoc.runtime.c_module import CModule

    return CModule.from_blobs(blobs)


def _load_examplejson(blobs: Mapping[str, bytes]) -> RuntimeComponent:
    from byoc.runtime.examplejson_module import ExampleJsonModule

    return ExampleJsonModule.from_blobs(blobs)


def _load_graph(blobs: Mapping[str, bytes]) -> RuntimeComponent:
    from byoc.runtime.graph_module import load_graph_component

    return load_graph_component(blobs)


COMPONENT_LOADERS: dict[str, ComponentLoader] = {
    "c": _load_c,
    "examplejson": _load_examplejson,
    "graph": _load_graph,
}
"""component kind -> loader(blobs) -> component."""


class UnknownComponentError(ValueError):
    pass


def register_component_loader(kind: str, loader: ComponentLoader) -> None:
    """Teach the runtime a new component kind; registering a kind twice is an error."""
    if COMPONENT_LOADERS.get(kind, loader) is not loader:
        raise ValueError(f"a loader for runtime components of kind '{kind}' is already registered")
    COMPONENT_LOADERS[kind] = loader


def load_component(kind: str, blobs: Mapping[str, bytes]) -> RuntimeComponent:
    loader = COMPONENT_LOADERS.get(kind)
    if loader is None:
        raise UnknownComponentError(
            f"no loader for runtime components of kind '{kind}' "
            f"(kinds: {', '.join(sorted(COMPONENT_LOADERS))}); register_component_loader first"
        )
    return loader(blobs)


def kind_of_blobs(blobs: Mapping[str, bytes]) -> str | None:
    """The kind of a format-1 artifact's component, which did not record it: by its blob names."""
    if "library" in blobs and "metadata" in blobs:
        return "c"
    if "examplejson" in blobs:
        return "examplejson"
    return None
