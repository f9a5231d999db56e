"""Lazy registries: a name maps to a class that is imported only when first asked for,
so `byoc-opt` starts without loading every pass, frontend and emitter."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class LazyClass(Generic[T]):
    """Called, imports `module` and returns its class `name`, a subclass of `base`."""

    module: str
    name: str
    base: type[T]

    def __call__(self) -> type[T]:
        cls = getattr(import_module(self.module), self.name)
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"{self.module}.{self.name} is not a {self.base.__name__}")
        return cls


__all__ = ["LazyClass"]
