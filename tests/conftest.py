"""Fixtures shared by the whole suite."""

from __future__ import annotations

import pytest

from byoc.runtime.cpu import DISPATCH_ENV, DISPATCH_LEVELS


@pytest.fixture(params=DISPATCH_LEVELS)
def dispatch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the best kernels the CPU has (`auto`) and once with the
    baseline x86-64 ones (`baseline`): libraries compiled inside it use that level."""
    monkeypatch.setenv(DISPATCH_ENV, request.param)
    return str(request.param)
