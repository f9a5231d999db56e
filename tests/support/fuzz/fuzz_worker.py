"""The worker of a fuzz campaign (see fuzz_harness): `python -m support.fuzz.fuzz_worker KIND`
reads one JSON case a line on stdin and answers one JSON line
`{"outcome": ..., "detail": ...}` a case.

Kinds: `opt` (a mutated lit input through byoc-opt's `main`), `onnx` (a mutated ONNX model
through the importer), `artifact` (a mutated `.byoc` through `load_module` and a run), `graph` (an artifact
whose graph blob has one field edited, see graph_cases.py),
`differential` (a random graph through every executor, see differential.py).

The kinds that load native libraries (`artifact`, `graph`, `differential`) collect the
garbage after each case, before answering: a loaded library is freed by the cyclic
collector (a component and its functions refer to each other), so without it the
library of one case would be unloaded at whatever later case the collector happens to
run in, and a crash while unloading would be charged to that case and not be
reproducible from its seed.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import random
import re
import shlex
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from support.fuzz.fuzz_harness import REPO, mutate_bytes

LOCATED = re.compile(r"^[^\n:]+:\d+:\d+: error: ", re.M)
FILECHECK = REPO / "tests" / "filecheck"
_TMP = Path(tempfile.mkdtemp(prefix="byoc-fuzz-"))


def opt_args(lit_file: Path) -> list[list[str]]:
    """byoc-opt's arguments in the RUN lines of a lit file (`%s` is the input)."""
    runs: list[list[str]] = []
    for line in lit_file.read_text().splitlines():
        m = re.match(r"\s*//\s*RUN:\s*(?:not\s+)?%byoc-opt\s+(.*)", line)
        if not m:
            continue
        words = iter(shlex.split(re.split(r"\||&&|;", m.group(1))[0].replace("2>&1", "")))
        args: list[str] = []
        for word in words:
            if word.startswith((">", "2>", "<")) and word.strip("<>2") == "" or word == "-o":
                next(words, None)  # a redirection or the output file: the worker sets its own
            elif "%" not in word and not word.startswith((">", "2>", "<")):
                args.append(word)
        runs.append(args)
    return runs or [[]]


def opt_input(case: dict[str, Any]) -> bytes:
    data = (FILECHECK / case["file"]).read_bytes()
    return mutate_bytes(data, random.Random(case["seed"]))


def run_opt(case: dict[str, Any]) -> tuple[str, str]:
    data = case["data"].encode("latin-1") if "data" in case else opt_input(case)
    outcome, detail = _opt(data, case)
    if outcome == "unlocated" and "file" in case and ("byoc-opt: error:" in detail or "usage:" in detail):
        # an error of the run's options (a RUN line of a negative test): the same unmutated
        if _opt((FILECHECK / case["file"]).read_bytes(), case) == (outcome, detail):
            return "ok-options-error", ""
    return outcome, detail


def _opt(data: bytes, case: dict[str, Any]) -> tuple[str, str]:
    from byoc.tools import byoc_opt

    path = _TMP / (Path(case.get("file", "input.mlir")).name)
    path.write_bytes(data)
    args = [str(path), *case.get("args", []), "-o", str(_TMP / "out.txt")]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = byoc_opt.main(args)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 2
    except BaseException:
        return "traceback", traceback.format_exc()
    text = err.getvalue()
    if "Traceback (most recent call last)" in text:
        return "traceback", text
    if "byoc-opt: error: internal error" in text:  # not the input's own text echoed in a diagnostic
        return "internal", text
    if code == 0:
        return "ok", ""
    if code == 1 and LOCATED.search(text):
        return "ok", ""
    return "unlocated", f"exit {code}: {text}"


def main() -> None:
    kind = sys.argv[1]
    collect = kind in ("artifact", "graph", "differential")
    if kind == "opt":
        from byoc.tools import byoc_opt

        # import every pass and target before the first case's clock starts
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            byoc_opt.main(["--list-passes"])
        from byoc.passes import ALL_PASSES

        for factory in ALL_PASSES.values():
            factory()

        handler = run_opt
    elif kind == "onnx":
        import resource

        # import-time folding of a huge tensor must not take the machine's memory (item 8)
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from support.fuzz.onnx_cases import run_onnx_case as handler
    elif kind == "artifact":
        import resource

        # a crafted size must not take the machine's memory: 3 GiB of address space
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from support.fuzz.artifact_cases import run_artifact_case as handler
    elif kind == "graph":
        import os
        import resource

        # as "artifact"; ASan reserves terabytes of address space, so a sanitized worker
        # is bounded by its time limit only
        if "libasan" not in os.environ.get("LD_PRELOAD", ""):
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from support.fuzz.graph_cases import run_graph_case as handler
    elif kind == "differential":
        from support.fuzz.differential import run_differential_case as handler
    else:
        raise SystemExit(f"unknown kind {kind}")
    sys.stdout.write('{"ready": true}\n')
    sys.stdout.flush()
    for line in sys.stdin:
        case = json.loads(line)
        try:
            outcome, detail = handler(case)
        except Exception:
            outcome, detail = "traceback", traceback.format_exc()
        if collect:
            gc.collect()
        sys.stdout.write(json.dumps({"outcome": outcome, "detail": detail}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
