"""Lazy registries: a name maps to a class (or a dialect, a target, a hook) that is
imported only when first asked for, so `byoc-opt` starts without loading every pass,
frontend, emitter, dialect and target."""

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


@dataclass(frozen=True)
class LazyValue(Generic[T]):
    """Called, imports `module` and returns its attribute `name`: a registry entry whose
    value is an object (a `Dialect`, a `Target`, a function) rather than a class."""

    module: str
    name: str

    def __call__(self) -> T:
        return getattr(import_module(self.module), self.name)


__all__ = ["LazyClass", "LazyValue"]
