"""The conformance kit: `byoc.check_target(name)` and `byoc-check-target NAME`.

    report = byoc.check_target("graphref")
    print(report.table())
    assert report.ok

Cases are generated from the target's own support and pattern tables (cases.py), run
against the numpy reference within the suite's error bound (bounds.py), with NaN/Inf
inputs, one and two threads, concurrent runs and an artifact round trip (kit.py).
docs/plugins.md describes the report.
"""

from __future__ import annotations

from byoc.conformance.kit import Cell, ConformanceReport, check_target

__all__ = ["Cell", "ConformanceReport", "check_target"]
