"""Run the lit/FileCheck suite under pytest (lit.main.main, not `python -m lit`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

FILECHECK_DIR = Path(__file__).parent / "filecheck"


def test_lit_suite() -> None:
    from lit.main import main as lit_main

    old_argv = sys.argv
    sys.argv = ["lit", "-v", "-j", str(min(2, os.cpu_count() or 1)), str(FILECHECK_DIR)]
    code: object = 0
    try:
        lit_main()  # returns when every test passed; exits non-zero on a failure
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = old_argv
    assert code in (0, None), "lit reported failures (see the output above)"
