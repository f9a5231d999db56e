"""The machinery of the adversarial suite: seeded mutators, a worker process that runs cases
in-process with a time bound per case, and the counts a run reports.

A campaign is a list of JSON-able cases. `run_campaign` feeds them to a worker
(`python -m support.fuzz.fuzz_worker KIND`, tests/ on `sys.path`) one per line; the worker
answers one line per case with its outcome. A case that produces no answer within
`per_case_seconds` is a hang: the worker is killed and restarted at the next case. A
worker that dies without answering (a signal, `os._exit`) is a crash of that case.
Nothing the cases do can take down the pytest process.
"""

from __future__ import annotations

import json
import os
import random
import select
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PYTHON = sys.executable

OK = "ok"
"""The case ended in success or in the tool's own located error."""
BAD_OUTCOMES = (
    "internal",
    "traceback",
    "hang",
    "crash",
    "mismatch",
    "unlocated",
    "wrong-error",
    "rejected-differently",
)


@dataclass
class Report:
    """What a campaign found: outcome -> count, and the first cases of each bad outcome."""

    kind: str
    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def tried(self) -> int:
        return sum(self.counts.values())

    def add(self, outcome: str, case: dict[str, Any], detail: str = "") -> None:
        self.counts[outcome] += 1
        if outcome != OK and not outcome.startswith("ok"):
            bucket = self.examples.setdefault(outcome, [])
            if len(bucket) < 5:
                bucket.append({**case, "detail": detail[:2000]})

    def bad(self) -> dict[str, list[dict[str, Any]]]:
        """Failures not attributed to a known item of issue 14."""
        return {k: v for k, v in self.examples.items() if k in BAD_OUTCOMES}

    def summary(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items()))
        return f"{self.kind}: tried={self.tried} ({parts})"


def worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests")])
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["PYTHONFAULTHANDLER"] = "1"
    return env


Attribute = Callable[[dict[str, Any], str, str], str]
"""(case, outcome, detail) -> outcome: renames the outcomes of a known defect to
`known-<item>-<outcome>`, which are counted but do not fail the campaign."""


def sanitizer_env(cache: str) -> dict[str, str] | None:
    """A worker environment that builds generated C with ASan and UBSan
    (`BYOC_SANITIZE`) and preloads their runtimes into Python; None if the system
    compiler has no sanitizer runtimes."""
    cc = os.environ.get("CC", "cc")
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        found = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True)
        path = found.stdout.strip()
        if found.returncode != 0 or not os.path.isabs(path):
            return None
        libs.append(path)
    return {
        "LD_PRELOAD": ":".join(libs),
        "BYOC_SANITIZE": "address,undefined",
        "BYOC_CACHE_DIR": cache,
        # Python's own allocations are reported as leaks at exit: leaks are measured by the
        # RSS loops (test_fuzz_loops) instead. Any other report aborts the worker: a crash.
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }


