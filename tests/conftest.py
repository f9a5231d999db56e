"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os

import pytest

from byoc.runtime.cpu import DISPATCH_ENV, distinct_levels
from byoc.runtime.toolchain import KERNEL_CACHE_ENV, cache_dir

# Tests build in fresh library caches; they share the kernel library of the user's cache
# (built once, then found), unless a test points BYOC_KERNEL_CACHE_DIR elsewhere.
os.environ.setdefault(KERNEL_CACHE_ENV, str(cache_dir()))


def _group_suffix(item: pytest.Item) -> str | None:
    """`@<group>` for a test marked `xdist_group` (`_`-joined names, as pytest-xdist names
    them), else None."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "@" + "_".join(sorted(names)) if names else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` sends the tests of one `xdist_group` to one worker by the suffix
    `@<group>` that pytest-xdist's worker adds to their node ids. It writes `Item._nodeid`;
    pytest 9 reads a node id from `Item._id` (a `NodeId`), where that write does not reach,
    and the scheduler would then spread a group test by test (each worker computing the
    group's module and session fixtures again). The suffix is added here where it is read,
    after xdist's hook, unless the id has it already."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = _group_suffix(item)
        if suffix is None or item.nodeid.endswith(suffix):
            continue
        nodeid = item.nodeid + suffix
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(nodeid)  # pyright: ignore[reportAttributeAccessIssue]
        else:
            item._nodeid = nodeid  # pyright: ignore[reportAttributeAccessIssue]


@pytest.fixture(params=distinct_levels())
def dispatch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with the best kernels the CPU has (`auto`), with the AVX2 ones an
    AVX2-only CPU takes (`avx2`: no AVX-512 path, on CPUs that have AVX-512) and with the baseline x86-64 ones
    (`baseline`): libraries compiled inside it use that level."""
    monkeypatch.setenv(DISPATCH_ENV, request.param)
    return str(request.param)


@pytest.fixture(autouse=True)
def _generators_of_this_test(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test module's module-level numpy generators (`RNG = np.random.default_rng(7)`) are
    reseeded for each test from the test's own name, so the data a test draws do not depend
    on which tests ran before it (pytest-randomly's order, xdist's workers) and a failure
    reproduces when the test runs alone."""
    import zlib

    import numpy as np

    module = getattr(request, "module", None)
    if module is None:
        return
    for name, value in list(vars(module).items()):
        if isinstance(value, np.random.Generator):
            seed = zlib.crc32(f"{request.node.nodeid}:{name}".encode())
            monkeypatch.setattr(module, name, np.random.default_rng(seed))
