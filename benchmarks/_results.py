"""Where each benchmark keeps its latest figures: `benchmarks/results/<script>.md`.

A Python benchmark runs its `main` through `run_recorded`, which copies what the
script prints and, when `main` returns without an error, writes the results file
with the command line, the machine (CPU model, ISA, core count), the date, the
load average and the printed figures. `--help` and failed runs write nothing.
Each run replaces the file; earlier figures live in git history.

The C programs print their figures themselves; run one through this module to
record them the same way:

    python benchmarks/_results.py conv_split.c -- /tmp/conv_split a.so b.so --rounds 15
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# The ISA extensions the kernels dispatch on, as /proc/cpuinfo names them.
ISA_FLAGS: dict[str, str] = {
    "avx2": "AVX2",
    "fma": "FMA",
    "avx512f": "AVX-512F",
    "avx512_vnni": "AVX-512 VNNI",
    "avx512vbmi": "AVX-512 VBMI",
}

# Environment variables that change what a benchmark measures.
ENV_PREFIXES = ("BYOC_", "OPENBLAS_", "OMP_", "GOMP_")


def machine() -> str:
    """CPU model, architecture with the ISA extensions the kernels use, core count."""
    model, flags = platform.processor() or "unknown CPU", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    isa = [name for flag, name in ISA_FLAGS.items() if flag in flags]
    return f"{model} ({', '.join([platform.machine(), *isa])}), {os.cpu_count()} cores"


def command_line(argv: Sequence[str]) -> str:
    """The command as typed, with the environment variables that matter in front."""
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)]
    return " ".join([*env, *map(shlex.quote, argv)])


def _load() -> str:
    return ", ".join(f"{v:.1f}" for v in os.getloadavg())


def write(
    name: str,
    command: str,
    figures: str,
    *,
    load: str = "",
    when: datetime | None = None,
) -> Path:
    """Replace `results/<name>.md` with these figures; return its path."""
    when = when or datetime.now(UTC)
    lines = [
        f"# {name}: latest figures",
        "",
        f"- command: `{command}`",
        f"- machine: {machine()}",
        f"- date: {when:%Y-%m-%d %H:%M} UTC",
    ]
    if load:
        lines.append(f"- load average (1, 5, 15 min): {load}")
    lines += ["", "```text", figures.rstrip("\n"), "```", ""]
    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{Path(name).stem}.md"
    path.write_text("\n".join(lines))
    return path


# Set while a benchmark records, so the processes it starts of itself do not record too.
RECORDING_ENV = "BENCHMARK_RECORDING"


class _CapturedStdout:
    """Copies everything written to file descriptor 1, by this process and the processes
    it starts, while passing it through to the original standard output."""

    def __enter__(self) -> _CapturedStdout:
        sys.stdout.flush()
        self._chunks: list[bytes] = []
        self._saved = os.dup(1)
        self._read, write_end = os.pipe()
        os.dup2(write_end, 1)
        os.close(write_end)
        self._pump = threading.Thread(target=self._copy, daemon=True)
        self._pump.start()
        return self

    def _copy(self) -> None:
        while data := os.read(self._read, 65536):
            self._chunks.append(data)
            view = memoryview(data)
            while view:
                view = view[os.write(self._saved, view):]

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        os.dup2(self._saved, 1)  # closes this process's write end of the pipe
        self._pump.join(timeout=5)  # a child still holding the pipe must not hang the run
        os.close(self._saved)
        if not self._pump.is_alive():
            os.close(self._read)

    def text(self) -> str:
        return b"".join(self._chunks).decode(errors="replace")


def run_recorded(script: str, main: Callable[[], int | None], name: str | None = None) -> int:
    """Run a benchmark's `main`, then record what it printed (in `results/<name>.md`, by
    default the script's name); return its exit status."""
    if os.environ.get(RECORDING_ENV):
        return main() or 0
    os.environ[RECORDING_ENV] = script
    start_load = _load()
    with _CapturedStdout() as out:
        status = main() or 0
    if status == 0:
        argv = ["python", os.path.relpath(script), *sys.argv[1:]]
        path = write(name or Path(script).name, command_line(argv), out.text(), load=f"{start_load} -> {_load()}")
        print(f"figures written to {os.path.relpath(path)}")
    return status


def main(argv: Sequence[str]) -> int:
    """`_results.py NAME -- COMMAND...`: run COMMAND, echo and record its output as NAME's."""
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    name, command = argv[0], list(argv[2:])
    start_load = _load()
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    sys.stdout.write(done.stdout)
    if done.returncode == 0:
        path = write(name, command_line(command), done.stdout, load=f"{start_load} -> {_load()}")
        print(f"figures written to {os.path.relpath(path)}")
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
