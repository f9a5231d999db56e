"""The ONNX node test cases are kept in pytest's cache directory (`.pytest_cache`), so each
process of a run (every pytest-xdist worker) and every later run reads them instead of
building them again; `pytest --cache-clear` builds them afresh."""

from __future__ import annotations

import pytest
import support.onnx_harness


def pytest_configure(config: pytest.Config) -> None:
    cache = getattr(config, "cache", None)  # absent under `-p no:cacheprovider`
    if cache is not None:
        support.onnx_harness.NODE_CASE_CACHE = cache.mkdir("onnx-node-cases")
