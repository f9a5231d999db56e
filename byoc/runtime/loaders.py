"""`load_module(path, fmt)`: build a runtime module from a file (TVM's `tvm.runtime.load_module`).

    mod = load_module("g.examplejson", "examplejson")   # the seed's loadfile_examplejson / Create
    f = mod.get_function("subgraph_0")

`fmt` names the loader; without it, it is guessed from the file: a `.byoc`
or `.examplejson` suffix, or the magic bytes an exported artifact or
`ExampleJsonModule.save_to_binary` writes. `byoc.load_module` is this function:
"byoc" gives an `Executable` from an exported artifact. Adding a format is adding a line to `LOADERS`.

Inside an artifact, each target's component is loaded by the kind it recorded
("c", "examplejson", ...) through the table of `byoc.runtime.component`
(`COMPONENT_LOADERS`, `register_component_loader`), never through a target.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def _load_examplejson(path: Path) -> Any:
    from byoc.runtime.examplejson_module import ExampleJsonModule

    return ExampleJsonModule.load_file(path)


def _load_artifact(path: Path) -> Any:
    from byoc.runtime.executable import load_executable

    return load_executable(path)


LOADERS: dict[str, Callable[[Path], Any]] = {
    "byoc": _load_artifact,
    "examplejson": _load_examplejson,
}
"""format name -> loader(path) -> runtime module."""


class UnknownFormatError(ValueError):
    pass


def guess_format(path: str | Path) -> str | None:
    """The format of the file at `path`, from its suffix or its first bytes; None if unknown."""
    from byoc.runtime.artifact import MAGIC as ARTIFACT_MAGIC
    from byoc.runtime.examplejson_module import MAGIC

    p = Path(path)
    if p.suffix == ".examplejson":
        return "examplejson"
    if p.suffix == ".byoc":
        return "byoc"
    with p.open("rb") as f:
        head = f.read(max(len(MAGIC), len(ARTIFACT_MAGIC)))
    if head.startswith(ARTIFACT_MAGIC):
        return "byoc"
    return "examplejson" if head.startswith(MAGIC) else None


def load_module(path: str | Path, fmt: str | None = None) -> Any:
    """Load the runtime module stored at `path`, in format `fmt` (guessed when None)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no such file: '{p}'")
    fmt = fmt if fmt is not None else guess_format(p)
    loader = LOADERS.get(fmt) if fmt is not None else None
    if loader is None:
        what = (
            f"unknown format '{fmt}'" if fmt is not None else "cannot tell the format of the file"
        )
        raise UnknownFormatError(
            f"{p}: {what}; formats: {', '.join(sorted(LOADERS))} (pass fmt=...)"
        )
    return loader(p)
