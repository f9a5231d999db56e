"""What `byoc.build(..., targets=["ccompiler"], tiered=True)` makes of each corpus model, as
text to compare between two trees, and the CPU seconds the build spends.

`dump DIR` writes, per corpus model (benchmarks/corpus.py), the C source the build emits, a
digest of its bound constants and the first tier's program of every partition (or why the
partition has none) to `DIR/<model>.txt`; the C is not compiled (the build stops once the
tiered component is made). `compare A B` reports every model whose dump differs. Run `dump`
once with each tree's `byoc` first on `PYTHONPATH` to check that a change to the passes or
to lower-to-c leaves both outputs identical.

`time TREE_A TREE_B` measures `time.process_time()` of `byoc.build(..., tiered=True)` (the
same stop) per model with each tree's `byoc`, each build in a fresh process, alternating A and
B, and prints the minimum of `--rounds` per tree and B / A (kept in
`results/lowering_check.md`).

    PYTHONPATH=/work/main python benchmarks/lowering_check.py dump /tmp/a
    PYTHONPATH=$PWD python benchmarks/lowering_check.py dump /tmp/b
    python benchmarks/lowering_check.py compare /tmp/a /tmp/b
    python benchmarks/lowering_check.py time /work/main $PWD --rounds 5
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402


class _Stop(Exception):
    """Raised once the tiered component's programs are made: the C is never compiled."""

    def __init__(self, text: str) -> None:
        super().__init__("stopped after the first tier")
        self.text = text


def _digest(a: Any) -> str:
    import numpy as np

    a = np.ascontiguousarray(a)
    return f"{a.dtype}{list(a.shape)}:{hashlib.sha256(a.tobytes()).hexdigest()[:16]}"


def _capture(source: bool = True) -> None:
    """Make the tiered component's construction write out what it got (with the C source
    when `source`) and stop the build."""
    from byoc.lowering import c_build
    from byoc.runtime import tiered

    original = c_build.tiered_c_module

    def capture(module: Any) -> Any:
        head: list[str] = []
        if source:  # in a build, emitted on the compile's thread (not timed here)
            lib = c_build.c_library(module)
            head = [lib.source, "// constants: " + " ".join(_digest(a) for a in lib.constants)]

        def start(programs: Any, functions: Any, compile: Any, reasons: Any) -> Any:
            lines = list(head)
            for sym, sig in functions.items():
                lines.append(f"// signature {sym}: {sig!r}")
            for sym, prog in programs.items():
                consts = " ".join(_digest(a) for a in prog.consts)
                lines.append(
                    f"// program {sym}: args={prog.num_args} ws={prog.ws_size} ptrs={prog.num_ptrs} "
                    f"code={prog.code} flits={prog.flits} ilits={prog.ilits} consts={consts}"
                )
            for sym, why in reasons.items():
                lines.append(f"// no program {sym}: {why}")
            raise _Stop("\n".join(lines) + "\n")

        tiered.TieredCModule.start = staticmethod(start)  # type: ignore[method-assign]
        return original(module)

    c_build.tiered_c_module = capture  # type: ignore[assignment]


def build_once(name: str, source: bool = True) -> tuple[str, float]:
    """The dump text of `name`'s build and the CPU seconds `byoc.build` took."""
    import byoc
    import byoc.driver  # noqa: F401  (modules imported outside the timing)
    import byoc.lowering.c_build  # noqa: F401
    import byoc.lowering.emit.c  # noqa: F401
    import byoc.lowering.nn_to_c.quant  # noqa: F401
    import byoc.passes.byoc_pipeline  # noqa: F401
    import byoc.runtime.first_tier  # noqa: F401
    import byoc.runtime.tiered  # noqa: F401

    _capture(source)
    path, _ = corpus.load(name)
    module = byoc.import_onnx(
        str(path), input_shapes=corpus.input_shapes(name), bind_inputs=corpus.bind_inputs(name)
    )
    from byoc.runtime.first_tier import first_tier_library

    first_tier_library()  # built or found once, outside the timing
    t0 = time.process_time()
    try:
        byoc.build(module, targets=["ccompiler"], tiered=True, fallback=False)
    except _Stop as stop:
        return stop.text, time.process_time() - t0
    raise RuntimeError(f"{name}: the build made no tiered C component")


def dump(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        text, cpu = build_once(name)
        (folder / f"{name}.txt").write_text(text)
        print(f"{name:14s} {len(text):9d} chars  build {cpu * 1e3:7.1f} ms cpu", flush=True)


def compare(a: Path, b: Path) -> int:
    bad = 0
    for fa in sorted(a.glob("*.txt")):
        fb = b / fa.name
        same = fb.exists() and fa.read_bytes() == fb.read_bytes()
        print(f"{fa.stem:14s} {'identical' if same else 'DIFFERS'}")
        bad += not same
    return 1 if bad else 0


def time_trees(trees: list[str], names: list[str], rounds: int) -> None:
    best: dict[tuple[str, str], float] = {}
    for name in names:
        for _ in range(rounds):
            for tree in trees:
                env = {
                    **os.environ,
                    "PYTHONPATH": tree,
                    "OPENBLAS_NUM_THREADS": "1",
                    "OMP_NUM_THREADS": "1",
                }
                out = subprocess.run(
                    [sys.executable, __file__, "_one", name],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                cpu = json.loads(out.splitlines()[-1])["cpu"]
                best[name, tree] = min(best.get((name, tree), math.inf), cpu)
        a, b = (best[name, t] for t in trees)
        print(f"{name:14s} A {a * 1e3:7.1f} ms  B {b * 1e3:7.1f} ms  B/A {b / a:5.2f}", flush=True)
    ratios = [best[n, trees[1]] / best[n, trees[0]] for n in names]
    print(
        f"geometric mean B/A {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f} (min of {rounds} each)"
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("mode", choices=("dump", "compare", "time", "_one"))
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--models", default=",".join(corpus.CORPUS))
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    if args.mode == "dump":
        dump(Path(args.paths[0]), names)
    elif args.mode == "compare":
        return compare(Path(args.paths[0]), Path(args.paths[1]))
    elif args.mode == "time":
        time_trees(args.paths, names, args.rounds)
    else:
        _, cpu = build_once(args.paths[0], source=False)
        print(json.dumps({"cpu": cpu}))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["time"]:  # the timing keeps its figures (benchmarks/_results.py)
        from _results import run_recorded

        sys.exit(run_recorded(__file__, lambda: main(sys.argv[1:])))
    sys.exit(main(sys.argv[1:]))
