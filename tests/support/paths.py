"""Directories the tests read from, wherever the test file sits under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
PACKAGE = ROOT / "byoc"
EXAMPLES = ROOT / "examples"
FILECHECK = TESTS / "filecheck"
