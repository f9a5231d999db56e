"""Mutated lit inputs through byoc-opt: every input ends in success or a located
`file:line:col: error:` with exit code 1, within a time bound; never a traceback, an
"internal error" or a hang.

The inputs are the lit cases of tests/filecheck/ (each run with the byoc-opt arguments of
one of its RUN lines), mutated by a seeded byte/token mutator (fuzz_harness.mutate_bytes).
A failing case is reproduced from its `file` and `seed` alone (`opt_input`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from support.fuzz.fuzz_harness import Report, assert_clean, env_count, run_campaign, seeded_cases
from support.fuzz.fuzz_worker import FILECHECK, opt_args, opt_input

LIT_FILES = sorted(p.relative_to(FILECHECK).as_posix() for p in FILECHECK.rglob("*.mlir"))
PER_CASE_SECONDS = 10.0
"""Generous on a loaded 2-core machine; item 6 inputs take minutes."""


def _case(rng: Any, i: int) -> dict[str, Any]:
    file = LIT_FILES[i % len(LIT_FILES)]
    return {
        "file": file,
        "seed": rng.randrange(2**32),
        "args": rng.choice(opt_args(FILECHECK / file)),
    }


def _has_unterminated_string(data: bytes) -> bool:
    """A line of code (not a comment) with an odd number of unescaped `"` (issue 14 item 6)."""
    for line in data.decode("latin-1").splitlines():
        line = re.sub(r"\\.", "", line)
        comment, quote = line.find("//"), line.find('"')
        if comment != -1 and (quote == -1 or comment < quote):
            continue
        if line.count('"') % 2:
            return True
    return False


def campaign(seed: int, count: int) -> Report:
    cases = seeded_cases(seed, count, _case)
    return run_campaign("opt", cases, PER_CASE_SECONDS)


def test_lit_inputs_are_found() -> None:
    assert len(LIT_FILES) >= 40
    assert all(isinstance(a, list) for f in LIT_FILES for a in opt_args(FILECHECK / f))


def test_mutated_lit_inputs_short() -> None:
    assert_clean(campaign(seed=14, count=env_count("opt_short", 120)))


@pytest.mark.slow
def test_mutated_lit_inputs_long() -> None:
    assert_clean(campaign(seed=1414, count=env_count("opt_long", 5000)))


# The exact cases of known defects the mutator produces: they turn green when fixed.


def test_mutated_case_with_unterminated_string_found_by_the_fuzzer() -> None:
    case = {"file": "tools/output-file.mlir", "seed": 3106266458, "args": []}
    assert _has_unterminated_string(opt_input(case))
    report = run_campaign("opt", [case], per_case_seconds=PER_CASE_SECONDS)
    assert report.counts == {"ok": 1}, report.summary()


SPLIT_WITH_BAD_FIRST_TOKEN = "func.func @f() {\n  func.return\n}\n// -----\n#\n// -----\nfunc.func @g() {\n  func.return\n}\n"


def test_lexer_error_on_a_chunks_first_token_is_placed_in_its_chunk(tmp_path: Any) -> None:
    from byoc.tools import byoc_opt

    path = tmp_path / "split.mlir"
    path.write_text(SPLIT_WITH_BAD_FIRST_TOKEN)
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = byoc_opt.main([str(path), "--split-input-file"])
    assert code == 1
    assert f"{path}:5:1: error:" in err.getvalue(), err.getvalue()
    assert out.getvalue().count("func.func") == 2