def run_campaign(
    kind: str,
    cases: Sequence[dict[str, Any]],
    per_case_seconds: float = 20.0,
    attribute: Attribute | None = None,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Run `cases` through `fuzz_worker KIND` (with `env` added to the worker's
    environment); every case gets an outcome."""
    report = Report(kind)
    if attribute is not None:
        add = report.add

        def add_attributed(outcome: str, case: dict[str, Any], detail: str = "") -> None:
            if outcome != OK and not outcome.startswith("ok"):
                outcome = attribute(case, outcome, detail)
            add(outcome, case, detail)

        report.add = add_attributed  # type: ignore[method-assign]
    i = 0
    while i < len(cases):
        proc = subprocess.Popen(
            [PYTHON, "-m", "support.fuzz.fuzz_worker", kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**worker_env(), **(env or {})},
            cwd=REPO,
        )
        assert proc.stdin is not None and proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120.0)
        if not ready or not proc.stdout.readline():
            proc.kill()
            raise RuntimeError(f"the {kind} worker did not start")
        try:
            while i < len(cases):
                proc.stdin.write((json.dumps(cases[i]) + "\n").encode())
                proc.stdin.flush()
                ready, _, _ = select.select([proc.stdout], [], [], per_case_seconds)
                if not ready:
                    report.add("hang", cases[i], f"no answer in {per_case_seconds} s")
                    i += 1
                    break
                line = proc.stdout.readline()
                if not line:
                    proc.wait(timeout=30)
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    report.add("crash", cases[i], f"exit {proc.returncode}: {err[-1500:]}")
                    i += 1
                    break
                answer = json.loads(line)
                report.add(answer["outcome"], cases[i], answer.get("detail", ""))
                i += 1
        except BrokenPipeError:
            proc.wait(timeout=30)
            report.add("crash", cases[i], f"exit {proc.returncode} before reading the case")
            i += 1
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    return report


def print_report(report: Report) -> None:
    print(report.summary())
    for outcome, cases in report.examples.items():
        for case in cases[:2] if outcome.startswith("known") else cases:
            print(f"  {outcome}: {json.dumps(case)[:600]}")


def assert_clean(report: Report) -> None:
    print_report(report)
    assert not report.bad(), report.summary() + "\n" + json.dumps(report.bad(), indent=1)[:6000]


# ----------------------------------------------------------------------------
# mutators
# ----------------------------------------------------------------------------

TOKENS: tuple[bytes, ...] = (
    b"%",
    b"@",
    b"#",
    b"^",
    b"!",
    b"..",
    b'"',
    b'"abc',
    b"{",
    b"}",
    b"(",
    b")",
    b"<",
    b">",
    b"[",
    b"]",
    b":",
    b",",
    b"=",
    b"->",
    b"x",
    b"?",
    b"0",
    b"-1",
    b"-3",
    b"1e400",
    b"nan",
    b"inf",
    b"0x7fffffffffffffff",
    b"9223372036854775808",
    b"18446744073709551617",
    b"tensor<",
    b"tensor<?xf32>",
    b"tensor<0x4xf32>",
    b"tensor<1x-3xf32>",
    b"tensor<99999999999999999999x3xf32>",
    b"tensor<10000000000xf32>",
    b"99999999999999999999",
    b"f32",
    b"i32",
    b"i1",
    b"f64",
    b"f16",
    b"dense<",
    b"dense<nan>",
    b"dense<>",
    b"dense_resource<x>",
    b"nn.add",
    b"nn.conv2d",
    b"nn.max_pool2d",
    b"nn.pad",
    b"nn.clip",
    b"nn.constant",
    b"func.func",
    b"func.return",
    b"func.call",
    b"byoc.region",
    b"byoc.composite",
    b"// -----",
    b"\n// -----\n",
    b"// expected-error",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\t",
    b"\r\n",
    b"\n",
    b" ",
    b'{byoc.target = "ccompiler"}',
    b"strides = [0, 0]",
    b"dilation = [2, 2]",
    b"padding = [1, 1, 1, 1]",
    b"a_min = 0x7FC00000 : f32",
)


def mutate_bytes(data: bytes, rng: random.Random, rounds: int | None = None) -> bytes:
    """A few random byte/token edits: flip, insert, delete, duplicate, splice a token,
    truncate."""
    buf = bytearray(data)
    for _ in range(rounds if rounds is not None else rng.randint(1, 4)):
        n = len(buf)
        op = rng.randrange(8)
        pos = rng.randint(0, n)
        if op == 0 and n:
            buf[min(pos, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[pos:pos] = bytes([rng.randrange(256)])
        elif op == 2 and n:
            del buf[pos : pos + rng.randint(1, 16)]
        elif op == 3 and n:
            start = rng.randint(0, n - 1)
            buf[pos:pos] = buf[start : start + rng.randint(1, 64)]
        elif op in (4, 5):
            buf[pos:pos] = rng.choice(TOKENS)
        elif op == 6 and n:
            end = min(n, pos + rng.randint(1, 8))
            buf[pos:end] = rng.choice(TOKENS)
        else:
            del buf[pos:]
    return bytes(buf)


def seeded_cases(seed: int, count: int, make: Any) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make(rng, i) for i in range(count)]


def env_count(name: str, default: int) -> int:
    """`BYOC_FUZZ_<NAME>` overrides a campaign's size (the slow tests read it)."""
    return int(os.environ.get(f"BYOC_FUZZ_{name.upper()}", default))


def batched(items: Iterable[Any], size: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    for item in items:
        if not out or len(out[-1]) == size:
            out.append([])
        out[-1].append(item)
    return out


def elapsed(start: float) -> float:
    return time.perf_counter() - start
