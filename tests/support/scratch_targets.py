"""Targets a test registers for its own duration: ones that cannot run here, on purpose.

    with registered(broken_c_target("fb_broken", ["nn.add"])):
        exe = byoc.build(module, targets=["fb_broken", "ccompiler"])

`registered` adds targets to the registry (`byoc.register_target`) and removes them, and
their `target.<name>` support entries in the op registry, when the block ends, so no other
test sees them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import byoc
import byoc.targets as registry
from byoc.op_registry import reset_op_attr
from byoc.runtime.component import RuntimeComponent
from byoc.targets import Target
from byoc.targets.base import SupportFn
from byoc.targets.predicates import always

MISSING_HEADER = "byoc_no_such_vendor_header.h"
"""The header a `broken_c_target`'s library includes, which no compiler finds."""


@contextmanager
def registered(*targets: Target) -> Iterator[None]:
    """Register `targets` for the duration of the block."""
    done: list[Target] = []
    try:
        for target in targets:
            byoc.register_target(target)
            done.append(target)
        yield
    finally:
        for target in done:
            registry._targets.pop(target.name, None)  # pyright: ignore[reportPrivateUsage]
            for op_name in target.support:
                reset_op_attr(op_name, f"target.{target.name}")


def support_of(ops: Sequence[str]) -> dict[str, SupportFn]:
    return {op: always() for op in ops}


def broken_c_target(name: str, ops: Sequence[str]) -> Target:
    """A C target taking `ops` whose library does not compile (a missing vendor header)."""
    return Target(
        name=name,
        support=support_of(ops),
        lowering="lower-to-c",
        component="c",
        c_build_options=lambda: (("-include", MISSING_HEADER), ()),
        description="its C library includes a header no compiler has",
    )


def unavailable_target(name: str, ops: Sequence[str], reason: str) -> Target:
    """A target taking `ops` that says it cannot run here; building it fails the test."""

    def never_built(module: ModuleOp, funcs: Sequence[FuncOp]) -> RuntimeComponent:
        raise AssertionError(f"target '{name}' is unavailable and must not be built")

    return Target(
        name=name,
        support=support_of(ops),
        codegen=never_built,
        availability=lambda: reason,
        description="unavailable on purpose",
    )


def raising_codegen_target(name: str, ops: Sequence[str], message: str) -> Target:
    """A target taking `ops` whose codegen (a vendor SDK) raises RuntimeError(message)."""

    def crash(module: ModuleOp, funcs: Sequence[FuncOp]) -> RuntimeComponent:
        raise RuntimeError(message)

    return Target(
        name=name,
        support=support_of(ops),
        codegen=crash,
        description="its vendor compiler crashes",
    )


__all__ = [
    "MISSING_HEADER",
    "broken_c_target",
    "raising_codegen_target",
    "registered",
    "unavailable_target",
]
