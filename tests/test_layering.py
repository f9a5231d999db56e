"""Imports point down the layers: tools -> driver -> frontend/passes/lowering -> targets -> runtime
-> dialects. Imports inside functions and under TYPE_CHECKING count."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.paths import PACKAGE

ABOVE_TARGETS = (
    "byoc.driver",
    "byoc.tools",
    "byoc.frontend",
    "byoc.passes",
    "byoc.lowering",
)

ABOVE_RUNTIME = (*ABOVE_TARGETS, "byoc.targets", "byoc.op_registry")

RULES: dict[str, tuple[str, ...]] = {
    "byoc.frontend": ("byoc.driver", "byoc.tools", "byoc.passes", "byoc.lowering"),
    "byoc.targets": ABOVE_TARGETS,
    "byoc.lowering": ("byoc.driver", "byoc.tools", "byoc.passes", "byoc.frontend"),
    "byoc.passes": ("byoc.driver", "byoc.tools", "byoc.lowering", "byoc.frontend"),
    "byoc.op_registry": (*ABOVE_TARGETS, "byoc.targets", "byoc.runtime"),
    "byoc.runtime": ABOVE_RUNTIME,
    "byoc.dialects": (*ABOVE_RUNTIME, "byoc.runtime", "byoc.interpreters"),
    "byoc.interpreters": (*ABOVE_RUNTIME, "byoc.runtime"),
    "byoc.utils": ("byoc.dialects", "byoc.interpreters", *ABOVE_RUNTIME, "byoc.runtime"),
}
"""Package (or module) -> the modules it may not import."""

def _module(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in found if n.startswith("byoc")}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports_point_down(layer: str) -> None:
    bad: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        if not _within(module, layer):
            continue
        for name in sorted(_imports(path)):
            if any(_within(name, f) for f in RULES[layer]):
                bad.append(f"{module} imports {name}")
    assert not bad, "\n".join(bad)
