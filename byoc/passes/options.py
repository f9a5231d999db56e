"""Option values shared by the partitioning passes: name lists and the targets they name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from byoc.targets import get_target


def as_names(value: Any) -> tuple[str, ...]:
    """A tuple of names from a CLI tuple, a Python list, or one comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def check_targets(targets: Iterable[str]) -> None:
    """Load every target (registering its predicates); an unknown name is a ValueError."""
    seen: set[str] = set()
    for name in targets:
        if name in seen:
            raise ValueError(f"target '{name}' is listed twice")
        seen.add(name)
        get_target(name)
