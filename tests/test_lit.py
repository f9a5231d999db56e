"""Run the lit/FileCheck suite under pytest (lit.main.main, not `python -m lit`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"


def test_lit_suite() -> None:
    from lit.main import main as lit_main

    old_argv = sys.argv
    sys.argv = ["lit", "-v", "-j", str(min(2, os.cpu_count() or 1)), str(FILECHECK_DIR)]
    try:
        with pytest.raises(SystemExit) as exit_info:
            lit_main()
    finally:
        sys.argv = old_argv
    assert exit_info.value.code in (0, None), "lit reported failures (see output above)"
